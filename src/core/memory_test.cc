#include "core/memory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"

namespace qmlsim {
namespace {

namespace fs = std::filesystem;

class CgroupTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("qmlsim_cgroup_" +
             std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void limit(const std::string& dir, const std::string& file, const std::string& value) {
    fs::create_directories(root_ / dir);
    std::ofstream(root_ / dir / file) << value << "\n";
  }
  std::uint64_t read(const std::string& proc_cgroup) const {
    return cgroup_memory_limit(proc_cgroup, root_.string());
  }
  fs::path root_;
};

TEST_F(CgroupTree, V2TakesTheSmallestLimitUpThePath) {
  limit("kubepods/pod1/c1", "memory.max", "max");
  limit("kubepods/pod1", "memory.max", "4294967296");  // a pod's 4 GiB
  limit("kubepods", "memory.max", "8589934592");
  EXPECT_EQ(read("0::/kubepods/pod1/c1\n"), 4294967296u);
  EXPECT_EQ(read("0::/\n"), 0u);  // the root: no limit file
}

TEST_F(CgroupTree, V2InsideANamespaceReadsTheMountItself) {
  limit("", "memory.max", "2147483648");
  EXPECT_EQ(read("0::/some/host/path\n"), 2147483648u);
}

TEST_F(CgroupTree, V1ReadsTheMemoryControllerAndIgnoresUnlimited) {
  limit("memory/slurm/job_7", "memory.limit_in_bytes", "1073741824");
  limit("memory/slurm", "memory.limit_in_bytes", "9223372036854771712");  // unlimited
  EXPECT_EQ(read("5:cpu,cpuacct:/\n4:memory:/slurm/job_7\n0::/\n"), 1073741824u);
  EXPECT_EQ(read("4:cpuset:/slurm/job_7\n"), 0u);  // no memory controller named
  EXPECT_EQ(read("garbage\n\n"), 0u);
}

TEST(Memory, UsableMemoryIsAtMostPhysicalMemory) {
  const MemoryLimit m = usable_memory();
  EXPECT_GT(m.bytes, 0u);
  EXPECT_LE(m.bytes, physical_memory_bytes());
  EXPECT_FALSE(m.source.empty());
  try {
    check_fits_in_memory(m.bytes, "a state");
    FAIL() << "all usable memory must not fit within 90% of it";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("a state: needs "), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qmlsim
