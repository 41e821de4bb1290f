// Exact gradients by the adjoint method (Jones & Gacon, arXiv:2009.02823) with
// a vector-Jacobian product: the upstream weights w_k of the observables H_k are
// folded into one observable H_w = sum_k w_k H_k, so one backward pass gives
// dL/dtheta for L = sum_k w_k <H_k> and every trainable slot.
//
// Memory: two state vectors (the state and the adjoint state) whatever the
// number of parameters. Per parametric gate U the backward sweep forms the
// anti-Hermitian part P of the small matrix M_ab = sum conj(lambda_a) phi_b over
// the gate's targets (controls set), both states taken after U, and every angle
// a of the gate gets dL/da = 2 sum_ab (dU/da U^dagger)_ab P_ab: one pass per
// gate, not per angle, and no third state vector.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "circuit/circuit.h"
#include "circuit/observable.h"
#include "core/types.h"
#include "grad/options.h"

namespace qmlsim {

struct AdjointResult {
  std::vector<double> expvals;   // <H_k> at theta
  std::vector<double> gradient;  // dL/dtheta[slot], size = theta.size()
};

// L = sum_k weights[k] <H_k>. REQUIRES weights.size() == observables.size(),
// theta.size() >= c.num_slots().
template <class R>
AdjointResult adjoint_vjp(const Circuit& c, std::span<const double> theta,
                          const std::vector<PauliSum>& observables, std::span<const double> weights,
                          const EngineOptions& options);

// The upstream weights computed from the expectation values at theta: for a
// hybrid model whose classical layers after the circuit need <H_k> before the
// backward pass (one forward pass, one backward pass). `weights` returns one
// weight per observable and must be safe to call from several threads.
using WeightsFn = std::function<std::vector<double>(std::span<const double> expvals)>;
template <class R>
AdjointResult adjoint_vjp(const Circuit& c, std::span<const double> theta,
                          const std::vector<PauliSum>& observables, const WeightsFn& weights,
                          const EngineOptions& options);

// The VJP of the final state psi(theta) (2^n amplitudes) with a complex
// cotangent g: d/dtheta Re sum_i g_i psi_i, for every slot (autograd's
// convention for a complex output; PennyLane converts the others to it). One
// backward pass from lambda = conj(g) / 2. A circuit that runs on a density
// matrix takes a cotangent of rho's 4^n entries (density_matrix_state_vjp);
// by trajectories, and for a cotangent of another size, an Error.
template <class R>
std::vector<double> state_vjp(const Circuit& c, std::span<const double> theta,
                              std::span<const cplx> cotangent, const EngineOptions& options);

// Whether `count` adjoint sweeps of n qubits run one per thread (one thread
// inside each) under these options: CPU states that fit one cache-blocked
// chunk, which a second thread slows down, and, with a sweep for every thread,
// states of two chunks. Otherwise they run in turn with the threads inside.
bool adjoint_sweeps_one_per_thread(std::size_t count, int n, Precision precision,
                                   const EngineOptions& options);

// d<H_k>/dtheta for every observable: one row per observable. `expvals`, when
// given, receives <H_k> at theta (from the forward state the sweeps start
// from: no second forward pass).
template <class R>
std::vector<std::vector<double>> adjoint_jacobian(const Circuit& c, std::span<const double> theta,
                                                  const std::vector<PauliSum>& observables,
                                                  const EngineOptions& options,
                                                  std::vector<double>* expvals = nullptr);

// Vector-Jacobian products for a batch of parameter vectors of one circuit
// template: items run one per thread when states are small, else one after
// another with threads inside each state.
template <class R>
std::vector<AdjointResult> adjoint_vjp_batch(const Circuit& c,
                                             const std::vector<std::vector<double>>& thetas,
                                             const std::vector<PauliSum>& observables,
                                             const std::vector<std::vector<double>>& weights,
                                             const EngineOptions& options);

// Vector-Jacobian products of many circuits on n qubits, each with its own
// parameters and upstream-weights function (one per training example, say;
// circuits may differ). On the cuda backend, states of at most
// cuda::small_batch_max_qubits qubits run all at once, one kernel launch
// forward and one backward; elsewhere item by item, one item per thread for
// small states. Results equal adjoint_vjp's item by item.
template <class R>
std::vector<AdjointResult> adjoint_vjp_many(const std::vector<const Circuit*>& circuits,
                                            const std::vector<std::vector<double>>& thetas,
                                            const std::vector<PauliSum>& observables,
                                            const std::vector<WeightsFn>& weights,
                                            const EngineOptions& options);

}  // namespace qmlsim
