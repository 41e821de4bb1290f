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
#include "backends/cpu/kernels_impl.inc"
}  // namespace

const KernelSet& kernels() {
  static const KernelSet k = make_kernel_set<32>("avx2");
  return k;
}

}  // namespace qmlsim::cpu::avx2
