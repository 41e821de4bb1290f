// `qmlsim train` and `qmlsim infer` behind the CLI: the training loops of the
// reference jobs with metrics, checkpoints, resume, final weights and results.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "io/config.h"

namespace qmlsim::train {

struct TrainOptions {
  std::string run_dir;
  bool resume = false;  // continue from the newest readable checkpoint
  // With resume: continue from checkpoints of another config (a changed
  // learning rate, more epochs), knowingly; new checkpoints record this one.
  bool allow_config_change = false;
  std::int64_t max_steps = -1;  // stop (with a checkpoint) after this many steps in this call
  bool quiet = false;           // no progress output
  bool trace = false;           // write RUN_DIR/trace.json (Chrome trace events)
};

// Trains the job (or up to max_steps steps of it: result.json and weights.h5
// appear when it is finished); returns the exit status: 0, or 128 + the signal
// when a StopSignals (stop_signals.h) recorded SIGTERM or SIGINT and the run
// stopped at a step boundary with a checkpoint. Throws Error for bad input.
int train(const io::Config& config, const TrainOptions& options, std::ostream& out);

// Predictions of saved weights on the job's test split (QCNN, Sonar; the
// training rows when there is no test split), or the cost and cut of saved
// QAOA parameters.
// With `data_path` (hybrid jobs): predictions for the examples of that CSV
// file, one line each, written to `out_path` as CSV (prediction,class) or, when
// it is empty, to `out`.
void infer(const io::Config& config, const std::string& weights, std::ostream& out,
           const std::string& data_path = "", const std::string& out_path = "");

}  // namespace qmlsim::train
