#include "core/cpu_features.h"

#include <unistd.h>

#include <fstream>

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

std::size_t l2_cache_bytes() {
#ifdef _SC_LEVEL2_CACHE_SIZE
  const long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (v > 0) return static_cast<std::size_t>(v);
#endif
  std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index2/size");  // e.g. "2048K"
  std::size_t value = 0;
  char unit = 'K';
  if (!(f >> value) || value == 0) return 0;
  f >> unit;
  return unit == 'M' ? value << 20 : unit == 'K' ? value << 10 : value;
}

}  // namespace qmlsim
