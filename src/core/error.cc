#include "core/error.h"

namespace qmlsim {

std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7f) {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
    } else {
      out += c;
    }
  }
  return out;
}

void throw_at(const SourceLoc& loc, const std::string& message) {
  throw Error(loc.source + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column) +
              ": " + message);
}

}  // namespace qmlsim
