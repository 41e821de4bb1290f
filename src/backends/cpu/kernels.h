// Gate kernels for interleaved complex state vectors (re, im, re, im, ...),
// one set per instruction set, chosen at run time from the CPU's features.
//
// Every set is compiled from the same template (kernels_impl.inc) with a
// different vector width: portable builds (SSE2 baseline) of 16, 32 and 64-byte
// vectors, AVX2+FMA (32 bytes) and AVX-512 (64 bytes). Tests run every set the
// CPU can execute, so the 64-byte logic is tested even where AVX-512 is absent.
#pragma once

#include <vector>

#include "core/types.h"

namespace qmlsim::cpu {

inline constexpr int kMaxControls = kMaxQubits;

// A gate as the kernels see it (plain data: the kernel translation units use no
// shared inline code, so each can be compiled for its own instruction set).
// Canonical form as in BoundGate: targets ascending, local index bit j <-> targets[j].
struct KernelGate {
  int k = 0;
  int targets[kMaxQubits] = {};
  int num_controls = 0;
  int controls[kMaxControls] = {};  // ascending
  bool diagonal = false;
  const double* matrix = nullptr;  // interleaved complex: 2^k diagonal or 2^k x 2^k row-major
};

struct KernelSet {
  const char* name;
  int vector_bytes;
  void (*apply_f32)(float* amps, int n, const KernelGate& g, int threads);
  void (*apply_f64)(double* amps, int n, const KernelGate& g, int threads);

  void apply(float* a, int n, const KernelGate& g, int t) const { apply_f32(a, n, g, t); }
  void apply(double* a, int n, const KernelGate& g, int t) const { apply_f64(a, n, g, t); }
};

// The fastest set this CPU runs (AVX-512, else AVX2+FMA, else portable 16-byte),
// unless QMLSIM_KERNELS names another available set.
const KernelSet& best_kernels();

// Every set this CPU can run, for tests and benchmarks.
std::vector<const KernelSet*> available_kernel_sets();

// Per-ISA entry points (defined in kernels_*.cc).
namespace portable {
const KernelSet& kernels16();
const KernelSet& kernels32();
const KernelSet& kernels64();
}  // namespace portable
namespace avx2 {
const KernelSet& kernels();
}
namespace avx512 {
const KernelSet& kernels();
}

}  // namespace qmlsim::cpu
