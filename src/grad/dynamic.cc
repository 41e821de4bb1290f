#include "grad/dynamic.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/statevector.h"
#include "circuit/bound.h"
#include "core/error.h"
#include "core/memory.h"
#include "core/rng.h"
#include "grad/density_matrix.h"
#include "grad/engine.h"
#include "grad/kraus_branches.h"
#include "passes/fusion.h"

namespace qmlsim {
namespace {

// Outcomes less likely than this are not walked in exact mode.
constexpr double kPrune = 1e-14;

// One step of the walk: a run of operations under one condition, or a point
// where the walk branches.
struct Step {
  enum class Kind { gates, measure, reset, channel };
  Kind kind = Kind::gates;
  Condition condition;
  std::vector<BoundGate> gates;  // gates: in the walk's form (state or density matrix), fused
  int qubit = -1, clbit = -1;    // measure, reset
  PauliSum z;                    // measure, reset: Z on the qubit, made once
  Branches branches;             // channel, on a state vector
};

struct Plan {
  int n = 0;
  bool density = false;  // the walk's state is vec(rho) on 2n qubits
  std::vector<Step> steps;
};

Operation unconditioned(const Operation& op) {
  Operation o = op;
  o.condition = {};
  return o;
}

// The reset channel {|0><0|, |0><1|} on q.
Operation reset_channel(int q) {
  Operation op;
  op.channel = ChannelId::kraus;
  op.wires = {q};
  op.kraus =
      std::make_shared<const std::vector<Matrix>>(std::vector<Matrix>{{1, 0, 0, 0}, {0, 1, 0, 0}});
  return op;
}

Plan plan_of(const Circuit& c, std::span<const double> theta, bool density,
             const EngineOptions& o) {
  Plan p;
  p.n = c.num_qubits();
  p.density = density;
  Circuit run(c.num_qubits());  // consecutive operations under the condition `condition`
  Condition condition;
  auto flush = [&] {
    if (run.ops().empty()) return;
    Step s;
    s.condition = condition;
    if (density) {
      s.gates = density_matrix_gates(run, theta, o);
    } else {
      s.gates = bind_params(run, theta);
      s.gates = fuse_up_to(s.gates, o.fusion);
    }
    p.steps.push_back(std::move(s));
    run = Circuit(c.num_qubits());
  };
  for (const Operation& op : c.ops()) {
    const bool reset_as_channel = density && op.instruction == Instruction::reset;
    if (reset_as_channel || (!op.is_instruction() && (density || !op.is_channel()))) {
      if (!(op.condition == condition)) {
        flush();
        condition = op.condition;
      }
      run.add(reset_as_channel ? reset_channel(op.wires[0]) : unconditioned(op));
      continue;
    }
    flush();
    Step s;
    s.condition = op.condition;
    if (op.is_channel()) {
      s.kind = Step::Kind::channel;
      s.branches = branches_of(unconditioned(op), theta);
    } else {
      s.kind = op.instruction == Instruction::measure ? Step::Kind::measure : Step::Kind::reset;
      s.qubit = op.wires[0];
      s.clbit = op.clbit;
      s.z.add(1.0, 0, index_t{1} << s.qubit);
    }
    p.steps.push_back(std::move(s));
  }
  flush();
  return p;
}

// The depth-first walk over outcomes. Exact: each leaf weighted by its
// probability. Sampling: each leaf weighted by its share of `count` shots,
// drawn binomially at each branch point, and sampled for them when asked.
template <class SV>
class Walker {
  using R = typename SV::real_type;

 public:
  Walker(const Plan& plan, const SimulateRequest& req, const EngineOptions& options, bool sampling,
         bool sample_leaves, std::uint64_t seed)
      : plan_(plan),
        req_(req),
        options_(options),
        sampling_(sampling),
        sample_leaves_(sample_leaves),
        rng_(seed),
        binomial_engine_(Rng(seed ^ 0x5851f42d4c957f2dULL).next()) {
    const int width = plan.density ? 2 * plan.n : plan.n;
    state_bytes_ = cpu::state_bytes(width, kPrecisionOf<R>);
    out.expvals.assign(req.observables.size(), 0.0);
    if (sampling) out.expval_errors.assign(req.observables.size(), 0.0);  // sums of squares first
    if (req.probabilities) out.probabilities.assign(std::size_t{1} << plan.n, 0.0);
  }

  // Walks from the initial state with `count` shots (sampling) or weight 1.
  void run(std::int64_t count) {
    total_ = count;
    std::unique_ptr<SV> s = new_state();
    if (plan_.density) {
      start_density_matrix(*s, plan_.n, options_);
    } else {
      s->set_basis_state(0);
      detail::set_initial_state(*s, options_);
    }
    walk(*s, count);
  }

  SimulateResult out;

 private:
  const Plan& plan_;
  const SimulateRequest& req_;
  const EngineOptions& options_;
  bool sampling_, sample_leaves_;
  Rng rng_;
  std::mt19937_64 binomial_engine_;
  std::int64_t total_ = 1, leaves_ = 1;
  std::uint64_t state_bytes_ = 0;
  int live_states_ = 0;
  std::vector<std::unique_ptr<SV>> spare_;

  std::unique_ptr<SV> new_state() {
    if (!spare_.empty()) {
      std::unique_ptr<SV> s = std::move(spare_.back());
      spare_.pop_back();
      return s;
    }
    if (!fits_in_memory((live_states_ + 1) * state_bytes_))
      throw Error("dynamic circuit: its branches need " + std::to_string(live_states_ + 1) +
                  " states of " + std::to_string(state_bytes_ >> 20) +
                  " MiB at once, more than this machine's memory");
    ++live_states_;
    const int width = plan_.density ? 2 * plan_.n : plan_.n;
    return std::make_unique<SV>(detail::make_state<SV>(width, options_));
  }

  double expval(const SV& s, const PauliSum& h) const {
    if (!plan_.density) return s.expval(h);
    SimulateRequest req;
    req.observables = {h};
    SimulateResult r;
    read_out_density_matrix(s, req, r);
    return r.expvals[0];
  }

  // The probability of each outcome of a branch point in state s.
  std::vector<double> outcome_probabilities(const Step& st, const SV& s) const {
    std::vector<double> p;
    if (st.kind == Step::Kind::channel) {
      const Branches& b = st.branches;
      for (std::size_t i = 0; i < b.kraus.size(); ++i)
        p.push_back(std::max(0.0, b.unitary[i] ? b.lower[i] : expval(s, b.weight[i])));
    } else {
      const double p1 = std::clamp((1 - expval(s, st.z)) / 2, 0.0, 1.0);
      p = {1 - p1, p1};
    }
    double sum = 0;
    for (double x : p) sum += x;
    for (double& x : p) x /= sum;
    return p;
  }

  // Shots split over outcomes of probabilities p (sequential binomials).
  std::vector<std::int64_t> split(std::int64_t shots, const std::vector<double>& p) {
    std::vector<std::int64_t> out(p.size(), 0);
    double mass = 1;
    for (std::size_t i = 0; i < p.size() && shots > 0; ++i) {
      const double q = i + 1 == p.size() ? 1.0 : std::clamp(p[i] / mass, 0.0, 1.0);
      out[i] = std::binomial_distribution<std::int64_t>(shots, q)(binomial_engine_);
      shots -= out[i];
      mass -= p[i];
    }
    return out;
  }

  // Collapses s onto outcome i of probability p (renormalised).
  void enter(const Step& st, std::size_t i, double p, SV& s) const {
    if (st.kind == Step::Kind::channel) {
      const Branches& b = st.branches;
      if (b.unitary[i]) {
        if (!b.identity[i]) s.apply(b.gate[i]);
        return;
      }
      BoundGate k = b.kraus[i];
      for (cplx& a : k.matrix) a /= std::sqrt(p);
      s.apply(k);
      return;
    }
    const int q = st.qubit, n = plan_.n;
    // An outcome of probability 1 leaves nothing to project (a reset from 1
    // still flips the qubit).
    if (p == 1.0 && !(st.kind == Step::Kind::reset && i == 1)) return;
    BoundGate project;
    project.diagonal = true;
    if (plan_.density) {  // rho -> P rho P / p on the row and column qubits
      project.targets = {q, q + n};
      project.matrix.assign(4, 0);
      project.matrix[i ? 3 : 0] = 1 / p;
    } else {
      project.targets = {q};
      project.matrix.assign(2, 0);
      project.matrix[i] = 1 / std::sqrt(p);
    }
    s.apply(project);
    if (st.kind == Step::Kind::reset && i == 1) {
      BoundGate x;
      x.targets = {q};
      x.matrix = {0, 1, 1, 0};
      s.apply(x);
      if (plan_.density) s.apply(column_half(x, n));
    }
  }

  static std::uint64_t record_after(const Step& st, std::size_t i, std::uint64_t record) {
    if (st.kind != Step::Kind::measure || st.clbit < 0) return record;
    const std::uint64_t bit = std::uint64_t{1} << st.clbit;
    return i ? record | bit : record & ~bit;
  }

  // One path of the walk: a state (owned, or the walk's first) at step k.
  struct Path {
    std::unique_ptr<SV> owned;
    SV* s = nullptr;
    std::size_t k = 0;
    double weight = 1;
    std::int64_t shots = 0;
    std::uint64_t record = 0;
  };
  // A branch point with several outcomes to walk: its path waits, unchanged,
  // until every outcome but the last has been walked from a copy.
  struct Fork {
    Path at;
    std::vector<double> p;
    std::vector<std::int64_t> shares;
    std::vector<std::size_t> next;  // the outcomes walked on
    std::size_t taken = 0;          // outcomes of `next` walked so far
  };

  // Follows `path` until its end (true: a leaf, unless nothing is left to
  // walk) or a branch point with several outcomes (false, `fork` filled in);
  // a branch point with one outcome is entered in place.
  bool follow(Path& path, Fork& fork, bool& is_leaf) {
    for (; path.k < plan_.steps.size(); ++path.k) {
      const Step& st = plan_.steps[path.k];
      if (st.condition.active() && !st.condition.holds(path.record)) continue;
      if (st.kind == Step::Kind::gates) {
        path.s->apply(st.gates);
        continue;
      }
      fork.p = outcome_probabilities(st, *path.s);
      fork.shares =
          sampling_ ? split(path.shots, fork.p) : std::vector<std::int64_t>(fork.p.size(), 0);
      fork.next.clear();
      for (std::size_t i = 0; i < fork.p.size(); ++i)
        if (sampling_ ? fork.shares[i] > 0 : fork.p[i] > kPrune) fork.next.push_back(i);
      is_leaf = false;
      if (fork.next.empty()) return true;  // no shots (or, by rounding, no outcome)
      if (fork.next.size() > 1) return false;
      take(fork, fork.next[0], path);
    }
    is_leaf = true;
    return true;
  }

  // Enters outcome i of the fork's branch point in `path` (at the fork's step).
  void take(const Fork& fork, std::size_t i, Path& path) {
    const Step& st = plan_.steps[path.k];
    enter(st, i, fork.p[i], *path.s);
    path.weight *= fork.p[i];
    path.shots = fork.shares[i];
    path.record = record_after(st, i, path.record);
  }

  // The next path to walk from the innermost fork: a copy for each outcome
  // but the last, which goes on in the fork's own state (the fork is done).
  Path resume(std::vector<Fork>& forks) {
    Fork& f = forks.back();
    const std::size_t i = f.next[f.taken++];
    Path path;
    if (f.taken < f.next.size()) {
      if (++leaves_ > options_.max_branches)
        throw Error("dynamic circuit: more than " + std::to_string(options_.max_branches) +
                    " branches of mid-circuit outcomes to walk exactly; raise the limit "
                    "(--max-branches, Options.max_branches) or sample it with shots "
                    "(one-shot)");
      path.owned = new_state();
      path.owned->copy_from(*f.at.s);
      path.s = path.owned.get();
      path.k = f.at.k;
      path.weight = f.at.weight;
      path.record = f.at.record;
    } else {
      path = std::move(f.at);
    }
    take(f, i, path);
    ++path.k;
    if (f.taken == f.next.size()) forks.pop_back();
    return path;
  }

  // Depth first over the outcomes, in order, without recursion (a chain of
  // branch points as long as the circuit keeps its forks on the heap).
  void walk(SV& start, std::int64_t shots) {
    std::vector<Fork> forks;
    Path path;
    path.s = &start;
    path.shots = shots;
    for (;;) {
      Fork fork;
      bool is_leaf = false;
      if (!follow(path, fork, is_leaf)) {
        fork.at = std::move(path);
        forks.push_back(std::move(fork));
      } else {
        if (is_leaf)
          leaf(*path.s,
               sampling_ ? static_cast<double>(path.shots) / static_cast<double>(total_)
                         : path.weight,
               path.shots, path.record);
        if (path.owned) spare_.push_back(std::move(path.owned));
        if (forks.empty()) return;
      }
      path = resume(forks);
    }
  }

  void leaf(const SV& s, double weight, std::int64_t shots, std::uint64_t record) {
    if (weight == 0) return;
    SimulateRequest req;
    req.observables = req_.observables;
    req.probabilities = req_.probabilities;
    SimulateResult r;
    if (plan_.density) {
      read_out_density_matrix(s, req, r);
    } else {
      for (const PauliSum& h : req.observables) r.expvals.push_back(s.expval(h));
      if (req.probabilities) r.probabilities = s.probabilities();
    }
    for (std::size_t k = 0; k < r.expvals.size(); ++k) {
      out.expvals[k] += weight * r.expvals[k];
      if (sampling_) out.expval_errors[k] += weight * r.expvals[k] * r.expvals[k];
    }
    for (std::size_t i = 0; i < r.probabilities.size(); ++i)
      out.probabilities[i] += weight * r.probabilities[i];
    out.record_probabilities[record] += weight;
    if (req_.leaves) {
      DynamicLeaf l{record, weight, shots, {}, r.expvals, r.probabilities};
      if (req_.leaf_states && plan_.density) {  // rho, row-major
        SimulateRequest as_matrix;
        as_matrix.state = true;
        SimulateResult rho;
        read_out_density_matrix(s, as_matrix, rho);
        l.state = std::move(rho.state);
      } else if (req_.leaf_states) {
        l.state = s.to_vector();
      }
      out.leaves.push_back(std::move(l));
    }
    if (!sample_leaves_) return;
    for (const auto& [outcome, hits] : s.sample(shots, rng_.next())) {
      out.records[{record, outcome}] += hits;
      out.counts[outcome] += hits;
    }
  }
};

// simulate_dynamic on the state type SV.
template <class SV>
SimulateResult dynamic_on(const Circuit& c, std::span<const double> theta,
                          const SimulateRequest& req, const EngineOptions& options) {
  const MethodChoice method = choose_method(c, options);
  const bool trajectories = method.trajectories();
  SimulateResult out;
  if (req.leaves && req.shots > 0) {  // the shot walk's branches, for the caller to sample
    const Plan plan = plan_of(c, theta, false, options);
    Walker<SV> walk(plan, req, options, true, false, req.seed);
    walk.run(req.shots);
    out = std::move(walk.out);
    out.expvals.clear();
    out.expval_errors.clear();
    return out;
  }
  if (!req.observables.empty() || req.probabilities || req.shots == 0) {
    const bool density = method.density_matrix();
    if (trajectories && options.trajectories < 1)
      throw Error("trajectories: " + std::to_string(options.trajectories) +
                  " is not a positive number of trajectories");
    const Plan plan = plan_of(c, theta, density, options);
    for (const Step& st : plan.steps) out.gates_after_fusion += st.gates.size();
    Walker<SV> values(plan, req, options, trajectories, false, options.seed);
    values.run(trajectories ? options.trajectories : 1);
    values.out.gates_after_fusion = out.gates_after_fusion;
    out = std::move(values.out);
    const auto count = static_cast<double>(options.trajectories);
    for (std::size_t k = 0; trajectories && k < out.expvals.size(); ++k) {
      const double mean = out.expvals[k], squares = out.expval_errors[k];
      const double variance = count > 1 ? (squares - mean * mean) * count / (count - 1) : 0;
      out.expval_errors[k] = std::sqrt(std::max(0.0, variance) / count);
    }
  }
  if (req.shots > 0) {
    const Plan plan = plan_of(c, theta, false, options);
    if (out.gates_after_fusion == 0)
      for (const Step& st : plan.steps) out.gates_after_fusion += st.gates.size();
    SimulateRequest bare;  // the samples only
    Walker<SV> samples(plan, bare, options, true, true, req.seed);
    samples.run(req.shots);
    out.counts = std::move(samples.out.counts);
    out.records = std::move(samples.out.records);
    if (out.record_probabilities.empty()) {
      for (const auto& [key, hits] : out.records)
        out.record_probabilities[key.first] +=
            static_cast<double>(hits) / static_cast<double>(req.shots);
    }
  }
  return out;
}

}  // namespace

template <class R>
SimulateResult simulate_dynamic(const Circuit& c, std::span<const double> theta,
                                const SimulateRequest& req, const EngineOptions& options) {
  if (req.state || req.most_probable)
    throw Error(
        "a dynamic circuit (mid-circuit measurement, reset or classical control) ends in a "
        "mixture of branches: it has no single final state");
  return detail::on_backend<R>(
      options, [&]<class SV>(const EngineOptions& o) { return dynamic_on<SV>(c, theta, req, o); });
}

template SimulateResult simulate_dynamic<float>(const Circuit&, std::span<const double>,
                                                const SimulateRequest&, const EngineOptions&);
template SimulateResult simulate_dynamic<double>(const Circuit&, std::span<const double>,
                                                 const SimulateRequest&, const EngineOptions&);

}  // namespace qmlsim
