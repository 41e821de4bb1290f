// Job configuration files (TOML). Every job kind has a defaults table, which is
// also the schema: a key absent from the defaults of the job's kind is an error,
// and a value must have the default's type (an integer is accepted for a float).
// Overrides "section.key=value" (--set) apply after the file. Errors name the
// file and line, or the --set argument, and the key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace qmlsim::io {

// Config files larger than this are refused (a job's config is a few KiB).
inline constexpr std::size_t kMaxConfigBytes = std::size_t{16} << 20;

class Config {
 public:
  // The TOML text of the defaults for a job kind; throws Error for an unknown kind.
  using Defaults = std::function<std::string(const std::string& kind)>;

  // Reads the file, takes the kind from `job.kind` (a --set of job.kind wins),
  // checks every key against the defaults and applies the overrides. String keys
  // listed in `path_keys` are made absolute, relative to the file's folder (or to
  // the working directory for --set).
  static Config load(const std::string& path, const std::vector<std::string>& sets,
                     const Defaults& defaults, const std::vector<std::string>& path_keys);
  // The same from text; `source` names it in messages and `base_dir` anchors paths.
  static Config parse(const std::string& text, const std::string& source,
                      const std::string& base_dir, const std::vector<std::string>& sets,
                      const Defaults& defaults, const std::vector<std::string>& path_keys);

  Config(const Config&);
  Config& operator=(const Config&);
  Config(Config&&) noexcept;
  Config& operator=(Config&&) noexcept;
  ~Config();

  const std::string& kind() const { return kind_; }

  // Typed reads of "section.key"; a value out of range is an Error naming where
  // the value came from and the key.
  std::int64_t get_int(const std::string& key, std::int64_t min, std::int64_t max) const;
  double get_double(const std::string& key, double min, double max) const;
  bool get_bool(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  // An array of strings (a --set gives it comma-separated).
  std::vector<std::string> get_string_list(const std::string& key) const;
  std::string get_choice(const std::string& key, const std::vector<std::string>& choices) const;

  // "file:line: key: message" (or "--set key=...: key: message").
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  // Where the key's value was set: "file:line", "--set key=value" or "default".
  std::string origin(const std::string& key) const;

  // The resolved configuration (defaults + file + overrides) as TOML, without
  // the "section.key"s in `omit` and, with `non_default_only`, without the
  // keys that hold their default value.
  std::string to_toml(const std::vector<std::string>& omit = {},
                      bool non_default_only = false) const;

 private:
  struct Impl;
  explicit Config(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string kind_;
};

}  // namespace qmlsim::io
