#include "circuit/qasm.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <set>

#include "core/error.h"

namespace qmlsim {
namespace {

constexpr int kMaxExprDepth = 256;   // nested parentheses, functions, signs and powers
constexpr int kMaxGateNesting = 64;  // gate definitions calling gate definitions

// ---- Lexer -----------------------------------------------------------------

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

  Token next() {
    skip_space_and_comments();
    Token t;
    t.line = line_;
    t.col = col_;
    if (i_ >= s_.size()) return t;
    const char c = s_[i_];
    if (ident_start(c)) {
      std::size_t j = i_;
      while (j < s_.size() &&
             (ident_start(s_[j]) || std::isdigit(static_cast<unsigned char>(s_[j]))))
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
      static const char* two[] = {"->", "==", "**"};
      t.kind = Tok::Sym;
      for (const char* sym : two) {
        if (s_.substr(i_, 2) == sym) t.text = sym;
      }
      if (t.text.empty()) {
        if (std::string_view(";,()[]{}+-*/^@=").find(c) == std::string_view::npos) {
          throw_at({source_, line_, col_}, std::string("unexpected character '") + c + "'");
        }
        t.text = std::string(1, c);
      }
      advance(t.text.size());
    }
    return t;
  }

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

  void skip_space_and_comments() {
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

  // digits [. digits] [e [+-] digits]; a literal must be a finite double.
  void number(Token& t) {
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
    t.num = std::strtod(t.text.c_str(), nullptr);
    if (!std::isfinite(t.num)) {
      const std::string shown = t.text.size() > 24 ? t.text.substr(0, 20) + "..." : t.text;
      throw_at({source_, line_, col_}, "number " + shown + " is too large for a double");
    }
    advance(j - i_);
  }

  std::string_view s_;
  std::string source_;
  std::size_t i_ = 0;
  int line_ = 1, col_ = 1;
};

// ---- Expressions -------------------------------------------------------------

}  // namespace

// An operation of an expression in postfix order.
struct ExprOp {
  enum Kind : std::uint8_t {
    Num,
    Param,
    Input,
    Neg,
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Sin,
    Cos,
    Tan,
    Exp,
    Ln,
    Sqrt,
    Arcsin,
    Arccos,
    Arctan
  } kind = Num;
  double value = 0;  // Num
  int index = 0;     // Param: the gate's parameter; Input: the input value
  int line = 0, col = 0;
};

// An expression in postfix order. It is evaluated with an explicit stack, so
// neither evaluation nor destruction recurses, however long the expression.
using Expr = std::vector<ExprOp>;

// The angles that depend on inputs: slot -> expression over the input values.
class QasmAngleExprs {
 public:
  std::string source;
  std::vector<std::pair<int, Expr>> slots;
};

namespace {

bool unary_fn(ExprOp::Kind k) { return k == ExprOp::Neg || k >= ExprOp::Sin; }
bool binary_op(ExprOp::Kind k) { return k >= ExprOp::Add && k <= ExprOp::Pow; }

const std::map<std::string, ExprOp::Kind, std::less<>>& functions(int version) {
  static const std::map<std::string, ExprOp::Kind, std::less<>> v2 = {
      {"sin", ExprOp::Sin}, {"cos", ExprOp::Cos}, {"tan", ExprOp::Tan},
      {"exp", ExprOp::Exp}, {"ln", ExprOp::Ln},   {"sqrt", ExprOp::Sqrt}};
  static const std::map<std::string, ExprOp::Kind, std::less<>> v3 = [] {
    auto m = v2;
    m.emplace("arcsin", ExprOp::Arcsin);
    m.emplace("arccos", ExprOp::Arccos);
    m.emplace("arctan", ExprOp::Arctan);
    return m;
  }();
  return version == 2 ? v2 : v3;
}

// Named constants of the language: pi (both), tau and euler (OpenQASM 3).
std::optional<double> named_constant(std::string_view name, int version) {
  if (name == "pi" || (version == 3 && name == "π")) return std::numbers::pi;
  if (version == 3 && (name == "tau" || name == "τ")) return 2 * std::numbers::pi;
  if (version == 3 && (name == "euler" || name == "ℇ")) return std::numbers::e;
  return std::nullopt;
}

double apply_op(const ExprOp& op, double a, double b, const std::string& src) {
  switch (op.kind) {
    case ExprOp::Neg:
      return -a;
    case ExprOp::Add:
      return a + b;
    case ExprOp::Sub:
      return a - b;
    case ExprOp::Mul:
      return a * b;
    case ExprOp::Div:
      if (b == 0) throw_at({src, op.line, op.col}, "division by zero");
      return a / b;
    case ExprOp::Pow:
      return std::pow(a, b);
    case ExprOp::Sin:
      return std::sin(a);
    case ExprOp::Cos:
      return std::cos(a);
    case ExprOp::Tan:
      return std::tan(a);
    case ExprOp::Exp:
      return std::exp(a);
    case ExprOp::Ln:
      return std::log(a);
    case ExprOp::Sqrt:
      return std::sqrt(a);
    case ExprOp::Arcsin:
      return std::asin(a);
    case ExprOp::Arccos:
      return std::acos(a);
    case ExprOp::Arctan:
      return std::atan(a);
    default:
      return 0;
  }
}

// Evaluates `e` with gate parameter values `params` and input values `x`;
// every intermediate value must be finite ("src:line:col: ..." at the
// operation that is not). `values`, if given, receives each operation's value.
double eval(const Expr& e, std::span<const double> params, std::span<const double> x,
            const std::string& src, std::vector<double>* values = nullptr) {
  std::vector<double> st;
  st.reserve(8);
  if (values) values->resize(e.size());
  for (std::size_t i = 0; i < e.size(); ++i) {
    const ExprOp& op = e[i];
    double v = 0;
    if (op.kind == ExprOp::Num) {
      v = op.value;
    } else if (op.kind == ExprOp::Param) {
      v = params[static_cast<std::size_t>(op.index)];
    } else if (op.kind == ExprOp::Input) {
      v = x[static_cast<std::size_t>(op.index)];
    } else if (binary_op(op.kind)) {
      const double b = st.back();
      st.pop_back();
      const double a = st.back();
      st.pop_back();
      v = apply_op(op, a, b, src);
    } else {
      const double a = st.back();
      st.pop_back();
      v = apply_op(op, a, 0, src);
    }
    if (!std::isfinite(v)) throw_at({src, op.line, op.col}, "expression is not a finite number");
    st.push_back(v);
    if (values) (*values)[i] = v;
  }
  return st.back();
}

// Reverse mode: adds seed * d e / d x[k] to grad[k] for every input in `e`.
void accumulate_gradient(const Expr& e, std::span<const double> x, double seed,
                         const std::string& src, std::span<double> grad) {
  std::vector<double> val;
  eval(e, {}, x, src, &val);
  // Operands of each operation, found by replaying the stack with indices.
  std::vector<int> lhs(e.size(), -1), rhs(e.size(), -1), st;
  for (std::size_t i = 0; i < e.size(); ++i) {
    const ExprOp::Kind k = e[i].kind;
    if (binary_op(k)) {
      rhs[i] = st.back();
      st.pop_back();
      lhs[i] = st.back();
      st.pop_back();
    } else if (unary_fn(k)) {
      lhs[i] = st.back();
      st.pop_back();
    }
    st.push_back(static_cast<int>(i));
  }
  std::vector<double> adj(e.size(), 0.0);
  adj.back() = seed;
  for (std::size_t i = e.size(); i-- > 0;) {
    const double g = adj[i];
    if (g == 0) continue;
    const ExprOp& op = e[i];
    const double a = lhs[i] >= 0 ? val[lhs[i]] : 0, b = rhs[i] >= 0 ? val[rhs[i]] : 0;
    switch (op.kind) {
      case ExprOp::Input:
        grad[static_cast<std::size_t>(op.index)] += g;
        break;
      case ExprOp::Neg:
        adj[lhs[i]] -= g;
        break;
      case ExprOp::Add:
        adj[lhs[i]] += g;
        adj[rhs[i]] += g;
        break;
      case ExprOp::Sub:
        adj[lhs[i]] += g;
        adj[rhs[i]] -= g;
        break;
      case ExprOp::Mul:
        adj[lhs[i]] += g * b;
        adj[rhs[i]] += g * a;
        break;
      case ExprOp::Div:
        adj[lhs[i]] += g / b;
        adj[rhs[i]] -= g * a / (b * b);
        break;
      case ExprOp::Pow:
        adj[lhs[i]] += g * b * std::pow(a, b - 1);
        if (a > 0) adj[rhs[i]] += g * val[i] * std::log(a);
        break;
      case ExprOp::Sin:
        adj[lhs[i]] += g * std::cos(a);
        break;
      case ExprOp::Cos:
        adj[lhs[i]] -= g * std::sin(a);
        break;
      case ExprOp::Tan:
        adj[lhs[i]] += g / (std::cos(a) * std::cos(a));
        break;
      case ExprOp::Exp:
        adj[lhs[i]] += g * val[i];
        break;
      case ExprOp::Ln:
        adj[lhs[i]] += g / a;
        break;
      case ExprOp::Sqrt:
        adj[lhs[i]] += g / (2 * val[i]);
        break;
      case ExprOp::Arcsin:
        adj[lhs[i]] += g / std::sqrt(1 - a * a);
        break;
      case ExprOp::Arccos:
        adj[lhs[i]] -= g / std::sqrt(1 - a * a);
        break;
      case ExprOp::Arctan:
        adj[lhs[i]] += g / (1 + a * a);
        break;
      default:
        break;
    }
  }
}

bool has_inputs(const Expr& e) {
  return std::any_of(e.begin(), e.end(), [](const ExprOp& op) { return op.kind == ExprOp::Input; });
}

// `e` with parameter references replaced by `args` (each an expression of the
// inputs), folded to one number when it does not depend on an input.
Expr substitute(const Expr& e, const std::vector<Expr>& args, const std::string& src) {
  Expr out;
  for (const ExprOp& op : e) {
    if (op.kind == ExprOp::Param) {
      const Expr& a = args[static_cast<std::size_t>(op.index)];
      out.insert(out.end(), a.begin(), a.end());
    } else {
      out.push_back(op);
    }
  }
  if (!has_inputs(out)) {
    ExprOp num;
    num.value = eval(out, {}, {}, src);
    num.line = e.empty() ? 0 : e.back().line;
    num.col = e.empty() ? 0 : e.back().col;
    return {num};
  }
  return out;
}

Expr number(double v) {
  ExprOp op;
  op.value = v;
  return {op};
}

// k * e, folded when e is a number.
Expr scaled(Expr e, double k) {
  if (e.size() == 1 && e[0].kind == ExprOp::Num) {
    e[0].value *= k;
    return e;
  }
  ExprOp factor, mul;
  factor.value = k;
  mul.kind = ExprOp::Mul;
  mul.line = e.back().line;
  mul.col = e.back().col;
  e.push_back(factor);
  e.push_back(mul);
  return e;
}

// ---- Gates --------------------------------------------------------------------

struct GateDef;

// A gate application, in a gate body (qubits are argument indices) or at the
// top level (qubits are resolved per broadcast index).
struct GateCall {
  std::string name;
  std::shared_ptr<const GateDef> def;  // bound where it was read; null: a built-in
  std::vector<Expr> params;
  std::vector<int> args;       // in a body: indices into the definition's qubit arguments
  std::vector<bool> ctrl_neg;  // one per control qubit (the first args), true for negctrl
  double exponent = 1;         // pow(k) and inv modifiers: the call applies gate^exponent
  int line = 0, col = 0;
};

struct GateDef {
  std::vector<std::string> params, args;
  std::vector<GateCall> body;
  bool from_prelude = false;
  std::int64_t gates = 0;  // gates one application expands to (saturating at kManyGates)
  int nesting = 1;         // 1 + the deepest nesting of a gate it calls
  std::string opaque;      // an opaque gate in its expansion (itself, if opaque), or ""
};

constexpr std::int64_t kManyGates = std::int64_t{1} << 62;
constexpr std::size_t kMaxAngleOps = 100000;  // an angle's expression of the inputs

std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  return a > kManyGates - b ? kManyGates : a + b;
}
std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
  return b != 0 && a > kManyGates / b ? kManyGates : a * b;
}

// qelib1.inc gates that map onto the gate table: table gate plus extra controls.
struct Builtin {
  GateId gate;
  int extra_controls;
};

const std::map<std::string, Builtin, std::less<>>& builtins_qelib1() {
  static const std::map<std::string, Builtin, std::less<>> m = {
      {"u3", {GateId::U3, 0}},
      {"u2", {GateId::U2, 0}},
      {"u1", {GateId::U1, 0}},
      {"u", {GateId::U3, 0}},
      {"p", {GateId::PhaseShift, 0}},
      {"cx", {GateId::CNOT, 0}},
      {"id", {GateId::I, 0}},
      {"x", {GateId::X, 0}},
      {"y", {GateId::Y, 0}},
      {"z", {GateId::Z, 0}},
      {"h", {GateId::H, 0}},
      {"s", {GateId::S, 0}},
      {"sdg", {GateId::Sdg, 0}},
      {"t", {GateId::T, 0}},
      {"tdg", {GateId::Tdg, 0}},
      {"sx", {GateId::SX, 0}},
      {"rx", {GateId::RX, 0}},
      {"ry", {GateId::RY, 0}},
      {"rz", {GateId::RZ, 0}},
      {"cz", {GateId::CZ, 0}},
      {"cy", {GateId::CY, 0}},
      {"ch", {GateId::CH, 0}},
      {"swap", {GateId::SWAP, 0}},
      {"iswap", {GateId::ISWAP, 0}},
      {"ccx", {GateId::Toffoli, 0}},
      {"cswap", {GateId::CSWAP, 0}},
      {"crx", {GateId::CRX, 0}},
      {"cry", {GateId::CRY, 0}},
      {"crz", {GateId::CRZ, 0}},
      {"cu1", {GateId::ControlledPhaseShift, 0}},
      {"cp", {GateId::ControlledPhaseShift, 0}},
      {"cu3", {GateId::U3, 1}},
      {"csx", {GateId::SX, 1}},
      {"c3x", {GateId::X, 3}},
      {"c4x", {GateId::X, 4}},
      {"c3sqrtx", {GateId::SX, 3}},
      {"rxx", {GateId::IsingXX, 0}},
      {"ryy", {GateId::IsingYY, 0}},
      {"rzz", {GateId::IsingZZ, 0}},
  };
  return m;
}

// stdgates.inc (OpenQASM 3): exactly its gates, each onto the gate table
// (the specification defines them by their matrices); cu is in the prelude.
const std::map<std::string, Builtin, std::less<>>& builtins_stdgates() {
  static const std::map<std::string, Builtin, std::less<>> m = {
      {"p", {GateId::PhaseShift, 0}},
      {"x", {GateId::X, 0}},
      {"y", {GateId::Y, 0}},
      {"z", {GateId::Z, 0}},
      {"h", {GateId::H, 0}},
      {"s", {GateId::S, 0}},
      {"sdg", {GateId::Sdg, 0}},
      {"t", {GateId::T, 0}},
      {"tdg", {GateId::Tdg, 0}},
      {"sx", {GateId::SX, 0}},
      {"rx", {GateId::RX, 0}},
      {"ry", {GateId::RY, 0}},
      {"rz", {GateId::RZ, 0}},
      {"cx", {GateId::CNOT, 0}},
      {"cy", {GateId::CY, 0}},
      {"cz", {GateId::CZ, 0}},
      {"cp", {GateId::ControlledPhaseShift, 0}},
      {"crx", {GateId::CRX, 0}},
      {"cry", {GateId::CRY, 0}},
      {"crz", {GateId::CRZ, 0}},
      {"ch", {GateId::CH, 0}},
      {"swap", {GateId::SWAP, 0}},
      {"ccx", {GateId::Toffoli, 0}},
      {"cswap", {GateId::CSWAP, 0}},
      {"CX", {GateId::CNOT, 0}},
      {"phase", {GateId::PhaseShift, 0}},
      {"cphase", {GateId::ControlledPhaseShift, 0}},
      {"id", {GateId::I, 0}},
      {"u1", {GateId::U1, 0}},
      {"u2", {GateId::U2, 0}},
      {"u3", {GateId::U3, 0}},
  };
  return m;
}

// The four-parameter cu of stdgates.inc: e^{i gamma} U(theta, phi, lambda) on |1> of c.
constexpr std::string_view kStdgatesPrelude = R"(OPENQASM 3.0;
gate cu(theta, phi, lambda, gamma) c, t { p(gamma) c; ctrl @ U(theta, phi, lambda) c, t; }
)";

// The gates of the specification's qelib1.inc: reserved once it is included.
// qmlsim's further built-in gates (cu, p, sx, swap, ...) yield to a file's own.
bool spec_qelib1_gate(std::string_view name) {
  static const std::set<std::string, std::less<>> names = {
      "u3",  "u2", "u1", "cx", "id", "x",  "y",  "z",   "h",   "s",   "sdg", "t",
      "tdg", "rx", "ry", "rz", "cz", "cy", "ch", "ccx", "crz", "cu1", "cu3"};
  return names.count(name) > 0;
}

bool keyword(std::string_view name, int version) {
  static const std::set<std::string, std::less<>> v2 = {"OPENQASM", "include", "qreg",    "creg",
                                                        "gate",     "opaque",  "barrier", "measure",
                                                        "reset",    "if",      "pi"};
  static const std::set<std::string, std::less<>> v3 = [] {
    auto s = v2;
    for (const char* w : {"qubit",    "bit",     "input",  "output", "const",    "ctrl",  "negctrl",
                          "inv",      "pow",     "gphase", "U",      "for",      "while", "def",
                          "extern",   "box",     "delay",  "let",    "defcal",   "cal",   "return",
                          "float",    "int",     "uint",   "angle",  "bool",     "array", "complex",
                          "duration", "stretch", "π",      "tau",    "τ",        "euler", "ℇ",
                          "else",     "switch",  "case",   "break",  "continue", "end"})
      s.insert(w);
    return s;
  }();
  return (version == 2 ? v2 : v3).count(name) > 0;
}

// OpenQASM 3 statements qmlsim does not simulate, with the reason shown.
std::optional<std::string> unsupported_v3(std::string_view word) {
  static const std::map<std::string, std::string, std::less<>> m = {
      {"if", "classical control flow"},
      {"else", "classical control flow"},
      {"for", "classical control flow"},
      {"while", "classical control flow"},
      {"switch", "classical control flow"},
      {"break", "classical control flow"},
      {"continue", "classical control flow"},
      {"end", "classical control flow"},
      {"def", "subroutines"},
      {"return", "subroutines"},
      {"extern", "extern functions"},
      {"box", "timing"},
      {"delay", "timing"},
      {"duration", "timing"},
      {"stretch", "timing"},
      {"defcal", "pulse-level calibration"},
      {"cal", "pulse-level calibration"},
      {"defcalgrammar", "pulse-level calibration"},
      {"let", "aliases"},
      {"output", "outputs"},
      {"int", "classical variables"},
      {"uint", "classical variables"},
      {"float", "classical variables"},
      {"angle", "classical variables"},
      {"bool", "classical variables"},
      {"complex", "classical variables"},
      {"array", "classical variables"},
  };
  if (auto it = m.find(word); it != m.end()) return it->second;
  return std::nullopt;
}

// qelib1.inc gates with no single table row, defined as in qelib1.inc itself.
constexpr std::string_view kQelib1Prelude = R"(OPENQASM 2.0;
gate u0(gamma) q { U(0,0,0) q; }
gate sxdg a { s a; h a; s a; }
gate cu(theta,phi,lambda,gamma) c, t { p(gamma) c; cu3(theta,phi,lambda) c, t; }
gate rccx a,b,c {
  u2(0,pi) c; u1(pi/4) c; cx b, c; u1(-pi/4) c; cx a, c; u1(pi/4) c; cx b, c; u1(-pi/4) c;
  u2(0,pi) c;
}
gate rc3x a,b,c,d {
  u2(0,pi) d; u1(pi/4) d; cx c,d; u1(-pi/4) d; u2(0,pi) d; cx a,d; u1(pi/4) d; cx b,d;
  u1(-pi/4) d; cx a,d; u1(pi/4) d; cx b,d; u1(-pi/4) d; u2(0,pi) d; u1(pi/4) d; cx c,d;
  u1(-pi/4) d; u2(0,pi) d;
}
)";

// ---- Parser ---------------------------------------------------------------------

class QasmParser {
 public:
  QasmParser(std::string_view text, std::string source, const QasmLimits& limits)
      : source_(std::move(source)), lex_(text, source_), limits_(limits) {
    advance();
  }

  QasmProgram parse() {
    parse_header();
    while (!at(Tok::End)) statement();
    QasmProgram out;
    out.circuit = Circuit(num_qubits_);
    for (Operation& op : ops_) out.circuit.add(std::move(op));
    out.angles = std::move(angles_);
    out.measured = std::move(measured_order_);
    out.qubit_names = std::move(qubit_names_);
    out.inputs = std::move(inputs_);
    if (!input_angles_.empty()) {
      auto exprs = std::make_shared<QasmAngleExprs>();
      exprs->source = source_;
      exprs->slots = std::move(input_angles_);
      out.input_angles = std::move(exprs);
    }
    return out;
  }

 private:
  // -- token helpers
  void advance() { cur_ = lex_.next(); }
  bool at(Tok k) const { return cur_.kind == k; }
  bool at_sym(std::string_view s) const { return cur_.kind == Tok::Sym && cur_.text == s; }
  bool at_id(std::string_view s) const { return cur_.kind == Tok::Id && cur_.text == s; }
  [[noreturn]] void fail_at(const Token& t, const std::string& msg) const {
    throw_at({source_, t.line, t.col}, msg);
  }
  [[noreturn]] void fail_at(int line, int col, const std::string& msg) const {
    throw_at({source_, line, col}, msg);
  }
  [[noreturn]] void fail(const std::string& msg) const { fail_at(cur_, msg); }
  std::string describe_cur() const {
    if (at(Tok::End)) return "end of file";
    if (at(Tok::String)) return "\"" + cur_.text + "\"";
    return "'" + cur_.text + "'";
  }
  void expect_sym(std::string_view s) {
    if (!at_sym(s)) fail("expected '" + std::string(s) + "', found " + describe_cur());
    advance();
  }
  std::string expect_id(const char* what) {
    if (!at(Tok::Id)) fail(std::string("expected ") + what + ", found " + describe_cur());
    std::string text = std::move(cur_.text);
    advance();
    return text;
  }
  // A non-negative integer: a literal, or in OpenQASM 3 a constant expression.
  int expect_int(const char* what) {
    const Token t = cur_;
    double v = 0;
    if (version_ == 2 || at(Tok::Int)) {
      if (!at(Tok::Int)) fail(std::string("expected ") + what + ", found " + describe_cur());
      v = cur_.num;
      advance();
    } else {
      v = constant();
    }
    if (v > 1e9) fail_at(t, std::string(what) + " is too large");
    if (v < 0 || v != std::floor(v)) fail_at(t, std::string(what) + " must be a whole number");
    return static_cast<int>(v);
  }
  // An index inside an expression: an integer literal or an integer constant
  // (no nested expression, whose parse would reset the enclosing one's state).
  int literal_index() {
    const Token t = cur_;
    double v = -1;
    if (at(Tok::Int)) {
      v = cur_.num;
    } else if (auto c = at(Tok::Id) ? consts_.find(cur_.text) : consts_.end(); c != consts_.end()) {
      v = c->second;
    } else {
      fail("expected an index (a whole number or an integer constant), found " + describe_cur());
    }
    advance();
    if (v < 0 || v > 1e9 || v != std::floor(v)) fail_at(t, "an index must be a whole number");
    return static_cast<int>(v);
  }

  // A constant expression (no inputs, no gate parameters), evaluated.
  double constant() { return eval(expression(nullptr, false), {}, {}, source_); }

  void parse_header() {
    if (!at_id("OPENQASM"))
      fail("expected 'OPENQASM 2.0;' or 'OPENQASM 3.0;' as the first statement");
    advance();
    if (!at(Tok::Real) && !at(Tok::Int)) fail("expected a version number after OPENQASM");
    if (cur_.num == 2.0) {
      version_ = 2;
    } else if (cur_.num >= 3.0 && cur_.num < 4.0) {
      version_ = 3;
    } else {
      fail("only OpenQASM 2.0 and 3 are supported, found version " + cur_.text);
    }
    advance();
    expect_sym(";");
  }

  void statement() {
    if (!at(Tok::Id)) fail("expected a statement, found " + describe_cur());
    stmt_ = cur_;
    const std::string w = cur_.text;
    if (w == "include") return include();
    if (w == "qreg" || w == "creg") return reg_decl(w == "qreg");
    if (w == "gate") return gate_decl(false);
    if (w == "barrier") return barrier();
    if (w == "measure") return measure();
    if (w == "reset") return reset();
    if (w == "OPENQASM") fail("OPENQASM may appear only once, at the start");
    if (version_ == 2) {
      if (w == "opaque") return gate_decl(true);
      if (w == "if") fail("classically controlled gates ('if') are not supported");
      return gate_statement();
    }
    if (w == "qubit" || w == "bit") return typed_register(w == "qubit");
    if (w == "input") return input_decl();
    if (w == "const") return const_decl();
    if (w == "opaque") fail("'opaque' is not part of OpenQASM 3");
    if (auto why = unsupported_v3(w)) {
      fail("'" + w + "' is not supported (" + *why +
           "): qmlsim runs circuits of gates and "
           "terminal measurements");
    }
    if (cregs_.count(w)) return measure_assignment();
    gate_statement();
  }

  void include() {
    advance();
    if (!at(Tok::String)) fail("expected a file name in quotes after include");
    const Token name = cur_;
    advance();
    expect_sym(";");
    const char* library = version_ == 2 ? "qelib1.inc" : "stdgates.inc";
    if (name.text != library) {
      fail_at(name, "cannot include \"" + name.text + "\": only \"" + library +
                        "\" is supported (built in)");
    }
    if (library_) return;
    for (const auto& [gate, def] : defs_) {
      if (reserved_by_library(gate)) {
        fail_at(name, std::string(library) + " defines gate '" + gate +
                          "', which this file defined before");
      }
    }
    library_ = true;
    // The prelude's gates are parsed by a nested parser sharing no state but
    // definitions; the file's own definitions of the same names are kept.
    QasmParser prelude(version_ == 2 ? kQelib1Prelude : kStdgatesPrelude,
                       std::string(library) + " (built in)", limits_);
    prelude.library_ = true;
    prelude.in_prelude_ = true;
    prelude.parse_header();
    while (!prelude.at(Tok::End)) prelude.statement();
    for (auto& [k, v] : prelude.defs_) defs_.emplace(k, v);
  }

  const std::map<std::string, Builtin, std::less<>>& builtins() const {
    return version_ == 2 ? builtins_qelib1() : builtins_stdgates();
  }
  bool reserved_by_library(std::string_view gate) const {
    return version_ == 2 ? spec_qelib1_gate(gate)
                         : builtins_stdgates().count(gate) > 0 || gate == "cu";
  }

  // -- declarations
  void declare_register(const Token& name_tok, const std::string& name, const Token& size_tok,
                        int size, bool quantum) {
    if (qregs_.count(name) || cregs_.count(name) || input_index(name) || consts_.count(name)) {
      fail_at(name_tok, "'" + name + "' is already declared");
    }
    if (version_ == 3 && keyword(name, 3)) fail_at(name_tok, "'" + name + "' is a reserved word");
    if (size <= 0) fail_at(size_tok, "register size must be positive");
    if (!quantum) {
      cregs_[name] = size;
      return;
    }
    if (num_qubits_ + size > kMaxQubits) {
      fail_at(size_tok, "too many qubits: " + std::to_string(num_qubits_ + size) +
                            " (qmlsim supports at most " + std::to_string(kMaxQubits) + ")");
    }
    qregs_[name] = {num_qubits_, size};
    for (int i = 0; i < size; ++i) qubit_names_.push_back(name + "[" + std::to_string(i) + "]");
    num_qubits_ += size;
  }

  void reg_decl(bool quantum) {  // qreg q[n]; creg c[n];
    advance();
    const Token name_tok = cur_;
    const std::string name = expect_id("a register name");
    expect_sym("[");
    const Token size_tok = cur_;
    const int size = expect_int("a register size");
    expect_sym("]");
    expect_sym(";");
    declare_register(name_tok, name, size_tok, size, quantum);
  }

  void typed_register(bool quantum) {  // qubit[n] q; qubit q; bit[n] c; bit c;
    advance();
    Token size_tok = cur_;
    int size = 1;
    if (at_sym("[")) {
      advance();
      size_tok = cur_;
      size = expect_int("a register size");
      expect_sym("]");
    }
    const Token name_tok = cur_;
    const std::string name = expect_id("a register name");
    if (at_sym("[") && size_tok.line == name_tok.line && size_tok.col == name_tok.col) {
      advance();  // the older form `qubit q[n];`
      size_tok = cur_;
      size = expect_int("a register size");
      expect_sym("]");
    }
    if (at_sym("=")) fail("initialised declarations are not supported: declare, then assign");
    expect_sym(";");
    declare_register(name_tok, name, size_tok, size, quantum);
  }

  // float[64] / float / angle[32] / angle: the types an input or constant may have.
  void scalar_type(const char* what) {
    const Token t = cur_;
    const std::string type = expect_id("a type");
    if (type != "float" && type != "angle" && type != "int" && type != "uint") {
      fail_at(t, std::string(what) + " of type '" + type +
                     "' is not supported (float, angle, int or uint)");
    }
    if (at_sym("[")) {
      advance();
      expect_int("a bit width");
      expect_sym("]");
    }
    last_type_ = type;
  }

  void input_decl() {
    advance();
    QasmInput in;
    const Token type_tok = cur_;
    if (at_id("array")) {
      advance();
      expect_sym("[");
      scalar_type("an input array");
      expect_sym(",");
      const Token n_tok = cur_;
      in.size = expect_int("an array length");
      if (in.size <= 0) fail_at(n_tok, "an array length must be positive");
      if (at_sym(",")) fail("multi-dimensional input arrays are not supported");
      expect_sym("]");
      in.array = true;
    } else {
      scalar_type("an input");
    }
    if (last_type_ != "float" && last_type_ != "angle") {
      fail_at(type_tok, "inputs of type '" + last_type_ +
                            "' are not supported: inputs are "
                            "angles (float or angle)");
    }
    const Token name_tok = cur_;
    in.name = expect_id("an input name");
    expect_sym(";");
    if (qregs_.count(in.name) || cregs_.count(in.name) || input_index(in.name) ||
        consts_.count(in.name) || keyword(in.name, 3) || functions(3).count(in.name)) {
      fail_at(name_tok, "'" + in.name + "' is already declared or reserved");
    }
    in.offset = num_input_values_;
    num_input_values_ += in.size;
    inputs_.push_back(std::move(in));
  }

  void const_decl() {
    advance();
    scalar_type("a constant");
    const std::string type = last_type_;
    const Token name_tok = cur_;
    const std::string name = expect_id("a constant name");
    expect_sym("=");
    const Token value_tok = cur_;
    const double v = constant();
    expect_sym(";");
    if (qregs_.count(name) || cregs_.count(name) || input_index(name) || consts_.count(name) ||
        keyword(name, 3) || functions(3).count(name)) {
      fail_at(name_tok, "'" + name + "' is already declared or reserved");
    }
    if ((type == "int" || type == "uint") && v != std::floor(v)) {
      fail_at(value_tok, "an " + type + " constant needs a whole number, got " + std::to_string(v));
    }
    if (type == "uint" && v < 0) fail_at(value_tok, "a uint constant cannot be negative");
    consts_[name] = v;
  }

  const QasmInput* input_index(const std::string& name) const {
    for (const QasmInput& in : inputs_)
      if (in.name == name) return &in;
    return nullptr;
  }

  std::vector<std::string> id_list(const char* what, std::vector<Token>* toks) {
    std::vector<std::string> out;
    while (true) {
      toks->push_back(cur_);
      out.push_back(expect_id(what));
      if (!at_sym(",")) return out;
      advance();
    }
  }

  // A new gate may take the name of a built-in beyond the specification's
  // qelib1.inc, or of a prelude gate; not of a gate of the file or the library.
  void check_new_gate_name(const std::string& name, const Token& at) const {
    if (name == "U" || name == "CX" || (version_ == 3 && name == "gphase")) {
      fail_at(at, "gate '" + name + "' is already defined");
    }
    if (keyword(name, version_) || functions(version_).count(name)) {
      fail_at(at, "'" + name + "' is a reserved word and cannot name a gate");
    }
    if (auto it = defs_.find(name); it != defs_.end() && !it->second->from_prelude) {
      fail_at(at, "gate '" + name + "' is already defined");
    }
    if (library_ && !in_prelude_ && reserved_by_library(name)) {
      fail_at(at, "gate '" + name + "' is already defined by " +
                      (version_ == 2 ? "qelib1.inc" : "stdgates.inc"));
    }
    if (qregs_.count(name) || cregs_.count(name) || input_index(name) || consts_.count(name)) {
      fail_at(at, "'" + name + "' is already declared");
    }
  }

  void gate_decl(bool opaque) {
    advance();
    const Token name_tok = cur_;
    const std::string name = expect_id("a gate name");
    check_new_gate_name(name, name_tok);
    auto def = std::make_shared<GateDef>();
    def->from_prelude = in_prelude_;
    std::vector<Token> param_toks, arg_toks;
    if (at_sym("(")) {
      advance();
      if (!at_sym(")")) def->params = id_list("a parameter name", &param_toks);
      expect_sym(")");
    }
    def->args = id_list("a qubit argument name", &arg_toks);
    check_unique(def->params, name_tok, "parameter");
    check_unique(def->args, name_tok, "qubit argument");
    for (std::size_t i = 0; i < def->params.size(); ++i) {
      const std::string& p = def->params[i];
      if (named_constant(p, version_) || functions(version_).count(p)) {
        fail_at(param_toks[i], "parameter '" + p + "' would hide the built-in " +
                                   (named_constant(p, version_) ? "constant" : "function") + " '" +
                                   p + "'");
      }
      if (std::find(def->args.begin(), def->args.end(), p) != def->args.end()) {
        fail_at(param_toks[i], "'" + p + "' names both a parameter and a qubit argument");
      }
    }
    if (opaque) {
      expect_sym(";");
      def->opaque = name;
      defs_[name] = std::move(def);
      return;
    }
    expect_sym("{");
    while (!at_sym("}")) {
      if (at(Tok::End)) fail("unterminated body of gate '" + name + "': expected '}'");
      if (at_id("barrier")) {  // barriers inside gate bodies have no effect on simulation
        while (!at_sym(";") && !at(Tok::End)) advance();
        expect_sym(";");
        continue;
      }
      const Token call_tok = cur_;
      GateCall call = gate_call(&def->params, &def->args);
      const std::int64_t reps = call_repetitions(call);
      if (call.def) {
        def->gates = saturating_add(def->gates, saturating_mul(call.def->gates, reps));
        def->nesting = std::max(def->nesting, call.def->nesting + 1);
        if (def->opaque.empty()) def->opaque = call.def->opaque;
      } else {
        def->gates = saturating_add(def->gates, reps);
      }
      if (def->nesting > kMaxGateNesting) {
        fail_at(call_tok, "gate definitions nest more than " + std::to_string(kMaxGateNesting) +
                              " levels deep");
      }
      def->body.push_back(std::move(call));
    }
    advance();
    defs_[name] = std::move(def);
  }

  // Upper bound of the gates one call emits per gate of its target.
  static std::int64_t call_repetitions(const GateCall& c) {
    const double k = std::abs(c.exponent);
    const std::int64_t reps = k == std::floor(k) ? static_cast<std::int64_t>(std::min(k, 1e18)) : 2;
    return saturating_add(reps, 2 * static_cast<std::int64_t>(c.ctrl_neg.size()));
  }

  void check_unique(const std::vector<std::string>& names, const Token& at, const char* what) {
    std::set<std::string> seen;
    for (const std::string& n : names)
      if (!seen.insert(n).second) fail_at(at, std::string(what) + " '" + n + "' appears twice");
  }

  // -- gate calls: [modifiers @] name [(params)] qubits ;
  // In a body, `params`/`args` are the definition's; at the top level they are
  // null and the qubits are read by the caller (qubit_args).
  GateCall gate_call(const std::vector<std::string>* params, const std::vector<std::string>* args) {
    GateCall call;
    if (version_ == 3) modifiers(call, params);
    const Token name_tok = cur_;
    call.line = cur_.line;
    call.col = cur_.col;
    call.name = expect_id("a gate name");
    if (call.name == "measure" || call.name == "reset" || call.name == "if") {
      fail_at(name_tok,
              "'" + call.name + "' is not allowed " + (args ? "inside a gate definition" : "here"));
    }
    if (at_sym("(")) {
      advance();
      if (!at_sym(")")) {
        call.params.push_back(expression(params, !args));
        while (at_sym(",")) {
          advance();
          call.params.push_back(expression(params, !args));
        }
      }
      expect_sym(")");
    }
    if (args) {
      std::vector<bool> used(args->size(), false);
      while (!at_sym(";")) {
        const Token arg = cur_;
        const std::string a = expect_id("a qubit argument");
        if (at_sym("[")) fail("indexing is not allowed inside a gate definition");
        const auto it = std::find(args->begin(), args->end(), a);
        if (it == args->end()) fail_at(arg, "unknown qubit argument '" + a + "'");
        const auto idx = static_cast<std::size_t>(it - args->begin());
        if (used[idx]) fail_at(arg, "qubit argument '" + a + "' is used twice in one gate");
        used[idx] = true;
        call.args.push_back(static_cast<int>(idx));
        if (!at_sym(",")) break;
        advance();
      }
      expect_sym(";");
      call.def = resolve_gate(call, static_cast<int>(call.args.size()));
    }
    return call;
  }

  void modifiers(GateCall& call, const std::vector<std::string>* params) {
    while (at_id("ctrl") || at_id("negctrl") || at_id("inv") || at_id("pow")) {
      const Token m = cur_;
      advance();
      if (m.text == "inv") {
        call.exponent = -call.exponent;
      } else if (m.text == "pow") {
        expect_sym("(");
        const Token k_tok = cur_;
        const Expr k = expression(params, false);
        if (std::any_of(k.begin(), k.end(),
                        [](const ExprOp& op) { return op.kind == ExprOp::Param; })) {
          fail_at(k_tok, "the exponent of pow() must be a constant");
        }
        call.exponent *= eval(k, {}, {}, source_);
        expect_sym(")");
      } else {
        int n = 1;
        if (at_sym("(")) {
          advance();
          const Token n_tok = cur_;
          n = expect_int("a number of controls");
          if (n < 1) fail_at(n_tok, "a number of controls must be at least 1");
          expect_sym(")");
        }
        for (int i = 0; i < n; ++i) call.ctrl_neg.push_back(m.text == "negctrl");
      }
      expect_sym("@");
    }
  }

  // -- expressions, emitted in postfix order:
  //    sum := prod {(+|-) prod}; prod := unary {(*|/) unary};
  //    unary := (-|+) unary | power; power := primary [(^ in 2.0 | ** in 3) unary];
  //    primary := number | constant | param | input | input[i] | fn ( sum ) | ( sum )
  // Parentheses, functions, signs and powers nest at most kMaxExprDepth deep.
  // `params`: a gate body's parameters; `inputs`: whether inputs may appear.
  Expr expression(const std::vector<std::string>* params, bool inputs) {
    Expr out;
    depth_ = 0;
    params_ = params;
    inputs_allowed_ = inputs;
    sum(out);
    return out;
  }
  void nest() {
    if (++depth_ > kMaxExprDepth) {
      fail("expression nests more than " + std::to_string(kMaxExprDepth) +
           " levels deep (parentheses, functions, signs and powers)");
    }
  }
  ExprOp op_here(ExprOp::Kind k) const {
    ExprOp op;
    op.kind = k;
    op.line = cur_.line;
    op.col = cur_.col;
    return op;
  }
  void sum(Expr& out) {
    product(out);
    while (at_sym("+") || at_sym("-")) {
      const ExprOp op = op_here(at_sym("+") ? ExprOp::Add : ExprOp::Sub);
      advance();
      product(out);
      out.push_back(op);
    }
  }
  void product(Expr& out) {
    unary(out);
    while (at_sym("*") || at_sym("/")) {
      const ExprOp op = op_here(at_sym("*") ? ExprOp::Mul : ExprOp::Div);
      advance();
      unary(out);
      out.push_back(op);
    }
  }
  void unary(Expr& out) {
    if (at_sym("-") || at_sym("+")) {
      const bool neg = at_sym("-");
      const ExprOp op = op_here(ExprOp::Neg);
      nest();
      advance();
      unary(out);
      --depth_;
      if (neg) out.push_back(op);
      return;
    }
    primary(out);
    if (version_ == 3 && at_sym("^")) {
      fail("'^' is bitwise xor in OpenQASM 3; use '**' for powers");
    }
    if (at_sym(version_ == 2 ? "^" : "**")) {
      const ExprOp op = op_here(ExprOp::Pow);
      nest();
      advance();
      unary(out);
      --depth_;
      out.push_back(op);
    }
  }
  void primary(Expr& out) {
    ExprOp op = op_here(ExprOp::Num);
    if (at(Tok::Real) || at(Tok::Int)) {
      op.value = cur_.num;
      advance();
      out.push_back(op);
      return;
    }
    if (at_sym("(")) {
      nest();
      advance();
      sum(out);
      expect_sym(")");
      --depth_;
      return;
    }
    if (!at(Tok::Id)) fail("expected an expression, found " + describe_cur());
    const Token name_tok = cur_;
    advance();
    if (auto c = named_constant(name_tok.text, version_)) {
      op.value = *c;
      out.push_back(op);
      return;
    }
    if (auto fn = functions(version_).find(name_tok.text); fn != functions(version_).end()) {
      op.kind = fn->second;
      nest();
      expect_sym("(");
      sum(out);
      expect_sym(")");
      --depth_;
      out.push_back(op);
      return;
    }
    if (params_) {
      const auto it = std::find(params_->begin(), params_->end(), name_tok.text);
      if (it != params_->end()) {
        op.kind = ExprOp::Param;
        op.index = static_cast<int>(it - params_->begin());
        out.push_back(op);
        return;
      }
    }
    if (auto c = consts_.find(name_tok.text); c != consts_.end()) {
      op.value = c->second;
      out.push_back(op);
      return;
    }
    if (const QasmInput* in = input_index(name_tok.text)) {
      if (!inputs_allowed_) {
        fail_at(name_tok,
                "input '" + name_tok.text + "' cannot be used here" +
                    (params_ ? " (a gate body sees only its parameters and constants)" : ""));
      }
      op.kind = ExprOp::Input;
      op.index = in->offset;
      if (in->array) {
        if (!at_sym("[")) fail_at(name_tok, "input array '" + in->name + "' needs an index");
        advance();
        const Token idx_tok = cur_;
        const int idx = literal_index();
        expect_sym("]");
        if (idx >= in->size) {
          fail_at(idx_tok, "index " + std::to_string(idx) + " is out of range for input array '" +
                               in->name + "' of length " + std::to_string(in->size));
        }
        op.index += idx;
      }
      out.push_back(op);
      return;
    }
    fail_at(name_tok, "unknown identifier '" + name_tok.text + "' in expression");
  }

  // -- statements on qubits
  struct Arg {
    int first = 0, size = 1;  // a whole register, or one qubit
    bool whole = false;
  };

  Arg qubit_arg() {
    const Token tok = cur_;
    const std::string name = expect_id("a qubit register");
    auto it = qregs_.find(name);
    if (it == qregs_.end()) {
      if (cregs_.count(name)) fail_at(tok, "'" + name + "' is a classical register");
      fail_at(tok, "unknown quantum register '" + name + "'");
    }
    return indexed(it->second, name);
  }

  Arg indexed(std::pair<int, int> reg, const std::string& name) {
    Arg a{reg.first, reg.second, true};
    if (at_sym("[")) {
      advance();
      const Token idx_tok = cur_;
      const int idx = expect_int("an index");
      expect_sym("]");
      if (idx >= reg.second) {
        fail_at(idx_tok, "index " + std::to_string(idx) + " is out of range for register '" + name +
                             "' of size " + std::to_string(reg.second));
      }
      a.first += idx;
      a.size = 1;
      a.whole = false;
    }
    return a;
  }

  std::vector<Arg> qubit_args() {
    std::vector<Arg> args;
    if (at_sym(";")) return args;
    args.push_back(qubit_arg());
    while (at_sym(",")) {
      advance();
      args.push_back(qubit_arg());
    }
    return args;
  }

  // How many times a statement applies: the common size of its whole-register
  // arguments (which must all be equal, size 1 included), or 1 if there are none.
  int broadcast_count(const std::vector<Arg>& args, const Token& at) const {
    int n = -1;
    for (const Arg& a : args) {
      if (!a.whole) continue;
      if (n >= 0 && a.size != n) {
        fail_at(at, "registers of different sizes (" + std::to_string(n) + " and " +
                        std::to_string(a.size) + ") cannot be combined");
      }
      n = a.size;
    }
    return n < 0 ? 1 : n;
  }

  // `reset` of qubits no gate has touched yet is a no-op (they are |0>), as
  // at the start of many programs; after a gate it would need a mixed state.
  void reset() {
    advance();
    const Arg a = qubit_arg();
    expect_sym(";");
    for (int j = 0; j < a.size; ++j) {
      if (touched_.count(a.first + j)) {
        fail_at(stmt_, "'reset' of " + qubit_names_[static_cast<std::size_t>(a.first + j)] +
                           " after a gate or measurement is not supported: qmlsim simulates pure "
                           "states");
      }
    }
  }

  void barrier() {
    advance();
    qubit_args();
    expect_sym(";");
  }

  void record_measurement(const Token& kw, const Arg& q, const Arg& c) {
    if (q.size != c.size) {
      fail_at(kw, "measure needs registers of equal size (" + std::to_string(q.size) + " and " +
                      std::to_string(c.size) + ")");
    }
    for (int j = 0; j < q.size; ++j) {
      touched_.insert(q.first + j);
      if (measured_.insert(q.first + j).second) measured_order_.push_back(q.first + j);
    }
  }

  Arg classical_arg() {
    const Token ct = cur_;
    const std::string cname = expect_id("a classical register");
    auto it = cregs_.find(cname);
    if (it == cregs_.end()) fail_at(ct, "unknown classical register '" + cname + "'");
    return indexed({0, it->second}, cname);
  }

  void measure() {  // measure q -> c;  (OpenQASM 3 also: measure q;)
    const Token kw = cur_;
    advance();
    const Arg q = qubit_arg();
    if (version_ == 3 && at_sym(";")) {
      advance();
      return record_measurement(kw, q, q);
    }
    expect_sym("->");
    const Arg c = classical_arg();
    expect_sym(";");
    record_measurement(kw, q, c);
  }

  void measure_assignment() {  // c = measure q;  c[i] = measure q[j];
    const Arg c = classical_arg();
    expect_sym("=");
    const Token kw = cur_;
    if (!at_id("measure")) fail("expected 'measure' (classical assignments are not supported)");
    advance();
    const Arg q = qubit_arg();
    expect_sym(";");
    record_measurement(kw, q, c);
  }

  // Checks a call's arity and returns the definition it calls (the file's or
  // the prelude's, which take precedence), or null for a built-in gate.
  std::shared_ptr<const GateDef> resolve_gate(const GateCall& call, int nargs) const {
    const std::string& name = call.name;
    Token at;
    at.line = call.line;
    at.col = call.col;
    int want_p = 0, want_q = 0;
    std::shared_ptr<const GateDef> def;
    if (auto it = defs_.find(name); it != defs_.end()) {
      def = it->second;
      want_p = static_cast<int>(def->params.size());
      want_q = static_cast<int>(def->args.size());
    } else if (name == "U") {
      want_p = 3, want_q = 1;
    } else if (name == "CX" && version_ == 2) {
      want_p = 0, want_q = 2;
    } else if (name == "gphase" && version_ == 3) {
      want_p = 1, want_q = 0;
    } else if (auto b = builtins().find(name); library_ && b != builtins().end()) {
      const GateInfo& g = gate_info(b->second.gate);
      want_p = g.num_params;
      want_q = g.num_wires + b->second.extra_controls;
    } else {
      std::string hint;
      if (!library_ && builtins().count(name)) {
        hint = version_ == 2 ? " (missing include \"qelib1.inc\"?)"
                             : " (missing include \"stdgates.inc\"?)";
      }
      fail_at(at, "unknown gate '" + name + "'" + hint);
    }
    want_q += static_cast<int>(call.ctrl_neg.size());
    const int nparams = static_cast<int>(call.params.size());
    if (nparams != want_p) {
      fail_at(at, "gate '" + name + "' takes " + std::to_string(want_p) + " parameter(s), got " +
                      std::to_string(nparams));
    }
    if (nargs != want_q) {
      fail_at(at, "gate '" + name + "' takes " + std::to_string(want_q) + " qubit(s)" +
                      (call.ctrl_neg.empty() ? "" : " with its controls") + ", got " +
                      std::to_string(nargs));
    }
    if (def && !def->opaque.empty()) {
      fail_at(at, "opaque gate '" + def->opaque + "' has no definition to simulate");
    }
    return def;
  }

  void gate_statement() {
    GateCall call = gate_call(nullptr, nullptr);
    const std::vector<Arg> args = qubit_args();
    expect_sym(";");
    const Token& at = stmt_;
    call.def = resolve_gate(call, static_cast<int>(args.size()));
    std::vector<Expr> params;
    for (const Expr& e : call.params) params.push_back(substitute(e, {}, source_));
    const int n = broadcast_count(args, at);
    const std::int64_t adds =
        saturating_mul(saturating_mul(call.def ? call.def->gates : 1, call_repetitions(call)), n);
    const auto emitted = static_cast<std::int64_t>(ops_.size());
    if (adds > limits_.max_gates - emitted) {
      fail_at(at, "the program expands to more than the limit of " +
                      std::to_string(limits_.max_gates) + " gates (" + std::to_string(emitted) +
                      " before this statement, which adds " +
                      (adds >= kManyGates ? std::string("more than 2^62") : std::to_string(adds)) +
                      "); raise it with --max-gates");
    }
    for (int j = 0; j < n; ++j) {
      std::vector<int> qubits;
      for (const Arg& a : args) qubits.push_back(a.whole ? a.first + j : a.first);
      std::set<int> distinct(qubits.begin(), qubits.end());
      if (distinct.size() != qubits.size()) {
        fail_at(at, "gate '" + call.name + "' is applied to the same qubit twice");
      }
      for (int q : qubits) {
        touched_.insert(q);
        if (measured_.count(q)) {
          fail_at(at, "gate '" + call.name + "' on " + qubit_names_[q] +
                          " after it was measured: mid-circuit measurement is not supported");
        }
      }
      apply_call(call, params, qubits, Context{});
    }
  }

  // -- expansion. A context carries the controls and inversion of the calls
  // that led here; `params` are expressions of the inputs (numbers if constant).
  struct Context {
    std::vector<int> controls;
    bool inverse = false;
  };

  // One call: negated controls wrapped in X, then gate^exponent under the controls.
  void apply_call(const GateCall& call, const std::vector<Expr>& params,
                  const std::vector<int>& qubits, const Context& ctx) {
    const std::size_t nc = call.ctrl_neg.size();
    const bool emits_nothing =
        (call.def && call.def->gates == 0) ||
        (call.name == "gphase" && !call.def && ctx.controls.empty() && nc == 0);
    if (emits_nothing || call.exponent == 0) return;
    for (std::size_t i = 0; i < nc; ++i)
      if (call.ctrl_neg[i]) emit(GateId::X, {}, {qubits[i]}, {});
    Context inner = ctx;
    inner.controls.insert(inner.controls.end(), qubits.begin(),
                          qubits.begin() + static_cast<std::ptrdiff_t>(nc));
    const std::vector<int> targets(qubits.begin() + static_cast<std::ptrdiff_t>(nc), qubits.end());
    const double k = call.exponent;
    if (k == std::floor(k)) {
      inner.inverse = inner.inverse != (k < 0);
      for (double r = 0; r < std::abs(k); ++r) apply_target(call, params, targets, inner);
    } else {
      fractional_power(call, params, targets, inner.controls, inner.inverse ? -k : k);
    }
    for (std::size_t i = 0; i < nc; ++i)
      if (call.ctrl_neg[i]) emit(GateId::X, {}, {qubits[i]}, {});
  }

  void apply_target(const GateCall& call, const std::vector<Expr>& params,
                    const std::vector<int>& qubits, const Context& ctx) {
    if (call.def) {
      const GateDef& def = *call.def;
      if (def.gates == 0) return;
      const auto n = static_cast<std::ptrdiff_t>(def.body.size());
      for (std::ptrdiff_t i = 0; i < n; ++i) {
        const GateCall& c = def.body[static_cast<std::size_t>(ctx.inverse ? n - 1 - i : i)];
        std::vector<Expr> p;
        for (const Expr& e : c.params) p.push_back(substitute(e, params, source_));
        std::vector<int> q;
        for (int a : c.args) q.push_back(qubits[static_cast<std::size_t>(a)]);
        apply_call(c, p, q, ctx);
      }
      return;
    }
    if (call.name == "gphase")
      return emit_phase(ctx.inverse ? scaled(params[0], -1) : params[0], ctx.controls);
    GateId g = GateId::U3;
    int extra = 0;
    if (call.name == "CX") {
      g = GateId::CNOT;
    } else if (call.name != "U") {
      const Builtin& b = builtins().at(call.name);
      g = b.gate;
      extra = b.extra_controls;
    }
    std::vector<int> controls = ctx.controls;
    controls.insert(controls.end(), qubits.begin(), qubits.begin() + extra);
    const std::vector<int> wires(qubits.begin() + extra, qubits.end());
    if (!ctx.inverse) return emit(g, controls, wires, params);
    emit_inverse(g, controls, wires, params, call);
  }

  // The table gate's intrinsic controls moved to `controls`: (base gate, wires).
  static GateId to_base(GateId g, std::vector<int>& controls, std::vector<int>& wires) {
    const GateInfo& info = gate_info(g);
    controls.insert(controls.end(), wires.begin(), wires.begin() + info.num_controls);
    wires.erase(wires.begin(), wires.begin() + info.num_controls);
    return info.base;
  }

  // Gates whose parameters are all angles of one generator: g(t)^k = g(k t).
  static bool rotation_like(GateId g) {
    switch (g) {
      case GateId::RX:
      case GateId::RY:
      case GateId::RZ:
      case GateId::PhaseShift:
      case GateId::U1:
      case GateId::IsingXX:
      case GateId::IsingYY:
      case GateId::IsingZZ:
      case GateId::IsingXY:
      case GateId::MultiRZ:
        return true;
      default:
        return false;
    }
  }

  void emit_inverse(GateId g, std::vector<int> controls, std::vector<int> wires,
                    const std::vector<Expr>& p, const GateCall& call) {
    g = to_base(g, controls, wires);
    auto neg = [](const Expr& e) { return scaled(e, -1); };
    if (rotation_like(g)) {
      std::vector<Expr> q;
      for (const Expr& e : p) q.push_back(neg(e));
      return emit(g, controls, wires, q);
    }
    switch (g) {
      case GateId::I:
      case GateId::X:
      case GateId::Y:
      case GateId::Z:
      case GateId::H:
      case GateId::SWAP:
        return emit(g, controls, wires, p);
      case GateId::S:
        return emit(GateId::Sdg, controls, wires, p);
      case GateId::Sdg:
        return emit(GateId::S, controls, wires, p);
      case GateId::T:
        return emit(GateId::Tdg, controls, wires, p);
      case GateId::Tdg:
        return emit(GateId::T, controls, wires, p);
      case GateId::Rot:
        return emit(g, controls, wires, {neg(p[2]), neg(p[1]), neg(p[0])});
      case GateId::U3:
        return emit(g, controls, wires, {neg(p[0]), neg(p[2]), neg(p[1])});
      case GateId::U2:
        return emit(GateId::U3, controls, wires,
                    {number(-std::numbers::pi / 2), neg(p[1]), neg(p[0])});
      case GateId::SX:  // SX = e^{i pi/4} RX(pi/2)
        emit_phase(number(-std::numbers::pi / 4), controls);
        return emit(GateId::RX, controls, wires, {number(-std::numbers::pi / 2)});
      case GateId::ISWAP:  // ISWAP^4 = I
        for (int i = 0; i < 3; ++i) emit(g, controls, wires, p);
        return;
      default:
        fail_at(call.line, call.col, "inv @ is not supported for gate '" + call.name + "'");
    }
  }

  // gate^k for a non-integer k, on the principal branch.
  void fractional_power(const GateCall& call, const std::vector<Expr>& p,
                        const std::vector<int>& qubits, std::vector<int> controls, double k) {
    const double pi = std::numbers::pi;
    if (call.name == "gphase") return emit_phase(scaled(p[0], k), controls);
    const Builtin* b = nullptr;
    if (!call.def && call.name != "U" && call.name != "CX") b = &builtins().at(call.name);
    if (!b) {
      fail_at(call.line, call.col,
              "pow(k) with a non-integer k is supported for rotations, phases "
              "and x, y, z, s, t, sx (not '" +
                  call.name + "')");
    }
    controls.insert(controls.end(), qubits.begin(), qubits.begin() + b->extra_controls);
    std::vector<int> wires(qubits.begin() + b->extra_controls, qubits.end());
    const GateId g = to_base(b->gate, controls, wires);
    if (rotation_like(g)) {
      std::vector<Expr> q;
      for (const Expr& e : p) q.push_back(scaled(e, k));
      return emit(g, controls, wires, q);
    }
    switch (g) {
      case GateId::I:
        return;
      case GateId::Z:
        return emit(GateId::PhaseShift, controls, wires, {number(k * pi)});
      case GateId::S:
        return emit(GateId::PhaseShift, controls, wires, {number(k * pi / 2)});
      case GateId::Sdg:
        return emit(GateId::PhaseShift, controls, wires, {number(-k * pi / 2)});
      case GateId::T:
        return emit(GateId::PhaseShift, controls, wires, {number(k * pi / 4)});
      case GateId::Tdg:
        return emit(GateId::PhaseShift, controls, wires, {number(-k * pi / 4)});
      case GateId::X:  // X^k = e^{i k pi/2} RX(k pi)
        emit_phase(number(k * pi / 2), controls);
        return emit(GateId::RX, controls, wires, {number(k * pi)});
      case GateId::Y:
        emit_phase(number(k * pi / 2), controls);
        return emit(GateId::RY, controls, wires, {number(k * pi)});
      case GateId::SX:  // SX^k = X^(k/2)
        emit_phase(number(k * pi / 4), controls);
        return emit(GateId::RX, controls, wires, {number(k * pi / 2)});
      default:
        fail_at(call.line, call.col,
                "pow(k) with a non-integer k is supported for rotations, "
                "phases and x, y, z, s, t, sx (not '" +
                    call.name + "')");
    }
  }

  // A global phase: nothing alone; on |1...1> of the controls when controlled.
  void emit_phase(const Expr& theta, std::vector<int> controls) {
    if (controls.empty()) return;
    const int target = controls.back();
    controls.pop_back();
    emit(GateId::PhaseShift, controls, {target}, {theta});
  }

  void emit(GateId g, const std::vector<int>& controls, const std::vector<int>& wires,
            const std::vector<Expr>& params) {
    if (static_cast<std::int64_t>(ops_.size()) >= limits_.max_gates) {
      fail_at(stmt_, "the program expands to more than the limit of " +
                         std::to_string(limits_.max_gates) + " gates; raise it with --max-gates");
    }
    Operation op;
    op.gate = g;
    op.controls = controls;
    op.wires = wires;
    for (const Expr& e : params) {
      const int slot = static_cast<int>(angles_.size());
      op.params.push_back(ParamExpr::ref(slot));
      if (e.size() == 1 && e[0].kind == ExprOp::Num) {
        angles_.push_back(e[0].value);
        continue;
      }
      if (e.size() > kMaxAngleOps) {
        fail_at(stmt_, "an angle's expression grows to " + std::to_string(e.size()) +
                           " operations after expanding gate calls (the limit is " +
                           std::to_string(kMaxAngleOps) + ")");
      }
      angles_.push_back(0);
      input_angles_.emplace_back(slot, e);
    }
    ops_.push_back(std::move(op));
  }

  std::string source_;
  Lexer lex_;
  Token cur_;
  Token stmt_;  // the first token of the statement being read
  QasmLimits limits_;
  int version_ = 2;
  int depth_ = 0;                                     // of the expression being parsed
  const std::vector<std::string>* params_ = nullptr;  // of the expression being parsed
  bool inputs_allowed_ = false;
  bool library_ = false;  // qelib1.inc or stdgates.inc included
  bool in_prelude_ = false;
  std::string last_type_;
  std::map<std::string, std::pair<int, int>> qregs_;  // name -> (first qubit, size)
  std::map<std::string, int> cregs_;
  std::map<std::string, double> consts_;
  std::vector<QasmInput> inputs_;
  int num_input_values_ = 0;
  std::map<std::string, std::shared_ptr<const GateDef>> defs_;
  int num_qubits_ = 0;
  std::vector<std::string> qubit_names_;
  std::vector<Operation> ops_;
  std::vector<double> angles_;
  std::vector<std::pair<int, Expr>> input_angles_;
  std::set<int> measured_;
  std::set<int> touched_;  // qubits a gate or measurement has acted on
  std::vector<int> measured_order_;
};

}  // namespace

int QasmProgram::num_input_values() const {
  int n = 0;
  for (const QasmInput& in : inputs) n += in.size;
  return n;
}

void QasmProgram::bind_inputs(std::span<const double> x) { angles = angles_at(x); }

std::vector<double> QasmProgram::angles_at(std::span<const double> x) const {
  std::vector<double> out = angles;
  if (!input_angles) return out;
  for (const auto& [slot, e] : input_angles->slots) {
    out[static_cast<std::size_t>(slot)] = eval(e, {}, x, input_angles->source);
  }
  return out;
}

std::vector<double> QasmProgram::input_gradient(std::span<const double> x,
                                                std::span<const double> d_angles) const {
  std::vector<double> grad(static_cast<std::size_t>(num_input_values()), 0.0);
  if (!input_angles) return grad;
  for (const auto& [slot, e] : input_angles->slots) {
    const double seed = d_angles[static_cast<std::size_t>(slot)];
    if (seed != 0) accumulate_gradient(e, x, seed, input_angles->source, grad);
  }
  return grad;
}

QasmProgram parse_qasm(std::string_view text, const std::string& source, const QasmLimits& limits) {
  return QasmParser(text, source, limits).parse();
}

QasmProgram read_qasm_file(const std::string& path, const QasmLimits& limits) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(path + ": is a directory, not an OpenQASM file");
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot read file");
  // Read at most one byte past the limit, so /dev/zero or a huge file is refused, not consumed.
  std::string text;
  std::array<char, 1 << 16> buf;
  while (f) {
    const std::size_t room = static_cast<std::size_t>(limits.max_file_bytes) + 1 - text.size();
    f.read(buf.data(), static_cast<std::streamsize>(std::min(buf.size(), room)));
    text.append(buf.data(), static_cast<std::size_t>(f.gcount()));
    if (static_cast<std::int64_t>(text.size()) > limits.max_file_bytes) {
      throw Error(path + ": larger than the limit of " + std::to_string(limits.max_file_bytes) +
                  " bytes; raise it with --max-file-mib");
    }
  }
  if (f.bad()) throw Error(path + ": cannot read file");
  return parse_qasm(text, path, limits);
}

}  // namespace qmlsim
