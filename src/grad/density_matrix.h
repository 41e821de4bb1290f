// Noisy circuits on a density matrix. The state is rho on n qubits held as
// the 2n-qubit vector vec(rho)[r + 2^n c] = rho[r][c] in a state vector of the
// options' backend (CPU or GPU: the engine is written once against the state
// type, grad/engine.h's BackendTraits), so every kernel, the fusion and (on the
// CPU) the cache blocking apply unchanged:
// a gate U is U on the row qubits and conj(U) on the column qubits, a channel
// its superoperator on both (circuit/bound.h). 4^n amplitudes: 13 qubits take
// 1 GiB in complex128.
//
// Gradients are exact and cost O(gates): the observable H is pulled back
// through the circuit as the vector vec(H) (the adjoint state of the linear
// functional Tr(H rho)), with the state vector's adjoint sweep between
// channels (there vec(rho) is undone exactly: U (x) conj(U) is unitary) and
// the dual channel at each channel. The states before channels are kept
// from the forward pass when they fit EngineOptions::checkpoint_bytes;
// beyond it channels are undone by their inverse superoperators when all are
// invertible and rounding errors stay small through them, and otherwise
// every k-th state is kept and a block's others recomputed from it once
// (about one more forward pass).
// A gate parameter's gradient is 2 Re <vec(lambda)| dU (x) conj(U) |vec(rho)>
// = 2 Re Tr(lambda dU rho U^dagger): the row half's sweep term alone; a
// channel parameter's is Re <vec(lambda)| dS/dp |vec(rho)> for its
// superoperator S.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backends/cpu/statevector.h"
#include "circuit/bound.h"
#include "circuit/circuit.h"
#include "circuit/observable.h"
#include "grad/adjoint.h"
#include "grad/method.h"
#include "grad/simulate.h"

namespace qmlsim {

// The final density matrix of c read out as requested: Tr(H rho) per
// observable, the diagonal as probabilities, samples and the most probable
// basis state from it; `state` is rho, row-major (rho[r][c] at r 2^n + c).
// initial_state, when given, is a pure state |psi> (rho = |psi><psi|) or a
// density matrix (program.h: check_initial_state). On the options' backend:
// rho is a state of 2n qubits there, and every pass below is the backend's
// own (its kernels, its sweep, its readouts).
template <class R>
SimulateResult simulate_density_matrix(const Circuit& c, std::span<const double> theta,
                                       const SimulateRequest& req, const EngineOptions& options);

// L = sum_k weights[k] Tr(H_k rho(theta)) and dL/dtheta for every slot that
// gates' and channels' parameters use. A channel parameter's term is
// Re <lambda| dS/dp |rho> at the channel, dS/dp its superoperator's exact
// derivative (channels.h: kraus_terms); an Error where that is infinite.
template <class R>
AdjointResult density_matrix_vjp(const Circuit& c, std::span<const double> theta,
                                 const std::vector<PauliSum>& observables,
                                 std::span<const double> weights, const EngineOptions& options);
// The same with weights(<H_k>) read from the forward pass the gradient makes
// (one forward pass where a loss's weights depend on the readouts); an Error
// unless it gives a weight per observable.
template <class R>
AdjointResult density_matrix_vjp(const Circuit& c, std::span<const double> theta,
                                 const std::vector<PauliSum>& observables, const WeightsFn& weights,
                                 const EngineOptions& options);

// d Tr(H_k rho)/dtheta for every observable (rows) after one forward pass,
// a backward pass each; <H_k> into expvals when given.
template <class R>
std::vector<std::vector<double>> density_matrix_jacobian(const Circuit& c,
                                                         std::span<const double> theta,
                                                         const std::vector<PauliSum>& observables,
                                                         const EngineOptions& options,
                                                         std::vector<double>* expvals);

// The VJP of the final density matrix (simulate_density_matrix's `state`,
// row-major) with a complex cotangent G of 4^n entries: d/dtheta
// Re sum G[r][c] rho[r][c], one backward pass from vec of the Hermitian part.
template <class R>
std::vector<double> density_matrix_state_vjp(const Circuit& c, std::span<const double> theta,
                                             std::span<const cplx> cotangent,
                                             const EngineOptions& options);

// The parts of simulate_density_matrix, for the dynamic-circuit engine
// (grad/dynamic.h), on rho held in a 2n-qubit state vector: c's operations in
// density-matrix form, fused as options say; rho set to the initial state;
// rho read out as simulate_density_matrix reads it.
std::vector<BoundGate> density_matrix_gates(const Circuit& c, std::span<const double> theta,
                                            const EngineOptions& options);
template <class SV>
void start_density_matrix(SV& rho, int n, const EngineOptions& options);

// The probabilities, samples and most probable basis state that req asks for,
// from the whole diagonal p of rho (2^n entries).
void read_out_diagonal(const std::vector<double>& p, const SimulateRequest& req,
                       SimulateResult& out);

template <class SV>
void read_out_density_matrix(const SV& rho, const SimulateRequest& req, SimulateResult& out);

}  // namespace qmlsim
