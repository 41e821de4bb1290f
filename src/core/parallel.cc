#include "core/parallel.h"

#include <pthread.h>

namespace qmlsim {
namespace {
void one_thread_in_child() { omp_set_max_active_levels(0); }
}  // namespace

void guard_threads_across_fork() {
  static const int registered = pthread_atfork(nullptr, nullptr, one_thread_in_child);
  (void)registered;
}

}  // namespace qmlsim
