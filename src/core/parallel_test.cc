#include "core/parallel.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace qmlsim {
namespace {

TEST(ParallelItems, RunsEveryItemOnceWithItsThreads) {
  for (const bool per_thread : {false, true}) {
    std::vector<int> seen(100, 0), inside(100, 0);
    parallel_items(seen.size(), per_thread, 2, [&](std::size_t i, int threads) {
      ++seen[i];
      inside[i] = threads;
    });
    for (std::size_t i = 0; i < seen.size(); ++i) {
      EXPECT_EQ(seen[i], 1);
      EXPECT_EQ(inside[i], per_thread ? 1 : 2);
    }
  }
}

// The error of the lowest failing item comes back on any thread count, and
// never reaches std::terminate from inside the parallel region.
TEST(ParallelItems, RethrowsTheLowestFailingItemsError) {
  for (const int threads : {1, 2, 4}) {
    std::atomic<int> ran{0};
    try {
      parallel_items(64, true, threads, [&](std::size_t i, int) {
        ++ran;
        if (i == 5 || i == 9 || i == 40) throw std::runtime_error("item " + std::to_string(i));
      });
      FAIL() << "no exception on " << threads << " threads";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "item 5");
    }
    EXPECT_GE(ran.load(), 6);  // every item before the failing one ran
  }
}

// A child forked after the parent ran parallel regions computes the parent's
// result when asked for several threads, instead of waiting forever for the
// parent's pool (GNU OpenMP). A hang is caught by a guard that kills the child.
TEST(ParallelFor, AForkedChildComputesWhatItsParentDid) {
  guard_threads_across_fork();
  const auto sum = [] {
    std::vector<long> part(1 << 16);
    parallel_for(static_cast<std::int64_t>(part.size()), 2, kMinParallelWork,
                 [&](std::int64_t i) { part[static_cast<std::size_t>(i)] = i * i % 7; });
    long s = 0;
    for (long x : part) s += x;
    return s;
  };
  const long parent = sum();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(sum() == parent ? 0 : 1);
  int status = 0;
  for (int polls = 0; waitpid(child, &status, WNOHANG) == 0; ++polls) {
    if (polls == 1200) {  // a hung child is killed, and the test fails on its signal
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(WIFEXITED(status)) << "the forked child hung or died";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace qmlsim
