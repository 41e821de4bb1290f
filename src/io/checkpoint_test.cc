#include "io/checkpoint.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace qmlsim::io {
namespace {

namespace fs = std::filesystem;

struct Fixture : ::testing::Test {
  void SetUp() override {
    dir = fs::temp_directory_path() / ("qmlsim_ckpt_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    layout.add("quantum/conv", {3});
    layout.add("dense/weight", {2, 2});
    state.params = {1.5, -2.25, 1234.5678, 0.1, 0.2, 0.3, 0.4};
    state.optimizer = {
        {"m", std::vector<double>(7, 0.5)}, {"t", {3}}, {"v", std::vector<double>(7, 0.25)}};
    state.rng = {1, 2, 3, 0xffffffffffffffffULL};
    state.epoch = 4;
    state.step = 17;
    state.step_in_epoch = 2;
    state.sums = {0.5, 3, 8};
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
  ml::ParamLayout layout;
  TrainingState state;
};

TEST_F(Fixture, CheckpointRoundTripsExactly) {
  const std::string path = (dir / "c.h5").string();
  save_checkpoint(path, {"qcnn", "0123abcd", "run-1"}, layout, state);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  RunIdentity id;
  const TrainingState s = load_checkpoint(path, "qcnn", layout, &id);
  EXPECT_EQ(id.job, "qcnn");
  EXPECT_EQ(id.config_hash, "0123abcd");
  EXPECT_EQ(id.run_id, "run-1");
  EXPECT_EQ(s.params, state.params);
  EXPECT_EQ(s.optimizer, state.optimizer);
  EXPECT_EQ(s.rng, state.rng);
  EXPECT_EQ(s.epoch, 4);
  EXPECT_EQ(s.step, 17);
  EXPECT_EQ(s.step_in_epoch, 2);
  EXPECT_EQ(s.sums, state.sums);
  EXPECT_THROW(load_checkpoint(path, "sonar", layout), Error);
  ml::ParamLayout other;
  other.add("quantum/conv", {4});
  EXPECT_THROW(load_checkpoint(path, "qcnn", other), Error);
}

TEST_F(Fixture, DamagedCheckpointsAreRejected) {
  const std::string path = (dir / "c.h5").string();
  save_checkpoint(path, {"qcnn", "0123abcd", "run-1"}, layout, state);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    bytes = ss.str();
  }
  // Change one stored parameter: the checksum no longer matches.
  const double v = 1234.5678;
  const auto at = bytes.find(std::string(reinterpret_cast<const char*>(&v), sizeof v));
  ASSERT_NE(at, std::string::npos);
  std::string changed = bytes;
  changed[at + 3] ^= 0x10;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << changed;
  try {
    load_checkpoint(path, "qcnn", layout);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": damaged checkpoint (checksum mismatch)");
  }
  // A truncated file is not readable HDF5.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  EXPECT_THROW(load_checkpoint(path, "qcnn", layout), Error);
  EXPECT_THROW(load_checkpoint((dir / "missing.h5").string(), "qcnn", layout), Error);
}

TEST_F(Fixture, WeightsRoundTrip) {
  const std::string path = (dir / "w.h5").string();
  save_weights(path, "qcnn", layout, state.params);
  EXPECT_EQ(load_weights(path, layout), state.params);
}

// A full disk (here a file-size limit): one Error, nothing left under either
// name, and no crash when the process later exits (HDF5's exit-time close of
// the file whose close failed crashed it: ctest sees that as a failure).
TEST_F(Fixture, AFailedWriteIsAnErrorAndLeavesNothing) {
  const std::string path = (dir / "full.h5").string();
  state.params.assign(100000, 0.5);
  layout = ml::ParamLayout();
  layout.add("w", {100000});
  state.optimizer.clear();
  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto previous = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 64 << 10;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  EXPECT_THROW(save_checkpoint(path, {"qcnn", "0123abcd", "run-1"}, layout, state), Error);
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

}  // namespace
}  // namespace qmlsim::io
