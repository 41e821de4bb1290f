// FNV-1a (64 bit) over bytes: a checksum against damage and a short identity
// of a text, not a cryptographic hash.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

namespace qmlsim {

class Checksum {
 public:
  void add(const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h_ = (h_ ^ b[i]) * 0x100000001b3ULL;
  }
  template <class T>
  void add(std::span<const T> v) {
    add(v.data(), v.size_bytes());
  }
  void add(std::string_view s) { add(s.data(), s.size()); }
  std::string hex() const {  // 16 hex digits
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace qmlsim
