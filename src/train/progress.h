// Keras-style progress: "Epoch 3/50" then
//   "4/4 [==============================] - 0.1s 25ms/step - loss: 0.41 - accuracy: 0.88"
// redrawn in place on a terminal; on anything else one line per epoch.
#pragma once

#include <chrono>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace qmlsim::train {

class Progress {
 public:
  Progress(std::ostream& out, bool terminal, bool quiet)
      : out_(out), tty_(terminal), quiet_(quiet) {}

  void begin_epoch(int epoch, int epochs, int steps);  // epoch is 1-based
  // After step `done` of the epoch (1-based), with running metrics.
  void step(int done, const std::vector<std::pair<std::string, double>>& metrics);
  // Ends the epoch's line with the final metrics (validation included).
  void end_epoch(const std::vector<std::pair<std::string, double>>& metrics);

 private:
  std::string line(int done, const std::vector<std::pair<std::string, double>>& metrics) const;
  std::ostream& out_;
  bool tty_, quiet_;
  int steps_ = 0, done_ = 0;
  std::chrono::steady_clock::time_point start_;
};

// True when progress may be redrawn in place: stdout is a terminal and no MPI
// or Slurm launcher started this process (a launcher's pseudo-terminal says
// nothing about where its output goes). QMLSIM_PROGRESS=bar|lines overrides.
bool stdout_is_terminal();

}  // namespace qmlsim::train
