// Host side of the small batches: every item's gate list, matrices and Pauli
// sums flattened into arrays that one upload moves to the device.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cuda/small_batch_ops.h"
#include "circuit/bound.h"
#include "circuit/observable.h"

namespace qmlsim::cuda {

struct PackedItems {
  std::vector<PackedGate> gates;
  std::vector<std::uint32_t> first;  // item i's gates: [first[i], first[i + 1])
  std::vector<double> matrices;      // interleaved, at PackedGate::matrix
  std::size_t cross_doubles = 0;     // room for every measured gate's cross matrix
};

// Packs items[i] (gates on n qubits). measure, when given, marks the gates whose
// cross matrices are formed (PackedGate::cross). Throws Error for a gate the
// kernels do not take: dense beyond kPackMaxDense targets, more than
// kPackMaxWires wires, or a measured gate beyond 2 dense / 5 diagonal targets.
PackedItems pack_items(int n, const std::vector<std::vector<BoundGate>>& items,
                       const std::vector<std::vector<Measure>>* measure = nullptr);

// Entries of the cross matrix the kernels form for a measured gate (dim*dim
// dense, dim diagonal), or 0 where they form none (beyond 2 dense / 5 diagonal targets).
int cross_entries(const BoundGate& g);

// StateVector::adjoint_sweep's result for measured gate g, whose inverse is
// `inverse`, from the sums the kernels write (v[2e], v[2e + 1]): those hold M_ab =
// sum conj(lambda_a) phi_b with phi already undone (zeros off the diagonal of a
// diagonal gate). Before the undo, phi was U phi with U = inverse^dagger, so the
// sweep's M' = M U^T, and the result is its anti-Hermitian part, in the CPU
// sweep's form: a diagonal gate's as its dim diagonal entries alone.
Matrix cross_matrix_of(const PackedGate& g, const BoundGate& inverse, const double* v);

struct PackedSums {
  std::vector<u64> x, z;
  std::vector<double> c;             // coeff * i^popc(x & z), interleaved
  std::vector<std::uint32_t> first;  // sum i's terms: [first[i], first[i + 1])
  PackedTerms terms(std::size_t i, const u64* dx, const u64* dz, const double* dc) const {
    return {dx + first[i], dz + first[i], dc + 2 * first[i],
            static_cast<int>(first[i + 1] - first[i])};
  }
};

PackedSums pack_sums(const std::vector<PauliSum>& sums);

}  // namespace qmlsim::cuda
