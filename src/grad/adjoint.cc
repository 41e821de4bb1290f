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
#include "grad/density_matrix.h"
#include "grad/engine.h"
#include "grad/tape.h"
#include "grad/trajectories.h"

namespace qmlsim {

namespace {

template <class SV>
using Traits = detail::BackendTraits<SV>;

// The sweep from phi (consumed) and lambda (at the end of the circuit). Adds
// to grad. With h (backends with kSweepFromObservable), lambda = H phi is formed
// inside the sweep's first pass (adjoint_sweep_from) and <phi|H|phi> returned.
template <class SV>
double sweep(const Segmented& s, SV& phi, SV& lambda, std::vector<double>& grad,
             const PauliSum* h = nullptr) {
  std::vector<BoundGate> inverse;
  std::vector<Measure> measure;
  inverse_gates(s, inverse, measure);
  std::vector<Matrix> m;
  double e = 0;
  if constexpr (Traits<SV>::kSweepFromObservable) {
    if (h)
      e = phi.adjoint_sweep_from(*h, lambda, inverse, measure, m);
    else
      phi.adjoint_sweep(lambda, inverse, measure, m);
  } else {
    assert(!h);
    phi.adjoint_sweep(lambda, inverse, measure, m);
  }
  accumulate(s, m, grad);
  return e;
}

// One backward pass from the final state phi (consumed): lambda = H phi, then
// the sweep (inside its first pass where the backend can). Adds to grad.
template <class SV>
void backward(const Segmented& s, SV& phi, SV& lambda, const PauliSum& h,
              std::vector<double>& grad) {
  if constexpr (Traits<SV>::kSweepFromObservable) {
    sweep(s, phi, lambda, grad, &h);
  } else {
    lambda.assign_applied(h, phi);
    sweep(s, phi, lambda, grad);
  }
}

void check_weights(const std::vector<double>& w, std::size_t observables) {
  if (w.size() != observables)
    throw Error("adjoint_vjp: " + std::to_string(w.size()) + " weights for " +
                std::to_string(observables) + " observables");
}

// The options for one backward pass over n qubits: one thread where a second
// would slow the sweep down (detail::serial_sweep).
template <class SV>
EngineOptions sweep_options(int n, EngineOptions o) {
  if (Traits<SV>::serial_sweep(n, o)) o.threads = 1;
  return o;
}

// fixed_weights: the weights when they do not depend on the expectation
// values (the caller gave numbers, not a function of <H>), else null.
template <class SV>
AdjointResult vjp_on(const Circuit& c, std::span<const double> theta,
                     const std::vector<PauliSum>& observables, const WeightsFn& weights,
                     const EngineOptions& given,
                     const std::vector<double>* fixed_weights = nullptr) {
  const EngineOptions options = sweep_options<SV>(c.num_qubits(), given);
  const std::vector<TapeStep> tape = make_tape(c, theta);
  const Segmented s = segment(tape, options.fusion, Traits<SV>::kDiagonalBlockQubits,
                              Traits<SV>::gather_phases(c.num_qubits(), options));
  SV phi = detail::forward_state<SV>(c.num_qubits(), options, forward_gates(tape, options.fusion));
  AdjointResult out;
  out.gradient.assign(theta.size(), 0.0);
  SV lambda = detail::make_state<SV>(c.num_qubits(), options);
  if constexpr (Traits<SV>::kSweepFromObservable) {
    if (observables.size() == 1) {
      // One observable: the gradient is linear in lambda, so lambda = H phi
      // and the weight scales it afterwards. With the weight known up front
      // (and not 0), lambda and <H> come from the sweep's first pass;
      // otherwise from a pass of their own, so that a weight of 0 (known only
      // after <H>: a margin loss on a row ranked with margin) skips the sweep.
      double w0 = 0;
      if (fixed_weights && (*fixed_weights)[0] != 0) {
        out.expvals = {sweep(s, phi, lambda, out.gradient, &observables[0])};
        w0 = (*fixed_weights)[0];
      } else {
        out.expvals = {lambda.assign_applied(observables[0], phi)};
        const std::vector<double> w = weights(out.expvals);
        check_weights(w, 1);
        if (w[0] == 0) return out;
        sweep(s, phi, lambda, out.gradient);
        w0 = w[0];
      }
      for (double& g : out.gradient) g *= w0;
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
std::vector<double> state_vjp_on(const Circuit& c, std::span<const double> theta,
                                 std::span<const cplx> cotangent, const EngineOptions& given) {
  const EngineOptions options = sweep_options<SV>(c.num_qubits(), given);
  const std::vector<TapeStep> tape = make_tape(c, theta);
  const Segmented s = segment(tape, options.fusion, Traits<SV>::kDiagonalBlockQubits,
                              Traits<SV>::gather_phases(c.num_qubits(), options));
  SV phi = detail::forward_state<SV>(c.num_qubits(), options, forward_gates(tape, options.fusion));
  SV lambda = detail::make_state<SV>(c.num_qubits(), options);
  std::vector<cplx> start(cotangent.size());
  for (std::size_t i = 0; i < start.size(); ++i) start[i] = 0.5 * std::conj(cotangent[i]);
  lambda.set_amplitudes(start);
  std::vector<double> grad(theta.size(), 0.0);
  sweep(s, phi, lambda, grad);  // 2 Re <lambda| dpsi/dtheta>
  return grad;
}

template <class SV>
std::vector<std::vector<double>> jacobian_on(const Circuit& c, std::span<const double> theta,
                                             const std::vector<PauliSum>& observables,
                                             const EngineOptions& options,
                                             std::vector<double>* expvals) {
  const std::vector<TapeStep> tape = make_tape(c, theta);
  // Small states on the CPU (detail::sweeps_one_per_thread): one observable's
  // backward pass per thread (each with its own two states), as batch items
  // run; the rows are the same.
  const bool one_per_thread =
      observables.size() > 1 &&
      Traits<SV>::sweeps_one_per_thread(observables.size(), c.num_qubits(), options);
  EngineOptions one = sweep_options<SV>(c.num_qubits(), options);  // as the sweeps run
  if (one_per_thread) one.threads = 1;
  const Segmented s = segment(tape, options.fusion, Traits<SV>::kDiagonalBlockQubits,
                              Traits<SV>::gather_phases(c.num_qubits(), one));
  SV final_state =
      detail::forward_state<SV>(c.num_qubits(), options, forward_gates(tape, options.fusion));
  if (expvals) {
    expvals->clear();
    for (const PauliSum& h : observables) expvals->push_back(final_state.expval(h));
  }
  std::vector<std::vector<double>> jac;
  if (one_per_thread) {
    jac.assign(observables.size(), std::vector<double>(theta.size(), 0.0));
    detail::run_items(observables.size(), true, options,
                      [&](std::size_t k, const EngineOptions& inner) {
                        SV phi = detail::make_state<SV>(c.num_qubits(), inner);
                        SV lambda = detail::make_state<SV>(c.num_qubits(), inner);
                        phi.copy_from(final_state);
                        backward(s, phi, lambda, observables[k], jac[k]);
                      });
    return jac;
  }
  SV phi = detail::make_state<SV>(c.num_qubits(), one);
  SV lambda = detail::make_state<SV>(c.num_qubits(), one);
  for (const PauliSum& h : observables) {
    phi.copy_from(final_state);
    std::vector<double> row(theta.size(), 0.0);
    backward(s, phi, lambda, h, row);
    jac.push_back(std::move(row));
  }
  return jac;
}

}  // namespace

bool adjoint_sweeps_one_per_thread(std::size_t count, int n, Precision precision,
                                   const EngineOptions& options) {
  return precision == Precision::c64 ? detail::sweeps_one_per_thread<float>(count, n, options)
                                     : detail::sweeps_one_per_thread<double>(count, n, options);
}

namespace {

// Whether c runs noisy (a density matrix or trajectories), and its VJP then.
bool runs_noisy(const Circuit& c, const EngineOptions& options) {
  return choose_method(c, options).method != Method::statevector;
}

template <class R>
AdjointResult noisy_vjp(const Circuit& c, std::span<const double> theta,
                        const std::vector<PauliSum>& observables, std::span<const double> weights,
                        const EngineOptions& options) {
  return choose_method(c, options).trajectories()
             ? trajectories_vjp<R>(c, theta, observables, weights, options)
             : density_matrix_vjp<R>(c, theta, observables, weights, options);
}

}  // namespace

template <class R>
AdjointResult adjoint_vjp(const Circuit& c, std::span<const double> theta,
                          const std::vector<PauliSum>& observables, std::span<const double> weights,
                          const EngineOptions& options) {
  assert(weights.size() == observables.size());
  if (runs_noisy(c, options)) return noisy_vjp<R>(c, theta, observables, weights, options);
  const std::vector<double> w(weights.begin(), weights.end());
  const WeightsFn fn = [&w](std::span<const double>) { return w; };
  if (options.backend == Backend::cuda)
    return vjp_on<cuda::StateVector<R>>(c, theta, observables, fn, detail::for_backend(options));
  return vjp_on<cpu::StateVector<R>>(c, theta, observables, fn, options, &w);
}

template <class R>
AdjointResult adjoint_vjp(const Circuit& c, std::span<const double> theta,
                          const std::vector<PauliSum>& observables, const WeightsFn& weights,
                          const EngineOptions& options) {
  const MethodChoice method = choose_method(c, options);
  if (method.density_matrix())  // the weights from its own forward pass
    return density_matrix_vjp<R>(c, theta, observables, weights, options);
  if (method.trajectories()) {  // the readouts first: a forward pass more
    SimulateRequest req;
    req.observables = observables;
    const std::vector<double> w = weights(simulate<R>(c, theta, req, options).expvals);
    if (w.size() != observables.size())
      throw Error("adjoint_vjp: " + std::to_string(w.size()) + " weights for " +
                  std::to_string(observables.size()) + " observables");
    return trajectories_vjp<R>(c, theta, observables, w, options);
  }
  if (options.backend == Backend::cuda)
    return vjp_on<cuda::StateVector<R>>(c, theta, observables, weights,
                                        detail::for_backend(options));
  return vjp_on<cpu::StateVector<R>>(c, theta, observables, weights, options);
}

template <class R>
std::vector<double> state_vjp(const Circuit& c, std::span<const double> theta,
                              std::span<const cplx> cotangent, const EngineOptions& options) {
  const MethodChoice method = choose_method(c, options);
  if (method.trajectories())
    throw Error(
        "the VJP of the final state: a noisy circuit run by trajectories has no single final "
        "state (the density-matrix method has)");
  if (method.density_matrix()) return density_matrix_state_vjp<R>(c, theta, cotangent, options);
  if (cotangent.size() != index_t{1} << c.num_qubits())
    throw Error("state VJP: a cotangent of " + std::to_string(cotangent.size()) + " entries for " +
                std::to_string(c.num_qubits()) + " qubit(s)");
  if (options.backend == Backend::cuda)
    return state_vjp_on<cuda::StateVector<R>>(c, theta, cotangent, detail::for_backend(options));
  return state_vjp_on<cpu::StateVector<R>>(c, theta, cotangent, options);
}

template <class R>
std::vector<std::vector<double>> adjoint_jacobian(const Circuit& c, std::span<const double> theta,
                                                  const std::vector<PauliSum>& observables,
                                                  const EngineOptions& options,
                                                  std::vector<double>* expvals) {
  if (runs_noisy(c, options)) {
    if (choose_method(c, options).density_matrix())  // one forward pass
      return density_matrix_jacobian<R>(c, theta, observables, options, expvals);
    // trajectories: a run per observable
    std::vector<std::vector<double>> rows;
    std::vector<double> w(observables.size(), 0.0);
    for (std::size_t k = 0; k < observables.size(); ++k) {
      w[k] = 1;
      AdjointResult r = noisy_vjp<R>(c, theta, observables, w, options);
      w[k] = 0;
      if (expvals) *expvals = r.expvals;
      rows.push_back(std::move(r.gradient));
    }
    return rows;
  }
  if (options.backend == Backend::cuda)
    return jacobian_on<cuda::StateVector<R>>(c, theta, observables, detail::for_backend(options),
                                             expvals);
  return jacobian_on<cpu::StateVector<R>>(c, theta, observables, options, expvals);
}

template <class R>
std::vector<AdjointResult> adjoint_vjp_batch(const Circuit& c,
                                             const std::vector<std::vector<double>>& thetas,
                                             const std::vector<PauliSum>& observables,
                                             const std::vector<std::vector<double>>& weights,
                                             const EngineOptions& options) {
  assert(thetas.size() == weights.size());
  std::vector<AdjointResult> out(thetas.size());
  detail::for_each_sweep<R>(thetas.size(), item_size(c, 2, kPrecisionOf<R>, options), options,
                            [&](std::size_t i, const EngineOptions& inner) {
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
                                           const EngineOptions& options) {
  const std::size_t items = circuits.size();
  std::vector<std::vector<TapeStep>> tapes(items);  // segmented[i] points into tapes[i]
  std::vector<Segmented> segmented;
  std::vector<std::vector<BoundGate>> forward(items), inverse(items);
  std::vector<std::vector<Measure>> measure(items);
  for (std::size_t i = 0; i < items; ++i) {
    tapes[i] = make_tape(*circuits[i], thetas[i]);
    segmented.push_back(segment(tapes[i], options.fusion));
    forward[i] = forward_gates(tapes[i], options.fusion);
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
                                            const EngineOptions& options) {
  assert(circuits.size() == thetas.size() && circuits.size() == weights.size());
  if (circuits.empty()) return {};
  const int n = detail::common_qubits(circuits, "adjoint_vjp_many");
  const Precision p = kPrecisionOf<R>;
  const bool noisy = std::any_of(circuits.begin(), circuits.end(),
                                 [&](const Circuit* c) { return runs_noisy(*c, options); });
  if (options.backend == Backend::cuda && options.initial_state.empty() && !noisy &&
      cuda::small_batch_fits(n, p, observables.size()))
    return vjp_small_batch<R>(n, circuits, thetas, observables, weights,
                              detail::for_backend(options));
  std::vector<AdjointResult> out(circuits.size());
  detail::for_each_sweep<R>(circuits.size(), largest_item(circuits, 2, p, options), options,
                            [&](std::size_t i, const EngineOptions& inner) {
                              out[i] = adjoint_vjp<R>(*circuits[i], thetas[i], observables,
                                                      weights[i], inner);
                            });
  return out;
}

#define QMLSIM_INSTANTIATE(R)                                                                      \
  template AdjointResult adjoint_vjp<R>(const Circuit&, std::span<const double>,                   \
                                        const std::vector<PauliSum>&, std::span<const double>,     \
                                        const EngineOptions&);                                     \
  template AdjointResult adjoint_vjp<R>(const Circuit&, std::span<const double>,                   \
                                        const std::vector<PauliSum>&, const WeightsFn&,            \
                                        const EngineOptions&);                                     \
  template std::vector<double> state_vjp<R>(const Circuit&, std::span<const double>,               \
                                            std::span<const cplx>, const EngineOptions&);          \
  template std::vector<std::vector<double>> adjoint_jacobian<R>(                                   \
      const Circuit&, std::span<const double>, const std::vector<PauliSum>&, const EngineOptions&, \
      std::vector<double>*);                                                                       \
  template std::vector<AdjointResult> adjoint_vjp_batch<R>(                                        \
      const Circuit&, const std::vector<std::vector<double>>&, const std::vector<PauliSum>&,       \
      const std::vector<std::vector<double>>&, const EngineOptions&);                              \
  template std::vector<AdjointResult> adjoint_vjp_many<R>(                                         \
      const std::vector<const Circuit*>&, const std::vector<std::vector<double>>&,                 \
      const std::vector<PauliSum>&, const std::vector<WeightsFn>&, const EngineOptions&);
QMLSIM_INSTANTIATE(float)
QMLSIM_INSTANTIATE(double)
#undef QMLSIM_INSTANTIATE

}  // namespace qmlsim
