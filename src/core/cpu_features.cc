#include "core/cpu_features.h"

#include <unistd.h>

#include <fstream>
#include <string>

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

namespace {
// /sys/devices/system/cpu/cpu0/cache/index<i>/size, e.g. "2048K"; 0 if absent.
std::size_t sysfs_cache_bytes(int index) {
  std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
  std::size_t value = 0;
  char unit = 'K';
  if (!(f >> value) || value == 0) return 0;
  f >> unit;
  return unit == 'M' ? value << 20 : unit == 'K' ? value << 10 : value;
}
}  // namespace

std::size_t l2_cache_bytes() {
#ifdef _SC_LEVEL2_CACHE_SIZE
  const long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (v > 0) return static_cast<std::size_t>(v);
#endif
  return sysfs_cache_bytes(2);
}

std::size_t last_level_cache_bytes() {
#ifdef _SC_LEVEL3_CACHE_SIZE
  const long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (v > 0) return static_cast<std::size_t>(v);
#endif
  if (const std::size_t l3 = sysfs_cache_bytes(3)) return l3;
  return l2_cache_bytes();
}

}  // namespace qmlsim
