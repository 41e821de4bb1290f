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
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i_;
      while (j < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '_'))
        ++j;
      t.kind = Tok::Id;
      t.text = std::string(s_.substr(i_, j - i_));
      advance(j - i_);
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      number(t);
    } else if (c == '"') {
      std::size_t j = i_ + 1;
      while (j < s_.size() && s_[j] != '"' && s_[j] != '\n') ++j;
      if (j >= s_.size() || s_[j] != '"') throw_at({source_, line_, col_}, "unterminated string");
      t.kind = Tok::String;
      t.text = std::string(s_.substr(i_ + 1, j - i_ - 1));
      advance(j - i_ + 1);
    } else {
      static const char* two[] = {"->", "=="};
      t.kind = Tok::Sym;
      for (const char* sym : two) {
        if (s_.substr(i_, 2) == sym) t.text = sym;
      }
      if (t.text.empty()) {
        if (std::string_view(";,()[]{}+-*/^").find(c) == std::string_view::npos) {
          throw_at({source_, line_, col_}, std::string("unexpected character '") + c + "'");
        }
        t.text = std::string(1, c);
      }
      advance(t.text.size());
    }
    return t;
  }

 private:
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

struct ExprOp {
  enum Kind : std::uint8_t {
    Num,
    Param,
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
    Sqrt
  } kind = Num;
  double value = 0;  // Num
  int param = 0;     // Param: index into the gate's parameter list
  int line = 0, col = 0;
};

// An expression in postfix order. It is evaluated with an explicit stack, so
// neither evaluation nor destruction recurses, however long the expression.
using Expr = std::vector<ExprOp>;

const std::map<std::string, ExprOp::Kind, std::less<>>& functions() {
  static const std::map<std::string, ExprOp::Kind, std::less<>> m = {
      {"sin", ExprOp::Sin}, {"cos", ExprOp::Cos}, {"tan", ExprOp::Tan},
      {"exp", ExprOp::Exp}, {"ln", ExprOp::Ln},   {"sqrt", ExprOp::Sqrt}};
  return m;
}

// Evaluates `e` with parameter values `env`; every intermediate value must be
// finite ("source:line:col: ..." at the operation that is not).
double eval(const Expr& e, const std::vector<double>& env, const std::string& src) {
  std::vector<double> st;
  st.reserve(8);
  auto pop = [&] {
    const double v = st.back();
    st.pop_back();
    return v;
  };
  for (const ExprOp& op : e) {
    double v = 0;
    switch (op.kind) {
      case ExprOp::Num:
        v = op.value;
        break;
      case ExprOp::Param:
        v = env[static_cast<std::size_t>(op.param)];
        break;
      case ExprOp::Neg:
        v = -pop();
        break;
      case ExprOp::Sin:
        v = std::sin(pop());
        break;
      case ExprOp::Cos:
        v = std::cos(pop());
        break;
      case ExprOp::Tan:
        v = std::tan(pop());
        break;
      case ExprOp::Exp:
        v = std::exp(pop());
        break;
      case ExprOp::Ln:
        v = std::log(pop());
        break;
      case ExprOp::Sqrt:
        v = std::sqrt(pop());
        break;
      default: {
        const double b = pop(), a = pop();
        if (op.kind == ExprOp::Add) v = a + b;
        if (op.kind == ExprOp::Sub) v = a - b;
        if (op.kind == ExprOp::Mul) v = a * b;
        if (op.kind == ExprOp::Pow) v = std::pow(a, b);
        if (op.kind == ExprOp::Div) {
          if (b == 0) throw_at({src, op.line, op.col}, "division by zero");
          v = a / b;
        }
      }
    }
    if (!std::isfinite(v)) throw_at({src, op.line, op.col}, "expression is not a finite number");
    st.push_back(v);
  }
  return st.back();
}

// ---- Gates --------------------------------------------------------------------

struct GateDef;

struct GateCall {
  std::string name;
  std::shared_ptr<const GateDef> def;  // bound where the body was read; null: a built-in
  std::vector<Expr> params;
  std::vector<int> args;  // indices into the definition's qubit arguments
};

struct GateDef {
  std::vector<std::string> params, args;
  std::vector<GateCall> body;
  std::string source;  // where it was defined (the built-in prelude or the file)
  bool from_prelude = false;
  std::int64_t gates = 0;  // gates one application expands to (saturating at kManyGates)
  int nesting = 1;         // 1 + the deepest nesting of a gate it calls
  std::string opaque;      // an opaque gate in its expansion (itself, if opaque), or ""
};

constexpr std::int64_t kManyGates = std::int64_t{1} << 62;

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

// The gates of the specification's qelib1.inc: reserved once it is included.
// qmlsim's further built-in gates (cu, p, sx, swap, ...) yield to a file's own.
bool spec_qelib1_gate(std::string_view name) {
  static const std::set<std::string, std::less<>> names = {
      "u3",  "u2", "u1", "cx", "id", "x",  "y",  "z",   "h",   "s",   "sdg", "t",
      "tdg", "rx", "ry", "rz", "cz", "cy", "ch", "ccx", "crz", "cu1", "cu3"};
  return names.count(name) > 0;
}

bool keyword(std::string_view name) {
  static const std::set<std::string, std::less<>> words = {
      "OPENQASM", "include", "qreg",  "creg", "gate", "opaque",
      "barrier",  "measure", "reset", "if",   "pi"};
  return words.count(name) > 0;
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
    return out;
  }

 private:
  // -- token helpers
  void advance() { cur_ = lex_.next(); }
  const Token& cur() const { return cur_; }
  bool at(Tok k) const { return cur_.kind == k; }
  bool at_sym(std::string_view s) const { return cur_.kind == Tok::Sym && cur_.text == s; }
  bool at_id(std::string_view s) const { return cur_.kind == Tok::Id && cur_.text == s; }
  [[noreturn]] void fail_at(const Token& t, const std::string& msg) const {
    throw_at({source_, t.line, t.col}, msg);
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
  int expect_int(const char* what) {
    if (!at(Tok::Int)) fail(std::string("expected ") + what + ", found " + describe_cur());
    if (cur_.num > 1e9) fail(std::string(what) + " is too large");
    const int v = static_cast<int>(cur_.num);
    advance();
    return v;
  }

  void parse_header() {
    if (!at_id("OPENQASM")) fail("expected 'OPENQASM 2.0;' as the first statement");
    advance();
    if (!at(Tok::Real) && !at(Tok::Int)) fail("expected a version number after OPENQASM");
    if (cur_.num != 2.0) fail("only OpenQASM 2.0 is supported, found version " + cur_.text);
    advance();
    expect_sym(";");
  }

  void statement() {
    if (!at(Tok::Id)) fail("expected a statement, found " + describe_cur());
    const std::string w = cur_.text;
    if (w == "include") return include();
    if (w == "qreg" || w == "creg") return reg_decl(w == "qreg");
    if (w == "gate") return gate_decl(false);
    if (w == "opaque") return gate_decl(true);
    if (w == "barrier") return barrier();
    if (w == "measure") return measure();
    if (w == "reset") fail("'reset' is not supported: qmlsim simulates pure states");
    if (w == "if") fail("classically controlled gates ('if') are not supported");
    if (w == "OPENQASM") fail("OPENQASM may appear only once, at the start");
    gate_statement();
  }

  void include() {
    advance();
    if (!at(Tok::String)) fail("expected a file name in quotes after include");
    const Token name = cur_;
    advance();
    expect_sym(";");
    if (name.text != "qelib1.inc") {
      fail_at(name, "cannot include \"" + name.text + "\": only \"qelib1.inc\" is supported");
    }
    if (qelib1_) return;
    for (const auto& [gate, def] : defs_) {
      if (spec_qelib1_gate(gate)) {
        fail_at(name, "qelib1.inc defines gate '" + gate + "', which this file defined before");
      }
    }
    qelib1_ = true;
    // The prelude's gates are parsed by a nested parser sharing no state but
    // definitions; the file's own definitions of the same names are kept.
    QasmParser prelude(kQelib1Prelude, "qelib1.inc (built in)", limits_);
    prelude.qelib1_ = true;
    prelude.in_prelude_ = true;
    prelude.parse_header();
    while (!prelude.at(Tok::End)) prelude.statement();
    for (auto& [k, v] : prelude.defs_) defs_.emplace(k, v);
  }

  void reg_decl(bool quantum) {
    advance();
    const Token name_tok = cur_;
    const std::string name = expect_id("a register name");
    expect_sym("[");
    const Token size_tok = cur_;
    const int size = expect_int("a register size");
    expect_sym("]");
    expect_sym(";");
    if (qregs_.count(name) || cregs_.count(name)) {
      fail_at(name_tok, "register '" + name + "' is already declared");
    }
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
  // qelib1.inc, or of a prelude gate; not of a gate of the file or the spec.
  void check_new_gate_name(const std::string& name, const Token& at) const {
    if (name == "U" || name == "CX") fail_at(at, "gate '" + name + "' is already defined");
    if (keyword(name) || functions().count(name)) {
      fail_at(at, "'" + name + "' is a reserved word and cannot name a gate");
    }
    if (auto it = defs_.find(name); it != defs_.end() && !it->second->from_prelude) {
      fail_at(at, "gate '" + name + "' is already defined");
    }
    if (qelib1_ && spec_qelib1_gate(name)) {
      fail_at(at, "gate '" + name + "' is already defined by qelib1.inc");
    }
  }

  void gate_decl(bool opaque) {
    advance();
    const Token name_tok = cur_;
    const std::string name = expect_id("a gate name");
    check_new_gate_name(name, name_tok);
    auto def = std::make_shared<GateDef>();
    def->source = source_;
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
      if (p == "pi" || functions().count(p)) {
        fail_at(param_toks[i], "parameter '" + p + "' would hide the built-in " +
                                   (p == "pi" ? "constant" : "function") + " '" + p + "'");
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
      GateCall call = gate_call_in_body(*def);
      if (call.def) {
        def->gates = saturating_add(def->gates, call.def->gates);
        def->nesting = std::max(def->nesting, call.def->nesting + 1);
        if (def->opaque.empty()) def->opaque = call.def->opaque;
      } else {
        def->gates = saturating_add(def->gates, 1);
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

  void check_unique(const std::vector<std::string>& names, const Token& at, const char* what) {
    std::set<std::string> seen;
    for (const std::string& n : names)
      if (!seen.insert(n).second) fail_at(at, std::string(what) + " '" + n + "' appears twice");
  }

  GateCall gate_call_in_body(const GateDef& def) {
    GateCall call;
    const Token name_tok = cur_;
    call.name = expect_id("a gate name");
    if (call.name == "measure" || call.name == "reset" || call.name == "if") {
      fail_at(name_tok, "'" + call.name + "' is not allowed inside a gate definition");
    }
    if (at_sym("(")) {
      advance();
      if (!at_sym(")")) {
        call.params.push_back(expression(&def.params));
        while (at_sym(",")) {
          advance();
          call.params.push_back(expression(&def.params));
        }
      }
      expect_sym(")");
    }
    while (true) {
      const Token arg = cur_;
      const std::string a = expect_id("a qubit argument");
      if (at_sym("[")) fail("indexing is not allowed inside a gate definition");
      const auto it = std::find(def.args.begin(), def.args.end(), a);
      if (it == def.args.end()) fail_at(arg, "unknown qubit argument '" + a + "'");
      call.args.push_back(static_cast<int>(it - def.args.begin()));
      if (!at_sym(",")) break;
      advance();
    }
    expect_sym(";");
    call.def = resolve_gate(call.name, static_cast<int>(call.params.size()),
                            static_cast<int>(call.args.size()), name_tok);
    return call;
  }

  // -- expressions, emitted in postfix order:
  //    sum := prod {(+|-) prod}; prod := unary {(*|/) unary};
  //    unary := (-|+) unary | power; power := primary [^ unary];
  //    primary := number | pi | param | fn ( sum ) | ( sum )
  // Parentheses, functions, signs and powers nest at most kMaxExprDepth deep.
  Expr expression(const std::vector<std::string>* params) {
    Expr out;
    depth_ = 0;
    sum(out, params);
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
  void sum(Expr& out, const std::vector<std::string>* params) {
    product(out, params);
    while (at_sym("+") || at_sym("-")) {
      const ExprOp op = op_here(at_sym("+") ? ExprOp::Add : ExprOp::Sub);
      advance();
      product(out, params);
      out.push_back(op);
    }
  }
  void product(Expr& out, const std::vector<std::string>* params) {
    unary(out, params);
    while (at_sym("*") || at_sym("/")) {
      const ExprOp op = op_here(at_sym("*") ? ExprOp::Mul : ExprOp::Div);
      advance();
      unary(out, params);
      out.push_back(op);
    }
  }
  void unary(Expr& out, const std::vector<std::string>* params) {
    if (at_sym("-") || at_sym("+")) {
      const bool neg = at_sym("-");
      const ExprOp op = op_here(ExprOp::Neg);
      nest();
      advance();
      unary(out, params);
      --depth_;
      if (neg) out.push_back(op);
      return;
    }
    primary(out, params);
    if (at_sym("^")) {
      const ExprOp op = op_here(ExprOp::Pow);
      nest();
      advance();
      unary(out, params);
      --depth_;
      out.push_back(op);
    }
  }
  void primary(Expr& out, const std::vector<std::string>* params) {
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
      sum(out, params);
      expect_sym(")");
      --depth_;
      return;
    }
    if (!at(Tok::Id)) fail("expected an expression, found " + describe_cur());
    const Token name_tok = cur_;
    advance();
    if (name_tok.text == "pi") {
      op.value = std::numbers::pi;
      out.push_back(op);
      return;
    }
    if (auto fn = functions().find(name_tok.text); fn != functions().end()) {
      op.kind = fn->second;
      nest();
      expect_sym("(");
      sum(out, params);
      expect_sym(")");
      --depth_;
      out.push_back(op);
      return;
    }
    if (params) {
      const auto it = std::find(params->begin(), params->end(), name_tok.text);
      if (it != params->end()) {
        op.kind = ExprOp::Param;
        op.param = static_cast<int>(it - params->begin());
        out.push_back(op);
        return;
      }
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

  void barrier() {
    advance();
    qubit_arg();
    while (at_sym(",")) {
      advance();
      qubit_arg();
    }
    expect_sym(";");
  }

  void measure() {
    const Token kw = cur_;
    advance();
    const Arg q = qubit_arg();
    expect_sym("->");
    const Token ct = cur_;
    const std::string cname = expect_id("a classical register");
    auto it = cregs_.find(cname);
    if (it == cregs_.end()) fail_at(ct, "unknown classical register '" + cname + "'");
    const Arg c = indexed({0, it->second}, cname);
    expect_sym(";");
    if (q.size != c.size) {
      fail_at(kw, "measure needs registers of equal size (" + std::to_string(q.size) + " and " +
                      std::to_string(c.size) + ")");
    }
    for (int j = 0; j < q.size; ++j) {
      if (measured_.insert(q.first + j).second) measured_order_.push_back(q.first + j);
    }
  }

  // Checks a call's arity and returns the definition it calls (the file's or
  // the prelude's, which take precedence), or null for a built-in gate.
  std::shared_ptr<const GateDef> resolve_gate(const std::string& name, int nparams, int nargs,
                                              const Token& at) const {
    int want_p = 0, want_q = 0;
    std::shared_ptr<const GateDef> def;
    if (auto it = defs_.find(name); it != defs_.end()) {
      def = it->second;
      want_p = static_cast<int>(def->params.size());
      want_q = static_cast<int>(def->args.size());
    } else if (name == "U") {
      want_p = 3, want_q = 1;
    } else if (name == "CX") {
      want_p = 0, want_q = 2;
    } else if (auto b = builtins_qelib1().find(name); qelib1_ && b != builtins_qelib1().end()) {
      const GateInfo& g = gate_info(b->second.gate);
      want_p = g.num_params;
      want_q = g.num_wires + b->second.extra_controls;
    } else {
      std::string hint;
      if (!qelib1_ && builtins_qelib1().count(name)) hint = " (missing include \"qelib1.inc\"?)";
      fail_at(at, "unknown gate '" + name + "'" + hint);
    }
    if (nparams != want_p) {
      fail_at(at, "gate '" + name + "' takes " + std::to_string(want_p) + " parameter(s), got " +
                      std::to_string(nparams));
    }
    if (nargs != want_q) {
      fail_at(at, "gate '" + name + "' takes " + std::to_string(want_q) + " qubit(s), got " +
                      std::to_string(nargs));
    }
    return def;
  }

  void gate_statement() {
    const Token name_tok = cur_;
    const std::string name = expect_id("a gate name");
    std::vector<Expr> pexprs;
    if (at_sym("(")) {
      advance();
      if (!at_sym(")")) {
        pexprs.push_back(expression(nullptr));
        while (at_sym(",")) {
          advance();
          pexprs.push_back(expression(nullptr));
        }
      }
      expect_sym(")");
    }
    std::vector<Arg> args{qubit_arg()};
    while (at_sym(",")) {
      advance();
      args.push_back(qubit_arg());
    }
    expect_sym(";");
    const std::shared_ptr<const GateDef> def = resolve_gate(
        name, static_cast<int>(pexprs.size()), static_cast<int>(args.size()), name_tok);
    if (def && !def->opaque.empty()) {
      fail_at(name_tok, "opaque gate '" + def->opaque + "' has no definition to simulate");
    }
    std::vector<double> params;
    for (const Expr& e : pexprs) params.push_back(eval(e, {}, source_));
    const int n = broadcast_count(args, name_tok);
    const std::int64_t adds = saturating_mul(def ? def->gates : 1, n);
    const auto emitted = static_cast<std::int64_t>(ops_.size());
    if (adds > limits_.max_gates - emitted) {
      fail_at(name_tok,
              "the program expands to more than the limit of " + std::to_string(limits_.max_gates) +
                  " gates (" + std::to_string(emitted) + " before this statement, which adds " +
                  (adds >= kManyGates ? std::string("more than 2^62") : std::to_string(adds)) +
                  "); raise it with --max-gates");
    }
    for (int j = 0; j < n; ++j) {
      std::vector<int> qubits;
      for (const Arg& a : args) qubits.push_back(a.whole ? a.first + j : a.first);
      std::set<int> distinct(qubits.begin(), qubits.end());
      if (distinct.size() != qubits.size()) {
        fail_at(name_tok, "gate '" + name + "' is applied to the same qubit twice");
      }
      for (int q : qubits) {
        if (measured_.count(q)) {
          fail_at(name_tok, "gate '" + name + "' on " + qubit_names_[q] +
                                " after it was measured: mid-circuit measurement is not supported");
        }
      }
      expand(name, def.get(), params, qubits);
    }
  }

  // Appends the gates of one application. Definitions that expand to no gate
  // are skipped, so the work is bounded by the gates emitted times the nesting.
  void expand(const std::string& name, const GateDef* def, const std::vector<double>& params,
              const std::vector<int>& qubits) {
    if (!def) {
      if (name == "U") return emit(GateId::U3, 0, params, qubits);
      if (name == "CX") return emit(GateId::CNOT, 0, params, qubits);
      const Builtin& b = builtins_qelib1().at(name);
      return emit(b.gate, b.extra_controls, params, qubits);
    }
    if (def->gates == 0) return;
    for (const GateCall& call : def->body) {
      std::vector<double> p;
      for (const Expr& e : call.params) p.push_back(eval(e, params, def->source));
      std::vector<int> q;
      for (int a : call.args) q.push_back(qubits[a]);
      expand(call.name, call.def.get(), p, q);
    }
  }

  void emit(GateId g, int extra_controls, const std::vector<double>& params,
            const std::vector<int>& qubits) {
    Operation op;
    op.gate = g;
    op.controls.assign(qubits.begin(), qubits.begin() + extra_controls);
    op.wires.assign(qubits.begin() + extra_controls, qubits.end());
    for (double v : params) {
      op.params.push_back(ParamExpr::ref(static_cast<int>(angles_.size())));
      angles_.push_back(v);
    }
    ops_.push_back(std::move(op));
  }

  std::string source_;
  Lexer lex_;
  Token cur_;
  QasmLimits limits_;
  int depth_ = 0;  // of the expression being parsed
  bool qelib1_ = false;
  bool in_prelude_ = false;
  std::map<std::string, std::pair<int, int>> qregs_;  // name -> (first qubit, size)
  std::map<std::string, int> cregs_;
  std::map<std::string, std::shared_ptr<const GateDef>> defs_;
  int num_qubits_ = 0;
  std::vector<std::string> qubit_names_;
  std::vector<Operation> ops_;
  std::vector<double> angles_;
  std::set<int> measured_;
  std::vector<int> measured_order_;
};

}  // namespace

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
