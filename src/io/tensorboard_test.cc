// Reads event files back with a decoder written here from the format's
// description (bitwise CRC-32C, generic protobuf wire parsing), independent of
// the writer's code.
#include "io/tensorboard.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <vector>

#include "core/error.h"

namespace qmlsim::io {
namespace {

std::uint32_t crc32c_bitwise(const std::string& s) {
  std::uint32_t c = 0xffffffffu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
  }
  return ~c;
}
std::uint32_t masked(const std::string& s) {
  const std::uint32_t c = crc32c_bitwise(s);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

// field number -> raw values (varints as integers, fixed as bytes, length-delimited as bytes)
struct Field {
  int wire = 0;
  std::uint64_t integer = 0;
  std::string bytes;
};
std::multimap<int, Field> parse(const std::string& msg) {
  std::multimap<int, Field> out;
  std::size_t i = 0;
  auto varint = [&] {
    std::uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const auto b = static_cast<unsigned char>(msg.at(i++));
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  };
  while (i < msg.size()) {
    const std::uint64_t key = varint();
    Field f;
    f.wire = static_cast<int>(key & 7);
    if (f.wire == 0)
      f.integer = varint();
    else if (f.wire == 1)
      f.bytes = msg.substr(i, 8), i += 8;
    else if (f.wire == 5)
      f.bytes = msg.substr(i, 4), i += 4;
    else if (f.wire == 2) {
      const std::uint64_t n = varint();
      f.bytes = msg.substr(i, n);
      i += n;
    } else
      ADD_FAILURE() << "unexpected wire type " << f.wire;
    out.emplace(static_cast<int>(key >> 3), f);
  }
  return out;
}
template <class T>
T as(const std::string& b) {
  T v;
  std::memcpy(&v, b.data(), sizeof v);
  return v;
}

std::vector<std::string> records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  std::vector<std::string> out;
  for (std::size_t i = 0; i < data.size();) {
    const std::string len_bytes = data.substr(i, 8);
    const auto len = as<std::uint64_t>(len_bytes);
    EXPECT_EQ(as<std::uint32_t>(data.substr(i + 8, 4)), masked(len_bytes));
    const std::string rec = data.substr(i + 12, len);
    EXPECT_EQ(as<std::uint32_t>(data.substr(i + 12 + len, 4)), masked(rec));
    out.push_back(rec);
    i += 16 + len;
  }
  return out;
}

TEST(TensorBoard, Crc32cKnownValue) {
  EXPECT_EQ(crc32c("123456789"), 0xe3069283u);  // the standard check value
  EXPECT_EQ(crc32c("123456789"), crc32c_bitwise("123456789"));
}

TEST(TensorBoard, EventsReadBack) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("qmlsim_tb_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string path;
  {
    EventWriter w(dir.string());
    path = w.path();
    w.scalar("loss", 3, 0.25);
    const std::vector<double> v = {1, 2, 2, 3, 10};
    w.histogram("params/w", 4, v);
  }
  EXPECT_NE(path.find("/events.out.tfevents."), std::string::npos);
  const std::vector<std::string> recs = records(path);
  ASSERT_EQ(recs.size(), 3u);
  auto e0 = parse(recs[0]);
  EXPECT_EQ(e0.find(3)->second.bytes, "brain.Event:2");
  EXPECT_GT(as<double>(e0.find(1)->second.bytes), 1.7e9);  // wall time, seconds

  auto e1 = parse(recs[1]);
  EXPECT_EQ(e1.find(2)->second.integer, 3u);
  auto value = parse(parse(e1.find(5)->second.bytes).find(1)->second.bytes);
  EXPECT_EQ(value.find(1)->second.bytes, "loss");
  EXPECT_EQ(value.find(2)->second.wire, 5);
  EXPECT_EQ(as<float>(value.find(2)->second.bytes), 0.25f);

  auto e2 = parse(recs[2]);
  EXPECT_EQ(e2.find(2)->second.integer, 4u);
  auto hv = parse(parse(e2.find(5)->second.bytes).find(1)->second.bytes);
  EXPECT_EQ(hv.find(1)->second.bytes, "params/w");
  auto h = parse(hv.find(5)->second.bytes);
  EXPECT_EQ(as<double>(h.find(1)->second.bytes), 1.0);    // min
  EXPECT_EQ(as<double>(h.find(2)->second.bytes), 10.0);   // max
  EXPECT_EQ(as<double>(h.find(3)->second.bytes), 5.0);    // num
  EXPECT_EQ(as<double>(h.find(4)->second.bytes), 18.0);   // sum
  EXPECT_EQ(as<double>(h.find(5)->second.bytes), 118.0);  // sum of squares
  const std::string counts = h.find(7)->second.bytes;     // packed doubles
  double total = 0;
  for (std::size_t i = 0; i < counts.size(); i += 8) total += as<double>(counts.substr(i, 8));
  EXPECT_EQ(total, 5.0);
  EXPECT_EQ(h.find(6)->second.bytes.size(), counts.size());
  std::filesystem::remove_all(dir);
}

// A histogram of values some of which are not finite (a diverging run's
// parameters) bins the finite ones; one with none writes nothing.
TEST(TensorBoard, HistogramsSkipNonFiniteValues) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("qmlsim_tb_nan_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string path;
  {
    EventWriter w(dir.string());
    path = w.path();
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    w.histogram("params/w", 1, std::vector<double>{1, nan, 3, -inf, inf});
    w.histogram("params/v", 2, std::vector<double>{nan, nan});
  }
  const std::vector<std::string> recs = records(path);
  ASSERT_EQ(recs.size(), 2u);  // the file version and the first histogram
  auto hv = parse(parse(parse(recs[1]).find(5)->second.bytes).find(1)->second.bytes);
  auto h = parse(hv.find(5)->second.bytes);
  EXPECT_EQ(as<double>(h.find(1)->second.bytes), 1.0);  // min
  EXPECT_EQ(as<double>(h.find(2)->second.bytes), 3.0);  // max
  EXPECT_EQ(as<double>(h.find(3)->second.bytes), 2.0);  // num
  std::filesystem::remove_all(dir);
}

// A resumed run's rewrite: the events of redone steps and a torn last record
// go, everything else stays, in order.
TEST(TensorBoard, FilterKeepsWhatItIsToldAndDropsATornRecord) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("qmlsim_tb_filter_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string path;
  {
    EventWriter w(dir.string());
    path = w.path();
    for (int step = 1; step <= 5; ++step) w.scalar("batch/loss", step, 0.1 * step);
    w.scalar("epoch/loss", 1, 1.0);
    w.histogram("params/w", 1, std::vector<double>{1, 2, 3});
    w.scalar("epoch/loss", 2, 2.0);
  }
  std::ofstream(path, std::ios::binary | std::ios::app) << std::string("\x10\0\0\0\0", 5);
  auto read = [&] {
    std::vector<std::pair<std::string, std::int64_t>> seen;
    filter_events(path, [&](std::string_view tag, std::int64_t step) {
      seen.emplace_back(std::string(tag), step);
      return true;
    });
    return seen;
  };
  EXPECT_EQ(read().size(), 8u);  // the torn record is gone
  filter_events(path, [](std::string_view tag, std::int64_t step) {
    return tag.rfind("batch/", 0) == 0 ? step <= 3 : step <= 1;
  });
  const std::vector<std::pair<std::string, std::int64_t>> want = {
      {"batch/loss", 1}, {"batch/loss", 2}, {"batch/loss", 3}, {"epoch/loss", 1}, {"params/w", 1}};
  EXPECT_EQ(read(), want);
  std::ifstream in(path, std::ios::binary);
  char version[64] = {};
  in.read(version, sizeof version);
  EXPECT_NE(std::string(version, sizeof version).find("brain.Event:2"), std::string::npos);
  EXPECT_THROW(filter_events((dir / "missing").string(), nullptr), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace qmlsim::io
