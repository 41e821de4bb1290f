#include "circuit/observable.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/bits.h"

namespace qmlsim {

int PauliSum::min_qubits() const {
  index_t all = 0;
  for (const PauliTerm& t : terms) all |= t.xmask | t.zmask;
  // (shifting by 64 until all >> n == 0 was undefined)
  return std::max(64 - std::countl_zero(all), named_qubits);
}

void check_observable_fits(const PauliSum& h, int num_qubits, const std::string& what,
                           const std::string& circuit) {
  if (h.min_qubits() <= num_qubits) return;
  throw Error(what + ": names qubit " + std::to_string(h.min_qubits() - 1) + ", beyond the " +
              std::to_string(num_qubits) + " qubit(s) of " + circuit);
}

std::string PauliSum::to_string() const {
  std::ostringstream s;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const PauliTerm& t = terms[i];
    if (i)
      s << (t.coeff < 0 ? " - " : " + ");
    else if (t.coeff < 0)
      s << "-";
    s << std::abs(t.coeff);
    for (int q = 0; q < 64; ++q) {
      const bool x = t.xmask >> q & 1, z = t.zmask >> q & 1;
      if (x || z) s << "*" << (x && z ? 'Y' : x ? 'X' : 'Z') << q;
    }
  }
  return s.str();
}

namespace {

class PauliParser {
 public:
  PauliParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  PauliSum parse() {
    PauliSum sum;
    skip_space();
    if (at_end()) fail("empty observable");
    double sign = 1;
    if (peek() == '+' || peek() == '-') {
      sign = peek() == '-' ? -1 : 1;
      ++pos_;
    }
    while (true) {
      parse_term(sign, sum);
      skip_space();
      if (at_end()) break;
      if (peek() != '+' && peek() != '-')
        fail(std::string("expected '+' or '-', found '") + peek() + "'");
      sign = peek() == '-' ? -1 : 1;
      ++pos_;
    }
    double total = 0;
    for (const PauliTerm& t : sum.terms) total += std::abs(t.coeff);
    if (!(total <= kMaxObservableNorm)) {
      pos_ = 0;
      std::ostringstream s;
      s << "the coefficients' absolute values sum to " << total << ", above the limit of "
        << kMaxObservableNorm << " (values beyond it could overflow single precision)";
      fail(s.str());
    }
    return sum;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  void skip_space() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(peek()))) ++pos_;
  }
  [[noreturn]] void fail(const std::string& msg) const {
    throw_at({source_, 1, static_cast<int>(pos_) + 1}, msg);
  }

  void parse_term(double sign, PauliSum& sum) {
    skip_space();
    const std::size_t start = pos_;
    double coeff = sign;
    index_t xmask = 0, zmask = 0;
    int factors = 0;
    while (true) {
      skip_space();
      if (at_end()) {
        if (factors == 0) fail("expected a number or a Pauli such as Z0");
        break;
      }
      const char c = peek();
      if (c == '*') {
        if (factors == 0) fail("'*' needs a factor before it");
        ++pos_;
        skip_space();
        if (at_end() || peek() == '+' || peek() == '-' || peek() == '*') {
          fail("'*' needs a factor after it");
        }
        continue;
      }
      if (c == '+' || c == '-') {
        if (factors == 0) fail("expected a number or a Pauli such as Z0");
        break;
      }
      if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
        coeff *= parse_number();
      } else if (c == 'I' || c == 'X' || c == 'Y' || c == 'Z') {
        const std::size_t start = pos_;
        ++pos_;
        if (at_end() || !std::isdigit(static_cast<unsigned char>(peek()))) {
          fail(std::string("Pauli '") + c + "' needs a qubit index, as in " + c + "0");
        }
        const int q = parse_index();
        if (!at_end() && peek() == '.') fail("a qubit index must be a whole number");
        if (q >= 64) {
          pos_ = start;
          fail("qubit index " + std::to_string(q) + " is too large");
        }
        if (((xmask | zmask) >> q & 1) && c != 'I') {
          pos_ = start;
          fail("qubit " + std::to_string(q) + " appears twice in one term");
        }
        sum.named_qubits = std::max(sum.named_qubits, q + 1);
        if (c == 'X' || c == 'Y') xmask |= bit(q);
        if (c == 'Z' || c == 'Y') zmask |= bit(q);
      } else {
        fail(std::string("unexpected character '") + c + "'");
      }
      ++factors;
    }
    if (!std::isfinite(coeff)) {
      pos_ = start;
      fail("the term's coefficient is not a finite number");
    }
    sum.add(coeff, xmask, zmask);
  }

  // digits [. digits] [(e|E) [+-] digits], finite, not followed by '.' or a digit.
  double parse_number() {
    const std::size_t start = pos_;
    auto digits = [&] {
      while (!at_end() && std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    };
    digits();
    if (!at_end() && peek() == '.') {
      ++pos_;
      digits();
    }
    if (pos_ - start == 1 && text_[start] == '.') fail("malformed number");
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      std::size_t k = pos_ + 1;
      if (k < text_.size() && (text_[k] == '+' || text_[k] == '-')) ++k;
      if (k < text_.size() && std::isdigit(static_cast<unsigned char>(text_[k]))) {
        pos_ = k;
        digits();
      }
    }
    if (!at_end() && peek() == 'x' && pos_ - start == 1 && text_[start] == '0') {
      pos_ = start;
      fail("hexadecimal numbers are not accepted");
    }
    if (!at_end() && (peek() == '.' || std::isdigit(static_cast<unsigned char>(peek())))) {
      fail("malformed number");
    }
    const std::string literal(text_.substr(start, pos_ - start));
    const double v = std::strtod(literal.c_str(), nullptr);
    if (!std::isfinite(v)) {
      pos_ = start;
      fail("number is too large for a double");
    }
    return v;
  }

  int parse_index() {
    long v = 0;
    while (!at_end() && std::isdigit(static_cast<unsigned char>(peek()))) {
      v = v * 10 + (peek() - '0');
      if (v > 1000000) fail("qubit index is too large");
      ++pos_;
    }
    return static_cast<int>(v);
  }

  std::string_view text_;
  const std::string& source_;
  std::size_t pos_ = 0;
};

}  // namespace

PauliSum parse_pauli_sum(std::string_view text, const std::string& source) {
  return PauliParser(text, source).parse();
}

}  // namespace qmlsim
