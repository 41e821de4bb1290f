// TensorBoard event files written without TensorFlow: TFRecord framing (length,
// masked CRC-32C of the length, data, masked CRC-32C of the data) around
// `Event` protocol buffers encoded by hand (event.proto / summary.proto):
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; HistogramProto histo = 5; }
//   HistogramProto { double min = 1, max = 2, num = 3, sum = 4, sum_squares = 5;
//                    repeated double bucket_limit = 6 [packed]; repeated double bucket = 7
//                    [packed]; }
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace qmlsim::io {

// CRC-32C (Castagnoli), and TFRecord's masked form of it.
std::uint32_t crc32c(std::string_view data);
std::uint32_t masked_crc32c(std::string_view data);

class EventWriter {
 public:
  // Creates DIR/events.out.tfevents.<seconds>.<host> and writes the
  // file_version event. Throws Error when the file cannot be created.
  explicit EventWriter(const std::string& dir);
  const std::string& path() const { return path_; }

  void scalar(const std::string& tag, std::int64_t step, double value);
  // A histogram of `values` (30 equal-width buckets between their min and max).
  void histogram(const std::string& tag, std::int64_t step, std::span<const double> values);
  void flush() { out_.flush(); }

 private:
  void write_record(const std::string& record);  // TFRecord framing
  void write_event(std::int64_t step, const std::string& summary);
  std::string path_;
  std::ofstream out_;
};

// Rewrites the event file at `path` (by way of a temporary file) keeping the
// events whose summary value keep(tag, step) accepts, and those without one
// (the file version); a torn or corrupt record ends the file (a kill while it
// was written). A resumed run drops the events of the steps it redoes, which
// TensorBoard would otherwise show twice. Throws Error if it cannot be read
// or written.
void filter_events(const std::string& path,
                   const std::function<bool(std::string_view tag, std::int64_t step)>& keep);

}  // namespace qmlsim::io
