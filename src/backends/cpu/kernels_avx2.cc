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
constexpr char kIsa[] = "avx2";  // kernel forms' class key (kernels.h)
// In this order: each part uses the ones before it.
// clang-format off
#include "backends/cpu/kernels_impl.inc"
#include "backends/cpu/kernels_adjoint.inc"
#include "backends/cpu/kernels_set.inc"
// clang-format on
}  // namespace

const KernelSet& kernels() {
  static const KernelSet k = make_kernel_set<32>("avx2");
  return k;
}

}  // namespace qmlsim::cpu::avx2
