#include "grad/adjoint.h"

#include <algorithm>
#include <cassert>
#include <string>
#include <type_traits>

#include "backends/cpu/statevector.h"
#include "backends/cuda/small_batch.h"
#include "backends/cuda/statevector.h"
#include "core/error.h"
#include "grad/adjoint_parts.h"
#include "grad/engine.h"
#include "grad/tape.h"
#include "passes/fusion.h"

namespace qmlsim {

Segmented segment(const std::vector<TapeStep>& tape, int fusion) {
  Segmented s;
  std::vector<BoundGate> run;
  auto flush = [&] {
    if (run.empty()) return;
    std::vector<BoundGate> fused = fusion > 0 ? fuse(run, {fusion, std::max(10, fusion)}) : run;
    for (BoundGate& g : fused) {
      s.gates.push_back(std::move(g));
      s.step.push_back(nullptr);
    }
    run.clear();
  };
  for (const TapeStep& t : tape) {
    if (t.derivatives.empty()) {
      run.push_back(t.gate);
      continue;
    }
    flush();
    s.gates.push_back(t.gate);
    s.step.push_back(&t);
  }
  flush();
  return s;
}

std::vector<BoundGate> forward_gates(const std::vector<TapeStep>& tape, int fusion) {
  std::vector<BoundGate> gates;
  gates.reserve(tape.size());
  for (const TapeStep& t : tape) gates.push_back(t.gate);
  return fusion > 0 ? fuse(gates, {fusion, std::max(10, fusion)}) : gates;
}

PauliSum weighted_sum(const std::vector<PauliSum>& obs, std::span<const double> w) {
  PauliSum h;
  for (std::size_t k = 0; k < obs.size(); ++k)
    for (const PauliTerm& t : obs[k].terms)
      if (w[k] != 0) h.add(w[k] * t.coeff, t.xmask, t.zmask);
  return h;
}

void inverse_gates(const Segmented& s, std::vector<BoundGate>& inverse,
                   std::vector<char>& measure) {
  for (std::size_t i = 0; i < s.gates.size(); ++i) {
    inverse.push_back(adjoint(s.gates[i]));
    measure.push_back(s.step[i] != nullptr);
  }
}

void accumulate(const Segmented& s, const std::vector<Matrix>& m, std::vector<double>& grad) {
  for (std::size_t i = 0; i < s.gates.size(); ++i) {
    const TapeStep* t = s.step[i];
    if (!t) continue;
    const BoundGate& u = s.gates[i];
    const std::size_t dim = u.dim();
    for (const TapeDerivative& d : t->derivatives) {
      cplx acc = 0;
      if (u.diagonal) {  // dU is diagonal too (MultiRZ can be wide: stay O(dim))
        for (std::size_t a = 0; a < dim; ++a)
          acc += d.d[a * dim + a] * std::conj(u.matrix[a]) * m[i][a * dim + a];
      } else {
        for (std::size_t a = 0; a < dim; ++a)
          for (std::size_t b = 0; b < dim; ++b) {
            cplx g = 0;  // (dU U^dagger)_ab
            for (std::size_t c = 0; c < dim; ++c) g += d.d[a * dim + c] * std::conj(u.at(b, c));
            acc += g * m[i][a * dim + b];
          }
      }
      grad[static_cast<std::size_t>(d.slot)] += 2.0 * acc.real() * d.scale;
    }
  }
}

namespace {

// A state of the options' backend (threads and chunks apply to the CPU's),
// holding the options' initial state when `initial` (the forward pass's start).
template <class SV>
SV make_state(int n, const AdjointOptions& o, bool initial = false) {
  SV sv = [&] {
    if constexpr (std::is_same_v<SV, cpu::StateVector<typename SV::real_type>>) {
      SV s(n, o.threads);
      if (o.chunk_qubits >= 0) s.set_chunk_qubits(o.chunk_qubits);
      return s;
    } else {
      return SV(n);
    }
  }();
  if (initial) detail::set_initial_state(sv, o);
  return sv;
}

// The sweep from phi (consumed) and lambda (at the end of the circuit). Adds to grad.
template <class SV>
void sweep(const Segmented& s, SV& phi, SV& lambda, std::vector<double>& grad) {
  std::vector<BoundGate> inverse;
  std::vector<char> measure;
  inverse_gates(s, inverse, measure);
  std::vector<Matrix> m;
  phi.adjoint_sweep(lambda, inverse, measure, m);
  accumulate(s, m, grad);
}

// One backward pass from the final state phi (consumed). Adds to grad.
template <class SV>
void backward(const Segmented& s, SV& phi, SV& lambda, const PauliSum& h,
              std::vector<double>& grad) {
  lambda.assign_applied(h, phi);
  sweep(s, phi, lambda, grad);
}

void check_weights(const std::vector<double>& w, std::size_t observables) {
  if (w.size() != observables)
    throw Error("adjoint_vjp: " + std::to_string(w.size()) + " weights for " +
                std::to_string(observables) + " observables");
}

template <class SV>
AdjointResult vjp_on(const Circuit& c, std::span<const double> theta,
                     const std::vector<PauliSum>& observables, const WeightsFn& weights,
                     const AdjointOptions& options) {
  const std::vector<TapeStep> tape = make_tape(c, theta);
  const Segmented s = segment(tape, options.fusion);
  SV phi = make_state<SV>(c.num_qubits(), options, true);
  phi.apply(forward_gates(tape, options.fusion));
  AdjointResult out;
  out.gradient.assign(theta.size(), 0.0);
  SV lambda = make_state<SV>(c.num_qubits(), options);
  if constexpr (std::is_same_v<SV, cpu::StateVector<typename SV::real_type>>) {
    if (observables.size() == 1) {
      // One observable: lambda = H phi and <H> come from one pass; the weight
      // (known only after <H>) scales the gradient, which is linear in lambda.
      out.expvals = {lambda.assign_applied(observables[0], phi)};
      const std::vector<double> w = weights(out.expvals);
      check_weights(w, 1);
      if (w[0] == 0) return out;
      sweep(s, phi, lambda, out.gradient);
      for (double& g : out.gradient) g *= w[0];
      return out;
    }
  }
  for (const PauliSum& h : observables) out.expvals.push_back(phi.expval(h));
  const std::vector<double> w = weights(out.expvals);
  check_weights(w, observables.size());
  backward(s, phi, lambda, weighted_sum(observables, w), out.gradient);
  return out;
}

template <class SV>
std::vector<std::vector<double>> jacobian_on(const Circuit& c, std::span<const double> theta,
                                             const std::vector<PauliSum>& observables,
                                             const AdjointOptions& options) {
  const std::vector<TapeStep> tape = make_tape(c, theta);
  const Segmented s = segment(tape, options.fusion);
  SV final_state = make_state<SV>(c.num_qubits(), options, true);
  final_state.apply(forward_gates(tape, options.fusion));
  SV phi = make_state<SV>(c.num_qubits(), options);
  SV lambda = make_state<SV>(c.num_qubits(), options);
  std::vector<std::vector<double>> jac;
  for (const PauliSum& h : observables) {
    phi.copy_from(final_state);
    std::vector<double> row(theta.size(), 0.0);
    backward(s, phi, lambda, h, row);
    jac.push_back(std::move(row));
  }
  return jac;
}

}  // namespace

template <class R>
AdjointResult adjoint_vjp(const Circuit& c, std::span<const double> theta,
                          const std::vector<PauliSum>& observables, std::span<const double> weights,
                          const AdjointOptions& options) {
  assert(weights.size() == observables.size());
  const std::vector<double> w(weights.begin(), weights.end());
  return adjoint_vjp<R>(
      c, theta, observables, [&w](std::span<const double>) { return w; }, options);
}

template <class R>
AdjointResult adjoint_vjp(const Circuit& c, std::span<const double> theta,
                          const std::vector<PauliSum>& observables, const WeightsFn& weights,
                          const AdjointOptions& options) {
  if (options.backend == Backend::cuda)
    return vjp_on<cuda::StateVector<R>>(c, theta, observables, weights,
                                        detail::for_backend(options));
  return vjp_on<cpu::StateVector<R>>(c, theta, observables, weights, options);
}

template <class R>
std::vector<std::vector<double>> adjoint_jacobian(const Circuit& c, std::span<const double> theta,
                                                  const std::vector<PauliSum>& observables,
                                                  const AdjointOptions& options) {
  if (options.backend == Backend::cuda)
    return jacobian_on<cuda::StateVector<R>>(c, theta, observables, detail::for_backend(options));
  return jacobian_on<cpu::StateVector<R>>(c, theta, observables, options);
}

template <class R>
std::vector<AdjointResult> adjoint_vjp_batch(const Circuit& c,
                                             const std::vector<std::vector<double>>& thetas,
                                             const std::vector<PauliSum>& observables,
                                             const std::vector<std::vector<double>>& weights,
                                             const AdjointOptions& options) {
  assert(thetas.size() == weights.size());
  std::vector<AdjointResult> out(thetas.size());
  detail::for_each_item(thetas.size(), c.num_qubits(), options,
                        [&](std::size_t i, const AdjointOptions& inner) {
                          out[i] = adjoint_vjp<R>(c, thetas[i], observables, weights[i], inner);
                        });
  return out;
}

namespace {

// Every item in one small batch on the GPU (cuda/small_batch.h).
template <class R>
std::vector<AdjointResult> vjp_small_batch(int n, const std::vector<const Circuit*>& circuits,
                                           const std::vector<std::vector<double>>& thetas,
                                           const std::vector<PauliSum>& observables,
                                           const std::vector<WeightsFn>& weights,
                                           const AdjointOptions& options) {
  const std::size_t items = circuits.size();
  std::vector<Segmented> segmented;
  std::vector<std::vector<BoundGate>> forward(items), inverse(items);
  std::vector<std::vector<char>> measure(items);
  for (std::size_t i = 0; i < items; ++i) {
    const std::vector<TapeStep> tape = make_tape(*circuits[i], thetas[i]);
    segmented.push_back(segment(tape, options.fusion));
    forward[i] = forward_gates(tape, options.fusion);
    inverse_gates(segmented.back(), inverse[i], measure[i]);
  }
  cuda::SmallBatch<R> batch(n, forward);
  std::vector<AdjointResult> out(items);
  const std::vector<std::vector<double>> e = batch.run(observables);
  std::vector<PauliSum> h;
  for (std::size_t i = 0; i < items; ++i) {
    out[i].expvals = e[i];
    const std::vector<double> w = weights[i](out[i].expvals);
    if (w.size() != observables.size())
      throw Error("adjoint_vjp_many: " + std::to_string(w.size()) + " weights for " +
                  std::to_string(observables.size()) + " observables");
    h.push_back(weighted_sum(observables, w));
  }
  std::vector<std::vector<Matrix>> m;
  batch.adjoint_sweep(h, inverse, measure, m);
  for (std::size_t i = 0; i < items; ++i) {
    out[i].gradient.assign(thetas[i].size(), 0.0);
    accumulate(segmented[i], m[i], out[i].gradient);
  }
  return out;
}

}  // namespace

template <class R>
std::vector<AdjointResult> adjoint_vjp_many(const std::vector<const Circuit*>& circuits,
                                            const std::vector<std::vector<double>>& thetas,
                                            const std::vector<PauliSum>& observables,
                                            const std::vector<WeightsFn>& weights,
                                            const AdjointOptions& options) {
  assert(circuits.size() == thetas.size() && circuits.size() == weights.size());
  if (circuits.empty()) return {};
  const int n = detail::common_qubits(circuits, "adjoint_vjp_many");
  const Precision p = sizeof(R) == 4 ? Precision::c64 : Precision::c128;
  if (options.backend == Backend::cuda && options.initial_state.empty() &&
      cuda::small_batch_fits(n, p, observables.size()))
    return vjp_small_batch<R>(n, circuits, thetas, observables, weights,
                              detail::for_backend(options));
  std::vector<AdjointResult> out(circuits.size());
  detail::for_each_item(
      circuits.size(), n, options, [&](std::size_t i, const AdjointOptions& inner) {
        out[i] = adjoint_vjp<R>(*circuits[i], thetas[i], observables, weights[i], inner);
      });
  return out;
}

#define QMLSIM_INSTANTIATE(R)                                                                  \
  template AdjointResult adjoint_vjp<R>(const Circuit&, std::span<const double>,               \
                                        const std::vector<PauliSum>&, std::span<const double>, \
                                        const AdjointOptions&);                                \
  template AdjointResult adjoint_vjp<R>(const Circuit&, std::span<const double>,               \
                                        const std::vector<PauliSum>&, const WeightsFn&,        \
                                        const AdjointOptions&);                                \
  template std::vector<std::vector<double>> adjoint_jacobian<R>(                               \
      const Circuit&, std::span<const double>, const std::vector<PauliSum>&,                   \
      const AdjointOptions&);                                                                  \
  template std::vector<AdjointResult> adjoint_vjp_batch<R>(                                    \
      const Circuit&, const std::vector<std::vector<double>>&, const std::vector<PauliSum>&,   \
      const std::vector<std::vector<double>>&, const AdjointOptions&);                         \
  template std::vector<AdjointResult> adjoint_vjp_many<R>(                                     \
      const std::vector<const Circuit*>&, const std::vector<std::vector<double>>&,             \
      const std::vector<PauliSum>&, const std::vector<WeightsFn>&, const AdjointOptions&);
QMLSIM_INSTANTIATE(float)
QMLSIM_INSTANTIATE(double)
#undef QMLSIM_INSTANTIATE

}  // namespace qmlsim
