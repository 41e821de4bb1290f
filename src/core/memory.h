// How much memory this machine has, for up-front size checks.
#pragma once

#include <cstdint>
#include <string>

namespace qmlsim {

// Physical memory in bytes (0 if unknown).
std::uint64_t physical_memory_bytes();

// The memory limit of this process's cgroup, the smallest along its path up to
// the root (v2: memory.max; v1: memory.limit_in_bytes); 0 when there is none.
// `proc_cgroup` is the text of /proc/self/cgroup, `mount` where the cgroup
// file system is mounted (/sys/fs/cgroup). Inside a cgroup namespace the path
// may not exist under the mount: then the mount's own limit counts.
std::uint64_t cgroup_memory_limit(const std::string& proc_cgroup, const std::string& mount);

// What this process may use: the smallest of physical memory, its cgroup's
// limit (a container's, a Slurm job's) and its address-space limit (ulimit -v),
// and which of them it is ("this machine has", "the cgroup limit is", ...).
struct MemoryLimit {
  std::uint64_t bytes = 0;  // 0 if unknown
  std::string source;       // "this machine has", "this process's cgroup allows", ...
};
MemoryLimit usable_memory();  // read once per process

// Whether `bytes` fit in 90% of usable_memory() (true where it is unknown).
bool fits_in_memory(std::uint64_t bytes);

// Throws OutOfMemory("<what>: needs X GiB of memory; this machine has Y GiB")
// if `bytes` exceeds 90% of usable_memory().
void check_fits_in_memory(std::uint64_t bytes, const std::string& what);

std::string format_gib(std::uint64_t bytes);

// This process's peak resident memory so far (VmHWM), in bytes (0 if unknown).
std::uint64_t peak_resident_bytes();

}  // namespace qmlsim
