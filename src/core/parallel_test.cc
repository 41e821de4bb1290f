#include "core/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
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

}  // namespace
}  // namespace qmlsim
