// The run directory of a training job:
//   config.toml      the resolved configuration
//   metrics.jsonl    one JSON object per step and per epoch
//   checkpoints/     ckpt-<step>.h5, the newest `keep` of them
//   weights.h5       the final weights; result.json: the final metrics
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace qmlsim::train {

struct CheckpointFile {
  std::int64_t step = 0;  // as its name says
  std::string path;
};

class RunDir {
 public:
  // A folder (created with checkpoints/ when missing; Error when impossible),
  // or an s3://BUCKET/PREFIX URL: then a private local folder mirrors the run,
  // filled from the bucket here, and sync() sends what changed back.
  explicit RunDir(std::string path);
  ~RunDir();  // removes a bucket's local mirror
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  // The local folder files are written to (a bucket's mirror).
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // True for an s3:// run (a local mirror).
  bool in_bucket() const { return !url_.empty(); }
  // Where a file lives for the user: the folder's path, or its s3:// URL.
  std::string location(const std::string& name = "") const;
  std::string checkpoint_path(std::int64_t step) const;
  // Checkpoint files, newest (largest step in the name) first.
  std::vector<CheckpointFile> checkpoints() const;
  // Deletes all but the newest `keep` checkpoints.
  void prune_checkpoints(int keep) const;
  // Writes a text file atomically (temporary file, fsync, rename), then sync().
  void write_text(const std::string& name, const std::string& text) const;
  // A bucket: uploads every file written or changed since the last sync and
  // deletes the objects of files removed since (pruned checkpoints), in an
  // order that keeps the bucket a consistent run at every moment: logs and
  // other files first, result.json after them, new checkpoints next (each
  // object complete when it appears: a resumed run lists only whole ones),
  // deletions last. A folder: nothing to do.
  void sync() const;

 private:
  struct Mirror;
  std::string path_;
  std::string url_;  // the s3:// location, or empty for a folder
  std::unique_ptr<Mirror> mirror_;
};

// One writer per run directory: an exclusive flock on DIR/.lock, which holds
// the holder's host and pid; the kernel releases it when the process ends,
// however it ends. A second trainer on the directory is an Error naming the
// holder. A bucket's run has a private local mirror per process: no lock
// (two launchers on one bucket prefix are not detected).
class RunLock {
 public:
  explicit RunLock(const RunDir& dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

// metrics.jsonl, appended one line at a time (flushed and checked, so a killed
// run keeps every finished record). On resume the records written after the
// checkpoint are dropped first, in an atomic rewrite, so the log reads as if
// the run had never stopped.
class MetricsLog {
 public:
  MetricsLog(const std::string& path, bool resume, std::int64_t step, std::int64_t epochs_done);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  // Appends one record (one write, not buffered); an Error when it cannot be written.
  void write(const std::string& json);

 private:
  int fd_ = -1;  // opened without following links
  std::string path_;
};

}  // namespace qmlsim::train
