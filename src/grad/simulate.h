// Forward simulation on either backend: bind, fuse, run, read out. The one
// place the models, the CLI and the Python binding turn a circuit into
// expectation values, samples, the final state, probabilities and the most
// probable basis state.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "circuit/circuit.h"
#include "circuit/observable.h"
#include "grad/adjoint.h"

namespace qmlsim {

struct SimulateRequest {
  std::vector<PauliSum> observables;
  std::int64_t shots = 0;  // samples of all qubits (seeded)
  std::uint64_t seed = 1;
  bool most_probable = false;  // find the basis state of highest probability
  bool state = false;          // the final amplitudes, as complex128
  bool probabilities = false;  // |a_i|^2 of every basis state
  // Dynamic circuits on a state vector: the final state of every branch
  // walked (of the shot walk when shots > 0, then nothing is sampled). A
  // circuit with channels takes the same walk (with shots: each leaf a
  // trajectory, its Kraus branches drawn; without: the density matrix).
  bool leaves = false;
  bool leaf_states = true;  // with leaves: also each branch's final state
};

// One branch of a dynamic circuit's walk (grad/dynamic.h): its classical
// record, probability (exact walk) or share of the shots (shot walk), its
// shots, its <H_k> and probabilities (as requested), and its final state
// (normalised; on a density-matrix walk rho, row-major: rho[r][c] at
// r 2^n + c; empty unless leaf_states).
struct DynamicLeaf {
  std::uint64_t record = 0;
  double probability = 0;
  std::int64_t shots = 0;
  std::vector<cplx> state;
  std::vector<double> expvals, probabilities;
};

struct SimulateResult {
  std::vector<double> expvals;  // one per observable
  std::map<index_t, std::int64_t> counts;
  index_t most_probable = 0;
  std::size_t gates_after_fusion = 0;
  std::vector<cplx> state;            // when requested
  std::vector<double> probabilities;  // when requested
  std::vector<double> expval_errors;  // trajectories: the standard error of each <H_k>
  // Dynamic circuits (grad/dynamic.h): with shots, each shot's classical
  // record (bit k = classical bit k) and final sample of all qubits, counted
  // (`counts` is their marginal over the records); without shots, the exact
  // probability of each classical record.
  std::map<std::pair<std::uint64_t, index_t>, std::int64_t> records;
  std::map<std::uint64_t, double> record_probabilities;
  std::vector<DynamicLeaf> leaves;  // when requested
};

// The final state of c at theta on options.backend (threads, fusion and chunks
// as for adjoint_vjp), read out as requested.
template <class R>
SimulateResult simulate(const Circuit& c, std::span<const double> theta, const SimulateRequest& req,
                        const EngineOptions& options);

// How many gates c at theta runs as once bound and fused (simulate's
// gates_after_fusion), without running them: the density matrix's gates where
// c runs on one, else the state vector's.
std::size_t gates_after_fusion(const Circuit& c, std::span<const double> theta,
                               const EngineOptions& options);

// <H_k> of many circuits on n qubits, each with its own parameters: out[i][k].
// On the cuda backend, states of at most cuda::small_batch_max_qubits qubits run
// in one kernel launch; elsewhere item by item (one per thread when small).
template <class R>
std::vector<std::vector<double>> expvals_many(const std::vector<const Circuit*>& circuits,
                                              const std::vector<std::vector<double>>& thetas,
                                              const std::vector<PauliSum>& observables,
                                              const EngineOptions& options);

}  // namespace qmlsim
