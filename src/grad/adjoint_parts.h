// The pieces of the adjoint method, for engines that run the forward pass and
// the sweep themselves (the distributed state vector, dist/state.h): the tape
// cut for the sweep, its inverse gates, and the chain rule from the sweep's
// cross matrices to parameter gradients.
#pragma once

#include <span>
#include <vector>

#include "circuit/bound.h"
#include "circuit/observable.h"
#include "grad/tape.h"

namespace qmlsim {

// The tape with runs of fixed steps fused; parametric steps stay as they are.
struct Segmented {
  std::vector<BoundGate> gates;       // forward order
  std::vector<const TapeStep*> step;  // parametric step for gates[i], or null
};
// `fusion`: the largest fused block in qubits (0: none). The steps point into `tape`.
Segmented segment(const std::vector<TapeStep>& tape, int fusion);

// The forward pass needs only the final state: fused across parametric gates too.
std::vector<BoundGate> forward_gates(const std::vector<TapeStep>& tape, int fusion);

// sum_k w[k] obs[k].
PauliSum weighted_sum(const std::vector<PauliSum>& obs, std::span<const double> w);

// The inverse of every gate of s (forward order) and whether it is measured (parametric).
void inverse_gates(const Segmented& s, std::vector<BoundGate>& inverse, std::vector<char>& measure);

// Adds every angle's dL/da to grad, from the sweep's anti-Hermitian cross
// matrices m (StateVector::adjoint_sweep; m[i] is dim x dim over gate i's targets):
// with U the gate at its angles, dL/da = 2 Re <lambda| dU/da |phi_before>
// = 2 sum_ab (dU/da U^dagger)_ab m_ab.
void accumulate(const Segmented& s, const std::vector<Matrix>& m, std::vector<double>& grad);

}  // namespace qmlsim
