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

namespace qmlsim {

// What a circuit's state is: a state vector, or a density matrix (the only
// one that runs noise channels: grad/density_matrix.h). automatic: the
// density matrix when the circuit has channels, else the state vector.
enum class Method { automatic, statevector, density_matrix };

// How circuits run, for adjoint gradients and plain simulation (grad/simulate.h).
struct AdjointOptions {
  int threads = 1;
  int fusion = 3;                  // fuse the fixed gates between parametric ones (0: off)
  int chunk_qubits = -1;           // cache-blocking chunk (see StateVector); -1: the default
  Backend backend = Backend::cpu;  // cuda: the current device (cuda::select_device)
  // The state the circuit starts from (2^n amplitudes, bit q of an index =
  // qubit q, normalised by the caller); empty: |0...0>. Not owned.
  std::span<const cplx> initial_state = {};
  Method method = Method::automatic;
  // Density-matrix gradients: bytes of forward states the backward pass may
  // keep (beyond that, segments are recomputed from fewer checkpoints).
  std::uint64_t checkpoint_bytes = std::uint64_t{1} << 30;
};

struct AdjointResult {
  std::vector<double> expvals;   // <H_k> at theta
  std::vector<double> gradient;  // dL/dtheta[slot], size = theta.size()
};

// L = sum_k weights[k] <H_k>. REQUIRES weights.size() == observables.size(),
// theta.size() >= c.num_slots().
template <class R>
AdjointResult adjoint_vjp(const Circuit& c, std::span<const double> theta,
                          const std::vector<PauliSum>& observables, std::span<const double> weights,
                          const AdjointOptions& options);

// The upstream weights computed from the expectation values at theta: for a
// hybrid model whose classical layers after the circuit need <H_k> before the
// backward pass (one forward pass, one backward pass). `weights` returns one
// weight per observable and must be safe to call from several threads.
using WeightsFn = std::function<std::vector<double>(std::span<const double> expvals)>;
template <class R>
AdjointResult adjoint_vjp(const Circuit& c, std::span<const double> theta,
                          const std::vector<PauliSum>& observables, const WeightsFn& weights,
                          const AdjointOptions& options);

// Whether `count` adjoint sweeps of n qubits run one per thread (one thread
// inside each) under these options: CPU states that fit one cache-blocked
// chunk, which a second thread slows down, and, with a sweep for every thread,
// states of two chunks. Otherwise they run in turn with the threads inside.
bool adjoint_sweeps_one_per_thread(std::size_t count, int n, Precision precision,
                                   const AdjointOptions& options);

// d<H_k>/dtheta for every observable: one row per observable. `expvals`, when
// given, receives <H_k> at theta (from the forward state the sweeps start
// from: no second forward pass).
template <class R>
std::vector<std::vector<double>> adjoint_jacobian(const Circuit& c, std::span<const double> theta,
                                                  const std::vector<PauliSum>& observables,
                                                  const AdjointOptions& options,
                                                  std::vector<double>* expvals = nullptr);

// Vector-Jacobian products for a batch of parameter vectors of one circuit
// template: items run one per thread when states are small, else one after
// another with threads inside each state.
template <class R>
std::vector<AdjointResult> adjoint_vjp_batch(const Circuit& c,
                                             const std::vector<std::vector<double>>& thetas,
                                             const std::vector<PauliSum>& observables,
                                             const std::vector<std::vector<double>>& weights,
                                             const AdjointOptions& options);

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
                                            const AdjointOptions& options);

}  // namespace qmlsim
