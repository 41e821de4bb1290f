// Planning a circuit for a state vector distributed over 2^g processes. Pure
// circuit logic (no MPI): the executor is distributed/state.h.
//
// Layout: of n physical qubits, 0..m-1 (m = n - g) index amplitudes inside a
// process's slice and m..n-1 select the slice, so a process holds 2^m contiguous
// amplitudes. Logical (circuit) qubits sit on physical ones through a
// permutation, QubitMap. A gate runs inside every slice when its non-diagonal
// targets are local: controls and diagonal targets on slice qubits fix bits the
// process knows (it skips the gate or applies the restricted diagonal). When a
// gate needs a slice qubit as a non-diagonal target, one exchange swaps the
// slice qubits that the coming gates need with local qubits that they need last
// (furthest next use), chosen by looking ahead; the map is updated and nothing
// is swapped back. SWAP gates only relabel the map, and X or CNOT among slice
// qubits only relabel which process holds which slice.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "circuit/bound.h"

namespace qmlsim::distributed {

// Logical qubit q is on physical qubit phys[q]; logical[p] is the inverse.
struct QubitMap {
  std::vector<int> phys, logical;
  static QubitMap identity(int n);
  // The logical qubits on physical a and b trade places.
  void swap_physical(int a, int b);
  bool is_identity() const;
};

struct Step {
  enum class Kind {
    kGates,     // gates (physical numbering) to apply inside every slice
    kExchange,  // swap physical qubits pairs[t].first (local) <-> .second (slice)
    kRelabel,   // the process holding slice v now holds slice v ^ (bit control of v) << target
  };
  Kind kind = Kind::kGates;
  std::vector<BoundGate> gates;
  std::vector<int> source;  // kGates: index in the planned list of each gate
  // kGates: for each gate, order[i] = the position among its (physical, sorted)
  // targets of the planned gate's target i (for mapping matrices back).
  std::vector<std::vector<int>> order;
  std::vector<std::pair<int, int>> pairs;
  int control = -1, target = -1;  // kRelabel: slice bits (0..g-1); control -1: none
};

struct PlanStats {
  int exchanges = 0;        // exchange rounds
  double slices_moved = 0;  // per process, in slices: sum over rounds of 1 - 2^-k
  int relabels = 0;         // SWAP, X, CNOT done by relabelling
  // The per-gate pairwise scheme of QuEST and lightning (identity layout, no
  // look-ahead): a 1-target gate on a slice qubit exchanges half of each
  // slice's amplitudes with the partner (counted as one round of 1/2 slice); a
  // gate with several targets swaps each slice target in and back out (two
  // rounds of 1/2 slice each). Diagonal gates and controls need no exchange in
  // either scheme.
  int naive_exchanges = 0;
  double naive_slices_moved = 0;
};

struct DistPlan {
  std::vector<Step> steps;
  QubitMap final_map;
  PlanStats stats;
};

// Plans `gates` (logical qubits 0..n-1, canonical form) for 2^g processes,
// starting from `start`. REQUIRES every gate's non-diagonal targets number at
// most n - g (Error otherwise).
DistPlan plan(const std::vector<BoundGate>& gates, int n, int g, const QubitMap& start);

// The gate on physical qubits: targets and controls mapped through `map` and
// put back in canonical form (targets ascending, matrix reordered). `order`
// (optional) receives the position of each original target among the new ones.
BoundGate to_physical(const BoundGate& g, const QubitMap& map, std::vector<int>* order = nullptr);

// The gate as the process holding slice `slice` applies it to its 2^m
// amplitudes (physical numbering, slice bits at m..): nothing (a control on a
// slice bit is 0), or the gate with slice controls dropped and diagonal slice
// targets fixed to the slice's bits. A diagonal with no local target left
// becomes a diagonal on its local controls (1 except where all are 1), or a
// phase on qubit 0 of the slice when there are none. `kept_index` receives, for
// a kept diagonal gate, the index of each of its entries in the original
// gate's diagonal (for mapping adjoint sums back), and the kind of mapping.
struct Specialized {
  bool skip = false;
  BoundGate gate;
  // How the specialized gate's cross-matrix entries map to the original's:
  // kSame (same targets), kDiagonalFixed (diagonal: entry a -> index[a]),
  // kPhaseOnControls (only the all-ones entry, to index[0]), kPhaseOnSlice
  // (the sum of the two entries, to index[0]).
  enum class Map { kSame, kDiagonalFixed, kPhaseOnControls, kPhaseOnSlice } map = Map::kSame;
  std::vector<std::size_t> index;
};
Specialized specialize(const BoundGate& physical, int m, std::uint64_t slice);

}  // namespace qmlsim::distributed
