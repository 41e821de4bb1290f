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

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "backends/cpu/basis_permutation.h"
#include "core/bits.h"
#include "core/cpu_features.h"
#include "core/error.h"
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
    const double gib = static_cast<double>(std::size_t{2} << n) * sizeof(R) / (1 << 30);
    throw Error("out of memory: a state of " + std::to_string(n) + " qubits needs " +
                std::to_string(gib) + " GiB");
  }
}

// Blocks of 2^kBlockBits amplitudes: the unit of parallel work and of the
// fixed-order reductions.
constexpr int kBlockBits = 10;

template <class R>
double apply_pauli_sum(const PauliSum& h, const R* in, R* out, int n, int threads);

// Terms of one flip pattern x: weight(i) = sum_t w_t (-1)^popcount(i & z_t).
struct TermGroup {
  index_t x = 0;
  std::vector<cplx> w;
  std::vector<index_t> z;
};

std::vector<TermGroup> group_terms(const PauliSum& h, double& constant) {
  std::vector<TermGroup> groups;
  constant = 0;
  for (const PauliTerm& t : h.terms) {
    if (t.xmask == 0 && t.zmask == 0) {
      constant += t.coeff;
      continue;
    }
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const TermGroup& g) { return g.x == t.xmask; });
    if (it == groups.end()) {
      groups.push_back({t.xmask, {}, {}});
      it = groups.end() - 1;
    }
    const int ny = std::popcount(t.xmask & t.zmask);
    static const cplx kPowI[4] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
    it->w.push_back(t.coeff * kPowI[ny % 4]);
    it->z.push_back(t.zmask);
  }
  return groups;
}

// Loops of the Pauli-sum passes, compiled for AVX-512, AVX2 and the baseline,
// the best chosen at load time. (This file is otherwise built for the
// baseline, where the conversions and one chain of dependent adds made an
// expectation value's pass 3-5x slower than reading the state.)
#if defined(__x86_64__)
#define QMLSIM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define QMLSIM_CLONES
#endif

// Each loop is written once, for R = float or double, and inlined into one
// cloned function per precision (the clones are what gets the target).
#define QMLSIM_INLINE [[gnu::always_inline]] inline

// sum_j a[j] b[j] w[j], in double.
template <class R>
QMLSIM_INLINE double weighted_dot_of(const R* a, const R* b, const double* w, index_t len) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (index_t j = 0; j < len; ++j) s += static_cast<double>(a[j]) * b[j] * w[j];
  return s;
}
// acc[j] += c w[j] x[j].
template <class R>
QMLSIM_INLINE void add_weighted_of(double* acc, double c, const double* w, const R* x,
                                   index_t len) {
#pragma omp simd
  for (index_t j = 0; j < len; ++j) acc[j] += c * w[j] * x[j];
}
// out[j] = acc[j] rounded to the state's precision; returns sum_j own[j] acc[j].
template <class R>
QMLSIM_INLINE double store_dot_of(const double* acc, const R* own, R* out, index_t len) {
  double e = 0;
#pragma omp simd reduction(+ : e)
  for (index_t j = 0; j < len; ++j) {
    e += static_cast<double>(own[j]) * acc[j];
    out[j] = static_cast<R>(acc[j]);
  }
  return e;
}
// Adds sum_i conj(b_i) k_i w_i over count amplitudes (interleaved b and k,
// complex weights w_i = wr[i] + i wi[i]) to (ar, ai).
template <class R>
QMLSIM_INLINE void add_weighted_products_of(const R* b, const R* k, const double* wr,
                                            const double* wi, index_t count, double& ar,
                                            double& ai) {
  double sr = 0, si = 0;
#pragma omp simd reduction(+ : sr, si)
  for (index_t i = 0; i < count; ++i) {
    const double kr = k[2 * i], ki = k[2 * i + 1];
    const double br = b[2 * i], bi = -static_cast<double>(b[2 * i + 1]);
    const double pr = br * kr - bi * ki, pi = br * ki + bi * kr;
    sr += pr * wr[i] - pi * wi[i];
    si += pr * wi[i] + pi * wr[i];
  }
  ar += sr;
  ai += si;
}
#undef QMLSIM_INLINE

#define QMLSIM_CLONE_BOTH(R)                                                                \
  QMLSIM_CLONES double weighted_dot(const R* a, const R* b, const double* w, index_t len) { \
    return weighted_dot_of(a, b, w, len);                                                   \
  }                                                                                         \
  QMLSIM_CLONES void add_weighted(double* acc, double c, const double* w, const R* x,       \
                                  index_t len) {                                            \
    add_weighted_of(acc, c, w, x, len);                                                     \
  }                                                                                         \
  QMLSIM_CLONES double store_dot(const double* acc, const R* own, R* out, index_t len) {    \
    return store_dot_of(acc, own, out, len);                                                \
  }                                                                                         \
  QMLSIM_CLONES void add_weighted_products(const R* b, const R* k, const double* wr,        \
                                           const double* wi, index_t count, double& ar,     \
                                           double& ai) {                                    \
    add_weighted_products_of(b, k, wr, wi, count, ar, ai);                                  \
  }
QMLSIM_CLONE_BOTH(float)
QMLSIM_CLONE_BOTH(double)
#undef QMLSIM_CLONE_BOTH

// acc[j] += c x[j].
QMLSIM_CLONES void add_scaled(double* acc, double c, const double* x, index_t len) {
#pragma omp simd
  for (index_t j = 0; j < len; ++j) acc[j] += c * x[j];
}
#undef QMLSIM_CLONES

// The partner block in the order of the block it pairs with, for the
// contiguous loops above: amplitude i of dst = amplitude i ^ x of src (count
// amplitudes, interleaved), x's bits all at or above those of `run`, its
// lowest set bit (so runs of `run` amplitudes stay together). Long runs are
// moved with memcpy; short ones amplitude by amplitude (a fixed-size copy the
// compiler inlines: a call per run of 2-4 amplitudes cost more than the sum).
template <class R>
void gather_partner_runs(R* dst, const R* src, index_t count, index_t run, index_t x) {
  if (run >= 8) {
    for (index_t r = 0; r < count; r += run)
      std::memcpy(dst + 2 * r, src + 2 * (r ^ x), 2 * run * sizeof(R));
    return;
  }
  for (index_t i = 0; i < count; ++i) std::memcpy(dst + 2 * i, src + 2 * (i ^ x), 2 * sizeof(R));
}

// weight(i) of a term group, block by block: terms are grouped by the high part
// of their z mask (above the block's low bits), with one table per group over
// the low bits; the table of block b is sum_k sign_k(b) table_k, built with
// one vectorized add per group and amplitude (instead of a parity per term).
class BlockWeights {
 public:
  BlockWeights(const TermGroup& g, int n) : lb_(std::min(n, kBlockBits)) {
    const index_t bsize = index_t{1} << lb_, low_mask = bsize - 1;
    for (std::size_t t = 0; t < g.w.size(); ++t) {
      const index_t hm = g.z[t] >> lb_;
      auto it = std::find(high_.begin(), high_.end(), hm);
      const std::size_t k = static_cast<std::size_t>(it - high_.begin());
      if (it == high_.end()) {
        high_.push_back(hm);
        tr_.emplace_back(bsize, 0.0);
        ti_.emplace_back(bsize, 0.0);
      }
      if (g.w[t].imag() != 0) complex_ = true;
      for (index_t i = 0; i < bsize; ++i) {
        const double sgn = parity(i & g.z[t] & low_mask) ? -1.0 : 1.0;
        tr_[k][i] += sgn * g.w[t].real();
        ti_[k][i] += sgn * g.w[t].imag();
      }
    }
    for (const std::vector<double>& tr : tr_) {
      tr2_.emplace_back(2 * bsize);
      for (index_t i = 0; i < bsize; ++i) tr2_.back()[2 * i] = tr2_.back()[2 * i + 1] = tr[i];
    }
  }
  int low_bits() const { return lb_; }
  bool complex() const { return complex_; }
  // Real weights with both slots of each amplitude (w2[2i] = w2[2i+1] = wr[i]),
  // for sums over interleaved amplitudes. REQUIRES !complex().
  // Block b's real weights with both slots of each amplitude (w[2i] = w[2i+1]),
  // times `sign`, for sums over interleaved amplitudes. REQUIRES !complex().
  // With a single table (every z mask has the same high part) that table is
  // returned as it is; otherwise the weights are summed into `scratch`.
  const double* interleaved(index_t b, std::vector<double>& scratch, double& sign) const {
    sign = 1;
    if (high_.size() == 1) {
      sign = parity(b & high_[0]) ? -1.0 : 1.0;
      return tr2_[0].data();
    }
    const index_t bsize = index_t{1} << lb_;
    scratch.assign(2 * bsize, 0.0);
    double* w2 = scratch.data();
    for (std::size_t k = 0; k < high_.size(); ++k)
      add_scaled(w2, parity(b & high_[k]) ? -1.0 : 1.0, tr2_[k].data(), 2 * bsize);
    return w2;
  }
  // wr, wi (2^low_bits entries each) = the weights of block b.
  void fill(index_t b, double* wr, double* wi) const {
    const index_t bsize = index_t{1} << lb_;
    std::fill(wr, wr + bsize, 0.0);
    if (complex_) std::fill(wi, wi + bsize, 0.0);
    for (std::size_t k = 0; k < high_.size(); ++k) {
      const double sgn = parity(b & high_[k]) ? -1.0 : 1.0;
      add_scaled(wr, sgn, tr_[k].data(), bsize);
      if (complex_) add_scaled(wi, sgn, ti_[k].data(), bsize);
    }
    if (!complex_) std::fill(wi, wi + bsize, 0.0);
  }

 private:
  int lb_;
  bool complex_ = false;
  std::vector<index_t> high_;
  std::vector<std::vector<double>> tr_, ti_, tr2_;
};

// Re sum_i conj(a[i ^ x]) a[i] weight(i) for real weights, in fixed blocks:
// within a block, runs of 2^p amplitudes (p = the lowest set bit of x's low
// part; the whole block when there is none, as for x = 0, where the sum is of
// |a_i|^2 weight(i)) meet contiguous partner runs, so Re(conj(b) k) = b_re k_re
// + b_im k_im is one contiguous multiply-add per real.
template <class R>
double real_weight_pass(const TermGroup& g, const BlockWeights& weights, const R* a, int n,
                        int threads) {
  const int lb = weights.low_bits();
  const index_t bsize = index_t{1} << lb, low_mask = bsize - 1;
  const index_t xlo = g.x & low_mask, xhi = g.x & ~low_mask;
  const int p = xlo == 0 ? lb : std::countr_zero(xlo);
  const index_t run = index_t{1} << p;
  const std::int64_t nblocks = std::int64_t{1} << (n - lb);
  std::vector<double> partial(static_cast<std::size_t>(nblocks));
  parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t b) {
    thread_local std::vector<double> scratch;
    thread_local std::vector<R> partner;  // the partner block in the order of this one
    double sign = 1;
    const double* w = weights.interleaved(static_cast<index_t>(b), scratch, sign);
    const index_t base = static_cast<index_t>(b) << lb;
    const R* q = a + 2 * (base ^ xhi);
    if (xlo != 0) {
      partner.resize(2 * bsize);
      gather_partner_runs(partner.data(), q, bsize, run, xlo);
      q = partner.data();
    }
    partial[static_cast<std::size_t>(b)] = sign * weighted_dot(q, a + 2 * base, w, 2 * bsize);
  });
  double sum = 0;
  for (double v : partial) sum += v;
  return sum;
}

// sum_i conj(bra[i ^ x]) ket[i] weight(i), in fixed blocks.
template <class R>
cplx group_pass(const TermGroup& g, const R* bra, const R* ket, int n, int threads) {
  const BlockWeights weights(g, n);
  const int lb = weights.low_bits();
  const index_t bsize = index_t{1} << lb, low_mask = bsize - 1;
  const index_t xlo = g.x & low_mask, xhi = g.x & ~low_mask;
  const std::int64_t nblocks = std::int64_t{1} << (n - lb);
  std::vector<cplx> partial(nblocks);
  parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t b) {
    thread_local std::vector<double> wr, wi;
    thread_local std::vector<R> partner;  // the bra's block in the order of the ket's
    wr.resize(bsize);
    wi.resize(bsize);
    weights.fill(static_cast<index_t>(b), wr.data(), wi.data());
    const index_t base = static_cast<index_t>(b) << lb;
    const R* b0 = bra + 2 * (base ^ xhi);
    if (xlo != 0) {
      partner.resize(2 * bsize);
      const index_t run = index_t{1} << std::countr_zero(xlo);
      gather_partner_runs(partner.data(), b0, bsize, run, xlo);
      b0 = partner.data();
    }
    // Vectorized sums: a fixed order for a given build and CPU, so results
    // still do not depend on the thread count.
    double ar = 0, ai = 0;
    add_weighted_products(b0, ket + 2 * base, wr.data(), wi.data(), bsize, ar, ai);
    partial[b] = cplx{ar, ai};
  });
  cplx sum = 0;
  for (cplx p : partial) sum += p;
  return sum;
}

// Re <psi|group|psi>: the real-weight cases without complex products.
template <class R>
double real_group_pass(const TermGroup& g, const R* a, int n, int threads) {
  const BlockWeights weights(g, n);
  if (weights.complex()) return group_pass(g, a, a, n, threads).real();
  return real_weight_pass(g, weights, a, n, threads);
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
      threads_(threads < 1 ? 1 : threads),
      kernels_(kernels ? kernels : &best_kernels()),
      chunk_qubits_(default_chunk_qubits()),
      amps_(allocate_state<R>(n)) {}

template <class R>
void StateVector<R>::set_basis_state(index_t i) {
  assert(i < size());
  R* a = amps_.data();
  parallel_for(std::int64_t{1} << std::max(0, n_ - kBlockBits), threads_, std::int64_t{1} << n_,
               [&](std::int64_t b) {
                 const index_t lo = static_cast<index_t>(b) << std::min(n_, kBlockBits);
                 const index_t len = index_t{1} << std::min(n_, kBlockBits);
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
void StateVector<R>::copy_from(const StateVector& other) {
  assert(other.n_ == n_);
  std::memcpy(static_cast<void*>(amps_.data()), other.amps_.data(), 2 * size() * sizeof(R));
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

// Minimum contiguous run inside a chunk: 2^kRunQubits amplitudes (at most).
constexpr int kRunQubits = 8;

// Diagonal gates on up to this many wires need not have them in a chunk
// (plan_segments): at most 2^6 prepared variants each (OutsideDiagonal).
constexpr int kOutsideDiagonalWires = 6;

namespace {
// The cache-blocking plan with the fewest segments (passes over memory) among
// minimum runs of 2^8, 2^6 and 2^5 amplitudes; longer runs (cheaper gathers)
// on ties. Shorter runs leave more of a chunk's qubits free for the gates:
// which wins depends on the circuit (README, Performance).
SegmentPlan plan_blocks(const std::vector<BoundGate>& gates, int n, int chunk_qubits) {
  SegmentPlan best = plan_segments(gates, n, chunk_qubits, kRunQubits, kOutsideDiagonalWires);
  for (int run : {6, 5}) {
    SegmentPlan p = plan_segments(gates, n, chunk_qubits, run, kOutsideDiagonalWires);
    if (p.segments.size() < best.segments.size()) best = std::move(p);
  }
  return best;
}
}  // namespace

template <class R>
bool StateVector<R>::blocking_pays(int gates, int chunk_qubits) const {
  return chunk_qubits > kRunQubits && n_ > chunk_qubits && gates >= 2;
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

namespace {
// Whether states of `bytes` in all stream from memory pass after pass: half
// the last-level cache or more (32 MiB where the cache size is unknown).
bool streams_from_memory(std::size_t bytes) {
  static const std::size_t threshold = [] {
    const std::size_t llc = last_level_cache_bytes();
    return llc > 0 ? llc / 2 : std::size_t{32} << 20;
  }();
  return bytes >= threshold;
}

// Whether chunks scattered back to states of `bytes` in all (the states a
// blocked pass streams) should use non-temporal stores: once they are too large
// to stay in the last-level cache, a plain store first reads each line it
// overwrites (read for ownership), a third more memory traffic. Below, the
// plain store is better: the next pass finds the state in the cache. Measured
// on a 480 MiB-L3 VM (2 threads, c64): the Rot-family gradient at 24 qubits
// (two 128 MB states) 345-357 -> 325-333 ms, at 26 qubits 1.72-1.81 ->
// 1.49-1.54 s; the forward pass at 24 qubits (one state) 4-7% slower and
// both at 22 qubits 2-5% slower with them. So: from half the last-level
// cache up. QMLSIM_STREAMING_STORES=0 or 1 turns them off or on (A/B); so
// does a state's own setting, first (`forced_here`: StateVector::streaming_,
// -1 = unset).
bool streaming_stores_pay(int forced_here, std::size_t bytes) {
  if (forced_here >= 0) return forced_here == 1;
  static const int forced = [] {
    const char* v = std::getenv("QMLSIM_STREAMING_STORES");
    if (v == nullptr || *v == '\0') return -1;
    if (std::string(v) == "0" || std::string(v) == "1") return v[0] - '0';
    throw Error("QMLSIM_STREAMING_STORES: expected 0 or 1, got '" + std::string(v) + "'");
  }();
  return forced >= 0 ? forced == 1 : streams_from_memory(bytes);
}
}  // namespace

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

// How a chunk (the 2^|W| amplitudes sharing the bits outside W) lies in memory:
// runs of 2^p contiguous amplitudes, p = the length of W's prefix 0, 1, ..., p-1.
struct ChunkLayout {
  std::vector<int> w;
  int b = 0, p = 0;
  index_t run_len = 0, nruns = 0;
  std::vector<index_t> run_off;

  explicit ChunkLayout(const std::vector<int>& qubits)
      : w(qubits), b(static_cast<int>(qubits.size())) {
    while (p < b && w[p] == p) ++p;
    run_len = index_t{1} << p;
    nruns = index_t{1} << (b - p);
    run_off.assign(nruns, 0);
    for (index_t r = 0; r < nruns; ++r)
      for (int j = p; j < b; ++j)
        if (r >> (j - p) & 1) run_off[r] |= bit(w[j]);
  }
  bool contiguous() const { return p == b; }
  index_t base(std::int64_t chunk) const {
    return insert_zero_bits(static_cast<index_t>(chunk), w.data(), b);
  }
  int to_local(int q) const {
    return static_cast<int>(std::lower_bound(w.begin(), w.end(), q) - w.begin());
  }
  template <class R>
  void gather(R* buf, const R* amps, index_t base) const {
    for (index_t r = 0; r < nruns; ++r)
      std::memcpy(buf + 2 * r * run_len, amps + 2 * (base | run_off[r]), 2 * run_len * sizeof(R));
  }
  // streaming: with non-temporal stores (streaming_stores_pay), where the
  // runs allow (whole 64-byte lines).
  template <class R>
  void scatter(const R* buf, R* amps, index_t base, bool streaming) const {
    const std::size_t bytes = 2 * run_len * sizeof(R);
#ifdef __SSE2__
    if (streaming && bytes % 64 == 0) {
      for (index_t r = 0; r < nruns; ++r) {
        auto* d = reinterpret_cast<__m128i*>(amps + 2 * (base | run_off[r]));
        const auto* s = reinterpret_cast<const __m128i*>(buf + 2 * r * run_len);
        for (std::size_t k = 0; k < bytes / 16; ++k) _mm_stream_si128(d + k, _mm_load_si128(s + k));
      }
      _mm_sfence();  // the stores are seen before the chunk is reported done
      return;
    }
#else
    (void)streaming;
#endif
    for (index_t r = 0; r < nruns; ++r)
      std::memcpy(amps + 2 * (base | run_off[r]), buf + 2 * r * run_len, bytes);
  }
  index_t global_mask() const {  // W as a mask of qubits
    index_t m = 0;
    for (int q : w) m |= bit(q);
    return m;
  }
  // The bits of a global mask that lie in W, at their local positions.
  index_t local_mask(index_t global) const {
    index_t m = 0;
    for (int j = 0; j < b; ++j)
      if (global >> w[j] & 1) m |= bit(j);
    return m;
  }
  KernelGate local_gate(const BoundGate& g, BoundGate& storage) const {
    storage = g;  // W ascending keeps the canonical order
    for (int& q : storage.targets) q = to_local(q);
    for (int& q : storage.controls) q = to_local(q);
    return to_kernel_gate(storage);
  }
};

// Runs of two or more consecutive eligible basis permutations among a segment's
// chunk-local gates (a CNOT ring, say), each composed into one map applied in
// one pass: start[j] holds the run that begins at gate j, end[j] its end.
struct PermutationRuns {
  std::vector<std::unique_ptr<AffinePermutation>> start;
  std::vector<int> end;
  int count = 0;

  template <class Eligible>
  PermutationRuns(const std::vector<BoundGate>& local, int b, Eligible eligible)
      : start(local.size()), end(local.size(), -1) {
    const int len = static_cast<int>(local.size());
    for (int j = 0; j < len;) {
      auto p = std::make_unique<AffinePermutation>(b);
      int e = j;
      while (e < len && eligible(e) && p->append(local[e])) ++e;
      if (e - j < 2) {
        ++j;
        continue;
      }
      end[j] = e;
      start[j] = std::move(p);
      ++count;
      j = e;
    }
  }
};

// Adds a real +-1 diagonal gate on at most two wires (Z, CZ, ...) to the sign
// form d (kernels.h: SignDiagonal) over global qubits; false, with d unchanged,
// for any other gate. Over its wires w0 < w1 the gate's sign bit is
// s(x) = c0 ^ c1 x0 ^ c2 x1 ^ c3 x0 x1 (controls: s = 0 unless they are set).
bool add_sign_gate(const BoundGate& g, SignDiagonal& d) {
  std::vector<int> wires = g.targets;
  wires.insert(wires.end(), g.controls.begin(), g.controls.end());
  if (!g.diagonal || wires.empty() || wires.size() > 2) return false;
  for (const cplx& e : g.matrix)
    if (e.imag() != 0 || std::abs(e.real()) != 1) return false;
  std::sort(wires.begin(), wires.end());
  int s[4] = {0, 0, 0, 0};  // over x: bit j <-> wires[j]
  for (index_t x = 0; x < (index_t{1} << wires.size()); ++x) {
    std::size_t t = 0;
    bool controls_set = true;
    for (std::size_t j = 0; j < wires.size(); ++j) {
      const auto tj = std::find(g.targets.begin(), g.targets.end(), wires[j]);
      if (tj == g.targets.end())
        controls_set = controls_set && (x >> j & 1);
      else if (x >> j & 1)
        t |= std::size_t{1} << (tj - g.targets.begin());
    }
    s[x] = controls_set && g.matrix[t].real() < 0;
  }
  d.negate ^= s[0] != 0;
  if (s[1] ^ s[0]) d.linear ^= bit(wires[0]);
  if (wires.size() == 2) {
    if (s[2] ^ s[0]) d.linear ^= bit(wires[1]);
    if (s[3] ^ s[2] ^ s[1] ^ s[0]) d.partners[wires[0]] ^= bit(wires[1]);
  }
  return true;
}

// Runs of two or more consecutive eligible sign gates among a segment's gates
// (a layer of CZ gates, say), each as one sign form over global qubits that a
// chunk restricts to its own (local): one pass over both states of the sweep
// instead of one per gate and state. start[j] holds the run that begins at
// gate j, end[j] its end.
struct SignRuns {
  std::vector<SignDiagonal> start;
  std::vector<int> end;

  template <class Eligible>
  SignRuns(const std::vector<BoundGate>& gates, int begin, int len, Eligible eligible)
      : start(static_cast<std::size_t>(len)), end(static_cast<std::size_t>(len), -1) {
    for (int j = 0; j < len;) {
      SignDiagonal d;
      int e = j;
      while (e < len && eligible(e) && add_sign_gate(gates[begin + e], d)) ++e;
      if (e - j < 2) {
        ++j;
        continue;
      }
      end[j] = e;
      start[j] = d;
      j = e;
    }
  }
  // The run starting at j as the chunk at `base` sees it: qubits outside W are
  // fixed bits of the base, so a pair with one of them set becomes a linear
  // term, and terms on outside qubits alone a sign of the whole chunk.
  SignDiagonal local(int j, const ChunkLayout& layout, index_t base) const {
    const SignDiagonal& g = start[static_cast<std::size_t>(j)];
    const index_t w = layout.global_mask();
    SignDiagonal d;
    d.negate = g.negate ^ (std::popcount(g.linear & ~w & base) & 1);
    d.linear = layout.local_mask(g.linear);
    for (int p = 0; p < kMaxQubits; ++p) {
      for (index_t r = g.partners[p]; r != 0; r &= r - 1) {
        const int q = std::countr_zero(r);
        const bool in_p = (w >> p & 1) != 0, in_q = (w >> q & 1) != 0;
        if (in_p && in_q)
          d.partners[layout.to_local(p)] |= bit(layout.to_local(q));
        else if (in_p && (base >> q & 1))
          d.linear ^= bit(layout.to_local(p));
        else if (in_q && (base >> p & 1))
          d.linear ^= bit(layout.to_local(q));
        else if (!in_p && !in_q && (base >> p & base >> q & 1))
          d.negate = !d.negate;
      }
    }
    return d;
  }
};

template <class R>
void apply_signs(const KernelSet& k, const SignDiagonal& d, R* a, R* b, int n) {
  if constexpr (sizeof(R) == 4)
    k.apply_signs_f32(d, a, b, n);
  else
    k.apply_signs_f64(d, a, b, n);
}

// A chunk's amplitudes: at home (in the state, or its gather buffer) or, after
// an odd number of out-of-place permutations, in the spare buffer.
template <class R>
struct ChunkBuffers {
  R* home;
  R* spare;
  R* cur;
  void permute(const AffinePermutation& p) {  // out of place; the buffers swap roles
    R* next = cur == home ? spare : home;
    p.apply(cur, next);
    cur = next;
  }
  // Both chunks permuted by p in one loop (they are in step: same buffer roles).
  static void permute_both(ChunkBuffers& x, ChunkBuffers& y, const AffinePermutation& p) {
    R* const xn = x.cur == x.home ? x.spare : x.home;
    R* const yn = y.cur == y.home ? y.spare : y.home;
    p.apply(x.cur, xn, y.cur, yn);
    x.cur = xn;
    y.cur = yn;
  }
  void settle(int b) {  // back home (in-place chunks)
    if (cur != home) std::memcpy(home, cur, (std::size_t{2} << b) * sizeof(R));
    cur = home;
  }
};

// A diagonal gate of a segment with wires outside the chunk's qubits W
// (plan_segments' diagonal_wires): those wires are fixed bits of a chunk's
// base, so the chunk sees the diagonal restricted to them, one prepared variant
// per value of the outside bits. With no wire in W the variant is a phase on
// the whole chunk (a diagonal on local qubit 0 with two equal entries).
template <class R>
struct OutsideDiagonal {
  std::vector<index_t> outside;  // bit j of a variant's index <-> amplitude bit outside[j]
  std::vector<BoundGate> local;  // per variant, on the chunk's qubits
  std::vector<std::unique_ptr<PreparedGates<R>>> prepared;
  // Per variant and local diagonal entry: the gate's diagonal entry (over its
  // targets, controls 1) it holds, or -1 where a control is 0.
  std::vector<std::vector<int>> entry;

  OutsideDiagonal(const BoundGate& g, const ChunkLayout& layout, const KernelSet& ks) {
    std::vector<int> wires = g.targets;
    wires.insert(wires.end(), g.controls.begin(), g.controls.end());
    std::sort(wires.begin(), wires.end());
    std::vector<int> in_pos, out_pos, target_pos;  // positions in `wires`
    index_t control_bits = 0;                      // over `wires`
    for (int j = 0; j < static_cast<int>(wires.size()); ++j) {
      const bool in_w = std::binary_search(layout.w.begin(), layout.w.end(), wires[j]);
      (in_w ? in_pos : out_pos).push_back(j);
      if (std::binary_search(g.targets.begin(), g.targets.end(), wires[j]))
        target_pos.push_back(j);
      else
        control_bits |= bit(j);
    }
    for (int j : out_pos) outside.push_back(bit(wires[j]));
    const std::size_t nin = in_pos.empty() ? 2 : std::size_t{1} << in_pos.size();
    const std::size_t variants = std::size_t{1} << out_pos.size();
    for (std::size_t o = 0; o < variants; ++o) {
      BoundGate v;
      v.diagonal = true;
      for (int j : in_pos) v.targets.push_back(layout.to_local(wires[j]));
      if (in_pos.empty()) v.targets = {0};
      v.matrix.resize(nin);
      std::vector<int> e(nin);
      for (std::size_t i = 0; i < nin; ++i) {
        index_t x = 0;  // over `wires`
        for (std::size_t a = 0; a < in_pos.size(); ++a)
          if (i >> a & 1) x |= bit(in_pos[a]);
        for (std::size_t a = 0; a < out_pos.size(); ++a)
          if (o >> a & 1) x |= bit(out_pos[a]);
        if ((x & control_bits) != control_bits) {
          v.matrix[i] = 1;
          e[i] = -1;
          continue;
        }
        int t = 0;
        for (std::size_t a = 0; a < target_pos.size(); ++a)
          if (x >> target_pos[a] & 1) t |= 1 << a;
        v.matrix[i] = g.matrix[static_cast<std::size_t>(t)];
        e[i] = t;
      }
      const KernelGate kg = to_kernel_gate(v);  // prepared copies the matrix
      prepared.push_back(std::make_unique<PreparedGates<R>>(ks, &kg, 1, layout.b));
      local.push_back(std::move(v));
      entry.push_back(std::move(e));
    }
  }
  // The variant of the chunk at `base`.
  std::size_t variant(index_t base) const {
    std::size_t v = 0;
    for (std::size_t j = 0; j < outside.size(); ++j)
      if (base & outside[j]) v |= std::size_t{1} << j;
    return v;
  }
};

// Gates of a segment (global qubits) as the chunks see them: local[j], or
// outside[j] for a diagonal gate with wires outside W (local[j] then holds its
// first variant).
template <class R>
std::vector<std::unique_ptr<OutsideDiagonal<R>>> localize(
    const std::vector<BoundGate>& gates, int begin, int end, const ChunkLayout& layout,
    const KernelSet& ks, std::vector<BoundGate>& local, std::vector<KernelGate>& kg) {
  const int len = end - begin;
  std::vector<std::unique_ptr<OutsideDiagonal<R>>> outside(static_cast<std::size_t>(len));
  local.assign(static_cast<std::size_t>(len), BoundGate{});  // stable: kg points into it
  kg.clear();
  const index_t w = layout.global_mask();
  for (int j = 0; j < len; ++j) {
    const BoundGate& g = gates[begin + j];
    if ((g.wire_mask() & ~w) != 0) {
      assert(g.diagonal);  // the plan places only diagonal gates across chunks
      outside[j] = std::make_unique<OutsideDiagonal<R>>(g, layout, ks);
      local[j] = outside[j]->local[0];
      kg.push_back(to_kernel_gate(local[j]));
    } else {
      kg.push_back(layout.local_gate(g, local[j]));
    }
  }
  return outside;
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

// M[r][c] = sum conj(bra[base|off_r]) ket[base|off_c] over the groups of gate g
// (target bits free, control bits 1), in double; fixed blocks of groups summed
// in order, so the result does not depend on the thread count.
// cross_matrix for one target: runs of contiguous amplitudes below the lowest
// target or control bit, summed with `omp simd` (fixed order for a given build).
template <class R>
Matrix cross_matrix_1q(const R* bra, const R* ket, int n, const BoundGate& g, int threads) {
  // A low target without controls: the runs below it are too short to pay for a
  // reduction each, so walk blocks of contiguous amplitudes pair by pair instead.
  if (g.controls.empty() && g.targets[0] < 3 && n >= 3) {
    const int t = g.targets[0];
    const index_t half = index_t{1} << t;
    const int bb = std::min(n, kBlockBits + 1);
    const std::int64_t nblocks = std::int64_t{1} << (n - bb);
    std::vector<std::array<double, 8>> partial(static_cast<std::size_t>(nblocks));
    parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t blk) {
      double m[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      const index_t begin = static_cast<index_t>(blk) << bb, end = begin + (index_t{1} << bb);
      for (index_t x = begin; x < end; x += 2 * half)
        for (index_t j = 0; j < half; ++j) {
          const index_t i0 = x + j, i1 = i0 + half;
          const double x0r = bra[2 * i0], x0i = -bra[2 * i0 + 1];
          const double x1r = bra[2 * i1], x1i = -bra[2 * i1 + 1];
          const double y0r = ket[2 * i0], y0i = ket[2 * i0 + 1];
          const double y1r = ket[2 * i1], y1i = ket[2 * i1 + 1];
          m[0] += x0r * y0r - x0i * y0i;
          m[1] += x0r * y0i + x0i * y0r;
          m[2] += x0r * y1r - x0i * y1i;
          m[3] += x0r * y1i + x0i * y1r;
          m[4] += x1r * y0r - x1i * y0i;
          m[5] += x1r * y0i + x1i * y0r;
          m[6] += x1r * y1r - x1i * y1i;
          m[7] += x1r * y1i + x1i * y1r;
        }
      std::copy(m, m + 8, partial[static_cast<std::size_t>(blk)].begin());
    });
    Matrix sum(4, 0.0);
    for (const auto& p : partial)
      for (int e = 0; e < 4; ++e) sum[e] += cplx{p[2 * e], p[2 * e + 1]};
    return sum;
  }
  std::vector<int> pos = g.targets;
  pos.insert(pos.end(), g.controls.begin(), g.controls.end());
  std::sort(pos.begin(), pos.end());
  index_t ones = 0;
  for (int c : g.controls) ones |= bit(c);
  const int npos = static_cast<int>(pos.size());
  const int run_bits = pos[0];
  const index_t run = index_t{1} << run_bits, tbit = bit(g.targets[0]);
  const index_t outer = index_t{1} << (n - npos - run_bits);
  const int bb = std::min(n - npos - run_bits, kBlockBits);
  const std::int64_t nblocks = static_cast<std::int64_t>(outer >> bb);
  std::vector<std::array<double, 8>> partial(static_cast<std::size_t>(nblocks));
  parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t blk) {
    double m0r = 0, m0i = 0, m1r = 0, m1i = 0, m2r = 0, m2i = 0, m3r = 0, m3i = 0;
    for (index_t o = static_cast<index_t>(blk) << bb; o < (static_cast<index_t>(blk) + 1) << bb;
         ++o) {
      const index_t base = insert_zero_bits(o << run_bits, pos.data(), npos) | ones;
      const R* a0 = bra + 2 * base;
      const R* a1 = bra + 2 * (base | tbit);
      const R* k0 = ket + 2 * base;
      const R* k1 = ket + 2 * (base | tbit);
      // Within a run, sums in the state's precision (vectorizes twice as wide for
      // complex64); across runs, in double.
      R s0r = 0, s0i = 0, s1r = 0, s1i = 0, s2r = 0, s2i = 0, s3r = 0, s3i = 0;
#pragma omp simd reduction(+ : s0r, s0i, s1r, s1i, s2r, s2i, s3r, s3i)
      for (index_t r = 0; r < run; ++r) {
        const R x0r = a0[2 * r], x0i = -a0[2 * r + 1], x1r = a1[2 * r], x1i = -a1[2 * r + 1];
        const R y0r = k0[2 * r], y0i = k0[2 * r + 1], y1r = k1[2 * r], y1i = k1[2 * r + 1];
        s0r += x0r * y0r - x0i * y0i;
        s0i += x0r * y0i + x0i * y0r;
        s1r += x0r * y1r - x0i * y1i;
        s1i += x0r * y1i + x0i * y1r;
        s2r += x1r * y0r - x1i * y0i;
        s2i += x1r * y0i + x1i * y0r;
        s3r += x1r * y1r - x1i * y1i;
        s3i += x1r * y1i + x1i * y1r;
      }
      m0r += s0r, m0i += s0i, m1r += s1r, m1i += s1i;
      m2r += s2r, m2i += s2i, m3r += s3r, m3i += s3i;
    }
    partial[static_cast<std::size_t>(blk)] = {m0r, m0i, m1r, m1i, m2r, m2i, m3r, m3i};
  });
  Matrix sum(4, 0.0);
  for (const auto& p : partial)
    for (int e = 0; e < 4; ++e) sum[e] += cplx{p[2 * e], p[2 * e + 1]};
  return sum;
}

// Where a gate's groups of amplitudes lie: its target and control positions
// (ascending), the control bits that must be set, and the offset of each local
// index r (bit j of r <-> targets[j]) from a group's base.
struct GroupLayout {
  std::vector<int> pos;
  index_t ones = 0;
  std::vector<index_t> off;

  explicit GroupLayout(const BoundGate& g) : pos(g.targets), off(g.dim(), 0) {
    pos.insert(pos.end(), g.controls.begin(), g.controls.end());
    std::sort(pos.begin(), pos.end());
    for (int c : g.controls) ones |= bit(c);
    for (std::size_t r = 0; r < off.size(); ++r)
      for (int j = 0; j < g.num_targets(); ++j)
        if (r >> j & 1) off[r] |= bit(g.targets[j]);
  }
};

// Runs of contiguous amplitudes below a gate's lowest wire, on n qubits: each
// group's rows are runs of `run` amplitudes; the 2^outer_bits runs per row are
// split into `nblocks` blocks of 2^bb for the fixed-order partial sums.
struct RunLayout {
  int run_bits, outer_bits, bb;
  index_t run;
  std::int64_t nblocks;
  RunLayout(const GroupLayout& lay, int n)
      : run_bits(lay.pos[0]),
        outer_bits(n - static_cast<int>(lay.pos.size()) - run_bits),
        bb(std::min(outer_bits, kBlockBits)),
        run(index_t{1} << run_bits),
        nblocks(static_cast<std::int64_t>((index_t{1} << outer_bits) >> bb)) {}
};

// cross_matrix for a diagonal gate: the derivative of a diagonal gate is
// diagonal, so only M_aa = sum conj(bra_a) ket_a is needed (zeros elsewhere).
// Runs of contiguous amplitudes below the lowest target or control are summed
// in the state's precision, as in cross_matrix_1q.
template <class R>
Matrix cross_matrix_diagonal(const R* bra, const R* ket, int n, const BoundGate& g, int threads) {
  const std::size_t dim = g.dim();
  const GroupLayout lay(g);
  const std::vector<int>& pos = lay.pos;
  const std::vector<index_t>& off = lay.off;
  const index_t ones = lay.ones;
  const int npos = static_cast<int>(pos.size());
  const RunLayout rl(lay, n);
  const int run_bits = rl.run_bits, bb = rl.bb;
  const index_t run = rl.run;
  const std::int64_t nblocks = rl.nblocks;
  std::vector<double> partial(static_cast<std::size_t>(nblocks) * 2 * dim, 0.0);
  parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t blk) {
    double* acc = &partial[static_cast<std::size_t>(blk) * 2 * dim];
    for (index_t o = static_cast<index_t>(blk) << bb; o < (static_cast<index_t>(blk) + 1) << bb;
         ++o) {
      const index_t base = insert_zero_bits(o << run_bits, pos.data(), npos) | ones;
      for (std::size_t a = 0; a < dim; ++a) {
        const R* x = bra + 2 * (base | off[a]);
        const R* y = ket + 2 * (base | off[a]);
        R sr = 0, si = 0;
#pragma omp simd reduction(+ : sr, si)
        for (index_t t = 0; t < run; ++t) {
          sr += x[2 * t] * y[2 * t] + x[2 * t + 1] * y[2 * t + 1];
          si += x[2 * t] * y[2 * t + 1] - x[2 * t + 1] * y[2 * t];
        }
        acc[2 * a] += sr;
        acc[2 * a + 1] += si;
      }
    }
  });
  Matrix sum(dim * dim, 0.0);
  for (std::int64_t blk = 0; blk < nblocks; ++blk)
    for (std::size_t a = 0; a < dim; ++a) {
      const double* acc = &partial[static_cast<std::size_t>(blk) * 2 * dim];
      sum[a * dim + a] += cplx{acc[2 * a], acc[2 * a + 1]};
    }
  return sum;
}

// The sum, block by block in order, of per-block partial sums laid out as
// `entries` real parts then `entries` imaginary parts.
Matrix sum_block_partials(const std::vector<double>& partial, std::int64_t nblocks,
                          std::size_t entries) {
  Matrix sum(entries, 0.0);
  for (std::int64_t blk = 0; blk < nblocks; ++blk) {
    const double* p = &partial[static_cast<std::size_t>(blk) * 2 * entries];
    for (std::size_t e = 0; e < entries; ++e) sum[e] += cplx{p[e], p[entries + e]};
  }
  return sum;
}

// The dense cross matrix group by group: real and imaginary sums in separate
// arrays, with kDim (the gate's dimension) known at compile time for 2 and 3
// targets so the inner loops vectorise; kDim 0: the dimension at run time.
// Blocks of groups are summed in order.
template <class R, std::size_t kDim>
Matrix cross_matrix_groups(const R* bra, const R* ket, int n, const BoundGate& g, int threads) {
  const std::size_t dim = kDim ? kDim : g.dim();
  const std::size_t entries = dim * dim;
  const GroupLayout lay(g);
  const std::vector<int>& pos = lay.pos;
  const std::vector<index_t>& off = lay.off;
  const index_t ones = lay.ones;
  const int npos = static_cast<int>(pos.size());
  const index_t groups = index_t{1} << (n - npos);
  const int bb = std::min(n - npos, kBlockBits);
  const std::int64_t nblocks = static_cast<std::int64_t>(groups >> bb);
  std::vector<double> partial(static_cast<std::size_t>(nblocks) * 2 * entries, 0.0);
  parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t blk) {
    double* mr = &partial[static_cast<std::size_t>(blk) * 2 * entries];
    double* mi = mr + entries;
    std::vector<double> amps(4 * dim);
    double* ar = amps.data();
    double* ai = ar + dim;
    double* kr = ai + dim;
    double* ki = kr + dim;
    for (index_t i = static_cast<index_t>(blk) << bb; i < (static_cast<index_t>(blk) + 1) << bb;
         ++i) {
      const index_t base = insert_zero_bits(i, pos.data(), npos) | ones;
      for (std::size_t r = 0; r < dim; ++r) {
        ar[r] = bra[2 * (base | off[r])];
        ai[r] = -bra[2 * (base | off[r]) + 1];
        kr[r] = ket[2 * (base | off[r])];
        ki[r] = ket[2 * (base | off[r]) + 1];
      }
      for (std::size_t r = 0; r < dim; ++r)
        for (std::size_t c = 0; c < dim; ++c) {
          mr[r * dim + c] += ar[r] * kr[c] - ai[r] * ki[c];
          mi[r * dim + c] += ar[r] * ki[c] + ai[r] * kr[c];
        }
    }
  });
  return sum_block_partials(partial, nblocks, entries);
}

// The dense cross matrix when the lowest target or control is at bit 3 or above:
// every row of a group is a run of contiguous amplitudes, so each entry is a dot
// product of two runs, vectorised and summed in the state's precision per tile
// of the run (as cross_matrix_diagonal sums its runs), tiles in order. The
// 2 x dim streams of a tile stay in the L1 cache while all dim^2 entries use them.
template <class R, std::size_t kDim>
Matrix cross_matrix_runs(const R* bra, const R* ket, int n, const BoundGate& g, int threads) {
  const GroupLayout lay(g);
  const std::vector<int>& pos = lay.pos;
  const std::vector<index_t>& off = lay.off;
  const index_t ones = lay.ones;
  const int npos = static_cast<int>(pos.size());
  const RunLayout rl(lay, n);
  const int run_bits = rl.run_bits, bb = rl.bb;
  const index_t run = rl.run;
  const std::int64_t nblocks = rl.nblocks;
  constexpr index_t kTile = 256;
  constexpr std::size_t kEntries = kDim * kDim;
  std::vector<double> partial(static_cast<std::size_t>(nblocks) * 2 * kEntries, 0.0);
  parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t blk) {
    double* acc = &partial[static_cast<std::size_t>(blk) * 2 * kEntries];
    for (index_t o = static_cast<index_t>(blk) << bb; o < (static_cast<index_t>(blk) + 1) << bb;
         ++o) {
      const index_t base = insert_zero_bits(o << run_bits, pos.data(), npos) | ones;
      for (index_t t0 = 0; t0 < run; t0 += kTile) {
        const index_t len = std::min(kTile, run - t0);
        for (std::size_t a = 0; a < kDim; ++a) {
          const R* x = bra + 2 * ((base | off[a]) + t0);
          for (std::size_t b = 0; b < kDim; ++b) {
            const R* y = ket + 2 * ((base | off[b]) + t0);
            R sr = 0, si = 0;  // sum conj(x) y
#pragma omp simd reduction(+ : sr, si)
            for (index_t t = 0; t < len; ++t) {
              sr += x[2 * t] * y[2 * t] + x[2 * t + 1] * y[2 * t + 1];
              si += x[2 * t] * y[2 * t + 1] - x[2 * t + 1] * y[2 * t];
            }
            acc[a * kDim + b] += sr;
            acc[kEntries + a * kDim + b] += si;
          }
        }
      }
    }
  });
  return sum_block_partials(partial, nblocks, kEntries);
}

template <class R>
Matrix cross_matrix(const R* bra, const R* ket, int n, const BoundGate& g, int threads) {
  if (g.diagonal) return cross_matrix_diagonal(bra, ket, n, g, threads);
  if (g.num_targets() == 1) return cross_matrix_1q(bra, ket, n, g, threads);
  const GroupLayout lay(g);
  const bool runs = lay.pos[0] >= 3;  // runs of at least 8 amplitudes
  if (g.num_targets() == 2)
    return runs ? cross_matrix_runs<R, 4>(bra, ket, n, g, threads)
                : cross_matrix_groups<R, 4>(bra, ket, n, g, threads);
  if (g.num_targets() == 3)
    return runs ? cross_matrix_runs<R, 8>(bra, ket, n, g, threads)
                : cross_matrix_groups<R, 8>(bra, ket, n, g, threads);
  return cross_matrix_groups<R, 0>(bra, ket, n, g, threads);
}

namespace {
// n interleaved complex numbers as a Matrix.
void to_matrix(const double* v, std::size_t n, Matrix& m) {
  m.resize(n);
  for (std::size_t e = 0; e < n; ++e) m[e] = cplx{v[2 * e], v[2 * e + 1]};
}

// The dim x dim matrix whose diagonal is d (a diagonal gate's sums are formed
// as the diagonal alone).
Matrix from_diagonal(const Matrix& d) {
  const std::size_t dim = d.size();
  Matrix m(dim * dim, cplx{0});
  for (std::size_t a = 0; a < dim; ++a) m[a * dim + a] = d[a];
  return m;
}

// The diagonal of a dim x dim matrix.
Matrix diagonal_of(const Matrix& m, std::size_t dim) {
  Matrix d(dim);
  for (std::size_t a = 0; a < dim; ++a) d[a] = m[a * dim + a];
  return d;
}

constexpr std::size_t kMaxAdjointDiagonalDim = 256;  // KernelSet::adjoint_step
}  // namespace

// The kernel set's fused adjoint step (kernels.h) into m: for a diagonal gate
// its dim diagonal entries, else dim x dim; false if it does not apply.
template <class R>
bool fused_step(const PreparedGates<R>& gate, R* bra, R* ket, const BoundGate& g, Matrix& m,
                bool write_back) {
  const std::size_t dim = g.dim();
  const std::size_t entries = g.diagonal ? dim : dim * dim;
  if (dim > (g.diagonal ? kMaxAdjointDiagonalDim : static_cast<std::size_t>(kMaxAdjointDim)))
    return false;
  double v[2 * kMaxAdjointDim * kMaxAdjointDim];
  static_assert(kMaxAdjointDim * kMaxAdjointDim >= kMaxAdjointDiagonalDim);
  if (!gate.adjoint_step(bra, ket, v, write_back)) return false;
  to_matrix(v, entries, m);
  return true;
}

// The kernel set's two adjoint steps in one pass (kernels.h) into ma and mb;
// false if it does not apply.
template <class R>
bool fused_pair(const PreparedGates<R>& a, const PreparedGates<R>& b, R* bra, R* ket, Matrix& ma,
                Matrix& mb, bool write_back) {
  double va[8], vb[8];
  if (!a.adjoint_pair(b, bra, ket, va, vb, write_back)) return false;
  to_matrix(va, 4, ma);
  to_matrix(vb, 4, mb);
  return true;
}

// A measured gate's step on a chunk of 2^b amplitudes: its sums into m (a
// diagonal gate's diagonal alone), then, with write_back, both states
// multiplied by it. The fused kernel where it applies; else (wider gates, a
// parametric gate that is exactly a permutation at its angles) separate passes.
template <class R>
void measured_step(const PreparedGates<R>& p, const BoundGate& local, int b, R* bra, R* ket,
                   Matrix& m, bool write_back) {
  if (fused_step(p, bra, ket, local, m, write_back)) return;
  m = antihermitian_part(cross_matrix(bra, ket, b, local, 1));
  if (local.diagonal) m = diagonal_of(m, local.dim());
  if (!write_back) return;
  p.run(ket, 1);
  p.run(bra, 1);
}

// The adjoint step of a gate with wires outside the chunk (OutsideDiagonal) on
// the chunk at `base`: with m, its variant's diagonal sums are added to the
// gate's entries in m (dim of them, zeroed first when empty); then, with
// write_back, both states are multiplied by the variant.
template <class R>
void outside_step(const OutsideDiagonal<R>& g, index_t base, int b, R* bra, R* ket, Matrix* m,
                  std::size_t dim, bool write_back) {
  const std::size_t v = g.variant(base);
  const PreparedGates<R>& p = *g.prepared[v];
  if (m) {
    Matrix part;
    measured_step(p, g.local[v], b, bra, ket, part, write_back);
    if (m->empty()) m->assign(dim, cplx{0});
    for (std::size_t i = 0; i < part.size(); ++i)
      if (g.entry[v][i] >= 0) (*m)[static_cast<std::size_t>(g.entry[v][i])] += part[i];
    return;
  }
  if (!write_back) return;
  p.run(ket, 1);
  p.run(bra, 1);
}

// One measured diagonal step of a run (diagonal_run): the gate alone in the
// chunk (`outside` null), or one whose wires leave the chunk.
template <class R>
struct DiagonalStep {
  const PreparedGates<R>* local = nullptr;  // the chunk's gate when `outside` is null
  const OutsideDiagonal<R>* outside = nullptr;
  int slot = 0;         // the gate's partial sums among a chunk's
  std::size_t dim = 0;  // the gate's diagonal entries
};

// A run of measured diagonal steps on the chunk at `base` in one pass
// (KernelSet::adjoint_diagonal_run): each step's sums into partial[slot] as
// measured_step and outside_step form them, then, with write_back, both states
// multiplied by every gate. false, with nothing done, where the kernels do not
// take the run. `sums`: scratch, reused across calls.
template <class R>
bool diagonal_run(const std::vector<DiagonalStep<R>>& run, index_t base, R* bra, R* ket,
                  Matrix* partial, bool write_back, std::vector<double>& sums) {
  const int count = static_cast<int>(run.size());
  if (count < 1 || count > kMaxDiagonalRun) return false;
  const PreparedGates<R>* gates[kMaxDiagonalRun] = {};
  std::size_t variant[kMaxDiagonalRun], first[kMaxDiagonalRun + 1] = {0};
  for (int g = 0; g < count; ++g) {
    const DiagonalStep<R>& d = run[static_cast<std::size_t>(g)];
    variant[g] = d.outside ? d.outside->variant(base) : 0;
    gates[g] = d.outside ? d.outside->prepared[variant[g]].get() : d.local;
    const std::size_t dim = d.outside ? d.outside->local[variant[g]].dim() : d.dim;
    if (dim > kMaxAdjointDiagonalDim) return false;
    first[g + 1] = first[g] + 2 * dim;
  }
  sums.resize(first[count]);
  double* out[kMaxDiagonalRun];
  for (int g = 0; g < count; ++g) out[g] = sums.data() + first[g];
  if (!PreparedGates<R>::adjoint_diagonal_run(gates, count, bra, ket, out, write_back))
    return false;
  for (int g = 0; g < count; ++g) {
    const DiagonalStep<R>& d = run[static_cast<std::size_t>(g)];
    Matrix& m = partial[d.slot];
    const std::size_t entries = (first[g + 1] - first[g]) / 2;
    if (!d.outside) {
      to_matrix(out[g], entries, m);
      continue;
    }
    if (m.empty()) m.assign(d.dim, cplx{0});
    const std::vector<int>& entry = d.outside->entry[variant[g]];
    for (std::size_t i = 0; i < entries; ++i)
      if (entry[i] >= 0)
        m[static_cast<std::size_t>(entry[i])] += cplx{out[g][2 * i], out[g][2 * i + 1]};
  }
  return true;
}

template <class R>
void StateVector<R>::adjoint_sweep(StateVector& lambda, const std::vector<BoundGate>& inverse,
                                   const std::vector<char>& measure, std::vector<Matrix>& out,
                                   bool undo_all) {
  sweep(lambda, inverse, measure, out, undo_all, nullptr);
}

template <class R>
double StateVector<R>::adjoint_sweep_from(const PauliSum& h, StateVector& lambda,
                                          const std::vector<BoundGate>& inverse,
                                          const std::vector<char>& measure,
                                          std::vector<Matrix>& out) {
  return sweep(lambda, inverse, measure, out, false, &h);
}

namespace {
// A Pauli sum as the chunks of a segment see it (REQUIRES every flipped qubit
// in W): per term its masks on the chunk's qubits, and the Z factors outside W,
// whose sign each chunk's base fixes. conjugate(P) makes it P H P^dagger, the
// observable after a permutation P of the chunk's basis states.
class ChunkObservable {
 public:
  ChunkObservable(const PauliSum& h, const ChunkLayout& layout) {
    for (const PauliTerm& t : h.terms)
      terms_.push_back({{t.coeff, layout.local_mask(t.xmask), layout.local_mask(t.zmask)},
                        t.zmask & ~layout.global_mask()});
  }
  void conjugate(const AffinePermutation& p) {
    for (Term& t : terms_) t.local = p.conjugate(t.local);
  }
  PauliSum at(index_t base) const {  // base: the chunk's bits outside W
    PauliSum h;
    for (const Term& t : terms_)
      h.add(parity(base & t.outside_z) ? -t.local.coeff : t.local.coeff, t.local.xmask,
            t.local.zmask);
    return h;
  }

 private:
  struct Term {
    PauliTerm local;
    index_t outside_z;
  };
  std::vector<Term> terms_;
};
}  // namespace

template <class R>
double StateVector<R>::sweep(StateVector& lambda, const std::vector<BoundGate>& inverse,
                             const std::vector<char>& measure, std::vector<Matrix>& out,
                             bool undo_all, const PauliSum* h) {
  assert(lambda.n_ == n_ && inverse.size() == measure.size() && &lambda != this);
  const int count = static_cast<int>(inverse.size());
  out.assign(inverse.size(), Matrix{});
  // Gates outside every measured gate's light cone (passes/light_cone.h) are not
  // undone: unmeasured ones are dropped, measured ones only have their sums formed.
  const std::vector<char> needed =
      undo_all ? std::vector<char>(inverse.size(), 1) : undo_needed(inverse, measure);
  // Process in reverse: rev[j] is inverse[orig(j)]. With blocking, the plan may
  // move a gate past gates on other qubits; a cross matrix over a gate's targets
  // does not change under unitaries on other qubits applied to both vectors.
  std::vector<BoundGate> rev;
  std::vector<int> orig_index;
  for (int i = count - 1; i >= 0; --i) {
    if (!needed[i] && !measure[i]) continue;
    rev.push_back(inverse[i]);
    orig_index.push_back(i);
  }
  const int active = static_cast<int>(rev.size());
  auto orig = [&](int j) { return orig_index[j]; };
  // The fused kernel is serial: use it where the kernels would run on one thread.
  const bool serial = threads_ == 1 || (std::int64_t{1} << n_) < kMinParallelWork;
  auto direct = [&](int begin, int end) {
    for (int j = begin; j < end; ++j) {
      const KernelGate k = to_kernel_gate(rev[j]);
      const PreparedGates<R> gate(*kernels_, &k, 1, n_);  // once for both states
      const int i = orig(j);
      if (measure[i] && serial &&
          fused_step(gate, lambda.amps_.data(), amps_.data(), rev[j], out[i], needed[i])) {
        if (rev[j].diagonal) out[i] = from_diagonal(out[i]);
        continue;
      }
      if (measure[i])
        out[i] = antihermitian_part(
            cross_matrix(lambda.amps_.data(), amps_.data(), n_, rev[j], threads_));
      if (!needed[i]) continue;
      gate.run(amps_.data(), threads_);
      gate.run(lambda.amps_.data(), threads_);
    }
  };
  const SegmentPlan plan =
      blocking_pays(active, chunk_qubits_) ? plan_blocks(rev, n_, chunk_qubits_) : SegmentPlan{};
  // lambda = H this inside the first segment's chunks, when it is blocked and
  // holds every qubit H flips; otherwise in a pass of its own first.
  index_t flips = 0;
  if (h)
    for (const PauliTerm& t : h->terms) flips |= t.xmask;
  const bool form = h && !plan.segments.empty() && !plan.segments.front().qubits.empty() &&
                    std::popcount(ChunkLayout(plan.segments.front().qubits).local_mask(flips)) ==
                        std::popcount(flips);
  double expval = 0;
  if (h && !form) expval = lambda.assign_applied(*h, *this);
  if (plan.segments.empty()) {
    direct(0, active);
    return expval;
  }
  {
    std::vector<BoundGate> ordered;
    std::vector<int> ordered_orig;
    for (int j : plan.order) {
      ordered.push_back(std::move(rev[j]));
      ordered_orig.push_back(orig_index[j]);
    }
    rev = std::move(ordered);
    orig_index = std::move(ordered_orig);
  }
  for (const Segment& s : plan.segments) {
    if (s.qubits.empty()) {
      direct(s.begin, s.end);
      continue;
    }
    const ChunkLayout layout(s.qubits);
    const int b = layout.b;
    const int len = s.end - s.begin;
    std::vector<BoundGate> local;
    std::vector<KernelGate> kg;
    const std::vector<std::unique_ptr<OutsideDiagonal<R>>> outside =
        localize<R>(rev, s.begin, s.end, layout, *kernels_, local, kg);
    std::vector<std::unique_ptr<PreparedGates<R>>> prepared;
    std::vector<int> slot(static_cast<std::size_t>(len), -1);  // index into the partial sums
    std::vector<char> write(static_cast<std::size_t>(len), 0);
    int nmeasure = 0;
    // false: the chunks need not go back (only peeks; or the sweep's last
    // segment, after which nothing reads either state unless undo_all).
    bool writes = false;
    for (int j = 0; j < len; ++j) {
      prepared.push_back(outside[j] ? nullptr
                                    : std::make_unique<PreparedGates<R>>(*kernels_, &kg[j], 1, b));
      if (measure[orig(s.begin + j)]) slot[j] = nmeasure++;
      write[j] = needed[orig(s.begin + j)];
      writes = writes || write[j];
    }
    const bool last = &s == &plan.segments.back();
    if (last && !undo_all) writes = false;
    // This segment forms lambda (form, first segment): lambda goes back to
    // memory whenever a later segment reads it.
    const bool forms = form && &s == &plan.segments.front();
    const bool lambda_back = writes || (forms && !last);
    std::optional<ChunkObservable> observable;
    if (forms) observable.emplace(*h, layout);
    std::vector<double> chunk_expval(forms ? static_cast<std::size_t>(std::int64_t{1} << (n_ - b))
                                           : 0);
    // Runs of two or more measured diagonal steps without controls, alike in
    // writing back, from step j: one pass each (diagonal_run), where the
    // kernels take them.
    std::vector<std::vector<DiagonalStep<R>>> diagonal_runs(static_cast<std::size_t>(len));
    auto in_run = [&](int j) {
      return slot[j] >= 0 && rev[s.begin + j].diagonal && (outside[j] || local[j].controls.empty());
    };
    for (int j = 0; j < len; ++j) {
      if (!in_run(j)) continue;
      int e = j + 1;
      while (e < len && e - j < kMaxDiagonalRun && in_run(e) && write[e] == write[j]) ++e;
      for (int i = j; e > j + 1 && i < e; ++i)
        diagonal_runs[static_cast<std::size_t>(j)].push_back(
            {prepared[i].get(), outside[i].get(), slot[i], rev[s.begin + i].dim()});
    }
    const PermutationRuns runs(local, b, [&](int j) {
      return slot[j] < 0 && !outside[j];  // unmeasured, the same in every chunk
    });
    const SignRuns signs(rev, s.begin, len, [&](int j) { return slot[j] < 0 && write[j]; });
    // A permutation P opening the segment that forms lambda acts on phi alone:
    // lambda after it is (P H P^dagger)(P phi), one permutation pass fewer.
    const int first = forms && runs.end[0] > 0 && (writes || last) ? runs.end[0] : 0;
    if (first > 0) observable->conjugate(*runs.start[0]);
    const std::int64_t nchunks = std::int64_t{1} << (n_ - b);
    std::vector<Matrix> partial(static_cast<std::size_t>(nchunks * nmeasure));
    R* phi_amps = amps_.data();
    R* lam_amps = lambda.amps_.data();
    const bool streaming =
        streaming_stores_pay(streaming_, (std::size_t{4} << n_) * sizeof(R));  // phi and lambda
    const int threads = nchunks >= 2 ? threads_ : 1;
#pragma omp parallel num_threads(threads)
    {
      const bool copy = !layout.contiguous();
      AlignedBuffer<R> pb(copy ? std::size_t{2} << b : 0), lb(copy ? std::size_t{2} << b : 0);
      // Composed permutations write out of place, into each vector's spare buffer.
      const std::size_t spare = runs.count ? std::size_t{2} << b : 0;
      AlignedBuffer<R> ps(spare), ls(spare);
      std::vector<double> sums;  // diagonal_run's scratch
#pragma omp for schedule(static)
      for (std::int64_t c = 0; c < nchunks; ++c) {
        const index_t base = layout.base(c);
        ChunkBuffers<R> pc{copy ? pb.data() : phi_amps + 2 * base, ps.data(), nullptr};
        ChunkBuffers<R> lc{copy ? lb.data() : lam_amps + 2 * base, ls.data(), nullptr};
        pc.cur = pc.home;
        lc.cur = lc.home;
        if (copy) layout.gather(pc.cur, phi_amps, base);
        if (first > 0) pc.permute(*runs.start[0]);
        if (forms) {
          // <phi|H|phi> = <P phi|P H P^dagger|P phi>: the same sum either way.
          chunk_expval[static_cast<std::size_t>(c)] =
              apply_pauli_sum(observable->at(base), pc.cur, lc.cur, b, 1);
        } else if (copy) {
          layout.gather(lc.cur, lam_amps, base);
        }
        for (int j = first; j < len; ++j) {
          if (runs.end[j] > j) {
            ChunkBuffers<R>::permute_both(pc, lc, *runs.start[j]);
            j = runs.end[j] - 1;
            continue;
          }
          R* const ph = pc.cur;
          R* const la = lc.cur;
          if (signs.end[j] > j) {
            apply_signs(*kernels_, signs.local(j, layout, base), ph, la, b);
            j = signs.end[j] - 1;
            continue;
          }
          const std::vector<DiagonalStep<R>>& run = diagonal_runs[static_cast<std::size_t>(j)];
          if (!run.empty() &&
              diagonal_run(run, base, la, ph, &partial[static_cast<std::size_t>(c * nmeasure)],
                           write[j], sums)) {
            j += static_cast<int>(run.size()) - 1;
            continue;
          }
          if (outside[j]) {
            outside_step(
                *outside[j], base, b, la, ph,
                slot[j] < 0 ? nullptr : &partial[static_cast<std::size_t>(c * nmeasure + slot[j])],
                rev[s.begin + j].dim(), write[j]);
            continue;
          }
          // Two measured one-qubit gates in a row on different qubits: one pass.
          if (slot[j] >= 0 && j + 1 < len && slot[j + 1] >= 0 && !outside[j + 1] &&
              fused_pair(*prepared[j], *prepared[j + 1], la, ph,
                         partial[static_cast<std::size_t>(c * nmeasure + slot[j])],
                         partial[static_cast<std::size_t>(c * nmeasure + slot[j + 1])],
                         write[j] || write[j + 1])) {
            ++j;
            continue;
          }
          if (slot[j] >= 0) {
            measured_step(*prepared[j], local[j], b, la, ph,
                          partial[static_cast<std::size_t>(c * nmeasure + slot[j])], write[j]);
            continue;
          }
          if (!write[j]) continue;
          prepared[j]->run(ph, 1);
          prepared[j]->run(la, 1);
        }
        if (copy) {
          if (writes) layout.scatter(pc.cur, phi_amps, base, streaming);
          if (lambda_back) layout.scatter(lc.cur, lam_amps, base, streaming);
        } else if (writes) {  // in place (lambda too when formed; untouched if !writes)
          pc.settle(b);
          lc.settle(b);
        }
      }
    }
    for (double e : chunk_expval) expval += e;  // in chunk order
    for (int j = 0; j < len; ++j) {             // fixed-order sums over chunks
      if (slot[j] < 0) continue;
      const BoundGate& g = rev[s.begin + j];
      const std::size_t dim = g.dim();
      Matrix sum(g.diagonal ? dim : dim * dim, 0.0);  // partials: a diagonal's diagonal
      for (std::int64_t c = 0; c < nchunks; ++c) {
        const Matrix& m = partial[static_cast<std::size_t>(c * nmeasure + slot[j])];
        for (std::size_t e = 0; e < sum.size(); ++e) sum[e] += m[e];
      }
      out[orig(s.begin + j)] = g.diagonal ? from_diagonal(sum) : std::move(sum);
    }
  }
  return expval;
}

template <class R>
double StateVector<R>::norm_squared() const {
  return real_group_pass(TermGroup{0, {1.0}, {0}}, amps_.data(), n_, threads_);
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
double StateVector<R>::expval(const PauliSum& h) const {
  double constant = 0;
  double sum = 0;
  for (const TermGroup& g : group_terms(h, constant))
    sum += real_group_pass(g, amps_.data(), n_, threads_);
  return constant != 0 ? sum + constant * norm_squared() : sum;
}

template <class R>
double StateVector<R>::expval_between(const PauliSum& h, const StateVector& other) const {
  return matrix_element(h, other).real();
}

template <class R>
cplx StateVector<R>::matrix_element(const PauliSum& h, const StateVector& ket) const {
  assert(ket.n_ == n_);
  double constant = 0;
  const std::vector<TermGroup> groups = group_terms(h, constant);
  cplx sum = 0;
  for (const TermGroup& g : groups)
    sum += group_pass(g, amps_.data(), ket.amps_.data(), n_, threads_);
  if (constant != 0) {
    sum += constant *
           group_pass(TermGroup{0, {1.0}, {0}}, amps_.data(), ket.amps_.data(), n_, threads_);
  }
  return sum;
}

namespace {
// out = H in over 2^n amplitudes (distinct arrays); returns Re <in|H|in>,
// formed in double before the rounding to R and summed over fixed blocks in order.
template <class R>
double apply_pauli_sum(const PauliSum& h, const R* in, R* out, int n, int threads) {
  double constant = 0;
  const std::vector<TermGroup> groups = group_terms(h, constant);
  std::vector<BlockWeights> weights;
  for (const TermGroup& g : groups) weights.emplace_back(g, n);
  const int lb = std::min(n, kBlockBits);
  const index_t bsize = index_t{1} << lb, low_mask = bsize - 1;
  // (P psi)_j = ph(j ^ x) psi_{j ^ x}, with P|i> = ph(i)|i ^ x>: block b of the
  // output reads block b ^ (x >> lb) of the input, whose weights are filled.
  // Real weights (no odd number of Y factors): runs of 2^p amplitudes (p = the
  // lowest set bit of x's low part) read contiguous partner runs, one
  // multiply-add per real, as in real_weight_pass.
  const std::int64_t nblocks = std::int64_t{1} << (n - lb);
  std::vector<double> partial(static_cast<std::size_t>(nblocks));  // of <src|H|src>
  parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t b) {
    thread_local std::vector<double> acc, wr, wi, w2, wp;
    thread_local std::vector<R> sp;
    acc.resize(2 * bsize);
    wr.resize(bsize);
    wi.resize(bsize);
    const index_t base = static_cast<index_t>(b) << lb;
    double* a = acc.data();
    for (index_t j = 0; j < 2 * bsize; ++j) a[j] = constant * in[2 * base + j];
    for (std::size_t k = 0; k < groups.size(); ++k) {
      const index_t x = groups[k].x, xlo = x & low_mask;
      const index_t ibase = base ^ (x & ~low_mask);
      const R* src_block = in + 2 * ibase;
      if (!weights[k].complex()) {
        double sign = 1;
        const double* w = weights[k].interleaved(ibase >> lb, w2, sign);
        const R* s = src_block;
        if (xlo != 0) {  // the source and its weights in the order of the output
          const index_t run = index_t{1} << std::countr_zero(xlo);
          sp.resize(2 * bsize);
          wp.resize(2 * bsize);
          gather_partner_runs(sp.data(), src_block, bsize, run, xlo);
          gather_partner_runs(wp.data(), w, bsize, run, xlo);
          s = sp.data();
          w = wp.data();
        }
        add_weighted(a, sign, w, s, 2 * bsize);
        continue;
      }
      weights[k].fill(ibase >> lb, wr.data(), wi.data());
      for (index_t j = 0; j < bsize; ++j) {
        const index_t i = j ^ xlo;
        const double xr = src_block[2 * i], xi = src_block[2 * i + 1];
        a[2 * j] += wr[i] * xr - wi[i] * xi;
        a[2 * j + 1] += wr[i] * xi + wi[i] * xr;
      }
    }
    // A SIMD reduction (fixed order for a given build and CPU): one chain of
    // adds bounded this pass by FP latency once it ran inside a cache chunk.
    partial[static_cast<std::size_t>(b)] = store_dot(a, in + 2 * base, out + 2 * base, 2 * bsize);
  });
  double sum = 0;
  for (double v : partial) sum += v;
  return sum;
}

}  // namespace

template <class R>
double StateVector<R>::assign_applied(const PauliSum& h, const StateVector& src) {
  assert(src.n_ == n_ && &src != this);
  return apply_pauli_sum(h, src.amps_.data(), amps_.data(), n_, threads_);
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
