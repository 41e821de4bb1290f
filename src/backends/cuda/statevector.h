// The NVIDIA GPU backend: state vectors in device memory (complex64 or
// complex128, interleaved re/im like the CPU's; bit q of an index is qubit q),
// gate kernels (dense up to kMaxDenseTargets targets, diagonal of any width,
// controls anywhere), Pauli-sum expectation values, the adjoint sweep, and
// sampling. This header holds no CUDA type: the CUDA toolkit is needed only to
// build statevector.cu. A build without it compiles unavailable.cc instead,
// whose every entry point fails with a clear error.
//
// Reductions (norm, expectation values, cross matrices) sum fixed per-block
// partials in double, then add the partials in block order on the host, so
// results are reproducible run to run for a given state size.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "circuit/bound.h"
#include "circuit/observable.h"
#include "core/types.h"

namespace qmlsim::cuda {

// Widest dense gate the kernels take (fusion on the GPU stays at or below it).
inline constexpr int kMaxDenseTargets = 5;

// False when qmlsim was configured without the CUDA toolkit.
bool built_with_cuda();

struct DeviceStatus {
  int count = 0;          // usable devices
  std::string name;       // device 0, when count > 0
  double memory_gib = 0;  // device 0's global memory
  std::string error;      // why count == 0
};
// Never throws: what the CUDA runtime reports.
DeviceStatus device_status();

// This process's device: local_rank % count, so ranks on one node take one GPU
// each. Throws Error ("--backend cuda: ...") when no device can be used.
int select_device(int local_rank);

// The launcher's node-local rank (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID,
// MPI_LOCALRANKID, PMI_LOCAL_RANK), else 0.
int local_rank_from_env();

template <class R>
class StateVector {
 public:
  using real_type = R;

  // |0...0> on n qubits on the current device. Throws Error when there is no
  // device or the state does not fit (the message states the size and the free memory).
  explicit StateVector(int n);
  ~StateVector();
  StateVector(StateVector&&) noexcept;
  StateVector& operator=(StateVector&&) noexcept;
  StateVector(const StateVector&) = delete;
  StateVector& operator=(const StateVector&) = delete;

  int num_qubits() const;
  index_t size() const { return index_t{1} << num_qubits(); }

  void set_basis_state(index_t i);
  void set_amplitudes(std::span<const cplx> a);  // REQUIRES a.size() == size()
  std::vector<cplx> to_vector() const;
  void copy_from(const StateVector& other);  // REQUIRES same num_qubits

  // Applies gates in order (one kernel launch each; matrices uploaded once).
  // Dense gates of more than kMaxDenseTargets targets are an Error.
  void apply(const BoundGate& g);
  void apply(const std::vector<BoundGate>& gates);

  double norm_squared() const;
  // |a_i|^2 of every basis state, in double (from a host copy of the state).
  std::vector<double> probabilities() const;
  double expval(const PauliSum& h) const;
  // this = H src (REQUIRES src is another state of the same size).
  void assign_applied(const PauliSum& h, const StateVector& src);

  // The reverse sweep of adjoint differentiation, with the CPU's contract
  // (backends/cpu/statevector.h: `out` as the CPU forms it, `sides` too):
  // for i from last to first, this = inverse[i] this; where measure[i], the
  // sums of conj(lambda_a) this_b over gate i's targets (controls set); then
  // lambda = inverse[i] lambda; a step of Side::this_only or Side::lambda_only applies to
  // that state alone. Every step is taken, so both states are always undone
  // (`undo_all` is accepted for the CPU's signature). Measured gates: dense
  // with at most 2 targets, or diagonal with at most 5.
  void adjoint_sweep(StateVector& lambda, const std::vector<BoundGate>& inverse,
                     const std::vector<Measure>& measure, std::vector<Matrix>& out,
                     bool undo_all = false, const std::vector<Side>& sides = {});

  // <this|g|ket> for a gate (any matrix the kernels take) on its targets,
  // controls 1: g applied to a copy of ket (one more state while it runs),
  // then the inner product, summed in double over fixed blocks.
  cplx matrix_element(const BoundGate& g, const StateVector& ket) const;

  // Where this holds a density matrix rho on m = num_qubits() / 2 qubits as
  // vec(rho) (rho[r][c] at r + 2^m c; grad/density_matrix.h), with H on the m
  // qubits: Tr(H rho); this = vec(H); rho[c][c] for every c, clamped at 0;
  // rho row-major (rho[r][c] at r 2^m + c, from a host copy).
  double density_trace(const PauliSum& h) const;
  void set_density_observable(const PauliSum& h);
  std::vector<double> density_diagonal() const;
  std::vector<cplx> density_rows() const;

  // `shots` samples with the CPU backend's algorithm (same seed, same counts).
  std::map<index_t, std::int64_t> sample(std::int64_t shots, std::uint64_t seed) const;

  // One in-place read-write pass over the state (the memory-bandwidth bound the
  // benchmarks divide by); returns when the device is done.
  void bandwidth_pass();
  // Waits for the device (every call above returns once its work is done).
  void synchronize() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class StateVector<float>;
extern template class StateVector<double>;

}  // namespace qmlsim::cuda
