#include "grad/simulate.h"

#include <algorithm>

#include "backends/cpu/statevector.h"
#include "backends/cuda/small_batch.h"
#include "backends/cuda/statevector.h"
#include "core/error.h"
#include "grad/density_matrix.h"
#include "grad/dynamic.h"
#include "grad/engine.h"
#include "grad/trajectories.h"
#include "passes/fusion.h"

namespace qmlsim {
namespace {

template <class SV>
void read_out(const SV& sv, const SimulateRequest& req, SimulateResult& out) {
  for (const PauliSum& h : req.observables) out.expvals.push_back(sv.expval(h));
  if (req.shots > 0) out.counts = sv.sample(req.shots, req.seed);
  if (req.state) out.state = sv.to_vector();
  if (req.probabilities) out.probabilities = sv.probabilities();
}

// Index of the largest |a_i|^2 (the first one on ties).
template <class Amp>
index_t argmax_probability(index_t size, Amp amp) {
  index_t best = 0;
  double best_p = -1;
  for (index_t i = 0; i < size; ++i) {
    const double p = amp(i);
    if (p > best_p) {
      best_p = p;
      best = i;
    }
  }
  return best;
}

// c at theta, bound and fused as far as the backend's kernels take.
std::vector<BoundGate> forward_gates(const Circuit& c, std::span<const double> theta,
                                     const EngineOptions& options) {
  return fuse_up_to(bind_params(c, theta), detail::for_backend(options).fusion);
}

}  // namespace

template <class R>
SimulateResult simulate(const Circuit& c, std::span<const double> theta, const SimulateRequest& req,
                        const EngineOptions& options) {
  const MethodChoice method = choose_method(c, options);
  if (method.branch_walk || (req.leaves && c.has_channels()))
    return simulate_dynamic<R>(c, theta, req, options);
  if (method.trajectories()) return simulate_trajectories<R>(c, theta, req, options);
  if (method.density_matrix()) return simulate_density_matrix<R>(c, theta, req, options);
  const std::vector<BoundGate> gates = forward_gates(c, theta, options);
  SimulateResult out;
  out.gates_after_fusion = gates.size();
  const int n = c.num_qubits();
  if (options.backend == Backend::cuda) {
    cuda::StateVector<R> sv = detail::forward_state<cuda::StateVector<R>>(n, options, gates);
    read_out(sv, req, out);
    if (req.most_probable) {
      const std::vector<cplx> a = sv.to_vector();
      out.most_probable = argmax_probability(sv.size(), [&](index_t i) { return std::norm(a[i]); });
    }
    return out;
  }
  cpu::StateVector<R> sv = detail::forward_state<cpu::StateVector<R>>(n, options, gates);
  read_out(sv, req, out);
  if (req.most_probable) {
    const R* a = sv.data();
    out.most_probable = argmax_probability(sv.size(), [&](index_t i) {
      return double(a[2 * i]) * a[2 * i] + double(a[2 * i + 1]) * a[2 * i + 1];
    });
  }
  return out;
}

std::size_t gates_after_fusion(const Circuit& c, std::span<const double> theta,
                               const EngineOptions& options) {
  if (choose_method(c, options).density_matrix())
    return density_matrix_gates(c, theta, options).size();
  return forward_gates(c, theta, options).size();
}

template <class R>
std::vector<std::vector<double>> expvals_many(const std::vector<const Circuit*>& circuits,
                                              const std::vector<std::vector<double>>& thetas,
                                              const std::vector<PauliSum>& observables,
                                              const EngineOptions& options) {
  if (circuits.empty()) return {};
  const int n = detail::common_qubits(circuits, "expvals_many");
  const Precision p = kPrecisionOf<R>;
  const bool noisy = std::any_of(circuits.begin(), circuits.end(), [](const Circuit* c) {
    return c->has_channels() || c->has_dynamic();
  });
  if (options.backend == Backend::cuda && options.initial_state.empty() && !noisy &&
      cuda::small_batch_fits(n, p, observables.size())) {
    std::vector<std::vector<BoundGate>> gates;
    for (std::size_t i = 0; i < circuits.size(); ++i)
      gates.push_back(forward_gates(*circuits[i], thetas[i], options));
    return cuda::SmallBatch<R>(n, gates).run(observables);
  }
  std::vector<std::vector<double>> out(circuits.size());
  SimulateRequest req;
  req.observables = observables;
  detail::for_each_item(circuits.size(), largest_item(circuits, 1, p, options), options,
                        [&](std::size_t i, const EngineOptions& inner) {
                          out[i] = simulate<R>(*circuits[i], thetas[i], req, inner).expvals;
                        });
  return out;
}

template std::vector<std::vector<double>> expvals_many<float>(
    const std::vector<const Circuit*>&, const std::vector<std::vector<double>>&,
    const std::vector<PauliSum>&, const EngineOptions&);
template std::vector<std::vector<double>> expvals_many<double>(
    const std::vector<const Circuit*>&, const std::vector<std::vector<double>>&,
    const std::vector<PauliSum>&, const EngineOptions&);

template SimulateResult simulate<float>(const Circuit&, std::span<const double>,
                                        const SimulateRequest&, const EngineOptions&);
template SimulateResult simulate<double>(const Circuit&, std::span<const double>,
                                         const SimulateRequest&, const EngineOptions&);

}  // namespace qmlsim
