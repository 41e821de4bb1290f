// How much memory this machine has, for up-front size checks.
#pragma once

#include <cstdint>
#include <string>

namespace qmlsim {

// Physical memory in bytes (0 if unknown).
std::uint64_t physical_memory_bytes();

// Throws OutOfMemory("<what>: needs X GiB ...; this machine has Y GiB") if `bytes`
// exceeds 90% of physical memory.
void check_fits_in_memory(std::uint64_t bytes, const std::string& what);

std::string format_gib(std::uint64_t bytes);

// This process's peak resident memory so far (VmHWM), in bytes (0 if unknown).
std::uint64_t peak_resident_bytes();

}  // namespace qmlsim
