// Run-time CPU feature detection for kernel dispatch.
#pragma once

namespace qmlsim {

struct CpuFeatures {
  bool avx2_fma = false;  // AVX2 and FMA3
  bool avx512f = false;   // AVX-512 Foundation
};

CpuFeatures detect_cpu_features();

}  // namespace qmlsim
