#include "grad/trajectories.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "backends/cpu/statevector.h"
#include "core/env.h"
#include "core/error.h"
#include "core/memory.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "grad/density_matrix.h"
#include "grad/engine.h"
#include "grad/kraus_branches.h"
#include "passes/fusion.h"

namespace qmlsim {
namespace {

// The circuit at theta: per operation a bound gate or a channel's branches.
struct Plan {
  int n = 0;
  std::vector<std::optional<BoundGate>> gates;  // nullopt: channels[j] in order
  std::vector<Branches> channels;
};

Plan plan_of(const Circuit& c, std::span<const double> theta) {
  Plan p;
  p.n = c.num_qubits();
  for (const Operation& op : c.ops()) {
    if (op.is_channel()) {
      p.channels.push_back(branches_of(op, theta));
      p.gates.emplace_back();
    } else {
      p.gates.emplace_back(bind_params(op, theta));
    }
  }
  return p;
}

// Trajectory t's own stream.
Rng stream(std::uint64_t seed, std::uint64_t t) {
  return Rng(seed * 0x9e3779b97f4a7c15ULL ^ (t + 1) * 0xbf58476d1ce4e5b9ULL);
}

inline constexpr std::size_t kUndecided = ~std::size_t{0};

// The branch of `b` that the uniform r picks by the lower bounds alone
// (whatever the state), or kUndecided.
std::size_t decided(const Branches& b, double r) {
  double sum = 0;
  for (std::size_t i = 0; i < b.kraus.size(); ++i) {
    sum += b.lower[i];
    if (r < sum) return i;
  }
  return kUndecided;
}

// The branch of `b` that the uniform r picks; probability(i) measures p_i.
template <class Probability>
std::size_t pick(const Branches& b, double r, Probability&& probability) {
  if (const std::size_t i = decided(b, r); i != kUndecided) return i;
  double sum = 0, acc = 0;
  for (double lb : b.lower) sum += lb;
  const double rest = r - sum;
  std::size_t last = 0;
  for (std::size_t i = 0; i < b.kraus.size(); ++i) {
    const double p = b.unitary[i] ? b.lower[i] : probability(i);
    if (p > 0) last = i;
    acc += std::max(0.0, p - b.lower[i]);
    if (rest < acc) return i;
  }
  return last;  // r beyond the measured sum by rounding
}

struct TrajectoryOut {
  std::vector<double> expvals, probabilities;
  std::map<index_t, std::int64_t> counts;
};

// A trajectory's state on its way through the plan, with the gates queued
// for it (fused when it is next read). The state is kept unnormalised: a
// Kraus operator drawn by its lower bound is applied as it is (no pass), and
// the norm is measured only where a branch's probability is (rarely: with
// probability 1 - sum lb) or a readout needs it; a measured branch
// renormalises the state.
template <class SV>
struct Walk {
  explicit Walk(SV state, bool is_normalised = true)
      : sv(std::move(state)), normalised(is_normalised) {}

  SV sv;
  bool normalised = true;
  std::vector<BoundGate> queue;

  void flush(const EngineOptions& o) {
    if (queue.empty()) return;
    sv.apply(fuse_up_to(queue, o.fusion));
    queue.clear();
  }
  // Branch i of b, drawn by its lower bound.
  void take_decided(const Branches& b, std::size_t i) {
    if (!b.identity[i]) queue.push_back(b.gate[i]);
    normalised = normalised && b.unitary[i];
  }
  // The branch of b that the uniform r picks, measuring the state if needed.
  void take(const Branches& b, double r, const EngineOptions& o) {
    double norm2 = -1;                               // ||psi||^2, once measured
    std::vector<double> weight(b.kraus.size(), -1);  // ||K_i psi||^2, once measured
    auto probability = [&](std::size_t i) {
      if (norm2 < 0) {
        flush(o);
        norm2 = normalised ? 1.0 : sv.norm_squared();
      }
      if (weight[i] < 0) weight[i] = sv.expval(b.weight[i]);
      return weight[i] / norm2;
    };
    const std::size_t i = pick(b, r, probability);
    if (norm2 < 0) return take_decided(b, i);
    if (b.unitary[i]) {
      if (!b.identity[i] || norm2 != 1) push_scaled(b.gate[i], 1 / std::sqrt(norm2));
    } else {
      probability(i);
      if (!(weight[i] > 0)) throw Error("trajectories: a branch of probability 0 was drawn");
      push_scaled(b.gate[i], 1 / std::sqrt(weight[i]));
    }
    normalised = true;
  }
  // The plan's operations from `op` on (`channel` the index of the next
  // channel), one draw from rng per channel.
  void run(const Plan& plan, std::size_t op, std::size_t channel, Rng& rng,
           const EngineOptions& o) {
    for (; op < plan.gates.size(); ++op) {
      if (plan.gates[op])
        queue.push_back(*plan.gates[op]);
      else
        take(plan.channels[channel++], rng.uniform(), o);
    }
    flush(o);
  }
  // Each readout but the samples, of the normalised state.
  void values(const SimulateRequest& req, TrajectoryOut& out) {
    const double unscale = normalised ? 1.0 : 1 / sv.norm_squared();
    for (const PauliSum& h : req.observables) out.expvals.push_back(sv.expval(h) * unscale);
    if (req.probabilities) {
      out.probabilities = sv.probabilities();
      for (double& p : out.probabilities) p *= unscale;
    }
  }
  // `shots` samples, from rng's next number (the state normalised first).
  void sample(std::int64_t shots, Rng& rng, TrajectoryOut& out) {
    if (shots == 0) return;
    if (!normalised) {  // the sampler draws from a normalised state
      const double scale = 1 / std::sqrt(sv.norm_squared());
      BoundGate g;
      g.targets = {0};
      g.diagonal = true;
      g.matrix = {scale, scale};
      sv.apply(g);
      normalised = true;
    }
    out.counts = sv.sample(shots, rng.next());
  }

 private:
  void push_scaled(BoundGate g, double scale) {
    if (scale != 1)
      for (cplx& a : g.matrix) a *= scale;
    queue.push_back(std::move(g));
  }
};

template <class SV>
Walk<SV> start(const Plan& plan, const EngineOptions& o) {
  Walk<SV> w(detail::make_state<SV>(plan.n, o));
  w.sv.set_basis_state(0);
  detail::set_initial_state(w.sv, o);
  return w;
}

// Where the trajectories of a group leave the prefix they share, the spine:
// at each channel the spine takes the branch that most of the trajectories
// still on it draw by its lower bound (no state needed: every branch of a
// Pauli channel, the no-jump branch of damping mostly), and a trajectory
// leaves it at the first channel where its draw picks another branch or
// needs the state. With noise p per channel, a trajectory's expected shared
// part is (1 - (1-p)^C) / (p C) of its C channels (27% for p = 0.01 and C =
// 360).
struct Spine {
  std::vector<std::size_t> branch;              // per channel, while any trajectory is on it
  std::vector<std::vector<std::size_t>> leave;  // per channel: the members leaving there
  std::vector<double> draw;                     // per member: its draw where it leaves
  std::vector<Rng> rng;  // per member: its stream after that draw (after every one, staying)
};

Spine spine_of(const Plan& plan, std::uint64_t seed, std::uint64_t first, std::size_t count) {
  Spine s;
  s.leave.resize(plan.channels.size());
  s.draw.assign(count, 0);
  std::vector<std::size_t> on(count);
  for (std::size_t m = 0; m < count; ++m) {
    on[m] = m;
    s.rng.push_back(stream(seed, first + m));
  }
  std::vector<std::size_t> picks(count);
  for (std::size_t c = 0; c < plan.channels.size() && !on.empty(); ++c) {
    const Branches& b = plan.channels[c];
    std::vector<std::size_t> votes(b.kraus.size(), 0);
    for (std::size_t m : on) {
      s.draw[m] = s.rng[m].uniform();
      picks[m] = decided(b, s.draw[m]);
      if (picks[m] != kUndecided) ++votes[picks[m]];
    }
    const std::size_t branch =
        static_cast<std::size_t>(std::max_element(votes.begin(), votes.end()) - votes.begin());
    s.branch.push_back(branch);
    std::erase_if(on, [&](std::size_t m) {
      if (picks[m] == branch) return false;
      s.leave[c].push_back(m);
      return true;
    });
  }
  return s;
}

// Whether trajectories of n qubits share their prefixes: unless
// QMLSIM_SHARED_PREFIXES=0, where the spine and one trajectory fit in memory
// at once (a small state's spine also keeps a copy per channel where
// trajectories leave, for them to run in parallel).
template <class R>
bool share_prefixes(int n) {
  if (env_switch("QMLSIM_SHARED_PREFIXES") == 0) return false;
  return fits_in_memory(2 * cpu::state_bytes(n, kPrecisionOf<R>));
}

// Trajectories [first, first + outs.size()) of a group, each as run alone
// would run it (to rounding: the spine's fused runs end where trajectories
// leave), the prefix they share run once: the spine runs until the
// last trajectory leaves it, each leaving trajectory going on from a copy
// of the spine's state (flushed there). Large states run one trajectory at a
// time with the threads inside, small ones a trajectory per thread from
// copies the spine keeps. The group and its spine do not depend on the
// thread count, so neither do the results.
template <class SV>
void run_group(const Plan& plan, std::uint64_t first, const SimulateRequest& req,
               const std::function<std::int64_t(std::uint64_t)>& shots, const EngineOptions& o,
               std::vector<TrajectoryOut>& outs) {
  using R = typename SV::real_type;
  Spine s = spine_of(plan, o.seed, first, outs.size());
  // small states on the CPU run the leaving trajectories one per thread
  const bool small = o.backend == Backend::cpu && (std::int64_t{1} << plan.n) < kMinParallelWork;
  struct Leaving {
    std::size_t member, op, channel;
    const SV* from;
    bool normalised;
  };
  std::vector<Leaving> pending;
  std::vector<std::unique_ptr<SV>> copies;  // small states' spine states
  auto run_pending = [&] {
    const ItemSize size{plan.n, cpu::state_bytes(plan.n, kPrecisionOf<R>)};
    detail::for_each_item(pending.size(), size, o, [&](std::size_t i, const EngineOptions& in) {
      const Leaving& l = pending[i];
      Walk<SV> w(detail::make_state<SV>(plan.n, in), l.normalised);
      w.sv.copy_from(*l.from);
      Rng& rng = s.rng[l.member];
      w.take(plan.channels[l.channel], s.draw[l.member], in);
      w.run(plan, l.op + 1, l.channel + 1, rng, in);
      w.values(req, outs[l.member]);
      w.sample(shots(first + l.member), rng, outs[l.member]);
    });
    pending.clear();
    copies.clear();
  };
  Walk<SV> spine = start<SV>(plan, o);
  std::size_t on = outs.size(), channel = 0;
  for (std::size_t op = 0; op < plan.gates.size() && on > 0; ++op) {
    if (plan.gates[op]) {
      spine.queue.push_back(*plan.gates[op]);
      continue;
    }
    if (!s.leave[channel].empty()) {
      spine.flush(o);
      const SV* from = &spine.sv;
      if (small) {
        copies.push_back(std::make_unique<SV>(detail::make_state<SV>(plan.n, o)));
        copies.back()->copy_from(spine.sv);
        from = copies.back().get();
      }
      for (std::size_t m : s.leave[channel])
        pending.push_back({m, op, channel, from, spine.normalised});
      if (!small) run_pending();
      on -= s.leave[channel].size();
    }
    if (on > 0) spine.take_decided(plan.channels[channel], s.branch[channel]);
    ++channel;
  }
  run_pending();
  if (on == 0) return;
  spine.flush(o);
  std::vector<char> stays(outs.size(), 1);
  for (const std::vector<std::size_t>& members : s.leave)
    for (std::size_t m : members) stays[m] = 0;
  TrajectoryOut stayed;
  spine.values(req, stayed);
  for (std::size_t m = 0; m < outs.size(); ++m) {
    if (!stays[m]) continue;
    outs[m].expvals = stayed.expvals;
    outs[m].probabilities = stayed.probabilities;
    spine.sample(shots(first + m), s.rng[m], outs[m]);
  }
}

// Trajectory t run alone.
template <class SV>
TrajectoryOut run_one(const Plan& plan, std::uint64_t t, const SimulateRequest& req,
                      std::int64_t shots, const EngineOptions& o) {
  Rng rng = stream(o.seed, t);
  Walk<SV> w = start<SV>(plan, o);
  w.run(plan, 0, 0, rng, o);
  TrajectoryOut out;
  w.values(req, out);
  w.sample(shots, rng, out);
  return out;
}

void require_trajectories(const EngineOptions& options) {
  if (options.trajectories < 1)
    throw Error("trajectories: " + std::to_string(options.trajectories) +
                " is not a positive number of trajectories");
}

// Runs fn(t, item options) for trajectories [0, count) in blocks, then
// add(t, result) in trajectory order: a block runs one trajectory per thread
// for small states, else one at a time with the threads inside.
template <class Out, class Fn, class Add>
void for_each_trajectory(std::int64_t count, int n, const EngineOptions& options, Fn&& fn,
                         Add&& add) {
  const bool small = (std::int64_t{1} << n) < kMinParallelWork;
  const std::int64_t block = small ? 8 * std::max(1, options.threads) : 1;
  for (std::int64_t first = 0; first < count; first += block) {
    const auto size = static_cast<std::size_t>(std::min(block, count - first));
    std::vector<Out> outs(size);
    // a trajectory's state and, for its gradient, its adjoint (at most complex128)
    const ItemSize item{n, 2 * cpu::state_bytes(n, Precision::c128)};
    detail::for_each_item(size, item, options, [&](std::size_t i, const EngineOptions& inner) {
      outs[i] = fn(static_cast<std::uint64_t>(first) + i, inner);
    });
    for (std::size_t i = 0; i < size; ++i) add(static_cast<std::uint64_t>(first) + i, outs[i]);
  }
}

// Mean and standard error of each column of rows [t][k].
void mean_and_error(const std::vector<std::vector<double>>& rows, std::vector<double>& mean,
                    std::vector<double>& error) {
  const std::size_t k = rows.empty() ? 0 : rows[0].size();
  const double count = static_cast<double>(rows.size());
  mean.assign(k, 0);
  error.assign(k, 0);
  for (const auto& row : rows)
    for (std::size_t j = 0; j < k; ++j) mean[j] += row[j];
  for (double& m : mean) m /= count;
  if (rows.size() < 2) return;
  for (const auto& row : rows)
    for (std::size_t j = 0; j < k; ++j) error[j] += (row[j] - mean[j]) * (row[j] - mean[j]);
  for (double& e : error) e = std::sqrt(e / (count - 1) / count);
}

}  // namespace

std::pair<std::int64_t, std::int64_t> trajectory_range(std::int64_t count, int part, int parts) {
  const std::int64_t blocks = (count + kTrajectoryBlock - 1) / kTrajectoryBlock;
  auto start = [&](int p) { return std::min(count, blocks * p / parts * kTrajectoryBlock); };
  return {start(part), start(part + 1)};
}

namespace {

// trajectory_share on the state type SV.
template <class SV>
TrajectoryShare share_on(const Circuit& c, std::span<const double> theta,
                         const SimulateRequest& req, const EngineOptions& options,
                         std::int64_t first, std::int64_t last) {
  using R = typename SV::real_type;
  const Plan plan = plan_of(c, theta);
  const std::int64_t count = options.trajectories;
  const std::size_t dim = std::size_t{1} << plan.n;
  TrajectoryShare out;
  auto shots = [&](std::uint64_t t) {
    return req.shots / count + (static_cast<std::int64_t>(t) < req.shots % count);
  };
  auto add = [&](std::uint64_t i, const TrajectoryOut& r) {  // i from first, in order
    out.expvals.insert(out.expvals.end(), r.expvals.begin(), r.expvals.end());
    if (req.probabilities) {
      if (i % kTrajectoryBlock == 0) out.probabilities.resize(out.probabilities.size() + dim);
      double* block = out.probabilities.data() + out.probabilities.size() - dim;
      for (std::size_t k = 0; k < dim; ++k) block[k] += r.probabilities[k];
    }
    for (const auto& [outcome, hits] : r.counts) out.counts[outcome] += hits;
  };
  if (!share_prefixes<R>(plan.n)) {
    for_each_trajectory<TrajectoryOut>(
        last - first, plan.n, options,
        [&](std::uint64_t i, const EngineOptions& o) {
          const std::uint64_t t = static_cast<std::uint64_t>(first) + i;
          return run_one<SV>(plan, t, req, shots(t), o);
        },
        add);
    return out;
  }
  for (std::int64_t group = first; group < last; group += kTrajectoryBlock) {
    std::vector<TrajectoryOut> outs(
        static_cast<std::size_t>(std::min(kTrajectoryBlock, last - group)));
    run_group<SV>(plan, static_cast<std::uint64_t>(group), req, shots, options, outs);
    for (std::size_t m = 0; m < outs.size(); ++m)
      add(static_cast<std::uint64_t>(group - first) + m, outs[m]);
  }
  return out;
}

}  // namespace

template <class R>
TrajectoryShare trajectory_share(const Circuit& c, std::span<const double> theta,
                                 const SimulateRequest& req, const EngineOptions& options,
                                 std::int64_t first, std::int64_t last) {
  require_trajectories(options);
  if (req.state || req.most_probable)
    throw Error(
        "trajectories: a noisy circuit has no single final state (use the density "
        "matrix for the state, probabilities or samples)");
  return detail::on_backend<R>(options, [&]<class SV>(const EngineOptions& o) {
    return share_on<SV>(c, theta, req, o, first, last);
  });
}

SimulateResult combine_trajectories(const TrajectoryShare& all, const SimulateRequest& req,
                                    std::int64_t count) {
  const std::size_t k = req.observables.size();
  std::vector<std::vector<double>> rows(static_cast<std::size_t>(count));
  for (std::size_t t = 0; t < rows.size(); ++t)
    rows[t].assign(all.expvals.begin() + static_cast<std::ptrdiff_t>(t * k),
                   all.expvals.begin() + static_cast<std::ptrdiff_t>((t + 1) * k));
  SimulateResult out;
  mean_and_error(rows, out.expvals, out.expval_errors);
  out.counts = all.counts;
  if (req.probabilities && !all.probabilities.empty()) {
    const std::size_t blocks =
        static_cast<std::size_t>((count + kTrajectoryBlock - 1) / kTrajectoryBlock);
    const std::size_t dim = all.probabilities.size() / blocks;
    out.probabilities.assign(dim, 0.0);
    for (std::size_t b = 0; b < blocks; ++b)
      for (std::size_t i = 0; i < dim; ++i) out.probabilities[i] += all.probabilities[b * dim + i];
    for (double& p : out.probabilities) p /= static_cast<double>(count);
  }
  return out;
}

template <class R>
SimulateResult simulate_trajectories(const Circuit& c, std::span<const double> theta,
                                     const SimulateRequest& req, const EngineOptions& options) {
  const std::int64_t count = options.trajectories;
  return combine_trajectories(trajectory_share<R>(c, theta, req, options, 0, count), req, count);
}

template <class R>
std::vector<double> trajectory_vjp_share(const Circuit& c, std::span<const double> theta,
                                         const std::vector<PauliSum>& observables,
                                         std::span<const double> weights,
                                         const EngineOptions& options, std::int64_t first,
                                         std::int64_t last) {
  require_trajectories(options);
  std::vector<Branches> branches;
  for (const Operation& op : c.ops()) {
    if (!op.is_channel()) continue;
    detail::require_literal_channel_params(op);
    branches.push_back(branches_of(op, theta));
    if (!branches.back().mixture())
      throw Error(describe(op) +
                  ": gradients by trajectories need every channel to be a mixture of unitaries "
                  "(Pauli channels, depolarizing, dephasing); use the density matrix for this "
                  "one (--method density_matrix, noise.method = \"density_matrix\" in a "
                  "training config, method=\"density_matrix\" in Python)");
  }
  EngineOptions plain = options;
  plain.method = Method::statevector;
  std::vector<double> rows;
  for_each_trajectory<AdjointResult>(
      last - first, c.num_qubits(), plain,
      [&](std::uint64_t i, const EngineOptions& o) {
        Rng rng = stream(options.seed, static_cast<std::uint64_t>(first) + i);
        Circuit fixed(c.num_qubits());  // the trajectory's unitary circuit
        std::size_t j = 0;
        for (const Operation& op : c.ops()) {
          if (!op.is_channel()) {
            fixed.add(op);
            continue;
          }
          const Branches& b = branches[j++];
          const std::size_t i = pick(b, rng.uniform(), [](std::size_t) { return 0.0; });
          if (b.identity[i]) continue;
          Operation u;  // canonical targets ascending: the first wire the least significant
          u.gate = GateId::QubitUnitary;
          u.wires.assign(b.gate[i].targets.rbegin(), b.gate[i].targets.rend());
          u.unitary = std::make_shared<Matrix>(b.gate[i].matrix);
          fixed.add(std::move(u));
        }
        return adjoint_vjp<R>(fixed, theta, observables, weights, o);
      },
      [&](std::uint64_t, const AdjointResult& r) {
        rows.insert(rows.end(), r.expvals.begin(), r.expvals.end());
        rows.insert(rows.end(), r.gradient.begin(), r.gradient.end());
      });
  return rows;
}

AdjointResult combine_trajectory_vjps(std::span<const double> rows, std::size_t observables,
                                      std::size_t params, std::int64_t count) {
  const std::size_t width = observables + params;
  std::vector<std::vector<double>> values(static_cast<std::size_t>(count)), grads(values.size());
  for (std::size_t t = 0; t < values.size(); ++t) {
    const double* row = rows.data() + t * width;
    values[t].assign(row, row + observables);
    grads[t].assign(row + observables, row + width);
  }
  AdjointResult out;
  std::vector<double> unused;
  mean_and_error(values, out.expvals, unused);
  mean_and_error(grads, out.gradient, unused);
  return out;
}

template <class R>
AdjointResult trajectories_vjp(const Circuit& c, std::span<const double> theta,
                               const std::vector<PauliSum>& observables,
                               std::span<const double> weights, const EngineOptions& options) {
  const std::vector<double> rows =
      trajectory_vjp_share<R>(c, theta, observables, weights, options, 0, options.trajectories);
  return combine_trajectory_vjps(rows, observables.size(), theta.size(), options.trajectories);
}

#define QMLSIM_INSTANTIATE(R)                                                                     \
  template TrajectoryShare trajectory_share<R>(const Circuit&, std::span<const double>,           \
                                               const SimulateRequest&, const EngineOptions&,      \
                                               std::int64_t, std::int64_t);                       \
  template SimulateResult simulate_trajectories<R>(const Circuit&, std::span<const double>,       \
                                                   const SimulateRequest&, const EngineOptions&); \
  template std::vector<double> trajectory_vjp_share<R>(                                           \
      const Circuit&, std::span<const double>, const std::vector<PauliSum>&,                      \
      std::span<const double>, const EngineOptions&, std::int64_t, std::int64_t);                 \
  template AdjointResult trajectories_vjp<R>(const Circuit&, std::span<const double>,             \
                                             const std::vector<PauliSum>&,                        \
                                             std::span<const double>, const EngineOptions&);
QMLSIM_INSTANTIATE(float)
QMLSIM_INSTANTIATE(double)
#undef QMLSIM_INSTANTIATE

}  // namespace qmlsim
