// AVX2 + FMA kernels (compiled with -mavx2 -mfma; run only where the CPU has both).
#include <omp.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#include "backends/cpu/kernels.h"
#include "core/parallel.h"

namespace qmlsim::cpu::avx2 {
namespace {
// In this order: each part uses the ones before it.
// clang-format off
#include "backends/cpu/kernels_impl.inc"
#include "backends/cpu/kernels_adjoint.inc"
#include "backends/cpu/kernels_set.inc"
// clang-format on
}  // namespace

const KernelSet& kernels() {
  // AVX2 has 16 vector registers: the fused pair kernel's 36 live vectors
  // spill, and two single adjoint steps are faster (24-qubit gradients 1.6-2.3x
  // faster without pairs; with 32 registers, AVX-512's pairs pay).
  static const KernelSet k = make_kernel_set<32>("avx2", /*fused_pairs=*/false);
  return k;
}

}  // namespace qmlsim::cpu::avx2
