#include "core/cpu_features.h"

namespace qmlsim {

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512f = f.avx2_fma && __builtin_cpu_supports("avx512f");
#endif
  return f;
}

}  // namespace qmlsim
