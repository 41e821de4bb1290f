#include "core/memory.h"

#include <unistd.h>

#include <cstdio>

#include "core/error.h"

namespace qmlsim {

std::uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

std::uint64_t peak_resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  std::uint64_t kib = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %lu kB", &kib) == 1) break;
  std::fclose(f);
  return kib << 10;
}

std::string format_gib(std::uint64_t bytes) {
  char buf[32];
  const double gib = static_cast<double>(bytes) / (1ull << 30);
  std::snprintf(buf, sizeof buf, gib >= 100 ? "%.0f GiB" : "%.3g GiB", gib);
  return buf;
}

void check_fits_in_memory(std::uint64_t bytes, const std::string& what) {
  const std::uint64_t have = physical_memory_bytes();
  if (have != 0 && bytes > have / 10 * 9) {
    throw OutOfMemory(what + ": needs " + format_gib(bytes) + " of memory; this machine has " +
                      format_gib(have));
  }
}

}  // namespace qmlsim
