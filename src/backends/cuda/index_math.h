// Index arithmetic shared by the CUDA kernels and their host-side tests: plain
// functions marked host+device, so the CPU test suite checks what the GPU runs.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define QMLSIM_HD __host__ __device__ inline
#else
#define QMLSIM_HD inline
#endif

namespace qmlsim::cuda {

using u64 = std::uint64_t;

// Inserts a zero bit at each of the ascending positions pos[0..n): the g-th
// index whose bits at pos are all zero.
template <class Pos>
QMLSIM_HD u64 insert_zeros(u64 g, const Pos* pos, int n) {
  for (int k = 0; k < n; ++k) {
    const u64 low = g & ((u64{1} << pos[k]) - 1);
    g = ((g >> pos[k]) << (pos[k] + 1)) | low;
  }
  return g;
}

// The local index of amplitude i for targets t[0..k): bit j = bit t[j] of i.
template <class Pos>
QMLSIM_HD unsigned local_index(u64 i, const Pos* t, int k) {
  unsigned r = 0;
  for (int j = 0; j < k; ++j) r |= static_cast<unsigned>((i >> t[j]) & 1) << j;
  return r;
}

// Parity of the set bits of x (0 or 1).
QMLSIM_HD int parity(u64 x) {
#ifdef __CUDA_ARCH__
  return __popcll(x) & 1;
#else
  return __builtin_popcountll(x) & 1;
#endif
}

// Pauli word with masks (x, z) and complex coefficient c = coeff * i^popc(x & z):
// (P psi)_j = c * (-1)^parity((j ^ x) & z) * psi_(j ^ x). Returns the sign.
QMLSIM_HD double pauli_sign(u64 j, u64 x, u64 z) { return parity((j ^ x) & z) ? -1.0 : 1.0; }

}  // namespace qmlsim::cuda
