// Cache blocking: splits a gate sequence into segments whose gates all act
// inside one set W of `chunk_qubits` qubits. A backend then applies a whole
// segment to one cache-sized chunk of the state at a time (the 2^|W| amplitudes
// that share the bits outside W), so a segment costs one pass over memory
// instead of one per gate. Pure circuit logic; knows no backend.
#pragma once

#include <vector>

#include "circuit/bound.h"

namespace qmlsim {

struct Segment {
  int begin = 0, end = 0;   // gates [begin, end) of the input
  std::vector<int> qubits;  // W, ascending; empty: apply the gates directly (no blocking)
};

// Greedy: a segment grows while the union of its gates' wires and qubits
// 0..run_qubits-1 fits in `chunk_qubits`; W is then filled up with the lowest
// remaining qubits, so a chunk is made of contiguous runs of at least
// 2^run_qubits amplitudes. Segments of one gate, and gates wider than the chunk,
// are marked for direct application. REQUIRES run_qubits < chunk_qubits < n.
std::vector<Segment> plan_segments(const std::vector<BoundGate>& gates, int n, int chunk_qubits,
                                   int run_qubits);

}  // namespace qmlsim
