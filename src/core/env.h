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

// OMP_NUM_THREADS, when set: its first value (OpenMP takes a list, one per
// nesting level) must be a whole number from 1 to max_threads, the cap of
// --threads; the default thread count follows it.
inline void check_omp_num_threads(int max_threads) {
  const char* v = std::getenv("OMP_NUM_THREADS");
  if (v == nullptr || *v == '\0') return;
  const std::string s(v), first = s.substr(0, s.find(','));
  char* end = nullptr;
  const long long n = std::strtoll(first.c_str(), &end, 10);
  if (first.empty() || *end != '\0' || n < 1 || n > max_threads)
    throw Error("OMP_NUM_THREADS: expected a whole number from 1 to " +
                std::to_string(max_threads) + " (or a list starting with one), got '" + s + "'");
}

}  // namespace qmlsim
