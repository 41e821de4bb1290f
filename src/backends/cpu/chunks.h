// Internal to the CPU state vector (statevector.cc, pauli_sum.cc, cross_matrix.cc,
// adjoint_sweep.cc): how a cache-blocked segment's chunks lie in memory, and the runs
// of gates a segment applies in one pass; shared by the forward pass and the sweep.
#pragma once

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "backends/cpu/basis_permutation.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/statevector.h"
#include "circuit/bound.h"
#include "core/aligned_buffer.h"
#include "core/bits.h"
#include "core/cpu_features.h"
#include "core/env.h"
#include "core/error.h"
#include "passes/cache_blocking.h"

namespace qmlsim::cpu {

// Blocks of 2^kBlockBits amplitudes: the unit of parallel work and of the
// fixed-order reductions.
constexpr int kBlockBits = 10;

// Minimum contiguous run inside a chunk: 2^kRunQubits amplitudes (at most).
constexpr int kRunQubits = 8;

// Diagonal gates on up to this many wires need not have them in a chunk
// (plan_segments): at most 2^6 prepared variants each (OutsideDiagonal).
constexpr int kOutsideDiagonalWires = 6;

// The cache-blocking plan with the fewest segments (passes over memory) among
// minimum runs of 2^8, 2^6 and 2^5 amplitudes; longer runs (cheaper gathers)
// on ties. Shorter runs leave more of a chunk's qubits free for the gates:
// which wins depends on the circuit (docs/performance.md).
// `order`: as plan_segments takes it.
inline SegmentPlan plan_blocks(const std::vector<BoundGate>& gates, int n, int chunk_qubits,
                               const std::vector<char>& order = {}) {
  SegmentPlan best =
      plan_segments(gates, n, chunk_qubits, kRunQubits, kOutsideDiagonalWires, order);
  for (int run : {6, 5}) {
    SegmentPlan p = plan_segments(gates, n, chunk_qubits, run, kOutsideDiagonalWires, order);
    if (p.segments.size() < best.segments.size()) best = std::move(p);
  }
  return best;
}

// Whether states of `bytes` in all stream from memory pass after pass: half
// the last-level cache or more (32 MiB where the cache size is unknown).
inline bool streams_from_memory(std::size_t bytes) {
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
inline bool streaming_stores_pay(int forced_here, std::size_t bytes) {
  if (forced_here >= 0) return forced_here == 1;
  static const int forced = env_switch("QMLSIM_STREAMING_STORES");
  return forced >= 0 ? forced == 1 : streams_from_memory(bytes);
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
inline bool add_sign_gate(const BoundGate& g, SignDiagonal& d) {
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

// out = H in over 2^n amplitudes (distinct arrays); returns Re <in|H|in>,
// formed in double before the rounding to R and summed over fixed blocks in
// order (pauli_sum.cc).
template <class R>
double apply_pauli_sum(const PauliSum& h, const R* in, R* out, int n, int threads);

// M[r][c] = sum conj(bra[base|off_r]) ket[base|off_c] over the groups of gate g
// (target bits free, control bits 1), in double, dense; for a diagonal gate
// its dim diagonal entries alone. Fixed blocks of groups summed in order, so the result does not
// depend on the thread count (cross_matrix.cc).
template <class R>
Matrix cross_matrix(const R* bra, const R* ket, int n, const BoundGate& g, int threads);

// <bra| g |ket> (g on its targets, controls 1), in double, independent of the
// thread count: from the cross matrix, or where at most half of g's entries are
// nonzero, from those entries alone (cross_matrix.cc).
template <class R>
cplx matrix_element(const R* bra, const R* ket, int n, const BoundGate& g, int threads);

}  // namespace qmlsim::cpu
