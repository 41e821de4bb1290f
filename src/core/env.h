// Settings from environment variables, checked: a value qmlsim does not take
// is an Error naming the variable, never silently ignored.
#pragma once

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace qmlsim {

// A 0/1 switch: -1 when unset or empty, else 0 or 1; anything else is an Error.
inline int env_switch(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  const std::string s(v);
  if (s == "0" || s == "1") return s[0] - '0';
  throw Error(std::string(name) + ": expected 0 or 1, got '" + s + "'");
}

}  // namespace qmlsim
