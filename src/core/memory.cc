#include "core/memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

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

namespace {

// A limit file's value; 0 for "max", a value past 2^60 (v1's "unlimited") or no file.
std::uint64_t read_limit(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  try {
    const unsigned long long v = std::stoull(text);
    return v >= (1ULL << 60) ? 0 : v;
  } catch (const std::exception&) {
    return 0;
  }
}

// The smallest limit in `file_name` from `dir` up to `root` (0: none).
std::uint64_t smallest_limit(std::filesystem::path dir, const std::filesystem::path& root,
                             const char* file_name) {
  std::uint64_t limit = 0;
  for (;;) {
    const std::uint64_t v = read_limit(dir / file_name);
    if (v != 0 && (limit == 0 || v < limit)) limit = v;
    if (dir == root || !dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
  return limit;
}

}  // namespace

std::uint64_t cgroup_memory_limit(const std::string& proc_cgroup, const std::string& mount) {
  namespace fs = std::filesystem;
  std::uint64_t limit = 0;
  std::istringstream lines(proc_cgroup);
  for (std::string line; std::getline(lines, line);) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    const bool v2 = id == "0" && controllers.empty();
    bool v1 = false;
    std::istringstream names(controllers);
    for (std::string c; std::getline(names, c, ',');) v1 = v1 || c == "memory";
    if (!v1 && !v2) continue;
    const fs::path root = v2 ? fs::path(mount) : fs::path(mount) / "memory";
    const char* file = v2 ? "memory.max" : "memory.limit_in_bytes";
    fs::path dir = root / fs::path(path).relative_path();
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) dir = root;  // a cgroup namespace: the mount is ours
    const std::uint64_t v = smallest_limit(dir.lexically_normal(), root.lexically_normal(), file);
    if (v != 0 && (limit == 0 || v < limit)) limit = v;
  }
  return limit;
}

namespace {

MemoryLimit read_usable_memory() {
  MemoryLimit m{physical_memory_bytes(), "this machine has"};
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  const std::uint64_t cgroup = cgroup_memory_limit(text.str(), "/sys/fs/cgroup");
  if (cgroup != 0 && (m.bytes == 0 || cgroup < m.bytes))
    m = {cgroup, "this process's cgroup allows"};
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY &&
      (m.bytes == 0 || as.rlim_cur < m.bytes))
    m = {static_cast<std::uint64_t>(as.rlim_cur),
         "this process's address-space limit (ulimit -v) is"};
  return m;
}

}  // namespace

MemoryLimit usable_memory() {
  static const MemoryLimit limit = read_usable_memory();  // read once: checks run per call
  return limit;
}

bool fits_in_memory(std::uint64_t bytes) {
  const std::uint64_t have = usable_memory().bytes;
  return have == 0 || bytes <= have / 10 * 9;
}

void check_fits_in_memory(std::uint64_t bytes, const std::string& what) {
  if (!fits_in_memory(bytes)) {
    const MemoryLimit have = usable_memory();
    throw OutOfMemory(what + ": needs " + format_gib(bytes) + " of memory; " + have.source + " " +
                      format_gib(have.bytes));
  }
}

}  // namespace qmlsim
