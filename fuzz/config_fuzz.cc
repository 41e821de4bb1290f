// Fuzz target: the TOML job-config reader, checked against a fixed schema.
// Contract checked on every input: a config whose values have the schema's
// types, whose resolved TOML (to_toml) reads back to the same text, or an Error
// naming the file ("fuzz.toml...") and free of control bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "io/config.h"

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "config_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

std::string defaults(const std::string& kind) {
  if (kind != "toy") throw qmlsim::Error("unknown job kind '" + kind + "'");
  return "[job]\nkind = \"toy\"\nseed = 1\n[data]\npath = \"\"\nrows = 10\n[train]\n"
         "rate = 0.5\nname = \"adam\"\nshuffle = true\n";
}

qmlsim::io::Config parse(const std::string& text) {
  return qmlsim::io::Config::parse(text, "fuzz.toml", "/base", {}, defaults, {"data.path"});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const qmlsim::io::Config c = parse(text);
    c.get_int("job.seed", INT64_MIN, INT64_MAX);
    c.get_int("data.rows", INT64_MIN, INT64_MAX);
    c.get_double("train.rate", -1e308, 1e308);
    c.get_string("train.name");
    c.get_bool("train.shuffle");
    const std::string resolved = c.to_toml();
    if (parse(resolved).to_toml() != resolved) finding("to_toml does not read back", resolved);
  } catch (const qmlsim::Error& e) {
    const std::string msg = e.what();
    if (msg.rfind("fuzz.toml", 0) != 0 && msg.find("unknown job kind") == std::string::npos)
      finding("error without the file", msg);
    if (qmlsim::printable(msg) != msg) finding("control byte in an error", msg);
  }
  return 0;
}
