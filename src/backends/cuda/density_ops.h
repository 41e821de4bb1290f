// A density matrix's readouts as plain host+device functions (the GPU's
// kernels run them grid-stride; the CPU tests run them with one worker against
// dense matrices). rho on m qubits is held as the 2m-qubit vector vec(rho):
// rho[r][c] at r + 2^m c (grad/density_matrix.h). Worker `tid` of `nt` takes
// columns tid, tid + nt, ...
#pragma once

#include "backends/cuda/index_math.h"
#include "backends/cuda/small_batch_ops.h"

namespace qmlsim::cuda {

// This worker's share of Tr(H rho) = sum over terms c P and columns k of
// Re(c rho[k ^ x][k]) (-1)^parity((k ^ x) & z): P|k> = i^popc(x & z)
// (-1)^parity(k & z) |k ^ x>, its Y phase already in c (PackedTerms).
template <class R>
QMLSIM_HD double trace_partial_packed(const R* rho, int m, const PackedTerms& h, int tid, int nt) {
  const u64 dim = u64{1} << m;
  double sum = 0;
  for (u64 k = static_cast<u64>(tid); k < dim; k += static_cast<u64>(nt)) {
    for (int t = 0; t < h.count; ++t) {
      const u64 row = k ^ h.x[t];
      const u64 i = row + dim * k;
      const double s = parity(row & h.z[t]) ? -1.0 : 1.0;
      sum += s * (h.c[2 * t] * static_cast<double>(rho[2 * i]) -
                  h.c[2 * t + 1] * static_cast<double>(rho[2 * i + 1]));
    }
  }
  return sum;
}

// vec(H) into a over this worker's columns: H[k ^ x][k] = sum of c (-1)^parity(k & z)
// over the terms with that x (every other entry of the column 0), so
// <vec(H)|vec(rho)> = Tr(H rho) for Hermitian H.
template <class R>
QMLSIM_HD void observable_packed(R* a, int m, const PackedTerms& h, int tid, int nt) {
  const u64 dim = u64{1} << m;
  for (u64 k = static_cast<u64>(tid); k < dim; k += static_cast<u64>(nt)) {
    for (u64 r = 0; r < dim; ++r) store_amp(a, r + dim * k, 0.0, 0.0);
    for (int t = 0; t < h.count; ++t) {
      const u64 i = (k ^ h.x[t]) + dim * k;
      const double s = parity(k & h.z[t]) ? -1.0 : 1.0;
      double re, im;
      load_amp(a, i, re, im);
      store_amp(a, i, re + s * h.c[2 * t], im + s * h.c[2 * t + 1]);
    }
  }
}

}  // namespace qmlsim::cuda
