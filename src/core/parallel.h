// The parallel-for policy: how many threads a loop may use, and a loop helper.
// Kernels take a thread count; a loop runs serially when its work is below
// `kMinParallelWork` amplitudes (threads cost more than they save there).
#pragma once

#include <omp.h>

#include <cstddef>
#include <cstdint>
#include <exception>

namespace qmlsim {

// Below this many amplitudes per pass a state is processed by one thread.
// Measured with `qmlsim bench --qubits 10:16:2 --threads 1,2` on 2 cores: at
// 2^14 amplitudes two threads ran a complex64 1-qubit gate 1.4x faster than one,
// and a complex128 one about as fast; below, thread start-up dominates.
inline constexpr std::int64_t kMinParallelWork = std::int64_t{1} << 14;

// Threads to use by default: OpenMP's choice (OMP_NUM_THREADS or the core count).
inline int default_threads() { return omp_get_max_threads(); }

// GNU OpenMP's thread pool does not survive fork(): a child (a multiprocessing
// pool, torch DataLoader workers) that starts a parallel region on more than
// one thread waits forever for threads that exist only in its parent. Once
// this has been called (by every state's constructor, so before any pool
// exists), a forked child runs every parallel region on one thread: its
// OpenMP max-active-levels is set to 0, which no num_threads clause overrides.
// Idempotent and thread-safe.
void guard_threads_across_fork();

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

// Runs fn(i, threads_inside) for every item i in [0, count): one item per
// thread (threads_inside = 1) when `per_thread` and there are threads to
// share, else in turn with all `threads` inside each item. An exception thrown
// by an item never leaves the parallel region: items after the failing one
// are skipped, and the exception of the lowest failing item is rethrown after
// the loop, so the error a caller sees does not depend on the thread count.
template <class Fn>
void parallel_items(std::size_t count, bool per_thread, int threads, Fn&& fn) {
  if (!per_thread || threads <= 1 || count < 2) {
    for (std::size_t i = 0; i < count; ++i) fn(i, threads);
    return;
  }
  std::exception_ptr error;
  std::size_t failed = count;  // lowest failing item so far
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (std::size_t i = 0; i < count; ++i) {
    std::size_t first_failed;
#pragma omp atomic read
    first_failed = failed;
    if (i > first_failed) continue;
    try {
      fn(i, 1);
    } catch (...) {
#pragma omp critical(qmlsim_parallel_items)
      if (i < failed) {
        error = std::current_exception();
#pragma omp atomic write
        failed = i;
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace qmlsim
