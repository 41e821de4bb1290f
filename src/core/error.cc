#include "core/error.h"

#include <cctype>

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

void require_file_path(const std::string& path, const std::string& where, bool allow_s3) {
  const std::size_t colon = path.find("://");
  if (colon == std::string::npos || colon == 0) return;
  if (allow_s3 && path.rfind("s3://", 0) == 0) return;
  for (std::size_t i = 0; i < colon; ++i) {
    const char c = path[i];
    const bool scheme_char = std::isalpha(static_cast<unsigned char>(c)) ||
                             (i > 0 && (std::isdigit(static_cast<unsigned char>(c)) || c == '+' ||
                                        c == '-' || c == '.'));
    if (!scheme_char) return;
  }
  throw Error(where + ": " + path + ": URLs (" + path.substr(0, colon + 3) + "...) are not " +
              (allow_s3 ? "supported but s3://BUCKET/KEY" : "supported here") +
              ": give a path on a local or shared file system" + (allow_s3 ? " or a bucket" : ""));
}

}  // namespace qmlsim
