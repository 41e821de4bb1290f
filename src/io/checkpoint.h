// Checkpoints and weight files (HDF5). Both are written atomically: a temporary
// file in the same folder, fsync, rename, fsync of the folder, so a crash leaves
// either the old file or the new one. Checkpoints carry a checksum over their
// contents; load_checkpoint rejects a damaged one with an Error.
//
// Layout: params/<tensor> (one dataset per tensor, its shape), and in
// checkpoints also optimizer/<name>, state/rng, state/counters (int64:
// epoch, step, step_in_epoch), state/sums (epoch accumulators),
// state/train_time_s (absent in checkpoints of earlier versions), and the root
// attributes "job", "config_hash", "run_id" (RunIdentity) and "checksum".
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/rng.h"
#include "ml/params.h"

namespace qmlsim::io {

struct TrainingState {
  std::vector<double> params;
  std::map<std::string, std::vector<double>> optimizer;
  Rng::State rng{};
  std::int64_t epoch = 0;          // the epoch in progress (0-based)
  std::int64_t step = 0;           // optimizer steps taken in total
  std::int64_t step_in_epoch = 0;  // steps taken in the current epoch
  std::vector<double> sums;        // running sums of the current epoch's metrics
  double train_time_s = 0;         // training time of every session up to this state
};

// Which run a checkpoint belongs to: its job kind, the hash of the settings
// that decide the run's numbers (train/jobs.h: config_hash) and the id the run
// was given when it started afresh (kept across resumes).
struct RunIdentity {
  std::string job;
  std::string config_hash;  // empty: a checkpoint written before run identities
  std::string run_id;
};

void save_checkpoint(const std::string& path, const RunIdentity& id, const ml::ParamLayout& layout,
                     const TrainingState& s);
// Error when the file is damaged, its checksum does not match, it belongs to
// another job kind or its tensors do not match the layout; `found` receives
// the identity it records (the caller checks the rest of it).
TrainingState load_checkpoint(const std::string& path, const std::string& job,
                              const ml::ParamLayout& layout, RunIdentity* found = nullptr);

// weights.h5: params/<tensor> only (plus the "job" attribute).
void save_weights(const std::string& path, const std::string& job, const ml::ParamLayout& layout,
                  std::span<const double> params);
std::vector<double> load_weights(const std::string& path, const ml::ParamLayout& layout);

// Writes `path` by way of a temporary file: write(tmp) creates it, then it is
// synced and renamed over `path`; if write throws, the temporary file is removed.
template <class Fn>
void write_atomically(const std::string& path, Fn&& write);
void commit_file(const std::string& tmp, const std::string& path);
// Creates `tmp` afresh as this process's own empty file (O_EXCL, O_NOFOLLOW):
// a stale temporary of a killed run is removed first; a symbolic link there
// (one planted to redirect the write) is an Error naming it, left as it is.
void create_temporary(const std::string& tmp);

template <class Fn>
void write_atomically(const std::string& path, Fn&& write) {
  const std::string tmp = path + ".tmp";
  create_temporary(tmp);
  try {
    write(tmp);
  } catch (...) {
    std::remove(tmp.c_str());  // a full disk gets its space back
    throw;
  }
  commit_file(tmp, path);
}

}  // namespace qmlsim::io
