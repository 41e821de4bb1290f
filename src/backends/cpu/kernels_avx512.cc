// AVX-512 kernels (compiled with -mavx512f; run only where the CPU has it).
#include <omp.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#include "backends/cpu/kernels.h"
#include "core/parallel.h"

namespace qmlsim::cpu::avx512 {
namespace {
constexpr char kIsa[] = "avx512";  // kernel forms' class key (kernels.h)
// In this order: each part uses the ones before it.
// clang-format off
#include "backends/cpu/kernels_impl.inc"
#include "backends/cpu/kernels_adjoint.inc"
#include "backends/cpu/kernels_set.inc"
// clang-format on
}  // namespace

const KernelSet& kernels() {
  static const KernelSet k = make_kernel_set<64>("avx512");
  return k;
}

}  // namespace qmlsim::cpu::avx512
