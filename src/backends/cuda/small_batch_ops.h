// The CUDA kernels' arithmetic as plain host+device functions over packed
// gates: worker `tid` of `nt` takes every nt-th group. The small batches run
// them with the threads of a block, the big states with every thread of the
// grid (grid-stride), and the CPU tests with one worker against the CPU backend.
#pragma once

#include <cstdint>

#include "backends/cuda/index_math.h"

namespace qmlsim::cuda {

inline constexpr int kPackMaxWires = 40;  // targets + controls of a gate (= kMaxQubits)
inline constexpr int kPackMaxDense = 5;   // = kMaxDenseTargets (statevector.h)

// One gate as every kernel sees it (120 bytes; passed by value to the big-state
// kernels, read from a packed list by the small-batch ones). Local index bit j
// of a dense matrix <-> targets[j].
struct PackedGate {
  std::int32_t k = 0, npos = 0, diagonal = 0, measured_entries = 0;
  std::int8_t targets[kPackMaxWires] = {};  // ascending
  std::int8_t pos[kPackMaxWires] = {};      // targets and controls, ascending
  u64 ctrl = 0;                             // control bits
  u64 matrix = 0;                           // offset (doubles) of the interleaved matrix
  std::int64_t cross = -1;  // offset (doubles) of its cross matrix in the output, or -1
};

// Amplitude i of an interleaved state as one 8- or 16-byte access on the
// device (half the load and store instructions of two scalar ones).
template <class R>
struct alignas(2 * sizeof(R)) AmpPair {
  R re, im;
};
template <class R>
QMLSIM_HD void load_amp(const R* a, u64 i, double& re, double& im) {
#ifdef __CUDA_ARCH__
  const AmpPair<R> v = reinterpret_cast<const AmpPair<R>*>(a)[i];
  re = v.re;
  im = v.im;
#else
  re = a[2 * i];
  im = a[2 * i + 1];
#endif
}
template <class R>
QMLSIM_HD void store_amp(R* a, u64 i, double re, double im) {
#ifdef __CUDA_ARCH__
  reinterpret_cast<AmpPair<R>*>(a)[i] = AmpPair<R>{static_cast<R>(re), static_cast<R>(im)};
#else
  a[2 * i] = static_cast<R>(re);
  a[2 * i + 1] = static_cast<R>(im);
#endif
}

template <class R, int K>
QMLSIM_HD void dense_packed(R* a, int n, const PackedGate& g, const double* m, int tid, int nt) {
  constexpr int D = 1 << K;
  const u64 groups = u64{1} << (n - g.npos);
  u64 off[D];
  for (int r = 0; r < D; ++r) {
    off[r] = 0;
    for (int j = 0; j < K; ++j)
      if (r >> j & 1) off[r] |= u64{1} << g.targets[j];
  }
  // A one-qubit matrix lives in registers (the stores to `a` could alias m:
  // read once, not per group); wider ones would cost occupancy.
  constexpr int kHeld = K == 1 ? 8 : 1;
  double held[kHeld];
  if constexpr (K == 1)
    for (int e = 0; e < kHeld; ++e) held[e] = m[e];
  const double* mat = K == 1 ? held : m;
  for (u64 t = static_cast<u64>(tid); t < groups; t += static_cast<u64>(nt)) {
    const u64 base = insert_zeros(t, g.pos, g.npos) | g.ctrl;
    double vr[D], vi[D];
    for (int r = 0; r < D; ++r) load_amp(a, base | off[r], vr[r], vi[r]);
    for (int r = 0; r < D; ++r) {
      double sr = 0, si = 0;
      for (int c = 0; c < D; ++c) {
        const double mr = mat[2 * (r * D + c)], mi = mat[2 * (r * D + c) + 1];
        sr += mr * vr[c] - mi * vi[c];
        si += mr * vi[c] + mi * vr[c];
      }
      store_amp(a, base | off[r], sr, si);
    }
  }
}

template <class R>
QMLSIM_HD void diagonal_packed(R* a, int n, const PackedGate& g, const double* m, int tid, int nt) {
  for (u64 i = static_cast<u64>(tid); i < (u64{1} << n); i += static_cast<u64>(nt)) {
    if ((i & g.ctrl) != g.ctrl) continue;
    const unsigned r = local_index(i, g.targets, g.k);
    const double mr = m[2 * r], mi = m[2 * r + 1];
    double xr, xi;
    load_amp(a, i, xr, xi);
    store_amp(a, i, mr * xr - mi * xi, mr * xi + mi * xr);
  }
}

// a = G a for one packed gate; m is the item list's matrix array.
template <class R>
QMLSIM_HD void apply_packed(R* a, int n, const PackedGate& g, const double* m, int tid, int nt) {
  const double* gm = m + g.matrix;
  if (g.diagonal) {
    diagonal_packed(a, n, g, gm, tid, nt);
    return;
  }
  switch (g.k) {
    case 1:
      dense_packed<R, 1>(a, n, g, gm, tid, nt);
      break;
    case 2:
      dense_packed<R, 2>(a, n, g, gm, tid, nt);
      break;
    case 3:
      dense_packed<R, 3>(a, n, g, gm, tid, nt);
      break;
    case 4:
      dense_packed<R, 4>(a, n, g, gm, tid, nt);
      break;
    case 5:
      dense_packed<R, 5>(a, n, g, gm, tid, nt);
      break;
    default:
      break;  // refused when packing
  }
}

// This worker's share of the cross matrix: acc[2e], acc[2e+1] += conj(bra_a) ket_b
// for entry e = a*D+b (DIAG: e = a, a == b only). acc holds 2 * entries doubles.
template <class R, int K, bool DIAG>
QMLSIM_HD void cross_packed(const R* bra, const R* ket, int n, const PackedGate& g, int tid, int nt,
                            double* acc) {
  constexpr int D = 1 << K;
  const u64 groups = u64{1} << (n - g.npos);
  for (u64 t = static_cast<u64>(tid); t < groups; t += static_cast<u64>(nt)) {
    const u64 base = insert_zeros(t, g.pos, g.npos) | g.ctrl;
    double br[D], bi[D], kr[D], ki[D];
    for (int r = 0; r < D; ++r) {
      u64 o = 0;
      for (int j = 0; j < K; ++j)
        if (r >> j & 1) o |= u64{1} << g.targets[j];
      br[r] = bra[2 * (base | o)];
      bi[r] = -bra[2 * (base | o) + 1];
      kr[r] = ket[2 * (base | o)];
      ki[r] = ket[2 * (base | o) + 1];
    }
    for (int a = 0; a < D; ++a)
      for (int b = 0; b < D; ++b) {
        if (DIAG && a != b) continue;
        const int e = DIAG ? a : a * D + b;
        acc[2 * e] += br[a] * kr[b] - bi[a] * ki[b];
        acc[2 * e + 1] += br[a] * ki[b] + bi[a] * kr[b];
      }
  }
}

template <class R>
QMLSIM_HD void cross_any(const R* bra, const R* ket, int n, const PackedGate& g, int tid, int nt,
                         double* acc) {
  if (g.diagonal) {
    switch (g.k) {
      case 1:
        cross_packed<R, 1, true>(bra, ket, n, g, tid, nt, acc);
        break;
      case 2:
        cross_packed<R, 2, true>(bra, ket, n, g, tid, nt, acc);
        break;
      case 3:
        cross_packed<R, 3, true>(bra, ket, n, g, tid, nt, acc);
        break;
      case 4:
        cross_packed<R, 4, true>(bra, ket, n, g, tid, nt, acc);
        break;
      case 5:
        cross_packed<R, 5, true>(bra, ket, n, g, tid, nt, acc);
        break;
      default:
        break;
    }
  } else if (g.k == 1) {
    cross_packed<R, 1, false>(bra, ket, n, g, tid, nt, acc);
  } else if (g.k == 2) {
    cross_packed<R, 2, false>(bra, ket, n, g, tid, nt, acc);
  }
}

// Pauli terms: masks and complex coefficients coeff * i^popc(x & z) (interleaved).
struct PackedTerms {
  const u64* x;
  const u64* z;
  const double* c;
  int count;
};

// (H src)_j in double.
template <class R>
QMLSIM_HD void pauli_row_packed(const R* src, u64 j, const PackedTerms& h, double& re, double& im) {
  re = 0;
  im = 0;
  for (int t = 0; t < h.count; ++t) {
    const u64 i = j ^ h.x[t];
    const double s = pauli_sign(j, h.x[t], h.z[t]);
    const double pr = src[2 * i], pi = src[2 * i + 1];
    const double cr = s * h.c[2 * t], ci = s * h.c[2 * t + 1];
    re += cr * pr - ci * pi;
    im += cr * pi + ci * pr;
  }
}

// dst = H src over this worker's amplitudes.
template <class R>
QMLSIM_HD void pauli_apply_packed(const R* src, R* dst, int n, const PackedTerms& h, int tid,
                                  int nt) {
  for (u64 j = static_cast<u64>(tid); j < (u64{1} << n); j += static_cast<u64>(nt)) {
    double re, im;
    pauli_row_packed(src, j, h, re, im);
    dst[2 * j] = static_cast<R>(re);
    dst[2 * j + 1] = static_cast<R>(im);
  }
}

// This worker's share of Re <bra|H|ket>.
template <class R>
QMLSIM_HD double element_partial_packed(const R* bra, const R* ket, int n, const PackedTerms& h,
                                        int tid, int nt) {
  double sum = 0;
  for (u64 j = static_cast<u64>(tid); j < (u64{1} << n); j += static_cast<u64>(nt)) {
    double re, im;
    pauli_row_packed(ket, j, h, re, im);
    sum += static_cast<double>(bra[2 * j]) * re + static_cast<double>(bra[2 * j + 1]) * im;
  }
  return sum;
}

// Largest cross matrix a measured gate may have, in doubles (5 diagonal targets).
inline constexpr int kPackMaxCrossDoubles = 64;

// One item's forward program, run by worker tid of nt: a = G_last ... G_0 |0>,
// then expvals[k] = <a|obs[k]|a> (written by worker 0). `sync()` is a barrier
// among the workers; `reduce(v)` returns the sum of every worker's v to all.
template <class R, class Sync, class Reduce>
QMLSIM_HD void forward_item(R* a, int n, const PackedGate* g, int count, const double* m,
                            const PackedTerms* obs, int nobs, double* expvals, int tid, int nt,
                            Sync sync, Reduce reduce) {
  for (u64 i = static_cast<u64>(tid); i < (u64{2} << n); i += static_cast<u64>(nt)) a[i] = 0;
  sync();
  if (tid == 0) a[0] = 1;
  sync();
  for (int j = 0; j < count; ++j) {
    apply_packed(a, n, g[j], m, tid, nt);
    sync();
  }
  for (int k = 0; k < nobs; ++k) {
    const double v = reduce(element_partial_packed(a, a, n, obs[k], tid, nt));
    if (tid == 0) expvals[k] = v;
  }
}

// One item's backward program: lam = h phi, then for j from last to first:
// phi = G_j phi; where g[j].cross >= 0, cross[g[j].cross ...] = sum conj(lam_a) phi_b
// (worker 0 writes); lam = G_j lam. The G_j are the inverses of a forward list.
template <class R, class Sync, class Reduce>
QMLSIM_HD void backward_item(R* phi, R* lam, int n, const PackedGate* g, int count, const double* m,
                             const PackedTerms& h, double* cross, int tid, int nt, Sync sync,
                             Reduce reduce) {
  pauli_apply_packed(phi, lam, n, h, tid, nt);
  sync();
  for (int j = count - 1; j >= 0; --j) {
    apply_packed(phi, n, g[j], m, tid, nt);
    sync();
    if (g[j].cross >= 0) {
      double acc[kPackMaxCrossDoubles];
      for (int e = 0; e < 2 * g[j].measured_entries; ++e) acc[e] = 0;
      cross_any(lam, phi, n, g[j], tid, nt, acc);
      for (int e = 0; e < 2 * g[j].measured_entries; ++e) {
        const double v = reduce(acc[e]);
        if (tid == 0) cross[g[j].cross + e] = v;
      }
    }
    apply_packed(lam, n, g[j], m, tid, nt);
    sync();
  }
}

}  // namespace qmlsim::cuda
