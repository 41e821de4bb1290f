// Preemption: SIGTERM (Kubernetes before it kills a pod, Slurm's --signal,
// a scheduler's preemption) and SIGINT (Ctrl-C) ask a training run to stop at
// its next step boundary, where it writes a checkpoint and exits with 128 +
// the signal (143, 130). A second signal takes the default action at once.
#pragma once

namespace qmlsim::train {

// While one lives, SIGTERM and SIGINT are recorded instead of ending the
// process; the handlers in place before are restored on destruction.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The first signal received while one is installed (0: none, or none installed).
  static int received();
  // The signal's name, "SIGTERM" or "SIGINT".
  static const char* name(int signal);
};

}  // namespace qmlsim::train
