#include "core/aligned_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace qmlsim {
namespace {

// Fills a buffer's bytes with a pattern and reads them back.
bool holds_what_is_written(unsigned char* p, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; i += 4093) p[i] = static_cast<unsigned char>(i * 31 + 7);
  for (std::size_t i = 0; i < bytes; i += 4093)
    if (p[i] != static_cast<unsigned char>(i * 31 + 7)) return false;
  return true;
}

TEST(AlignedBuffer, LargeBuffersAreAlignedToHugePagesAndCachedForReuse) {
  const std::size_t n = (std::size_t{6} << 20) / sizeof(float) + 3;  // not a whole page
  const void* first = nullptr;
  {
    AlignedBuffer<float> a(n);
    ASSERT_EQ(a.size(), n);
    if (detail::huge_pages_wanted()) {  // not with QMLSIM_HUGEPAGES=0
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % (std::size_t{2} << 20), 0u);
      EXPECT_EQ(a.bytes() % (std::size_t{2} << 20), 0u);
    }
    EXPECT_GE(buffer_bytes_live(), a.bytes());
    EXPECT_TRUE(holds_what_is_written(reinterpret_cast<unsigned char*>(a.data()), a.bytes()));
    first = a.data();
  }
  AlignedBuffer<float> b(n);  // the freed buffer, handed out again
  if (detail::cache_wanted()) {
    EXPECT_EQ(static_cast<const void*>(b.data()), first);
  }
  AlignedBuffer<float> small(100);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.data()) % AlignedBuffer<float>::kAlignment, 0u);
}

// Both ways out of fault_in_huge_pages: every window slow (each thread's share
// advised to 4 KiB pages after its first page, or at once once another thread
// found one slow) and none slow. Either way the memory is the caller's, whole.
TEST(AlignedBuffer, FaultingInHugePagesLeavesTheBufferWhole) {
  for (double slow : {0.0, std::numeric_limits<double>::infinity()}) {
    const std::size_t bytes = std::size_t{40} << 20;  // 20 pages
    void* p = std::aligned_alloc(detail::kHugePage, bytes);
    ASSERT_NE(p, nullptr);
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    detail::fault_in_huge_pages(p, bytes, slow);
    EXPECT_TRUE(holds_what_is_written(static_cast<unsigned char*>(p), bytes)) << slow;
    std::free(p);
  }
}

}  // namespace
}  // namespace qmlsim
