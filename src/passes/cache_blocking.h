// Cache blocking: groups a gate sequence into segments whose gates all act
// inside one set W of `chunk_qubits` qubits. A backend then applies a whole
// segment to one cache-sized chunk of the state at a time (the 2^|W| amplitudes
// that share the bits outside W), so a segment costs one pass over memory
// instead of one per gate. Pure circuit logic; knows no backend.
#pragma once

#include <vector>

#include "circuit/bound.h"

namespace qmlsim {

struct Segment {
  int begin = 0, end = 0;   // positions [begin, end) in SegmentPlan::order
  std::vector<int> qubits;  // W, ascending; empty: apply the gates directly (no blocking)
};

struct SegmentPlan {
  std::vector<int> order;  // a reordering of the gates, equivalent to the input
  std::vector<Segment> segments;
};

// Greedy with lookahead: a segment takes every remaining gate, in order, whose
// wires fit in `chunk_qubits` together with the segment's wires and qubits
// 0..run_qubits-1, and that commutes with every gate skipped before it (shares
// no qubit with them), so gates move only past gates on other qubits. W is then
// filled up with the lowest remaining qubits, so a chunk is made of contiguous
// runs of at least 2^run_qubits amplitudes. Segments of one gate, and gates
// wider than the chunk, are marked for direct application.
// A diagonal gate on at most `diagonal_wires` wires fits any segment: its wires
// need not be in W (the bits outside W are fixed within a chunk, where the gate
// is the diagonal restricted to them), so a layer of ZZ or CZ gates adds no
// segment. 0: every gate's wires are in W.
// `order` (empty, or one per gate): a gate of order 1 never moves past one of
// order 2 or the reverse, whatever their qubits (the adjoint sweep's steps on
// one state and its measured gates); 0: only qubits keep gates in order.
// REQUIRES run_qubits < chunk_qubits < n.
SegmentPlan plan_segments(const std::vector<BoundGate>& gates, int n, int chunk_qubits,
                          int run_qubits, int diagonal_wires = 0,
                          const std::vector<char>& order = {});

}  // namespace qmlsim
