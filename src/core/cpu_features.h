// Run-time CPU feature detection for kernel dispatch.
#pragma once

#include <cstddef>
#include <string>

namespace qmlsim {

struct CpuFeatures {
  bool avx2_fma = false;  // AVX2 and FMA3
  bool avx512f = false;   // AVX-512 Foundation
};

CpuFeatures detect_cpu_features();

// The processor's model name (CPUID's brand string on x86, else /proc/cpuinfo's
// "model name"), spaces trimmed; "unknown CPU" if neither says.
std::string cpu_model_name();

// The L2 cache of one core in bytes, as the OS reports it (sysconf, then
// /sys); 0 if unknown.
std::size_t l2_cache_bytes();

// The largest (last-level) cache the OS reports for cpu0, in bytes (L3, else
// L2); 0 if unknown.
std::size_t last_level_cache_bytes();

}  // namespace qmlsim
