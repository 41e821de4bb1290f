// The OpenQASM lexer's token rules (qasm_lexer.h).
#include "circuit/qasm_lexer.h"

namespace qmlsim::qasm {

Token Lexer::next() {
  skip_space_and_comments();
  Token t;
  t.line = line_;
  t.col = col_;
  if (i_ >= s_.size()) return t;
  const char c = s_[i_];
  if (s_.substr(i_, 7) == "#pragma") {  // an Id no identifier can spell; the line follows
    t.kind = Tok::Id;
    t.text = "#pragma";
    advance(7);
  } else if (ident_start(c)) {
    std::size_t j = i_;
    while (j < s_.size() && (ident_start(s_[j]) || std::isdigit(static_cast<unsigned char>(s_[j]))))
      ++j;
    t.kind = Tok::Id;
    t.text = std::string(s_.substr(i_, j - i_));
    advance(j - i_);
  } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
    number(t);
  } else if (c == '"' || c == '\'') {
    std::size_t j = i_ + 1;
    while (j < s_.size() && s_[j] != c && s_[j] != '\n') ++j;
    if (j >= s_.size() || s_[j] != c) throw_at({source_, line_, col_}, "unterminated string");
    t.kind = Tok::String;
    t.text = std::string(s_.substr(i_ + 1, j - i_ - 1));
    advance(j - i_ + 1);
  } else {
    static constexpr std::string_view two[] = {"->", "==", "**", "!=", "<=", ">=", "&&", "||"};
    t.kind = Tok::Sym;
    for (const std::string_view sym : two) {
      if (s_.substr(i_, 2) == sym) t.text.assign(sym.data(), sym.size());
    }
    if (t.text.empty()) {
      if (std::string_view(";,()[]{}+-*/^@=:!~&|<>").find(c) == std::string_view::npos) {
        throw_at({source_, line_, col_}, std::string("unexpected character '") + c + "'");
      }
      t.text = std::string(1, c);
    }
    advance(t.text.size());
  }
  return t;
}

void Lexer::skip_space_and_comments() {
  while (i_ < s_.size()) {
    const char c = s_[i_];
    if (std::isspace(static_cast<unsigned char>(c))) {
      advance(1);
    } else if (c == '/' && i_ + 1 < s_.size() && s_[i_ + 1] == '/') {
      while (i_ < s_.size() && s_[i_] != '\n') advance(1);
    } else if (c == '/' && i_ + 1 < s_.size() && s_[i_ + 1] == '*') {
      const int l0 = line_, c0 = col_;
      advance(2);
      while (i_ + 1 < s_.size() && !(s_[i_] == '*' && s_[i_ + 1] == '/')) advance(1);
      if (i_ + 1 >= s_.size()) throw_at({source_, l0, c0}, "unterminated comment");
      advance(2);
    } else {
      return;
    }
  }
}

void Lexer::number(Token& t) {
  std::size_t j = i_;
  bool real = false;
  while (j < s_.size() && std::isdigit(static_cast<unsigned char>(s_[j]))) ++j;
  if (j < s_.size() && s_[j] == '.') {
    real = true;
    ++j;
    while (j < s_.size() && std::isdigit(static_cast<unsigned char>(s_[j]))) ++j;
  }
  if (j < s_.size() && (s_[j] == 'e' || s_[j] == 'E')) {
    std::size_t k = j + 1;
    if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) ++k;
    if (k < s_.size() && std::isdigit(static_cast<unsigned char>(s_[k]))) {
      real = true;
      j = k;
      while (j < s_.size() && std::isdigit(static_cast<unsigned char>(s_[j]))) ++j;
    }
  }
  t.text = std::string(s_.substr(i_, j - i_));
  if (t.text == ".") throw_at({source_, line_, col_}, "unexpected character '.'");
  t.kind = real ? Tok::Real : Tok::Int;
  if (!real && strict_integers_ && t.text.size() > 1 && t.text[0] == '0') {
    throw_at({source_, line_, col_}, "integer " + t.text.substr(0, 24) +
                                         " has a leading zero, which OpenQASM 2.0 does not allow");
  }
  t.num = std::strtod(t.text.c_str(), nullptr);
  if (!std::isfinite(t.num)) {
    const std::string shown = t.text.size() > 24 ? t.text.substr(0, 20) + "..." : t.text;
    throw_at({source_, line_, col_}, "number " + shown + " is too large for a double");
  }
  advance(j - i_);
}

}  // namespace qmlsim::qasm
