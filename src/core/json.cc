#include "core/json.h"

#include <cmath>
#include <cstdio>

namespace qmlsim {

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) os_ << ',';
    first_.back() = false;
  }
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  os_ << '{';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  os_ << '}';
  first_.pop_back();
  return *this;
}
JsonWriter& JsonWriter::begin_array() {
  separate();
  os_ << '[';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  os_ << ']';
  first_.pop_back();
  return *this;
}
JsonWriter& JsonWriter::key(std::string_view k) {
  separate();
  os_ << quote(k) << ':';
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::value(double v) {
  separate();
  if (!std::isfinite(v)) {
    os_ << "null";
    return *this;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  os_ << buf;
  return *this;
}
JsonWriter& JsonWriter::value(long long v) {
  separate();
  os_ << v;
  return *this;
}
JsonWriter& JsonWriter::value(bool v) {
  separate();
  os_ << (v ? "true" : "false");
  return *this;
}
JsonWriter& JsonWriter::value(std::string_view s) {
  separate();
  os_ << quote(s);
  return *this;
}
JsonWriter& JsonWriter::value(const std::vector<double>& v) {
  begin_array();
  for (double x : v) value(x);
  return end_array();
}

std::string JsonWriter::quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace qmlsim
