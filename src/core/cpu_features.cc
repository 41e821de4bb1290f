#include "core/cpu_features.h"

#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstring>
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
std::string trimmed(std::string s) {
  const std::size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  const std::size_t e = s.find_last_not_of(" \t");
  std::string out;  // inner runs of spaces as one (brand strings pad with them)
  for (std::size_t i = b; i <= e; ++i)
    if (s[i] != ' ' || out.back() != ' ') out += s[i];
  return out;
}
}  // namespace

std::string cpu_model_name() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned regs[12] = {};
  unsigned top = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000000u, &top, &ebx, &ecx, &edx) && top >= 0x80000004u) {
    for (unsigned i = 0; i < 3; ++i)
      __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2],
                  &regs[4 * i + 3]);
    char brand[49] = {};
    std::memcpy(brand, regs, 48);
    if (std::string name = trimmed(brand); !name.empty()) return name;
  }
#endif
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      if (std::string name = trimmed(line.substr(line.find(':') + 1)); !name.empty()) return name;
  return "unknown CPU";
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
