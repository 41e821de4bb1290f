// Portable kernels: the baseline instruction set, three vector widths.
#include <omp.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

#include "backends/cpu/kernels.h"
#include "core/parallel.h"

namespace qmlsim::cpu::portable {
namespace {
#include "backends/cpu/kernels_impl.inc"
}  // namespace

const KernelSet& kernels16() {
  static const KernelSet k{"portable-128", 16, &apply_gate<float, 16>, &apply_gate<double, 16>};
  return k;
}
const KernelSet& kernels32() {
  static const KernelSet k{"portable-256", 32, &apply_gate<float, 32>, &apply_gate<double, 32>};
  return k;
}
const KernelSet& kernels64() {
  static const KernelSet k{"portable-512", 64, &apply_gate<float, 64>, &apply_gate<double, 64>};
  return k;
}

}  // namespace qmlsim::cpu::portable
