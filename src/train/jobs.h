// The three reference jobs (docs/workloads.md): their config defaults (which are
// also the config schema), and how a resolved config becomes data and a model.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/config.h"
#include "ml/datasets.h"
#include "ml/loss.h"
#include "ml/optimizer.h"
#include "models/hybrid.h"
#include "models/qaoa.h"

namespace qmlsim::train {

// TOML defaults for "qaoa", "qcnn", "sonar" or "hybrid"; Error for another kind.
std::string job_defaults(const std::string& kind);
// Config keys holding file paths (made absolute when the config is read).
const std::vector<std::string>& job_path_keys();
// Reads a job config (file + overrides) with the schema above.
io::Config load_job_config(const std::string& path, const std::vector<std::string>& sets);

// Settings that change how a run executes but not its numbers, which a resumed
// run may change: job.threads (every reduction is bitwise the same for any
// thread count), train.checkpoint_every, train.keep_checkpoints.
const std::vector<std::string>& execution_only_keys();
// The run's identity as checkpoints record it: a hash (16 hex digits) of the
// settings that differ from the kind's defaults, the execution-only keys
// aside (so a later qmlsim whose new keys default to what it did before
// resumes the run, and so does the run's own resolved config.toml).
std::string config_hash(const io::Config& c);

// The [noise] table: channels after every gate (circuit.h: with_gate_noise).
std::vector<GateNoise> gate_noise(const io::Config& c);

// What one rank holds at once: `states` state vectors of `qubits` qubits (a
// state and an adjoint state per example in flight), each a slice when
// state_ranks > 1, plus then the exchange buffer.
struct WorkingSet {
  int qubits = 0;
  int states = 0;
  std::uint64_t state_bytes = 0;  // one state, or one slice
  std::uint64_t bytes = 0;        // the rank's total
};
WorkingSet working_set(int qubits, int states, int state_ranks, const models::EvalOptions& eval);
// OutOfMemory (one line, before any work) when `ranks_here` ranks' working
// sets exceed 90% of what this process may use (core/memory.h: the smaller of
// RAM, the cgroup limit and ulimit -v). States on a GPU are not counted.
void check_working_set(const WorkingSet& w, int ranks_here, const models::EvalOptions& eval,
                       const std::string& what);

// Threads default to the cores shared among the ranks on this host.
models::EvalOptions eval_options(const io::Config& c, int ranks_per_host = 1);
// Makes the options' backend ready in this process: for cuda, takes the GPU of
// this node-local rank (local_rank % GPUs); no usable GPU is an Error.
void use_backend(const models::EvalOptions& o, int local_rank);
ml::OptimizerConfig optimizer_config(const io::Config& c);

// A job's training settings, read from its config and range-checked once (a
// value out of range is an Error naming the key and its line); the loops
// take them from here.
struct TrainSettings {
  std::uint64_t seed = 0;
  double learning_rate = 0;
  std::int64_t checkpoint_every = 0;  // steps; 0: at the end of every epoch (or run)
  int keep_checkpoints = 1;
  // A step whose loss (cost) or gradient is not finite: false stops the run
  // there (Keras' TerminateOnNaN), true skips its update and goes on.
  bool skip_nonfinite = false;
  // Supervised kinds (qcnn, sonar, hybrid):
  int epochs = 1;
  std::size_t batch_size = 1;
  bool shuffle = true;
  double lr_decay = 1;
  int lr_decay_epochs = 1;
  // qaoa:
  std::int64_t steps = 0;
};
TrainSettings train_settings(const io::Config& c);

// QCNN and Sonar: a hybrid model, its data (seeded; the same on every call) and loss.
struct SupervisedJob {
  std::unique_ptr<models::HybridModel> model;
  ml::Dataset train, test;
  ml::Loss loss;
  // Class names by label: {-1 class, +1 class} for two, by index for cce (hybrid only).
  std::vector<std::string> classes;
  // New examples from a file, prepared as the training data were (hybrid only).
  std::function<std::vector<std::vector<double>>(const std::string& path)> read_examples;
};
SupervisedJob make_supervised_job(const io::Config& c);
// The `hybrid` kind: a CSV, .npy or HDF5 data set and a model around an OpenQASM 3
// circuit. REQUIRES job.loss set (it decides how labels are read).
void make_hybrid_job(const io::Config& c, std::uint64_t seed, SupervisedJob& job);

std::unique_ptr<models::QaoaMaxCut> make_qaoa_job(const io::Config& c);

}  // namespace qmlsim::train
