#include "backends/cpu/kernels.h"

#include <cstdlib>
#include <cstring>

#include "core/cpu_features.h"
#include "core/error.h"

namespace qmlsim::cpu {

std::vector<const KernelSet*> available_kernel_sets() {
  std::vector<const KernelSet*> out = {&portable::kernels16(), &portable::kernels32(),
                                       &portable::kernels64()};
  const CpuFeatures f = detect_cpu_features();
  if (f.avx2_fma) out.push_back(&avx2::kernels());
  if (f.avx512f) out.push_back(&avx512::kernels());
  return out;
}

const KernelSet& best_kernels() {
  static const KernelSet* chosen = [] {
    const std::vector<const KernelSet*> sets = available_kernel_sets();
    if (const char* want = std::getenv("QMLSIM_KERNELS"); want && *want) {
      for (const KernelSet* k : sets)
        if (std::strcmp(k->name, want) == 0) return k;
      std::string names;
      for (const KernelSet* k : sets) names += std::string(names.empty() ? "" : ", ") + k->name;
      throw Error("QMLSIM_KERNELS=" + std::string(want) +
                  ": not available here (available: " + names + ")");
    }
    const CpuFeatures f = detect_cpu_features();
    if (f.avx512f) return &avx512::kernels();
    if (f.avx2_fma) return &avx2::kernels();
    return &portable::kernels16();
  }();
  return *chosen;
}

}  // namespace qmlsim::cpu
