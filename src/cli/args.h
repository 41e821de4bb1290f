// Command-line flags: a declared set of options per command, parsed into
// values; every misuse is an Error naming the flag ("--threads: ...").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"

namespace qmlsim::cli {

struct OptionSpec {
  std::string name;        // "--threads"
  std::string value_name;  // "N"; empty for a boolean flag
  std::string help;
  bool repeatable = false;
};

class Args {
 public:
  // Parses argv (after the command name). Positionals are kept in order.
  Args(const std::vector<std::string>& argv, const std::vector<OptionSpec>& specs);

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  const std::vector<std::string>& all(const std::string& name) const;
  std::optional<std::string> get(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

  // Typed getters: the default when absent; Error "--flag: ..." when malformed.
  std::int64_t get_int(const std::string& name, std::int64_t def, std::int64_t min,
                       std::int64_t max) const;
  std::uint64_t get_u64(const std::string& name, std::uint64_t def) const;
  std::string get_choice(const std::string& name, const std::string& def,
                         const std::vector<std::string>& choices) const;
  // A comma-separated list of integers, or a range "a:b" (step 1) or "a:b:s".
  std::vector<int> get_int_list(const std::string& name, const std::vector<int>& def, int min,
                                int max) const;

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positionals_;
};

// Help text for a command: usage line, then one line per option.
// The --help text: usage, every option on one line, then where the guide is
// (`guide`: a path under docs/, e.g. "docs/training.md").
std::string format_help(const std::string& usage, const std::vector<OptionSpec>& specs,
                        const std::string& guide);

// --backend cpu|cuda (default cpu). For cuda, picks this process's GPU (its
// node-local rank modulo the GPUs present); no usable GPU is a one-line Error.
Backend select_backend(const Args& args);

std::int64_t parse_int_value(const std::string& what, const std::string& text, std::int64_t min,
                             std::int64_t max);

}  // namespace qmlsim::cli
