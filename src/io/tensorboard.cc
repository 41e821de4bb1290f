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
#include "io/checkpoint.h"

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

// Reads protocol-buffer fields; false at the end or on a malformed field.
class ProtoReader {
 public:
  explicit ProtoReader(std::string_view b) : b_(b) {}
  bool next(int& field, std::uint64_t& number, std::string_view& bytes) {
    std::uint64_t key = 0;
    if (!varint(key)) return false;
    field = static_cast<int>(key >> 3);
    switch (key & 7) {
      case 0:
        return varint(number);
      case 1:
        return skip(8);
      case 5:
        return skip(4);
      case 2: {
        std::uint64_t len = 0;
        if (!varint(len) || len > b_.size() - at_) return false;
        bytes = b_.substr(at_, len);
        at_ += len;
        return true;
      }
      default:
        return false;
    }
  }

 private:
  bool varint(std::uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64 && at_ < b_.size(); shift += 7) {
      const auto c = static_cast<unsigned char>(b_[at_++]);
      v |= static_cast<std::uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return true;
    }
    return false;
  }
  bool skip(std::size_t n) {
    if (n > b_.size() - at_) return false;
    at_ += n;
    return true;
  }
  std::string_view b_;
  std::size_t at_ = 0;
};

// The step and the first summary value's tag of an encoded Event ("" without one).
std::pair<std::int64_t, std::string_view> step_and_tag(std::string_view event) {
  ProtoReader e(event);
  std::int64_t step = 0;
  std::string_view tag;
  int field = 0;
  std::uint64_t number = 0;
  std::string_view bytes;
  while (e.next(field, number, bytes)) {
    if (field == 2) step = static_cast<std::int64_t>(number);
    if (field != 5) continue;
    ProtoReader summary(bytes);
    std::string_view value;
    while (tag.empty() && summary.next(field, number, value)) {
      if (field != 1) continue;
      ProtoReader v(value);
      std::string_view text;
      while (v.next(field, number, text))
        if (field == 1) {
          tag = text;
          break;
        }
    }
  }
  return {step, tag};
}

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

void filter_events(const std::string& path,
                   const std::function<bool(std::string_view tag, std::int64_t step)>& keep) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot read TensorBoard event file");
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string kept;
  for (std::size_t at = 0; data.size() - at >= 12;) {
    std::uint64_t len = 0;
    std::uint32_t len_crc = 0, data_crc = 0;
    std::memcpy(&len, data.data() + at, 8);
    std::memcpy(&len_crc, data.data() + at + 8, 4);
    if (len_crc != masked_crc32c(std::string_view(data).substr(at, 8)) ||
        len > data.size() - at - 16)
      break;  // torn or corrupt: the rest is not TensorBoard's either
    const std::string_view record = std::string_view(data).substr(at + 12, len);
    std::memcpy(&data_crc, data.data() + at + 12 + len, 4);
    if (data_crc != masked_crc32c(record)) break;
    const auto [step, tag] = step_and_tag(record);
    if (tag.empty() || keep(tag, step)) kept.append(data, at, 16 + len);
    at += 16 + len;
  }
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << kept;
    out.close();
    if (!out) throw Error(tmp + ": cannot write: " + last_system_error());
  });
}

}  // namespace qmlsim::io
