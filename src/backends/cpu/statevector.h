// The CPU state vector: 2^n complex amplitudes (complex64 or complex128),
// 64-byte aligned and interleaved (re, im). Bit q of an amplitude's index is
// qubit q. Reductions (norm, expectation values, sampling) accumulate in double
// over fixed blocks in a fixed order, so results do not depend on the thread count.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "backends/cpu/kernels.h"
#include "circuit/bound.h"
#include "circuit/observable.h"
#include "core/aligned_buffer.h"
#include "core/types.h"

namespace qmlsim::cpu {

// Bytes a state of n qubits needs at the given precision.
std::uint64_t state_bytes(int n, Precision p);

template <class R>
class StateVector {
 public:
  using real_type = R;

  // |0...0> on n qubits. Throws Error for n outside [0, kMaxQubits] or when the
  // memory cannot be allocated (the message states the size).
  explicit StateVector(int n, int threads = 1, const KernelSet* kernels = nullptr);
  // A state whose amplitudes are left unset, for one that is overwritten
  // whole before it is read (copy_from, assign_applied): saves a pass.
  struct Unset {};
  StateVector(int n, int threads, Unset, const KernelSet* kernels = nullptr);

  int num_qubits() const { return n_; }
  index_t size() const { return index_t{1} << n_; }
  int threads() const { return threads_; }
  void set_threads(int t) { threads_ = t < 1 ? 1 : t; }
  const KernelSet& kernels() const { return *kernels_; }

  R* data() { return amps_.data(); }  // interleaved re, im
  const R* data() const { return amps_.data(); }
  cplx amplitude(index_t i) const { return {amps_[2 * i], amps_[2 * i + 1]}; }

  void set_basis_state(index_t i);
  void set_amplitudes(std::span<const cplx> a);  // REQUIRES a.size() == size()
  std::vector<cplx> to_vector() const;
  void copy_from(const StateVector& other);  // REQUIRES same num_qubits

  void apply(const BoundGate& g);
  // Applies a sequence with cache blocking (passes/cache_blocking.h) when the
  // state is larger than a chunk: each segment costs one pass over memory.
  void apply(const std::vector<BoundGate>& gates);
  // set_basis_state(0), then apply(gates), without reading the amplitudes held
  // before: a cache-blocked first segment writes |0...0>'s chunks itself (saves
  // the pass that zeroes the state and the one that reads it back).
  void apply_from_zero(const std::vector<BoundGate>& gates);

  // The reverse sweep of adjoint differentiation. `inverse` holds the inverses of
  // a forward gate list, in forward order. For i from last to first, where
  // measure[i]: out[i] = (M - M^dagger) / 2 with M_ab = sum conj(lambda_a) this_b
  // over gate i's targets (controls 1), both states as they are after gate i of
  // the forward list (for a diagonal gate, out[i] holds its dim diagonal
  // entries alone: a wide MultiRZ's sums stay O(dim)); then
  // this = inverse[i] this and lambda = inverse[i] lambda. With U gate i and
  // dU/da its derivative, 2 Re <lambda| dU/da |phi before gate i> equals
  // 2 sum_ab (dU/da U^dagger)_ab out[i]_ab (dU U^dagger is anti-Hermitian).
  // measure[i] == Measure::real_part: Re out[i] alone is formed where that saves
  // work (the fused one-qubit kernels), the imaginary parts then 0.
  // Gates that no measured gate needs undone (passes/light_cone.h) are skipped,
  // so on return both states are unspecified; only `out` is the result. With
  // `undo_all`, every gate is undone (a sweep in parts: distributed/state.h).
  // `sides` (empty: every step Side::both): a step of Side::this_only or Side::lambda_only
  // is applied to that state alone and never measured (a density matrix's
  // channel: its inverse undoes rho, its dual pulls lambda back); no measured
  // gate moves past one, and every step before the last measured one is taken.
  // Cache-blocked like apply(); the sums do not depend on the thread count.
  void adjoint_sweep(StateVector& lambda, const std::vector<BoundGate>& inverse,
                     const std::vector<Measure>& measure, std::vector<Matrix>& out,
                     bool undo_all = false, const std::vector<Side>& sides = {});

  // lambda = H this (overwritten whole), then adjoint_sweep(lambda, inverse,
  // measure, out); returns Re <this|H|this> as assign_applied does (summed per
  // chunk in order when blocked: equal up to rounding). With cache blocking,
  // the sweep's first segment forms lambda in its chunks from this's when they
  // hold every qubit H flips: the passes that write lambda and read it back
  // are saved.
  double adjoint_sweep_from(const PauliSum& h, StateVector& lambda,
                            const std::vector<BoundGate>& inverse,
                            const std::vector<Measure>& measure, std::vector<Matrix>& out);

  // Chunk size for cache blocking, in qubits; 0 disables blocking.
  int chunk_qubits() const { return chunk_qubits_; }
  void set_chunk_qubits(int q) {
    chunk_qubits_ = q;
    chunk_fixed_ = true;
  }
  // Default: chunks of chunk_bytes() (see there).
  static int default_chunk_qubits();
  // Whether the adjoint sweep of an n-qubit state (chunk_qubits: as
  // set_chunk_qubits takes it, -1 the default; serial: a sweep on one thread)
  // runs in cache-blocked segments, where fused pairs and diagonal runs apply:
  // states larger than a chunk, and serially those of kSegmentedSweepBytes or
  // more that fit one (taken as their one chunk). Smaller states go gate by
  // gate: there a segment's own work costs more than the passes it saves.
  static bool sweep_in_segments(int n, int chunk_qubits, bool serial);
  static constexpr std::size_t kSegmentedSweepBytes = std::size_t{128} << 10;
  // The chunk of a forward pass (apply): chunk_qubits(), one qubit more for a
  // state streamed from memory (half the last-level cache or more) unless set
  // by set_chunk_qubits. The sweep holds a chunk of each of its two states.
  int forward_chunk_qubits() const;
  // Whether blocked passes write chunks back to memory with non-temporal
  // stores: by default once the states a pass streams reach half the
  // last-level cache (QMLSIM_STREAMING_STORES=0/1 overrides that for the
  // process); this forces them on or off for passes on this state.
  void set_streaming_stores(bool on) { streaming_ = on ? 1 : 0; }
  // Bytes of a cache-blocking chunk: a quarter of a core's L2 cache, at least
  // 256 KiB and at most 4 MiB (measured best, docs/performance.md: 256 KiB on Zen 3 with
  // 512 KiB of L2, 512 KiB on Sapphire Rapids with 2 MiB); QMLSIM_CHUNK_KIB
  // sets it (an Error if it is not a number of KiB in [16, 1048576]).
  static std::size_t chunk_bytes();

  double norm_squared() const;
  std::vector<double> probabilities() const;
  // <psi|H|psi> for a Pauli sum. Diagonal terms are evaluated together in one pass;
  // terms that flip the same qubits share one further pass.
  double expval(const PauliSum& h) const;
  // Re <this|H|other> and <this|H|ket>: the building blocks of adjoint gradients.
  double expval_between(const PauliSum& h, const StateVector& other) const;
  cplx matrix_element(const PauliSum& h, const StateVector& ket) const;
  // <this|g|ket> for a gate (any matrix) on its targets, controls 1; in
  // double, independent of the thread count. One pass over both states.
  cplx matrix_element(const BoundGate& g, const StateVector& ket) const;
  // this = H src (REQUIRES src is another state of the same size). Returns
  // <src|H|src> (real part) from the same pass, formed in double before the
  // rounding to R and summed over fixed blocks in order, as expval() is.
  double assign_applied(const PauliSum& h, const StateVector& src);

  // Where this holds a density matrix rho on m = num_qubits() / 2 qubits as
  // vec(rho) (rho[r][c] at r + 2^m c; grad/density_matrix.h), with H on the m
  // qubits: Tr(H rho); this = vec(H); rho[c][c] for every c, clamped at 0; rho
  // row-major (rho[r][c] at r 2^m + c). backends/cpu/density.h; the GPU's
  // state vector has the same.
  double density_trace(const PauliSum& h) const;
  void set_density_observable(const PauliSum& h);
  std::vector<double> density_diagonal() const;
  std::vector<cplx> density_rows() const;

  // `shots` samples of all qubits from the Born distribution with a seeded RNG,
  // counted per outcome. Shots are drawn `chunk` at a time (sorted uniforms,
  // one scan of the state per chunk), so memory is the counts and one chunk,
  // whatever `shots` is. The counts do not depend on `chunk`: each uniform of
  // the seeded sequence maps to its outcome wherever it is sorted.
  static constexpr std::int64_t kSampleChunk = std::int64_t{1} << 20;
  std::map<index_t, std::int64_t> sample(std::int64_t shots, std::uint64_t seed,
                                         std::int64_t chunk = kSampleChunk) const;

 private:
  int n_;
  int threads_;
  // True when cache blocking is on and the state is larger than one chunk.
  bool blocking_pays(int gates, int chunk_qubits) const;
  // A state of n qubits is larger than chunks of chunk_qubits (and they are on).
  static bool blocked(int n, int chunk_qubits);
  void apply_gates(const std::vector<BoundGate>& gates, bool from_zero);
  // adjoint_sweep, after lambda = H this when h is given (returns <this|H|this>; 0 without h).
  double sweep(StateVector& lambda, const std::vector<BoundGate>& inverse,
               const std::vector<Measure>& measure, std::vector<Matrix>& out, bool undo_all,
               const PauliSum* h, const std::vector<Side>& sides = {});
  // from_zero: the chunks start as |0...0>'s, not read.
  void apply_segment(const std::vector<BoundGate>& gates, int begin, int end,
                     const std::vector<int>& qubits, bool from_zero = false);

  const KernelSet* kernels_;
  int chunk_qubits_;
  bool chunk_fixed_ = false;  // set_chunk_qubits: every pass takes chunk_qubits_
  int streaming_ = -1;        // -1: by size (see set_streaming_stores)
  AlignedBuffer<R> amps_;
};

// The scan of StateVector::sample over blocks [first, first + count) of a state
// whose per-block probability masses (blocks of 2^block_bits amplitudes, the
// whole state's, in order) are `block`: uniforms u (sorted) from index k, with
// `before` the mass of every earlier amplitude, are assigned to amplitudes;
// prob(j) is the probability of amplitude j counted from block `first`, and a
// hit adds to counts[offset + j]. Advances k and before, so the scan can be
// handed on (the distributed state scans slice after slice, distributed/state.cc).
template <class Prob>
void sample_scan(const std::vector<double>& block, std::int64_t first, std::int64_t count,
                 int block_bits, const std::vector<double>& u, std::size_t& k, double& before,
                 Prob&& prob, index_t offset, std::map<index_t, std::int64_t>& counts) {
  const auto nblocks = static_cast<std::int64_t>(block.size());
  const index_t bsize = index_t{1} << block_bits;
  for (std::int64_t b = first; b < first + count && k < u.size(); ++b) {
    if (u[k] >= before + block[static_cast<std::size_t>(b)] && b + 1 < nblocks) {
      before += block[static_cast<std::size_t>(b)];
      continue;
    }
    for (index_t i = 0; i < bsize && k < u.size(); ++i) {
      const index_t j = (static_cast<index_t>(b - first) << block_bits) + i;
      before += prob(j);
      const bool last = b + 1 == nblocks && i + 1 == bsize;
      std::int64_t hits = 0;
      while (k < u.size() && (u[k] < before || last)) {
        ++hits;
        ++k;
      }
      if (hits) counts[offset + j] += hits;
    }
  }
}

extern template class StateVector<float>;
extern template class StateVector<double>;

// Converts a bound gate to the kernels' plain form (matrix points into g).
KernelGate to_kernel_gate(const BoundGate& g);

}  // namespace qmlsim::cpu
