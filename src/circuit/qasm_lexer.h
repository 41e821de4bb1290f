// The OpenQASM lexer: tokens produced one at a time on demand, so memory does
// not grow with the file's length (internal to the reader, circuit/qasm*.cc).
#pragma once

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.h"

namespace qmlsim::qasm {

enum class Tok { Id, Real, Int, String, Sym, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  double num = 0;
  int line = 1, col = 1;
};

// Produces tokens one at a time, so memory does not grow with the file's length.
class Lexer {
 public:
  Lexer(std::string_view s, std::string source) : s_(s), source_(std::move(source)) {}

  Token next();

  // OpenQASM 2.0's grammar has no integers with leading zeros ("00", "01").
  void refuse_leading_zeros() { strict_integers_ = true; }

 private:
  // Letters, '_' and any byte of a multi-byte UTF-8 character (OpenQASM 3 names such as π).
  static bool ident_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
  }

  void advance(std::size_t n) {
    for (std::size_t k = 0; k < n; ++k, ++i_) {
      if (s_[i_] == '\n') {
        ++line_;
        col_ = 1;
      } else {
        ++col_;
      }
    }
  }

  void skip_space_and_comments();

  // digits [. digits] [e [+-] digits]; a literal must be a finite double.
  void number(Token& t);

  std::string_view s_;
  std::string source_;
  std::size_t i_ = 0;
  int line_ = 1, col_ = 1;
  bool strict_integers_ = false;
};

}  // namespace qmlsim::qasm
