// A minimal streaming JSON writer (objects, arrays, strings, numbers, bools).
// Numbers are written with 17 significant digits; non-finite numbers as null.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace qmlsim {

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& os) : os_(os) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);  // inside an object, before its value
  JsonWriter& value(double v);
  JsonWriter& value(long long v);
  JsonWriter& value(int v) { return value(static_cast<long long>(v)); }
  JsonWriter& value(bool v);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::vector<double>& v);

  static std::string quote(std::string_view s);

 private:
  void separate();
  std::ostream& os_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace qmlsim
