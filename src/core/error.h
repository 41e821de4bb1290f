// Errors qmlsim reports to users. An Error carries a complete one-line message,
// already located ("file:line:column: message" or "--flag: message"); the CLI
// prints it and exits with status 2. Internal invariants use assert, not Error.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace qmlsim {

// `text` with every control byte (below 0x20, and 0x7f) and every byte that is
// not part of well-formed UTF-8 written as \xNN, so a message quoting user
// input stays one printable line in any terminal. Idempotent.
std::string printable(std::string_view text);

// The reason the last system call failed (strerror(errno)), for messages such
// as "FILE: cannot write: No space left on device"; "reason unknown" when errno
// is 0.
std::string last_system_error();

// Every message is made printable on construction (control bytes as \xNN), so
// no Error can break the one-line contract, whatever input it quotes.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(printable(message)) {}
  explicit Error(const char* message) : Error(std::string(message)) {}
};

// Memory a request needs and this machine (or GPU) does not have: a located
// one-line Error the Python binding raises as MemoryError.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

// Location of a character in a named input (file, flag or string).
struct SourceLoc {
  std::string source;  // file name, or a description such as "--observable 1"
  int line = 1;        // 1-based
  int column = 1;      // 1-based
};

// Builds "source:line:column: message", with control bytes escaped (see printable).
[[noreturn]] void throw_at(const SourceLoc& loc, const std::string& message);

// Paths name files: a URL ("gs://...", "https://...", and "s3://..." unless
// `allow_s3`) is an Error "<where>: <path>: ... not supported", never a local
// folder named "s3:". With `allow_s3`, s3://BUCKET/KEY passes (io/object_store.h
// checks it when used).
void require_file_path(const std::string& path, const std::string& where, bool allow_s3 = false);

}  // namespace qmlsim
