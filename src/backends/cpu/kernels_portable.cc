// Portable kernels: the baseline instruction set, three vector widths.
#include <omp.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#include "backends/cpu/kernels.h"
#include "core/parallel.h"

namespace qmlsim::cpu::portable {
namespace {
constexpr char kIsa[] = "portable";  // kernel forms' class key (kernels.h)
// In this order: each part uses the ones before it.
// clang-format off
#include "backends/cpu/kernels_impl.inc"
#include "backends/cpu/kernels_adjoint.inc"
#include "backends/cpu/kernels_set.inc"
// clang-format on
}  // namespace

const KernelSet& kernels16() {
  static const KernelSet k = make_kernel_set<16>("portable-128");
  return k;
}
const KernelSet& kernels32() {
  static const KernelSet k = make_kernel_set<32>("portable-256");
  return k;
}
const KernelSet& kernels64() {
  static const KernelSet k = make_kernel_set<64>("portable-512");
  return k;
}

}  // namespace qmlsim::cpu::portable
