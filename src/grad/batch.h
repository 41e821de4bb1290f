// Batches of circuit runs, the engine entry points of the Python doors: each
// item has its own circuit (all on as many qubits), parameter values and
// starting state. Items run under the engine's item policy (one per thread
// when states are small; on the GPU, small states of items without a starting
// state in one launch), each result equal to the single-item entry point's.
// Memory is checked before anything runs.
#pragma once

#include <span>
#include <vector>

#include "circuit/circuit.h"
#include "circuit/observable.h"
#include "core/types.h"
#include "grad/adjoint.h"
#include "grad/options.h"
#include "grad/simulate.h"

namespace qmlsim {

struct BatchItem {
  const Circuit* circuit = nullptr;
  std::span<const double> theta;        // theta.size() >= circuit->num_slots()
  std::span<const cplx> initial_state;  // empty: the options' initial state (or |0...0>)
  // The item's own observables for vjp_batch; null: the batch's.
  const std::vector<PauliSum>* observables = nullptr;
};

// Throws OutOfMemory naming the need when `states` states of c (state vectors,
// or density matrices where the options run c on one, with the states a
// density-matrix gradient keeps: grad/method.h, item_size) do not fit in this
// machine's memory. The GPU backend checks its own memory when it allocates.
// The batch entry points check one item so; more run at once only where they
// fit together (grad/engine.h: in_flight_fits).
void check_states_fit(const Circuit& c, int states, Precision precision,
                      const EngineOptions& options);

// simulate() of every item: out[i].
std::vector<SimulateResult> simulate_batch(const std::vector<BatchItem>& items,
                                           const SimulateRequest& request, Precision precision,
                                           const EngineOptions& options);

// adjoint_vjp() of every item with its own weights: out[i] for
// L_i = sum_k weights[i][k] <H_k> (H: the item's observables, else the
// batch's). An Error unless every row has one weight per observable.
std::vector<AdjointResult> vjp_batch(const std::vector<BatchItem>& items,
                                     const std::vector<PauliSum>& observables,
                                     const std::vector<std::vector<double>>& weights,
                                     Precision precision, const EngineOptions& options);

struct JacobianResult {
  std::vector<double> expvals;            // <H_k>
  std::vector<std::vector<double>> rows;  // [k][slot] = d<H_k>/dtheta[slot]
};

// The Jacobian of every item: adjoint_jacobian (one forward state kept, a
// backward pass per observable: three states) where three states fit, else
// one VJP per observable (two states).
std::vector<JacobianResult> jacobian_batch(const std::vector<BatchItem>& items,
                                           const std::vector<PauliSum>& observables,
                                           Precision precision, const EngineOptions& options);

}  // namespace qmlsim
