// The parallel-for policy: how many threads a loop may use, and a loop helper.
// Kernels take a thread count; a loop runs serially when its work is below
// `kMinParallelWork` amplitudes (threads cost more than they save there).
#pragma once

#include <omp.h>

#include <cstdint>

namespace qmlsim {

// Below this many amplitudes per pass a state is processed by one thread.
// Measured with `qmlsim bench --qubits 10:16:2 --threads 1,2` on 2 cores: at
// 2^14 amplitudes two threads ran a complex64 1-qubit gate 1.4x faster than one,
// and a complex128 one about as fast; below, thread start-up dominates.
inline constexpr std::int64_t kMinParallelWork = std::int64_t{1} << 14;

// Threads to use by default: OpenMP's choice (OMP_NUM_THREADS or the core count).
inline int default_threads() { return omp_get_max_threads(); }

// Runs fn(i) for i in [0, n), split statically over `threads` threads when
// `work` (amplitudes touched) is large enough.
template <class Fn>
void parallel_for(std::int64_t n, int threads, std::int64_t work, Fn&& fn) {
  if (threads <= 1 || work < kMinParallelWork || n < 2) {
    for (std::int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t i = 0; i < n; ++i) fn(i);
}

}  // namespace qmlsim
