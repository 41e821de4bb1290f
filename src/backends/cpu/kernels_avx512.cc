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
#include "backends/cpu/kernels_impl.inc"
}  // namespace

const KernelSet& kernels() {
  static const KernelSet k = make_kernel_set<64>("avx512");
  return k;
}

}  // namespace qmlsim::cpu::avx512
