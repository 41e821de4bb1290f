// A heap buffer aligned for the widest SIMD loads (64 bytes). Move-only.
// Buffers of 2 MiB or more are aligned to 2 MiB and asked to use transparent
// huge pages (madvise MADV_HUGEPAGE; Debian's default THP mode is "madvise"):
// a gate on a high qubit walks two streams up to 2^(n-1) amplitudes apart, and
// with 4 KiB pages every step of each stream is a TLB miss. A fresh buffer
// faults its huge pages in at once and falls back to 4 KiB pages for the rest
// where they come slowly (fault_in_huge_pages). QMLSIM_HUGEPAGES=0 turns huge pages off,
// =1 on without that probe (for A/B measurement).
//
// Freed buffers of 2 MiB or more are kept (up to kCachedBuffers of them, in
// all at most a quarter of the usable memory) and handed to the next request
// of the same size: fresh memory costs a page fault and the kernel's zeroing
// on first touch (measured on this VM: over half of a 22-qubit gradient's
// time), and training allocates the same states for every example (a
// density-matrix gradient: the states before every noise layer).
// Cache-blocking chunk buffers (64 KiB to 2 MiB, one or two per thread per
// segment) are kept the same way, up to kCachedChunks of them, in a cache of
// their own so they never evict a state. QMLSIM_BUFFER_CACHE=0 turns both off.
// Every live buffer's bytes are counted (buffer_bytes_live / _peak): state
// vectors and their chunk buffers are AlignedBuffers, so this is the memory
// the simulation itself holds, whatever the allocator keeps around.
#pragma once

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "core/env.h"
#include "core/error.h"
#include "core/memory.h"

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace qmlsim {

namespace detail {
inline std::atomic<std::size_t> buffer_live{0}, buffer_peak{0};
inline void count_buffer(std::size_t bytes) {
  const std::size_t now = buffer_live.fetch_add(bytes) + bytes;
  std::size_t peak = buffer_peak.load();
  while (now > peak && !buffer_peak.compare_exchange_weak(peak, now)) {
  }
}
}  // namespace detail

// Bytes held by all AlignedBuffers now, and the most held at once since the
// last reset_buffer_peak() (which sets it to the bytes held now).
inline std::size_t buffer_bytes_live() { return detail::buffer_live.load(); }
inline std::size_t buffer_bytes_peak() { return detail::buffer_peak.load(); }
inline void reset_buffer_peak() { detail::buffer_peak.store(detail::buffer_live.load()); }

namespace detail {
inline constexpr std::size_t kHugePage = std::size_t{2} << 20;
inline constexpr std::size_t kCachedBuffers = 16;
inline constexpr std::size_t kSmallestCached = std::size_t{64} << 10;
inline constexpr std::size_t kCachedChunks = 16;

// Freed large buffers, most recent last.
struct BufferCache {
  std::mutex lock;
  std::vector<std::pair<std::size_t, void*>> free;  // bytes, pointer
  std::size_t bytes = 0;                            // their sum
  ~BufferCache() {
    for (auto& [bytes, p] : free) std::free(p);
  }
};
// The cache for buffers of `bytes`: states (huge pages) or chunk buffers.
inline BufferCache& buffer_cache(std::size_t bytes) {
  static BufferCache states, chunks;
  return bytes >= kHugePage ? states : chunks;
}
inline bool cacheable(std::size_t bytes) { return bytes >= kSmallestCached; }
inline bool cache_wanted() {
  static const bool wanted = env_switch("QMLSIM_BUFFER_CACHE") != 0;
  return wanted;
}
// A cached buffer of exactly `bytes`, or null.
inline void* take_cached(std::size_t bytes) {
  if (!cache_wanted()) return nullptr;
  BufferCache& c = buffer_cache(bytes);
  std::lock_guard<std::mutex> guard(c.lock);
  for (auto it = c.free.rbegin(); it != c.free.rend(); ++it) {
    if (it->first != bytes) continue;
    void* p = it->second;
    c.bytes -= bytes;
    c.free.erase(std::next(it).base());
    return p;
  }
  return nullptr;
}
// The most bytes the cache of states keeps: a quarter of the usable memory
// (unlimited where that is unknown: then kCachedBuffers alone bounds it).
inline std::size_t cached_bytes_limit() {
  static const std::size_t limit = [] {
    const std::uint64_t have = usable_memory().bytes;
    return have == 0 ? SIZE_MAX : static_cast<std::size_t>(have / 4);
  }();
  return limit;
}
// Keeps a freed large buffer (evicting the oldest beyond kCachedBuffers or
// the byte limit).
inline void give_back(std::size_t bytes, void* p) {
  if (!cache_wanted()) {
    std::free(p);
    return;
  }
  BufferCache& c = buffer_cache(bytes);
  const bool states = bytes >= kHugePage;
  std::vector<void*> evicted;
  {
    std::lock_guard<std::mutex> guard(c.lock);
    c.free.push_back({bytes, p});
    c.bytes += bytes;
    while (c.free.size() > (states ? kCachedBuffers : kCachedChunks) ||
           (states && c.bytes > cached_bytes_limit())) {
      evicted.push_back(c.free.front().second);
      c.bytes -= c.free.front().first;
      c.free.erase(c.free.begin());
    }
  }
  for (void* e : evicted) std::free(e);
}

// QMLSIM_HUGEPAGES: "0" never, "1" always, else (unset) probed per buffer.
inline int huge_pages_setting() {
  static const int setting = env_switch("QMLSIM_HUGEPAGES");
  return setting;
}
inline bool huge_pages_wanted() { return huge_pages_setting() != 0; }

// A fresh huge page faulted slower than this (mean) means the host backs them
// slowly: zeroing 2 MiB takes 0.1-0.3 ms, 4 KiB pages fault 2 MiB in 0.45 ms.
inline constexpr double kSlowHugeFaultSeconds = 1e-3;

// Faults a fresh buffer's huge pages in, timing each thread's first page and
// then each window of kFaultWindow pages: at the first window slower than
// slow_seconds a page (on any thread), what is left is advised to fault in
// 4 KiB pages. On a VM whose balloon device reports free memory to the host
// (free page reporting: blocks of 2 MiB and more), a new huge page is often
// faulted in by the host again: this project's VM took 1.5-37 ms per 2 MiB
// page (a 2 GiB state: up to 16 s), against 0.45 ms in 4 KiB pages. The first
// pages of a buffer can come fast (memory freed moments ago) and the rest
// slowly, so every window is timed. The threads take contiguous shares, as the
// kernels' static schedules do, so pages are placed (first touch, NUMA) where
// a lazy first touch would have placed them, and a large state is not zeroed
// by one core.
inline constexpr std::size_t kFaultWindow = 8;
inline void fault_in_huge_pages(void* data, std::size_t bytes,
                                double slow_seconds = kSlowHugeFaultSeconds) {
  char* const base = static_cast<char*>(data);
  const std::size_t pages = bytes / kHugePage;
  std::atomic<bool> slow{false};
#ifdef _OPENMP
#pragma omp parallel
#endif
  {
#ifdef _OPENMP
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    const auto nt = static_cast<std::size_t>(omp_get_num_threads());
#else  // a translation unit built without OpenMP (the CUDA backend's)
    const std::size_t t = 0, nt = 1;
#endif
    const std::size_t first = pages * t / nt, last = pages * (t + 1) / nt;
    std::size_t p = first;
    while (p < last && !slow.load(std::memory_order_relaxed)) {
      const std::size_t end = p == first ? p + 1 : std::min(p + kFaultWindow, last);
      const auto start = std::chrono::steady_clock::now();
      for (std::size_t q = p; q < end; ++q)  // one byte faults the whole page in
        static_cast<volatile char*>(base)[q * kHugePage] = 0;
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (seconds > slow_seconds * static_cast<double>(end - p)) slow = true;
      p = end;
    }
#ifdef MADV_NOHUGEPAGE
    if (p < last) madvise(base + p * kHugePage, (last - p) * kHugePage, MADV_NOHUGEPAGE);
#endif
  }
}
}  // namespace detail

template <class T>
class AlignedBuffer {
 public:
  static constexpr std::size_t kAlignment = 64;

  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t n) : size_(n) {
    if (n == 0) return;
    const bool huge = n * sizeof(T) >= detail::kHugePage && detail::huge_pages_wanted();
    const std::size_t align = huge ? detail::kHugePage : kAlignment;
    bytes_ = (n * sizeof(T) + align - 1) / align * align;
    if (detail::cacheable(bytes_)) data_ = static_cast<T*>(detail::take_cached(bytes_));
    if (data_ == nullptr) {
      data_ = static_cast<T*>(std::aligned_alloc(align, bytes_));
      if (data_ == nullptr) {
        throw OutOfMemory("out of memory: could not allocate " + format_gib(bytes_));
      }
#ifdef MADV_HUGEPAGE
      // Advice only: failure changes nothing. Where fresh huge pages fault
      // slowly, the rest of this buffer is faulted in 4 KiB pages.
      if (huge && madvise(data_, bytes_, MADV_HUGEPAGE) == 0 && detail::huge_pages_setting() < 0)
        detail::fault_in_huge_pages(data_, bytes_);
#endif
    }
    detail::count_buffer(bytes_);
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        bytes_(std::exchange(o.bytes_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~AlignedBuffer() {
    if (data_ == nullptr) return;
    detail::buffer_live.fetch_sub(bytes());
    if (detail::cacheable(bytes_))
      detail::give_back(bytes_, data_);
    else
      std::free(data_);
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  // Bytes allocated (size rounded up to the alignment).
  std::size_t bytes() const { return bytes_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace qmlsim
