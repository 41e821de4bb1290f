// The CPU state vector: allocation, basis states, gates applied directly or in
// cache-blocked segments (chunks.h), probabilities and sampling. Pauli sums:
// pauli_sum.cc; the adjoint sweep: adjoint_sweep.cc.
#include "backends/cpu/statevector.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "backends/cpu/chunks.h"
#include "backends/cpu/density.h"
#include "core/bits.h"
#include "core/cpu_features.h"
#include "core/error.h"
#include "core/memory.h"
#include "core/parallel.h"
#include "passes/cache_blocking.h"
#include "passes/fusion.h"
#include "passes/light_cone.h"

namespace qmlsim::cpu {

std::uint64_t state_bytes(int n, Precision p) {
  return (std::uint64_t{1} << n) * (p == Precision::c64 ? 8 : 16);
}

KernelGate to_kernel_gate(const BoundGate& g) {
  KernelGate k;
  k.k = g.num_targets();
  for (int j = 0; j < k.k; ++j) k.targets[j] = g.targets[j];
  k.num_controls = static_cast<int>(g.controls.size());
  for (int j = 0; j < k.num_controls; ++j) k.controls[j] = g.controls[j];
  k.diagonal = g.diagonal;
  k.matrix = reinterpret_cast<const double*>(g.matrix.data());
  return k;
}

namespace {

template <class R>
AlignedBuffer<R> allocate_state(int n) {
  if (n < 0 || n > kMaxQubits) {
    throw Error("cannot make a state of " + std::to_string(n) + " qubits (supported: 0 to " +
                std::to_string(kMaxQubits) + ")");
  }
  try {
    return AlignedBuffer<R>(std::size_t{2} << n);
  } catch (const Error&) {
    throw OutOfMemory("out of memory: a state of " + std::to_string(n) + " qubits needs " +
                      format_gib((std::uint64_t{2} << n) * sizeof(R)));
  }
}

// fn(lo, len) for each block of 2^kBlockBits amplitudes (the whole state if
// smaller), the blocks split over the threads.
template <class Fn>
void for_each_block(int n, int threads, Fn&& fn) {
  const int bits = std::min(n, kBlockBits);
  parallel_for(std::int64_t{1} << (n - bits), threads, std::int64_t{1} << n,
               [&](std::int64_t b) { fn(static_cast<index_t>(b) << bits, index_t{1} << bits); });
}
}  // namespace

template <class R>
StateVector<R>::StateVector(int n, int threads, const KernelSet* kernels)
    : StateVector(n, threads, Unset{}, kernels) {
  set_basis_state(0);
}

template <class R>
StateVector<R>::StateVector(int n, int threads, Unset, const KernelSet* kernels)
    : n_(n),
      threads_((guard_threads_across_fork(), threads < 1 ? 1 : threads)),
      kernels_(kernels ? kernels : &best_kernels()),
      chunk_qubits_(default_chunk_qubits()),
      amps_(allocate_state<R>(n)) {}

template <class R>
void StateVector<R>::set_basis_state(index_t i) {
  assert(i < size());
  R* a = amps_.data();
  for_each_block(n_, threads_, [&](index_t lo, index_t len) {
    std::memset(static_cast<void*>(a + 2 * lo), 0, 2 * len * sizeof(R));
  });
  a[2 * i] = 1;
}

template <class R>
void StateVector<R>::set_amplitudes(std::span<const cplx> v) {
  assert(v.size() == size());
  for (index_t i = 0; i < size(); ++i) {
    amps_[2 * i] = static_cast<R>(v[i].real());
    amps_[2 * i + 1] = static_cast<R>(v[i].imag());
  }
}

template <class R>
std::vector<cplx> StateVector<R>::to_vector() const {
  std::vector<cplx> out(size());
  for (index_t i = 0; i < size(); ++i) out[i] = amplitude(i);
  return out;
}

template <class R>
double StateVector<R>::density_trace(const PauliSum& h) const {
  const int m = n_ / 2;
  return density_trace_columns(data(), m, 0, index_t{1} << m, h);
}

template <class R>
void StateVector<R>::set_density_observable(const PauliSum& h) {
  qmlsim::cpu::set_density_observable(data(), n_ / 2, h);
}

template <class R>
std::vector<double> StateVector<R>::density_diagonal() const {
  const int m = n_ / 2;
  return density_diagonal_columns(data(), m, 0, index_t{1} << m);
}

template <class R>
std::vector<cplx> StateVector<R>::density_rows() const {
  const index_t dim = index_t{1} << (n_ / 2);
  std::vector<cplx> out(dim * dim);
  for (index_t r = 0; r < dim; ++r)
    for (index_t c = 0; c < dim; ++c) out[r * dim + c] = amplitude(r + dim * c);
  return out;
}

template <class R>
void StateVector<R>::copy_from(const StateVector& other) {
  assert(other.n_ == n_);
  // In blocks over the threads: one core's copy of a 16 MiB state ran at half
  // the bandwidth of two (docs/performance.md).
  R* to = amps_.data();
  const R* from = other.amps_.data();
  for_each_block(n_, threads_, [&](index_t lo, index_t len) {
    std::memcpy(static_cast<void*>(to + 2 * lo), from + 2 * lo, 2 * len * sizeof(R));
  });
}

template <class R>
void StateVector<R>::apply(const BoundGate& g) {
  const KernelGate k = to_kernel_gate(g);
  PreparedGates<R>(*kernels_, &k, 1, n_).run(amps_.data(), threads_);
}

template <class R>
std::size_t StateVector<R>::chunk_bytes() {
  static const std::size_t bytes = [] {
    if (const char* v = std::getenv("QMLSIM_CHUNK_KIB"); v && *v) {
      char* end = nullptr;
      const long long kib = std::strtoll(v, &end, 10);
      if (*end != '\0' || kib < 16 || kib > (1 << 20))
        throw Error("QMLSIM_CHUNK_KIB: expected a chunk size in KiB from 16 to 1048576, got '" +
                    std::string(v) + "'");
      return static_cast<std::size_t>(kib) << 10;
    }
    return std::clamp(l2_cache_bytes() / 4, std::size_t{256} << 10, std::size_t{4} << 20);
  }();
  return bytes;
}

template <class R>
int StateVector<R>::default_chunk_qubits() {
  return std::bit_width(chunk_bytes() / (2 * sizeof(R))) - 1;
}

template <class R>
bool StateVector<R>::blocked(int n, int chunk_qubits) {
  return chunk_qubits > kRunQubits && n > chunk_qubits;
}

template <class R>
bool StateVector<R>::blocking_pays(int gates, int chunk_qubits) const {
  return blocked(n_, chunk_qubits) && gates >= 2;
}

template <class R>
bool StateVector<R>::sweep_in_segments(int n, int chunk_qubits, bool serial) {
  const int chunk = chunk_qubits < 0 ? default_chunk_qubits() : chunk_qubits;
  if (blocked(n, chunk)) return true;
  return serial && chunk > 0 && state_bytes(n, kPrecisionOf<R>) >= kSegmentedSweepBytes;
}

namespace {

// Moves each gate that is not a basis permutation back past the basis
// permutations before it that share none of its wires (they commute), so the
// permutations meet in runs that a segment applies as one map (PermutationRuns).
// Fusion emits a Rot layer before a CNOT ring as Rot, CNOT, Rot, CNOT, ...: the
// ring then costs one pass, not one per CNOT, and the Rots meet to be paired.
void gather_permutations(std::vector<BoundGate>& gates, int n) {
  std::vector<BoundGate> out;
  std::vector<char> perm;  // out[i] is a basis permutation
  out.reserve(gates.size());
  for (BoundGate& g : gates) {
    AffinePermutation probe(n);
    const bool p = probe.append(g);
    std::size_t at = out.size();
    if (!p) {
      const index_t m = g.wire_mask();
      while (at > 0 && perm[at - 1] && (out[at - 1].wire_mask() & m) == 0) --at;
    }
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(at), std::move(g));
    perm.insert(perm.begin() + static_cast<std::ptrdiff_t>(at), p);
  }
  gates = std::move(out);
}

}  // namespace

template <class R>
void StateVector<R>::apply(const std::vector<BoundGate>& gates) {
  apply_gates(gates, false);
}

template <class R>
void StateVector<R>::apply_from_zero(const std::vector<BoundGate>& gates) {
  apply_gates(gates, true);
}

template <class R>
void StateVector<R>::apply_gates(const std::vector<BoundGate>& gates, bool from_zero) {
  auto apply_direct_on = [&](const std::vector<BoundGate>& list, int begin, int end) {
    std::vector<KernelGate> kg;
    for (int i = begin; i < end; ++i) kg.push_back(to_kernel_gate(list[i]));
    PreparedGates<R>(*kernels_, kg.data(), end - begin, n_).run(amps_.data(), threads_);
  };
  // One-qubit gates are paired (passes/fusion.h) within each segment, after
  // the plan: across the whole circuit, a pair on distant qubits would tie them
  // to one chunk. Not below 2^14 amplitudes: there a gate costs less than the
  // copy and the pairing (QCNN, QAOA at 8 and 11 qubits: 2-8% slower).
  const int count = static_cast<int>(gates.size());
  const int chunk_qubits = forward_chunk_qubits();
  if (!blocking_pays(count, chunk_qubits)) {
    if (from_zero) set_basis_state(0);
    if ((index_t{1} << n_) < static_cast<index_t>(kMinParallelWork)) {
      apply_direct_on(gates, 0, count);
      return;
    }
    std::vector<BoundGate> paired = gates;
    pair_single_qubit_gates(paired);
    apply_direct_on(paired, 0, static_cast<int>(paired.size()));
    return;
  }
  const SegmentPlan plan = plan_blocks(gates, n_, chunk_qubits);
  // A blocked first segment writes |0...0> into its chunks itself.
  if (from_zero && plan.segments.front().qubits.empty()) set_basis_state(0);
  for (const Segment& s : plan.segments) {
    std::vector<BoundGate> segment;
    segment.reserve(static_cast<std::size_t>(s.end - s.begin));
    for (int j = s.begin; j < s.end; ++j) segment.push_back(gates[plan.order[j]]);
    if (!s.qubits.empty()) gather_permutations(segment, n_);
    pair_single_qubit_gates(segment);
    const int len = static_cast<int>(segment.size());
    if (s.qubits.empty()) {
      apply_direct_on(segment, 0, len);
    } else {
      apply_segment(segment, 0, len, s.qubits, from_zero && &s == &plan.segments.front());
    }
  }
}

// The sweep holds a chunk of each of its two states at once; a forward pass
// over one state streamed from memory takes chunks of twice the size, which
// fill the same half of the L2 and need fewer segments (passes over memory).
// Measured (2 threads, c64, 512 KiB against 1 MiB chunks, alternated): fresh
// `qmlsim run` of the 28-qubit fSim grid 8.4-12.6 -> 7.6-8.4 s (12 -> 10
// segments), random depth-20 28 qubits 9.3-11.1 -> 8.6-9.8 s; at 24 qubits,
// where the 128 MB state stays in this VM's last-level cache, no gain (fSim
// grid 368-393 against 379-416 ms warm), and the gradient families were 4-11%
// slower with the sweep's chunks doubled.
template <class R>
int StateVector<R>::forward_chunk_qubits() const {
  const bool doubled =
      !chunk_fixed_ && chunk_qubits_ > 0 && streams_from_memory((std::size_t{2} << n_) * sizeof(R));
  return doubled ? chunk_qubits_ + 1 : chunk_qubits_;
}

template <class R>
void StateVector<R>::apply_segment(const std::vector<BoundGate>& gates, int begin, int end,
                                   const std::vector<int>& w, bool from_zero) {
  const ChunkLayout layout(w);
  const int b = layout.b;
  const int len = end - begin;
  std::vector<BoundGate> local;
  std::vector<KernelGate> kg;
  const std::vector<std::unique_ptr<OutsideDiagonal<R>>> outside =
      localize<R>(gates, begin, end, layout, *kernels_, local, kg);
  const PermutationRuns runs(local, b, [&](int j) { return !outside[j]; });
  // Consecutive other gates run as one prepared list: steps [j, step_end[j]);
  // a gate with wires outside W runs alone, as its chunk's variant.
  std::vector<std::unique_ptr<PreparedGates<R>>> lists(static_cast<std::size_t>(len));
  std::vector<int> step_end(static_cast<std::size_t>(len), -1);
  for (int j = 0; j < len;) {
    if (runs.end[j] > j) {
      j = runs.end[j];
      continue;
    }
    if (outside[j]) {
      step_end[j] = j + 1;
      ++j;
      continue;
    }
    int e = j;
    while (e < len && runs.end[e] < 0 && !outside[e]) ++e;
    lists[j] = std::make_unique<PreparedGates<R>>(*kernels_, kg.data() + j, e - j, b);
    step_end[j] = e;
    j = e;
  }
  const std::int64_t nchunks = std::int64_t{1} << (n_ - b);
  R* amps = amps_.data();
  const int threads = nchunks >= 2 ? threads_ : 1;
  const bool copy = !layout.contiguous();
  const bool streaming = streaming_stores_pay(streaming_, (std::size_t{2} << n_) * sizeof(R));
#pragma omp parallel num_threads(threads)
  {
    AlignedBuffer<R> buf(copy ? std::size_t{2} << b : 0);
    AlignedBuffer<R> spare(runs.count ? std::size_t{2} << b : 0);
#pragma omp for schedule(static)
    for (std::int64_t c = 0; c < nchunks; ++c) {
      const index_t base = layout.base(c);
      ChunkBuffers<R> chunk{copy ? buf.data() : amps + 2 * base, spare.data(), nullptr};
      chunk.cur = chunk.home;
      if (from_zero) {  // gathered or in place: the chunk is written, not read
        std::memset(static_cast<void*>(chunk.cur), 0, (std::size_t{2} << b) * sizeof(R));
        if (base == 0) chunk.cur[0] = 1;  // amplitude 0 is the first of chunk 0
      } else if (copy) {
        layout.gather(chunk.cur, amps, base);
      }
      for (int j = 0; j < len;) {
        if (runs.end[j] > j) {
          chunk.permute(*runs.start[j]);
          j = runs.end[j];
        } else if (outside[j]) {
          outside[j]->prepared[outside[j]->variant(base)]->run(chunk.cur, 1);
          ++j;
        } else {
          lists[j]->run(chunk.cur, 1);
          j = step_end[j];
        }
      }
      if (copy)
        layout.scatter(chunk.cur, amps, base, streaming);
      else
        chunk.settle(b);
    }
  }
}

template <class R>
std::vector<double> StateVector<R>::probabilities() const {
  std::vector<double> p(size());
  const R* a = amps_.data();
  parallel_for(static_cast<std::int64_t>(size()), threads_, static_cast<std::int64_t>(size()),
               [&](std::int64_t i) {
                 p[i] = static_cast<double>(a[2 * i]) * a[2 * i] +
                        static_cast<double>(a[2 * i + 1]) * a[2 * i + 1];
               });
  return p;
}

template <class R>
cplx StateVector<R>::matrix_element(const BoundGate& g, const StateVector& ket) const {
  assert(ket.n_ == n_);
  return cpu::matrix_element(amps_.data(), ket.amps_.data(), n_, g, threads_);
}

template <class R>
std::map<index_t, std::int64_t> StateVector<R>::sample(std::int64_t shots, std::uint64_t seed,
                                                       std::int64_t chunk) const {
  std::map<index_t, std::int64_t> counts;
  if (shots <= 0) return counts;
  const int lb = std::min(n_, kBlockBits);
  const index_t bsize = index_t{1} << lb;
  const std::int64_t nblocks = std::int64_t{1} << (n_ - lb);
  const R* a = amps_.data();
  auto prob = [&](index_t i) {
    return static_cast<double>(a[2 * i]) * a[2 * i] +
           static_cast<double>(a[2 * i + 1]) * a[2 * i + 1];
  };
  std::vector<double> block(nblocks);
  parallel_for(nblocks, threads_, std::int64_t{1} << n_, [&](std::int64_t b) {
    double s = 0;
    for (index_t i = 0; i < bsize; ++i) s += prob((static_cast<index_t>(b) << lb) + i);
    block[b] = s;
  });
  double total = 0;
  for (double s : block) total += s;
  std::mt19937_64 rng(seed);
  std::vector<double> u;
  for (std::int64_t done = 0; done < shots; done += chunk) {
    u.resize(static_cast<std::size_t>(std::min(chunk, shots - done)));
    for (double& x : u) x = static_cast<double>(rng() >> 11) * 0x1.0p-53 * total;
    std::sort(u.begin(), u.end());
    std::size_t k = 0;
    double before = 0;  // probability mass of all earlier amplitudes
    sample_scan(block, 0, nblocks, lb, u, k, before, prob, 0, counts);
  }
  return counts;
}

template class StateVector<float>;
template class StateVector<double>;

}  // namespace qmlsim::cpu