// Many small circuits at once on the GPU (the QCNN case: thousands of 8- to
// 12-qubit circuits, each too small to fill a GPU): one thread block per
// circuit holds its state (and, backward, its adjoint state) in shared memory
// and walks its own gate list, so the whole batch is one kernel launch each
// way and every item may have different gates. No CUDA type in this header.
#pragma once

#include <vector>

#include "circuit/bound.h"
#include "circuit/observable.h"
#include "core/types.h"

namespace qmlsim::cuda {

// Largest state a block holds (two states backward, in at most 128 KiB of
// shared memory): 13 qubits in complex64, 12 in complex128.
int small_batch_max_qubits(Precision p);
// Most observables SmallBatch::run reads out per item (more: item by item instead).
inline constexpr int kSmallBatchMaxObservables = 8;
// True when items of n qubits with `observables` readouts fit a small batch.
bool small_batch_fits(int n, Precision p, std::size_t observables);

template <class R>
class SmallBatch {
 public:
  // Item i's circuit: forward[i] (dense gates of at most kMaxDenseTargets
  // targets, or diagonal ones of any width) on |0...0> of n qubits.
  // REQUIRES n <= small_batch_max_qubits; throws Error otherwise or without a GPU.
  SmallBatch(int n, const std::vector<std::vector<BoundGate>>& forward);
  ~SmallBatch();
  SmallBatch(const SmallBatch&) = delete;
  SmallBatch& operator=(const SmallBatch&) = delete;

  // Runs every item's circuit; out[i][k] = <psi_i|H_k|psi_i>. The final states
  // stay on the device for adjoint_sweep.
  std::vector<std::vector<double>> run(const std::vector<PauliSum>& observables);

  // After run(): for every item i at once, lambda_i = h[i] psi_i, then the
  // reverse sweep of StateVector::adjoint_sweep over inverse[i] (the inverses
  // of a gate list ending in psi_i, measured where measure[i][j]): out[i][j]
  // as StateVector::adjoint_sweep's out (measured gates: dense of at most 2
  // targets, diagonal of at most 5).
  void adjoint_sweep(const std::vector<PauliSum>& h,
                     const std::vector<std::vector<BoundGate>>& inverse,
                     const std::vector<std::vector<Measure>>& measure,
                     std::vector<std::vector<Matrix>>& out);

 private:
  struct Impl;
  Impl* impl_;
};

extern template class SmallBatch<float>;
extern template class SmallBatch<double>;

}  // namespace qmlsim::cuda
