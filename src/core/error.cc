#include "core/error.h"

#include <cctype>
#include <cerrno>
#include <cstring>

namespace qmlsim {

namespace {

// The length of the well-formed UTF-8 sequence at text[i] (RFC 3629: no
// overlong forms, no surrogates, at most U+10FFFF); 0 if there is none.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char c = b(0);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > text.size() || b(1) < lo || b(1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(k) < 0x80 || b(k) > 0xbf) return 0;
  return n;
}

}  // namespace

std::string last_system_error() {
  const int e = errno;
  return e == 0 ? "reason unknown" : std::strerror(e);
}

std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    const std::size_t n = b >= 0x80 ? utf8_length(text, i) : 1;
    if (b < 0x20 || b == 0x7f || n == 0) {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
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
