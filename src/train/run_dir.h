// The run directory of a training job:
//   config.toml      the resolved configuration
//   metrics.jsonl    one JSON object per step and per epoch
//   checkpoints/     ckpt-<step>.h5, the newest `keep` of them
//   weights.h5       the final weights; result.json: the final metrics
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace qmlsim::train {

class RunDir {
 public:
  // Creates the folder and checkpoints/ when missing; Error when impossible.
  explicit RunDir(std::string path);

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string checkpoint_path(std::int64_t step) const;
  // Checkpoint files, newest (largest step) first.
  std::vector<std::string> checkpoints() const;
  // Deletes all but the newest `keep` checkpoints.
  void prune_checkpoints(int keep) const;
  // Writes a text file atomically (temporary file, fsync, rename).
  void write_text(const std::string& name, const std::string& text) const;

 private:
  std::string path_;
};

// metrics.jsonl, appended one line at a time (flushed, so a killed run keeps
// every finished record). On resume the records written after the checkpoint
// are dropped first, so the log reads as if the run had never stopped.
class MetricsLog {
 public:
  MetricsLog(const std::string& path, bool resume, std::int64_t step, std::int64_t epochs_done);
  void write(const std::string& json);

 private:
  std::ofstream out_;
};

}  // namespace qmlsim::train
