// The pieces of the adjoint method, for engines that run the forward pass and
// the sweep themselves (the distributed state vector, distributed/state.h): the tape
// cut for the sweep, its inverse gates, and the chain rule from the sweep's
// cross matrices to parameter gradients.
#pragma once

#include <span>
#include <vector>

#include "circuit/bound.h"
#include "circuit/observable.h"
#include "grad/tape.h"

namespace qmlsim {

// A step inside a gate of the sweep. When the gate is a block of several steps,
// `targets` / `controls` are the step's wires as bit positions in the block; a
// step that is its gate by itself has them empty.
struct BlockStep {
  const TapeStep* step = nullptr;
  std::vector<int> targets, controls;
};

// The tape cut for the sweep: consecutive steps on at most `fusion` qubits form
// one gate (one measurement and one undo per vector for the whole block, its
// trainable steps' cross matrices derived from the block's: accumulate);
// blocks without trainable steps are fused cost-aware as in the forward pass.
struct Segmented {
  std::vector<BoundGate> gates;  // forward order
  // The steps inside gates[i], in order, trainable or not; empty for a gate
  // without trainable steps (which the sweep undoes without measuring).
  std::vector<std::vector<BlockStep>> steps;
};
// `fusion`: the largest block in qubits (0: every step alone); a block of
// diagonal steps may grow to `diagonal_qubits`. gather_diagonals: trainable
// one-qubit diagonal steps (an RY RZ layer's RZs) gather into diagonal blocks
// rather than joining dense one-qubit blocks where that keeps those real (for
// the CPU sweep's kernels). The steps point into `tape`.
Segmented segment(const std::vector<TapeStep>& tape, int fusion, int diagonal_qubits = 2,
                  bool gather_diagonals = false);

// The forward pass needs only the final state: fused across parametric gates too.
std::vector<BoundGate> forward_gates(const std::vector<TapeStep>& tape, int fusion);

// sum_k w[k] obs[k].
PauliSum weighted_sum(const std::vector<PauliSum>& obs, std::span<const double> w);

// The inverse of every gate of s (forward order) and whether it is measured (holds
// trainable steps): Measure::real_part for a step alone whose derivatives have
// dU U^dagger real, whose gradient reads only the real parts of its sums.
void inverse_gates(const Segmented& s, std::vector<BoundGate>& inverse,
                   std::vector<Measure>& measure);

// Adds every angle's dL/da to grad, from the sweep's anti-Hermitian cross
// matrices m (StateVector::adjoint_sweep; m[i] is dim x dim over gate i's targets):
// with U a step's gate at its angles and m its own cross matrix (derived from
// its block's), dL/da = 2 Re <lambda| dU/da |phi_before> = 2 sum_ab (dU/da U^dagger)_ab m_ab.
void accumulate(const Segmented& s, const std::vector<Matrix>& m, std::vector<double>& grad);

}  // namespace qmlsim
