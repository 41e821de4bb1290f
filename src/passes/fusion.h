// Gate fusion: a pure circuit-to-circuit pass over bound gates. Consecutive
// gates whose wires fit in a block of at most `max_qubits` qubits become one
// dense gate; runs of diagonal gates become one diagonal gate of up to
// `max_diagonal_qubits`. The result is equivalent to the input (same unitary).
//
// Merging is cost-aware: a k-qubit dense block costs 2^k complex multiply-adds
// per amplitude, a diagonal one 1, and a gate with c controls 1/2^c of that;
// each separate gate also costs one sweep over the state (`sweep_cost` in the
// same unit). Blocks merge only when that does not raise the total, counting
// for a two-qubit block the sweeps of the next gates that stay on its pair
// (one-step lookahead). A gate whose wires saw nothing since the last emitted
// block on them, which covers them, joins that block at no cost.
#pragma once

#include <vector>

#include "circuit/bound.h"

namespace qmlsim {

struct FusionOptions {
  int max_qubits = 3;            // measured best with cache blocking (docs/performance.md)
  int max_diagonal_qubits = 10;  // diagonal blocks can be larger: a table of 2^k phases
  // Cost of one more sweep, in multiply-adds per amplitude. With cache blocking a
  // sweep is a pass over an L2-resident chunk: 1.0 measured best (docs/performance.md).
  double sweep_cost = 1.0;
};

// Cost of applying g alone, in complex multiply-adds per amplitude (see above).
double gate_cost(const BoundGate& g);

std::vector<BoundGate> fuse(const std::vector<BoundGate>& gates, const FusionOptions& options);

// The engine's fusion of a gate list at width `max_qubits` (0: none, the
// gates as given): dense blocks of up to max_qubits, diagonal runs of up to
// max(10, max_qubits).
std::vector<BoundGate> fuse_up_to(const std::vector<BoundGate>& gates, int max_qubits);

// Replaces each uncontrolled one-qubit gate and the next such gate on another
// qubit that can move back to it (no gate in between touches its qubit) by
// their product, a two-qubit gate: in a cache chunk a 2q gate costs about what
// one 1q gate does (`qmlsim bench`). Same unitary. Fusion cannot do this (it
// merges only gates that share a wire), and must not before cache blocking
// plans its segments: a pair of distant qubits would have to share a chunk
// (measured: random circuits 7% slower). So the CPU backend pairs within each
// segment, after the plan.
void pair_single_qubit_gates(std::vector<BoundGate>& gates);

// Applies g to the vector v of 2^n amplitudes (bit q of an index = qubit q).
// Plain and slow; the simple CPU reference the tests check kernels against.
void apply_reference(const BoundGate& g, cplx* v, int n);

// v <- g v over 2^n entries, with g's targets at bit positions targets[0..k)
// (ascending, as g.targets) and its controls at the bits of `controls`; with
// `transpose`, g^T instead of g. For building small products: a dense matrix
// M over k qubits is a vector over 2k bits, row in the high k, so g at
// positions p + k gives g M, and g^T at positions p gives M g. No allocation
// after the first calls (fusion and the adjoint's blocks call it per gate).
void apply_local(const BoundGate& g, const int* targets, index_t controls, cplx* v, int n,
                 bool transpose = false);

}  // namespace qmlsim
