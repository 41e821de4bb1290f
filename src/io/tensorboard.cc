#include "io/tensorboard.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.h"

namespace qmlsim::io {
namespace {

// Protocol-buffer wire format: varint keys (field << 3 | wire type).
class Proto {
 public:
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      bytes.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    bytes.push_back(static_cast<char>(v));
  }
  void key(int field, int wire) { varint(static_cast<std::uint64_t>(field) << 3 | wire); }
  void f64(int field, double v) {
    key(field, 1);
    raw(&v, 8);
  }
  void f32(int field, float v) {
    key(field, 5);
    raw(&v, 4);
  }
  void i64(int field, std::int64_t v) {
    key(field, 0);
    varint(static_cast<std::uint64_t>(v));
  }
  void bytes_field(int field, std::string_view s) {
    key(field, 2);
    varint(s.size());
    bytes.append(s);
  }
  void packed_f64(int field, std::span<const double> v) {
    key(field, 2);
    varint(v.size() * 8);
    for (double d : v) raw(&d, 8);
  }
  std::string bytes;

 private:
  void raw(const void* p, std::size_t n) {  // little-endian hosts (x86-64, aarch64)
    bytes.append(static_cast<const char*>(p), n);
  }
};

constexpr std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<std::uint32_t, 256> kCrcTable = make_crc_table();

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::uint32_t crc32c(std::string_view data) {
  std::uint32_t c = 0xffffffffu;
  for (unsigned char b : data) c = kCrcTable[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

std::uint32_t masked_crc32c(std::string_view data) {
  const std::uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

EventWriter::EventWriter(const std::string& dir) {
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  const auto secs = static_cast<long long>(wall_time());
  // As TensorFlow names them (time, host, process), and never over an existing
  // file: a run resumed within the same second keeps the first one's events.
  const std::string stem = dir + "/events.out.tfevents." + std::to_string(secs) + "." + host + "." +
                           std::to_string(getpid());
  path_ = stem;
  for (int k = 1; std::filesystem::exists(path_); ++k) path_ = stem + "." + std::to_string(k);
  out_.open(path_, std::ios::binary | std::ios::trunc);
  if (!out_) throw Error(path_ + ": cannot create TensorBoard event file");
  Proto e;
  e.f64(1, wall_time());
  e.i64(2, 0);
  e.bytes_field(3, "brain.Event:2");
  write_record(e.bytes);
  out_.flush();
}

void EventWriter::write_record(const std::string& record) {
  const std::uint64_t len = record.size();
  const std::string len_bytes(reinterpret_cast<const char*>(&len), 8);
  const std::uint32_t c1 = masked_crc32c(len_bytes), c2 = masked_crc32c(record);
  out_.write(len_bytes.data(), 8);
  out_.write(reinterpret_cast<const char*>(&c1), 4);
  out_ << record;
  out_.write(reinterpret_cast<const char*>(&c2), 4);
  if (!out_) throw Error(path_ + ": cannot write: " + last_system_error());
}

void EventWriter::write_event(std::int64_t step, const std::string& summary) {
  Proto e;
  e.f64(1, wall_time());
  e.i64(2, step);
  e.bytes_field(5, summary);
  write_record(e.bytes);
}

void EventWriter::scalar(const std::string& tag, std::int64_t step, double value) {
  Proto v;
  v.bytes_field(1, tag);
  v.f32(2, static_cast<float>(value));
  Proto s;
  s.bytes_field(1, v.bytes);
  write_event(step, s.bytes);
}

void EventWriter::histogram(const std::string& tag, std::int64_t step,
                            std::span<const double> values) {
  // Non-finite values have no bucket: the histogram is of the finite ones.
  std::vector<double> finite;
  for (double x : values)
    if (std::isfinite(x)) finite.push_back(x);
  values = finite;
  if (values.empty()) return;
  const auto [lo_it, hi_it] = std::minmax_element(values.begin(), values.end());
  const double lo = *lo_it, hi = *hi_it;
  double sum = 0, sum2 = 0;
  for (double x : values) {
    sum += x;
    sum2 += x * x;
  }
  constexpr int kBuckets = 30;
  std::vector<double> limits(kBuckets), counts(kBuckets, 0.0);
  const double width = hi > lo ? (hi - lo) / kBuckets : 1.0;
  for (int b = 0; b < kBuckets; ++b) limits[b] = lo + width * (b + 1);
  limits.back() = std::max(hi, lo + width * kBuckets);
  for (double x : values) {
    const int b = std::min(kBuckets - 1, static_cast<int>((x - lo) / width));
    counts[static_cast<std::size_t>(b)] += 1;
  }
  Proto h;
  h.f64(1, lo);
  h.f64(2, hi);
  h.f64(3, static_cast<double>(values.size()));
  h.f64(4, sum);
  h.f64(5, sum2);
  h.packed_f64(6, limits);
  h.packed_f64(7, counts);
  Proto v;
  v.bytes_field(1, tag);
  v.bytes_field(5, h.bytes);
  Proto s;
  s.bytes_field(1, v.bytes);
  write_event(step, s.bytes);
}

}  // namespace qmlsim::io
