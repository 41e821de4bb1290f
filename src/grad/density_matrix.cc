#include "grad/density_matrix.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "backends/cpu/statevector.h"
#include "core/error.h"
#include "core/memory.h"
#include "grad/adjoint_parts.h"
#include "grad/engine.h"
#include "grad/tape.h"
#include "passes/fusion.h"
#include "passes/light_cone.h"

namespace qmlsim {

namespace {

template <class SV>
using Traits = detail::BackendTraits<SV>;

// A density matrix on n qubits: a state of 2n on the options' backend.
template <class SV>
std::unique_ptr<SV> new_state(int n, const EngineOptions& options) {
  return std::make_unique<SV>(detail::make_state<SV>(2 * n, options));
}

// States of one pass, reused: a checkpoint is read once, by the backward pass,
// which then hands its old state back (allocating each anew cost more than the
// copies: the kernel zeroes every new page).
template <class SV>
class StatePool {
 public:
  StatePool(int n, const EngineOptions& options) : n_(n), options_(options) {}
  std::unique_ptr<SV> copy_of(const SV& s) {
    std::unique_ptr<SV> out;
    if (spare_.empty()) {
      out = new_state<SV>(n_, options_);
    } else {
      out = std::move(spare_.back());
      spare_.pop_back();
    }
    out->copy_from(s);
    return out;
  }
  void give_back(std::unique_ptr<SV> s) { spare_.push_back(std::move(s)); }

 private:
  int n_;
  const EngineOptions& options_;
  std::vector<std::unique_ptr<SV>> spare_;
};

// rho = |0><0|, |psi><psi| for a given initial state psi, or a given
// density matrix (row-major).
template <class SV>
void set_initial(SV& rho, int n, const EngineOptions& options) {
  const std::span<const cplx> init = options.initial_state;
  if (init.empty()) {
    rho.set_basis_state(0);
    return;
  }
  const index_t dim = index_t{1} << n;
  std::vector<cplx> v(dim * dim);
  if (init.size() == dim * dim) {
    for (index_t c = 0; c < dim; ++c)
      for (index_t r = 0; r < dim; ++r) v[r + dim * c] = init[r * dim + c];
  } else if (init.size() == dim) {
    for (index_t c = 0; c < dim; ++c)
      for (index_t r = 0; r < dim; ++r) v[r + dim * c] = init[r] * std::conj(init[c]);
  } else {
    throw Error("initial state: " + std::to_string(init.size()) + " amplitudes for " +
                std::to_string(n) + " qubit(s)");
  }
  rho.set_amplitudes(v);
}

// The circuit cut at its channels: stretches[j] holds the gates between
// channel groups j - 1 and j (stretches.size() == groups.size() + 1); a group
// is a run of channels with no gate between them (a noise layer), which the
// backward pass crosses with one restored state and one pass of duals.
struct Cut {
  std::vector<Circuit> stretches;
  std::vector<std::vector<const Operation*>> groups;
};

bool has_trainable_params(const Operation& op) {
  return std::any_of(op.params.begin(), op.params.end(),
                     [](const ParamExpr& p) { return p.slot >= 0; });
}

// With trainable_alone, a channel with a trainable parameter is a group of
// its own, so the state restored for its group is the state before it.
Cut cut_at_channels(const Circuit& c, bool trainable_alone) {
  Cut cut;
  cut.stretches.emplace_back(c.num_qubits());
  bool joins = false;  // the next channel joins the last group
  for (const Operation& op : c.ops()) {
    if (!op.is_channel()) {
      cut.stretches.back().add(op);
      joins = false;
      continue;
    }
    const bool alone = trainable_alone && has_trainable_params(op);
    if (!joins || alone) {
      cut.groups.emplace_back();
      cut.stretches.emplace_back(c.num_qubits());
    }
    cut.groups.back().push_back(&op);
    joins = !alone;
  }
  return cut;
}

// d/dtheta of Re <lambda| S(theta) |rho> for a channel op with superoperator
// S, added to gradient: each trainable parameter's superoperator derivative
// between lambda (after op) and rho (before it), times its scale.
template <class SV>
void add_channel_gradient(const Operation& op, std::span<const double> theta, int n,
                          const SV& lambda, const SV& rho, std::vector<double>& gradient) {
  for (std::size_t k = 0; k < op.params.size(); ++k) {
    const ParamExpr& p = op.params[k];
    if (p.slot < 0) continue;
    const BoundGate d = bind_channel_derivative(op, theta, n, static_cast<int>(k));
    gradient[static_cast<std::size_t>(p.slot)] += p.scale * lambda.matrix_element(d, rho).real();
  }
}

// The density-matrix tape of a stretch: each gate's row half, with its
// derivatives, then its column half.
std::vector<TapeStep> density_tape(const Circuit& stretch, std::span<const double> theta, int n) {
  std::vector<TapeStep> out;
  for (TapeStep& row : make_tape(stretch, theta)) {
    TapeStep column{column_half(row.gate, n), {}};
    out.push_back(std::move(row));
    out.push_back(std::move(column));
  }
  return out;
}

// Gates or superoperators (channels, their inverses or duals) fused as
// options say.
std::vector<BoundGate> fused(const std::vector<BoundGate>& gates, const EngineOptions& options) {
  return fuse_up_to(gates, options.fusion);
}

// Every operation of c in density-matrix form, fused.
std::vector<BoundGate> density_gates(const Circuit& c, std::span<const double> theta,
                                     const EngineOptions& options) {
  const int n = c.num_qubits();
  std::vector<BoundGate> gates;
  for (const Operation& op : c.ops()) {
    if (op.is_channel()) {
      gates.push_back(bind_channel(op, theta, n));
      continue;
    }
    const BoundGate g = bind_params(op, theta);
    gates.push_back(g);
    gates.push_back(column_half(g, n));
  }
  return fused(gates, options);
}

// rho's readouts: the state type's own (its density_* operations).
template <class SV>
void read_out(const SV& rho, const SimulateRequest& req, SimulateResult& out) {
  for (const PauliSum& h : req.observables) out.expvals.push_back(rho.density_trace(h));
  if (req.state) out.state = rho.density_rows();
  if (req.probabilities || req.shots > 0 || req.most_probable)
    read_out_diagonal(rho.density_diagonal(), req, out);
}

// m^-1 in place by Gauss-Jordan elimination with partial pivoting; false
// (m unspecified) when m is singular to working precision.
bool invert(Matrix& m) {
  const std::size_t d = static_cast<std::size_t>(std::lround(std::sqrt(m.size())));
  Matrix inv(d * d);
  for (std::size_t i = 0; i < d; ++i) inv[i * d + i] = 1;
  for (std::size_t c = 0; c < d; ++c) {
    std::size_t p = c;
    for (std::size_t r = c + 1; r < d; ++r)
      if (std::abs(m[r * d + c]) > std::abs(m[p * d + c])) p = r;
    if (std::abs(m[p * d + c]) < 1e-12) return false;
    for (std::size_t j = 0; j < d; ++j) {
      std::swap(m[c * d + j], m[p * d + j]);
      std::swap(inv[c * d + j], inv[p * d + j]);
    }
    const cplx pivot = m[c * d + c];
    for (std::size_t j = 0; j < d; ++j) {
      m[c * d + j] /= pivot;
      inv[c * d + j] /= pivot;
    }
    for (std::size_t r = 0; r < d; ++r) {
      if (r == c || m[r * d + c] == cplx(0)) continue;
      const cplx f = m[r * d + c];
      for (std::size_t j = 0; j < d; ++j) {
        m[r * d + j] -= f * m[c * d + j];
        inv[r * d + j] -= f * inv[c * d + j];
      }
    }
  }
  m = std::move(inv);
  return true;
}

// The largest absolute column sum: how much an error in vec(rho) can grow, in
// the 1-norm, through the map.
double norm1(const Matrix& m) {
  const std::size_t d = static_cast<std::size_t>(std::lround(std::sqrt(m.size())));
  double best = 0;
  for (std::size_t c = 0; c < d; ++c) {
    double sum = 0;
    for (std::size_t r = 0; r < d; ++r) sum += std::abs(m[r * d + c]);
    best = std::max(best, sum);
  }
  return best;
}

// The inverse of every channel's superoperator, in circuit order, when every
// channel is invertible and rounding errors grow by at most `max_growth`
// through all of them; empty otherwise.
std::vector<BoundGate> channel_inverses(const Circuit& c, std::span<const double> theta, int n,
                                        double max_growth) {
  std::vector<BoundGate> out;
  double growth = 1;
  for (const Operation& op : c.ops()) {
    if (!op.is_channel()) continue;
    BoundGate inverse = bind_channel(op, theta, n);
    if (!invert(inverse.matrix)) return {};
    growth *= norm1(inverse.matrix);
    if (growth > max_growth) return {};
    out.push_back(std::move(inverse));
  }
  return out;
}

// One channel group's maps: per channel (in circuit order) its
// superoperator, its dual and, when channels are undone, its inverse.
struct GroupMaps {
  std::vector<const Operation*> ops;
  std::vector<BoundGate> forward, dual, inverse;
};

// Operations queued for a state in the order they apply, applied fused when
// the state is next read: runs of channels, inverses and gates without
// trainable parameters fuse across stretch and group boundaries.
template <class SV>
void flush(SV& s, std::vector<BoundGate>& queued, const EngineOptions& options) {
  if (!queued.empty()) s.apply(fused(queued, options));
  queued.clear();
}

// The backward pass where channels are undone: the steps between two reads
// of the states (a trainable channel's term, or the end) as one adjoint sweep.
// Stretches with trainable gates are measured on both states; the rest
// (channel inverses on rho, duals on lambda, the inverses of stretches without
// trainable gates on both) is fused per state between them and taken as steps
// on one state, so the sweep's cache-blocked segments carry it: one pass over
// both states for many gates and channels, where a queue applied on its own
// costs a pass per state.
template <class SV>
class BackwardSweep {
 public:
  explicit BackwardSweep(const EngineOptions& options) : options_(options) {}

  // Steps are added in the order they apply (from the circuit's end).
  void undo_both(const BoundGate& g) {
    rho_run_.push_back(g);
    lambda_run_.push_back(g);
  }
  void undo_rho(const BoundGate& g) { rho_run_.push_back(g); }
  void pull_back_lambda(const BoundGate& g) { lambda_run_.push_back(g); }
  // A stretch's tape with trainable gates (kept alive until run).
  void measure(const std::vector<TapeStep>& tape) {
    close_run();
    Segmented seg = segment(tape, options_.fusion);
    std::vector<BoundGate> inverse;
    std::vector<Measure> measured;
    inverse_gates(seg, inverse, measured);
    for (std::size_t i = inverse.size(); i-- > 0;)
      add(std::move(inverse[i]), measured[i], Side::both);
    stretches_.push_back({std::move(seg), gates_.size()});
  }

  // Applies every step added since the last run and adds the measured
  // stretches' gradients; with undo_all the states are read afterwards.
  void run(SV& rho, SV& lambda, bool undo_all, std::vector<double>& gradient) {
    if (stretches_.empty()) {  // nothing measured: each state's run by apply (larger chunks)
      if (undo_all) {
        flush(rho, rho_run_, options_);
        flush(lambda, lambda_run_, options_);
      }
      rho_run_.clear();
      lambda_run_.clear();
      return;
    }
    close_run();
    const std::size_t count = gates_.size();
    if (count > 0) {
      // The sweep takes the inverses in forward order: the reverse of ours.
      std::reverse(gates_.begin(), gates_.end());
      std::reverse(measure_.begin(), measure_.end());
      std::reverse(sides_.begin(), sides_.end());
      std::vector<Matrix> cross;
      rho.adjoint_sweep(lambda, gates_, measure_, cross, undo_all, sides_);
      for (const auto& [seg, end] : stretches_) {  // seg's gates end at `end` in our order
        const std::size_t first = count - end;
        accumulate(seg,
                   std::vector<Matrix>(
                       cross.begin() + static_cast<std::ptrdiff_t>(first),
                       cross.begin() + static_cast<std::ptrdiff_t>(first + seg.gates.size())),
                   gradient);
      }
    }
    gates_.clear();
    measure_.clear();
    sides_.clear();
    stretches_.clear();
  }

 private:
  void add(BoundGate g, Measure measured, Side side) {
    gates_.push_back(std::move(g));
    measure_.push_back(measured);
    sides_.push_back(side);
  }
  // The unmeasured steps since the last measured stretch, fused per state.
  void close_run() {
    for (BoundGate& g : fused(rho_run_, options_))
      add(std::move(g), Measure::none, Side::this_only);
    for (BoundGate& g : fused(lambda_run_, options_))
      add(std::move(g), Measure::none, Side::lambda_only);
    rho_run_.clear();
    lambda_run_.clear();
  }

  const EngineOptions& options_;
  std::vector<BoundGate> rho_run_, lambda_run_;
  std::vector<BoundGate> gates_;  // in the order they apply
  std::vector<Measure> measure_;
  std::vector<Side> sides_;
  std::vector<std::pair<Segmented, std::size_t>> stretches_;  // with the end of their steps
};

template <class SV>
SimulateResult simulate_on(const Circuit& c, std::span<const double> theta,
                           const SimulateRequest& req, const EngineOptions& options) {
  const int n = c.num_qubits();
  const std::vector<BoundGate> gates = density_gates(c, theta, options);
  auto rho = new_state<SV>(n, options);
  set_initial(*rho, n, options);
  rho->apply(gates);
  SimulateResult out;
  out.gates_after_fusion = gates.size();
  read_out(*rho, req, out);
  return out;
}

}  // namespace

template <class R>
SimulateResult simulate_density_matrix(const Circuit& c, std::span<const double> theta,
                                       const SimulateRequest& req, const EngineOptions& options) {
  return detail::on_backend<R>(
      options, [&]<class SV>(const EngineOptions& o) { return simulate_on<SV>(c, theta, req, o); });
}

namespace {

bool has_trainable_gates(const std::vector<TapeStep>& tape) {
  return std::any_of(tape.begin(), tape.end(),
                     [](const TapeStep& t) { return !t.derivatives.empty(); });
}

// How the backward pass gets rho before each channel group, and the pieces
// both passes run: the cut at channel groups, each group's maps, each
// stretch's tape, and the forward legs.
struct BackwardPlan {
  bool uncompute = false;  // channels undone by their inverses (else states kept)
  std::vector<GroupMaps> groups;
  std::vector<std::vector<TapeStep>> tapes;  // per stretch
  // Where states are kept: the groups before which the backward pass reads
  // rho (stretch j has trainable gates or group j a trainable channel), in
  // order. Leg u: every group and stretch after cut u - 1 (the start for u =
  // 0) up to cut u (the end for the last leg), fused as one run: after leg u,
  // rho is the state before group cuts[u].
  std::vector<std::size_t> cuts;
  std::vector<std::vector<BoundGate>> legs;
};

template <class R>
BackwardPlan plan_backward(const Circuit& c, std::span<const double> theta,
                           const EngineOptions& options) {
  const int n = c.num_qubits();
  // The backward pass needs rho before each channel group. The forward pass
  // keeps them all when they fit options.checkpoint_bytes and the groups are
  // noise layers (n / 2 channels or more on average: a copy then costs less
  // than undoing a group, a pass per channel block); otherwise channels are
  // undone by their inverses where those exist and keep rounding errors small
  // (1e-16 grown 1e6-fold in complex128, 1e-7 10-fold in complex64): with
  // noise after every gate, keeping would cut the forward pass into a leg per
  // gate and copy the state as often; otherwise the forward pass keeps the
  // states it can (every stride-th group) and recomputes the others.
  const Precision precision = kPrecisionOf<R>;
  const std::uint64_t bytes = density_matrix_bytes(n, precision);
  Cut cut = cut_at_channels(c, /*trainable_alone=*/true);
  std::size_t channels = 0;
  for (const std::vector<const Operation*>& g : cut.groups) channels += g.size();
  const bool layers = 2 * channels >= cut.groups.size() * static_cast<std::size_t>(n);
  std::vector<BoundGate> inverses;
  if (!layers || bytes * cut.groups.size() > options.checkpoint_bytes)
    inverses = channel_inverses(c, theta, n, sizeof(R) == 8 ? 1e6 : 10.0);
  BackwardPlan plan;
  plan.uncompute = !inverses.empty();
  const bool uncompute = plan.uncompute;
  if (uncompute) cut = cut_at_channels(c, false);
  const std::size_t m = cut.groups.size();
  std::vector<GroupMaps>& groups = plan.groups;
  groups.resize(m);
  for (std::size_t j = 0, k = 0; j < m; ++j) {
    groups[j].ops = cut.groups[j];
    for (const Operation* op : cut.groups[j]) {
      groups[j].forward.push_back(bind_channel(*op, theta, n));
      groups[j].dual.push_back(adjoint(groups[j].forward.back()));  // as bind_channel's dual
      if (uncompute) groups[j].inverse.push_back(inverses[k++]);
    }
  }
  std::vector<std::vector<TapeStep>>& tapes = plan.tapes;
  for (const Circuit& s : cut.stretches) tapes.push_back(density_tape(s, theta, n));
  if (uncompute) return plan;
  std::vector<BoundGate> run;
  for (std::size_t j = 0; j <= m; ++j) {
    if (j > 0) run.insert(run.end(), groups[j - 1].forward.begin(), groups[j - 1].forward.end());
    for (const TapeStep& t : tapes[j]) run.push_back(t.gate);
    const bool read = j == m || has_trainable_gates(tapes[j]) ||
                      std::any_of(groups[j].ops.begin(), groups[j].ops.end(),
                                  [](const Operation* op) { return has_trainable_params(*op); });
    if (!read) continue;
    if (j < m) plan.cuts.push_back(j);
    plan.legs.push_back(fused(run, options));
    run.clear();
  }
  return plan;
}

// pull_back's result: <H_k> of the final rho, and a gradient per start.
struct PullBack {
  std::vector<double> expvals;
  std::vector<std::vector<double>> gradients;
};

// A backward pass's adjoint state lambda0 = vec(L), L Hermitian: vec(h), or
// the given amplitudes when there are any (owned by the caller).
struct AdjointStart {
  PauliSum h;
  std::span<const cplx> amplitudes;
};
// lambda0 given <H_k> of the final rho (a loss's weights may depend on them).
using Start = std::function<AdjointStart(const std::vector<double>& expvals)>;

// One forward pass of a density-matrix gradient, keeping the states its
// backward passes restore, and backward passes from its final rho.
template <class SV>
class PullBackRun {
 public:
  PullBackRun(const Circuit& c, std::span<const double> theta, const EngineOptions& options)
      : c_(c),
        theta_(theta),
        options_(options),
        n_(c.num_qubits()),
        plan_(plan_backward<typename SV::real_type>(c, theta, options)),
        pool_(n_, options) {
    const std::uint64_t bytes = density_matrix_bytes(n_, kPrecisionOf<typename SV::real_type>);
    const std::size_t kept = plan_.cuts.size();
    if (!plan_.uncompute && kept > 0 && bytes * kept > options.checkpoint_bytes)
      stride_ = static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(kept))));
  }

  // The final rho, every stride-th state before a cut kept on the way.
  const SV& forward() {
    rho_ = new_state<SV>(n_, options_);
    set_initial(*rho_, n_, options_);
    if (plan_.uncompute) rho_->apply(density_gates(c_, theta_, options_));  // fused across groups
    for (std::size_t u = 0; !plan_.uncompute && u < plan_.legs.size(); ++u) {
      rho_->apply(plan_.legs[u]);
      if (u < plan_.cuts.size() && u % stride_ == 0) kept_[u] = pool_.copy_of(*rho_);
    }
    return *rho_;
  }
  std::unique_ptr<SV> copy_of(const SV& s) { return pool_.copy_of(s); }
  // The gradient of <lambda|vec(rho)> from lambda as set (vec(H_w)), rho the
  // final state (`rho`, handed over; null: the forward pass's); `last`: no
  // pass follows (the kept states are then taken, not copied). lambda is
  // pulled back through stretches and dual channels, rho undone (one sweep:
  // BackwardSweep) or restored from the kept states.
  std::vector<double> backward(SV& lambda, std::unique_ptr<SV> rho, bool last) {
    if (rho) pool_.give_back(std::exchange(rho_, std::move(rho)));
    last_pass_ = last;
    return plan_.uncompute ? backward_undoing(lambda) : backward_restoring(lambda);
  }

 private:
  // The state at cut k (before channel group cuts[k]), taken out (each is
  // read once per backward pass): kept (a copy while another pass follows),
  // or recomputed with the rest of its block when the pass enters the block.
  std::unique_ptr<SV> at_cut(std::size_t k) {
    if (k % stride_ == 0 && !last_pass_) return pool_.copy_of(*kept_.at(k));
    if (k % stride_ != 0 && !block_.count(k)) {
      const std::size_t first = k - k % stride_;
      auto s = pool_.copy_of(*kept_.at(first));
      for (std::size_t i = first + 1; i <= k; ++i) {
        s->apply(plan_.legs[i]);
        block_[i] = i == k ? std::move(s) : pool_.copy_of(*s);
      }
    }
    auto& from = k % stride_ == 0 ? kept_ : block_;
    auto out = std::move(from.at(k));
    from.erase(k);
    return out;
  }

  // Channels undone by their inverses: one sweep over both states between
  // the reads a trainable channel's term makes.
  std::vector<double> backward_undoing(SV& lambda) {
    std::vector<double> gradient(theta_.size(), 0.0);
    BackwardSweep<SV> sweep(options_);
    const std::vector<std::vector<TapeStep>>& tapes = plan_.tapes;
    for (std::size_t j = plan_.groups.size() + 1; j-- > 0;) {
      if (has_trainable_gates(tapes[j])) {
        sweep.measure(tapes[j]);
      } else {
        for (std::size_t i = tapes[j].size(); i-- > 0;) sweep.undo_both(adjoint(tapes[j][i].gate));
      }
      if (j == 0) break;
      // Back through channel group j - 1: rho before each channel, lambda after it.
      const GroupMaps& g = plan_.groups[j - 1];
      for (std::size_t i = g.ops.size(); i-- > 0;) {
        sweep.undo_rho(g.inverse[i]);
        if (has_trainable_params(*g.ops[i])) {
          sweep.run(*rho_, lambda, /*undo_all=*/true, gradient);
          add_channel_gradient(*g.ops[i], theta_, n_, lambda, *rho_, gradient);
        }
        sweep.pull_back_lambda(g.dual[i]);
      }
    }
    sweep.run(*rho_, lambda, /*undo_all=*/false, gradient);
    return gradient;
  }

  // A stretch with trainable gates swept; rho is not read after it (the next
  // one swept, or channel measured, restores it from a cut). Where no gate
  // needs undoing for another's sums (a layer on distinct wires) and the
  // backend's sweep then leaves the states alone, it forms them in place,
  // and lambda's undo joins its queue.
  void sweep_stretch(const std::vector<TapeStep>& tape, bool more, SV& lambda,
                     std::vector<BoundGate>& lambda_queue, std::vector<double>& gradient) {
    flush(lambda, lambda_queue, options_);
    const Segmented seg = segment(tape, options_.fusion);  // cost-aware: only where swept
    std::vector<BoundGate> inverse;
    std::vector<Measure> measure;
    inverse_gates(seg, inverse, measure);
    const std::vector<char> needed = undo_needed(inverse, measure, false);
    const bool in_place = Traits<SV>::kSweepSkipsUnneededSteps &&
                          std::none_of(needed.begin(), needed.end(), [](char c) { return c; });
    std::vector<Matrix> cross;
    rho_->adjoint_sweep(lambda, inverse, measure, cross, /*undo_all=*/more && !in_place);
    accumulate(seg, cross, gradient);
    if (in_place && more) lambda_queue.insert(lambda_queue.end(), inverse.rbegin(), inverse.rend());
  }

  // States restored at the cuts: a stretch without trainable gates is not
  // swept (its inverse joins lambda's queue).
  std::vector<double> backward_restoring(SV& lambda) {
    std::vector<double> gradient(theta_.size(), 0.0);
    std::vector<BoundGate> lambda_queue;
    const std::vector<std::vector<TapeStep>>& tapes = plan_.tapes;
    std::size_t cut = plan_.cuts.size();  // rho is the state at cut `cut` (the end: all of them)
    for (std::size_t j = plan_.groups.size() + 1; j-- > 0;) {
      if (has_trainable_gates(tapes[j])) {
        sweep_stretch(tapes[j], j > 0, lambda, lambda_queue, gradient);
      } else if (j > 0) {
        for (std::size_t i = tapes[j].size(); i-- > 0;)
          lambda_queue.push_back(adjoint(tapes[j][i].gate));
      }
      if (j == 0) break;
      const GroupMaps& g = plan_.groups[j - 1];
      if (cut > 0 && plan_.cuts[cut - 1] == j - 1)
        pool_.give_back(std::exchange(rho_, at_cut(--cut)));
      for (const Operation* op : g.ops)  // a trainable one is alone in its group
        if (has_trainable_params(*op)) {
          flush(lambda, lambda_queue, options_);
          add_channel_gradient(*op, theta_, n_, lambda, *rho_, gradient);
        }
      lambda_queue.insert(lambda_queue.end(), g.dual.rbegin(), g.dual.rend());
    }
    return gradient;
  }

  const Circuit& c_;
  std::span<const double> theta_;
  const EngineOptions& options_;
  int n_;
  BackwardPlan plan_;
  std::size_t stride_ = 1;  // unused when channels are undone
  StatePool<SV> pool_;
  std::map<std::size_t, std::unique_ptr<SV>> kept_, block_;  // by cut
  std::unique_ptr<SV> rho_;
  bool last_pass_ = true;
};

// <H_k> of the final rho, and d/dtheta <lambda0|vec(rho)> for each adjoint
// state that one of `starts` writes: one forward pass, then a backward pass
// per start from a copy of the final rho (the kept states copied too, but
// for the last). The backward pass of density_matrix_vjp,
// density_matrix_jacobian and density_matrix_state_vjp.
template <class SV>
PullBack pull_back(const Circuit& c, std::span<const double> theta,
                   const std::vector<PauliSum>& observables, const std::vector<Start>& starts,
                   const EngineOptions& options) {
  const int n = c.num_qubits();
  PullBackRun<SV> run(c, theta, options);
  const SV& rho = run.forward();
  PullBack result;
  for (const PauliSum& h : observables) result.expvals.push_back(rho.density_trace(h));
  std::unique_ptr<SV> final_rho = starts.size() > 1 ? run.copy_of(rho) : nullptr;
  auto lambda = new_state<SV>(n, options);
  for (std::size_t pass = 0; pass < starts.size(); ++pass) {
    const bool last = pass + 1 == starts.size();
    std::unique_ptr<SV> from;  // the final rho again after the first pass
    if (pass > 0) from = last ? std::move(final_rho) : run.copy_of(*final_rho);
    const AdjointStart start = starts[pass](result.expvals);
    if (start.amplitudes.empty())
      lambda->set_density_observable(start.h);
    else
      lambda->set_amplitudes(start.amplitudes);
    result.gradients.push_back(run.backward(*lambda, std::move(from), last));
  }
  return result;
}

// pull_back on the options' backend.
template <class R>
PullBack pull_back_on_backend(const Circuit& c, std::span<const double> theta,
                              const std::vector<PauliSum>& observables,
                              const std::vector<Start>& starts, const EngineOptions& options) {
  return detail::on_backend<R>(options, [&]<class SV>(const EngineOptions& o) {
    return pull_back<SV>(c, theta, observables, starts, o);
  });
}

}  // namespace

template <class R>
AdjointResult density_matrix_vjp(const Circuit& c, std::span<const double> theta,
                                 const std::vector<PauliSum>& observables,
                                 std::span<const double> weights, const EngineOptions& options) {
  const PauliSum h = weighted_sum(observables, weights);
  PullBack p = pull_back_on_backend<R>(c, theta, observables, {[&](const std::vector<double>&) {
                                         return AdjointStart{h, {}};
                                       }},
                                       options);
  return {std::move(p.expvals), std::move(p.gradients[0])};
}

template <class R>
AdjointResult density_matrix_vjp(const Circuit& c, std::span<const double> theta,
                                 const std::vector<PauliSum>& observables, const WeightsFn& weights,
                                 const EngineOptions& options) {
  auto start = [&](const std::vector<double>& expvals) {
    const std::vector<double> w = weights(expvals);
    if (w.size() != observables.size())
      throw Error("adjoint_vjp: " + std::to_string(w.size()) + " weights for " +
                  std::to_string(observables.size()) + " observables");
    return AdjointStart{weighted_sum(observables, w), {}};
  };
  PullBack p = pull_back_on_backend<R>(c, theta, observables, {start}, options);
  return {std::move(p.expvals), std::move(p.gradients[0])};
}

template <class R>
std::vector<std::vector<double>> density_matrix_jacobian(const Circuit& c,
                                                         std::span<const double> theta,
                                                         const std::vector<PauliSum>& observables,
                                                         const EngineOptions& options,
                                                         std::vector<double>* expvals) {
  std::vector<Start> starts;
  for (const PauliSum& h : observables)
    starts.push_back([&h](const std::vector<double>&) { return AdjointStart{h, {}}; });
  PullBack p = pull_back_on_backend<R>(c, theta, observables, starts, options);
  if (expvals) *expvals = std::move(p.expvals);
  return std::move(p.gradients);
}

template <class R>
std::vector<double> density_matrix_state_vjp(const Circuit& c, std::span<const double> theta,
                                             std::span<const cplx> cotangent,
                                             const EngineOptions& options) {
  const int n = c.num_qubits();
  const index_t dim = index_t{1} << n;
  if (cotangent.size() != dim * dim)
    throw Error("state VJP: a cotangent of " + std::to_string(cotangent.size()) +
                " entries for a density matrix of " + std::to_string(n) + " qubit(s)");
  // rho is Hermitian, so Re sum G[r][c] rho[r][c] = sum G'[r][c] rho[r][c] for
  // G' = (G + G^dagger) / 2, which is <vec(conj G')|vec(rho)>.
  std::vector<cplx> start(dim * dim);
  for (index_t r = 0; r < dim; ++r)
    for (index_t k = 0; k < dim; ++k)
      start[r + dim * k] =
          std::conj(0.5 * (cotangent[r * dim + k] + std::conj(cotangent[k * dim + r])));
  const auto set = [&](const std::vector<double>&) { return AdjointStart{{}, start}; };
  return std::move(pull_back_on_backend<R>(c, theta, {}, {set}, options).gradients[0]);
}

std::vector<BoundGate> density_matrix_gates(const Circuit& c, std::span<const double> theta,
                                            const EngineOptions& options) {
  return density_gates(c, theta, options);
}

void read_out_diagonal(const std::vector<double>& p, const SimulateRequest& req,
                       SimulateResult& out) {
  const index_t dim = p.size();
  if (req.shots > 0) {
    // The state vector's sampler on amplitudes sqrt(p): the same outcomes for
    // the same seed as a pure state with these probabilities.
    cpu::StateVector<double> amplitudes(std::countr_zero(dim));
    std::vector<cplx> v(dim);
    for (index_t k = 0; k < dim; ++k) v[k] = std::sqrt(p[k]);
    amplitudes.set_amplitudes(v);
    out.counts = amplitudes.sample(req.shots, req.seed);
  }
  if (req.most_probable)
    out.most_probable = static_cast<index_t>(std::max_element(p.begin(), p.end()) - p.begin());
  if (req.probabilities) out.probabilities = p;
}

template <class SV>
void start_density_matrix(SV& rho, int n, const EngineOptions& options) {
  set_initial(rho, n, options);
}

template <class SV>
void read_out_density_matrix(const SV& rho, const SimulateRequest& req, SimulateResult& out) {
  read_out(rho, req, out);
}

#define QMLSIM_INSTANTIATE(R)                                                                      \
  template SimulateResult simulate_density_matrix<R>(                                              \
      const Circuit&, std::span<const double>, const SimulateRequest&, const EngineOptions&);      \
  template AdjointResult density_matrix_vjp<R>(const Circuit&, std::span<const double>,            \
                                               const std::vector<PauliSum>&,                       \
                                               std::span<const double>, const EngineOptions&);     \
  template AdjointResult density_matrix_vjp<R>(const Circuit&, std::span<const double>,            \
                                               const std::vector<PauliSum>&, const WeightsFn&,     \
                                               const EngineOptions&);                              \
  template std::vector<std::vector<double>> density_matrix_jacobian<R>(                            \
      const Circuit&, std::span<const double>, const std::vector<PauliSum>&, const EngineOptions&, \
      std::vector<double>*);                                                                       \
  template std::vector<double> density_matrix_state_vjp<R>(                                        \
      const Circuit&, std::span<const double>, std::span<const cplx>, const EngineOptions&);
QMLSIM_INSTANTIATE(float)
QMLSIM_INSTANTIATE(double)
#undef QMLSIM_INSTANTIATE
#define QMLSIM_INSTANTIATE(SV)                                            \
  template void start_density_matrix<SV>(SV&, int, const EngineOptions&); \
  template void read_out_density_matrix<SV>(const SV&, const SimulateRequest&, SimulateResult&);
QMLSIM_INSTANTIATE(cpu::StateVector<float>)
QMLSIM_INSTANTIATE(cpu::StateVector<double>)
QMLSIM_INSTANTIATE(cuda::StateVector<float>)
QMLSIM_INSTANTIATE(cuda::StateVector<double>)
#undef QMLSIM_INSTANTIATE

}  // namespace qmlsim
