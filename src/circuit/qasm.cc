#include "circuit/qasm.h"

#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <numbers>
#include <set>
#include <sstream>

#include "core/error.h"

namespace qmlsim {
namespace {

// ---- Lexer -----------------------------------------------------------------

enum class Tok { Id, Real, Int, String, Sym, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  double num = 0;
  int line = 1, col = 1;
};

std::vector<Token> lex(std::string_view s, const std::string& source) {
  std::vector<Token> out;
  int line = 1, col = 1;
  std::size_t i = 0;
  auto advance = [&](std::size_t n) {
    for (std::size_t k = 0; k < n; ++k, ++i) {
      if (s[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
  };
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      advance(1);
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') advance(1);
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const int l0 = line, c0 = col;
      advance(2);
      while (i + 1 < s.size() && !(s[i] == '*' && s[i + 1] == '/')) advance(1);
      if (i + 1 >= s.size()) throw_at({source, l0, c0}, "unterminated comment");
      advance(2);
      continue;
    }
    Token t;
    t.line = line;
    t.col = col;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      t.kind = Tok::Id;
      t.text = std::string(s.substr(i, j - i));
      advance(j - i);
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      std::size_t j = i;
      bool real = false;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      if (j < s.size() && s[j] == '.') {
        real = true;
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        std::size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
          real = true;
          j = k;
          while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
        }
      }
      t.text = std::string(s.substr(i, j - i));
      if (t.text == ".") throw_at({source, line, col}, "unexpected character '.'");
      t.kind = real ? Tok::Real : Tok::Int;
      t.num = std::strtod(t.text.c_str(), nullptr);
      advance(j - i);
    } else if (c == '"') {
      std::size_t j = i + 1;
      while (j < s.size() && s[j] != '"' && s[j] != '\n') ++j;
      if (j >= s.size() || s[j] != '"') throw_at({source, line, col}, "unterminated string");
      t.kind = Tok::String;
      t.text = std::string(s.substr(i + 1, j - i - 1));
      advance(j - i + 1);
    } else {
      static const char* two[] = {"->", "=="};
      t.kind = Tok::Sym;
      for (const char* sym : two) {
        if (s.substr(i, 2) == sym) t.text = sym;
      }
      if (t.text.empty()) {
        if (std::string_view(";,()[]{}+-*/^").find(c) == std::string_view::npos) {
          throw_at({source, line, col}, std::string("unexpected character '") + c + "'");
        }
        t.text = std::string(1, c);
      }
      advance(t.text.size());
    }
    out.push_back(std::move(t));
  }
  Token end;
  end.line = line;
  end.col = col;
  out.push_back(end);
  return out;
}

// ---- Expressions -------------------------------------------------------------

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;
struct Expr {
  enum Kind { Num, Param, Neg, Bin, Fn } kind = Num;
  double value = 0;  // Num
  int param = 0;     // Param: index into the gate's parameter list
  char op = 0;       // Bin: + - * / ^
  std::string fn;    // Fn
  ExprPtr a, b;
  int line = 0, col = 0;
};

// ---- Gates --------------------------------------------------------------------

struct GateCall {
  std::string name;
  std::vector<ExprPtr> params;
  std::vector<int> args;  // indices into the definition's qubit arguments
  int line = 0, col = 0;
};

struct GateDef {
  std::vector<std::string> params, args;
  std::vector<GateCall> body;
  std::string source;  // where it was defined (the built-in prelude or the file)
  bool opaque = false;
};

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

// qelib1.inc gates with no single table row, defined as in qelib1.inc itself.
constexpr std::string_view kQelib1Prelude = R"(
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
  QasmParser(std::string_view text, std::string source)
      : source_(std::move(source)), toks_(lex(text, source_)) {}

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
  const Token& cur() const { return toks_[pos_]; }
  bool at(Tok k) const { return cur().kind == k; }
  bool at_sym(std::string_view s) const { return cur().kind == Tok::Sym && cur().text == s; }
  bool at_id(std::string_view s) const { return cur().kind == Tok::Id && cur().text == s; }
  [[noreturn]] void fail_at(const Token& t, const std::string& msg) const {
    throw_at({source_, t.line, t.col}, msg);
  }
  [[noreturn]] void fail(const std::string& msg) const { fail_at(cur(), msg); }
  std::string describe_cur() const {
    if (at(Tok::End)) return "end of file";
    if (at(Tok::String)) return "\"" + cur().text + "\"";
    return "'" + cur().text + "'";
  }
  void expect_sym(std::string_view s) {
    if (!at_sym(s)) fail("expected '" + std::string(s) + "', found " + describe_cur());
    ++pos_;
  }
  std::string expect_id(const char* what) {
    if (!at(Tok::Id)) fail(std::string("expected ") + what + ", found " + describe_cur());
    return toks_[pos_++].text;
  }
  int expect_int(const char* what) {
    if (!at(Tok::Int)) fail(std::string("expected ") + what + ", found " + describe_cur());
    if (cur().num > 1e9) fail(std::string(what) + " is too large");
    return static_cast<int>(toks_[pos_++].num);
  }

  void parse_header() {
    if (!at_id("OPENQASM")) fail("expected 'OPENQASM 2.0;' as the first statement");
    ++pos_;
    if (!at(Tok::Real) && !at(Tok::Int)) fail("expected a version number after OPENQASM");
    if (cur().num != 2.0) fail("only OpenQASM 2.0 is supported, found version " + cur().text);
    ++pos_;
    expect_sym(";");
  }

  void statement() {
    const Token& t = cur();
    if (t.kind != Tok::Id) fail("expected a statement, found " + describe_cur());
    const std::string& w = t.text;
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
    ++pos_;
    if (!at(Tok::String)) fail("expected a file name in quotes after include");
    const Token name = cur();
    ++pos_;
    expect_sym(";");
    if (name.text != "qelib1.inc") {
      fail_at(name, "cannot include \"" + name.text + "\": only \"qelib1.inc\" is supported");
    }
    if (qelib1_) return;
    qelib1_ = true;
    // The prelude's gates are parsed by a nested parser sharing no state but definitions.
    QasmParser prelude("OPENQASM 2.0;" + std::string(kQelib1Prelude), "qelib1.inc (built in)");
    prelude.qelib1_ = true;
    prelude.parse_header();
    while (!prelude.at(Tok::End)) prelude.statement();
    for (auto& [k, v] : prelude.defs_) defs_[k] = v;
  }

  void reg_decl(bool quantum) {
    ++pos_;
    const Token name_tok = cur();
    const std::string name = expect_id("a register name");
    expect_sym("[");
    const Token size_tok = cur();
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

  std::vector<std::string> id_list(const char* what) {
    std::vector<std::string> out{expect_id(what)};
    while (at_sym(",")) {
      ++pos_;
      out.push_back(expect_id(what));
    }
    return out;
  }

  void gate_decl(bool opaque) {
    ++pos_;
    const Token name_tok = cur();
    const std::string name = expect_id("a gate name");
    if (defs_.count(name) || (qelib1_ && builtins_qelib1().count(name)) || name == "U" ||
        name == "CX") {
      fail_at(name_tok, "gate '" + name + "' is already defined");
    }
    GateDef def;
    def.source = source_;
    def.opaque = opaque;
    if (at_sym("(")) {
      ++pos_;
      if (!at_sym(")")) def.params = id_list("a parameter name");
      expect_sym(")");
    }
    def.args = id_list("a qubit argument name");
    check_unique(def.params, name_tok, "parameter");
    check_unique(def.args, name_tok, "qubit argument");
    if (opaque) {
      expect_sym(";");
      defs_[name] = std::move(def);
      return;
    }
    expect_sym("{");
    while (!at_sym("}")) {
      if (at(Tok::End)) fail("unterminated body of gate '" + name + "': expected '}'");
      if (at_id("barrier")) {  // barriers inside gate bodies have no effect on simulation
        while (!at_sym(";") && !at(Tok::End)) ++pos_;
        expect_sym(";");
        continue;
      }
      def.body.push_back(gate_call_in_body(def));
    }
    ++pos_;
    defs_[name] = std::move(def);
  }

  void check_unique(const std::vector<std::string>& names, const Token& at, const char* what) {
    std::set<std::string> seen;
    for (const std::string& n : names)
      if (!seen.insert(n).second) fail_at(at, std::string(what) + " '" + n + "' appears twice");
  }

  GateCall gate_call_in_body(const GateDef& def) {
    GateCall call;
    call.line = cur().line;
    call.col = cur().col;
    const Token name_tok = cur();
    call.name = expect_id("a gate name");
    if (call.name == "measure" || call.name == "reset" || call.name == "if") {
      fail_at(name_tok, "'" + call.name + "' is not allowed inside a gate definition");
    }
    if (at_sym("(")) {
      ++pos_;
      if (!at_sym(")")) {
        call.params.push_back(expr(&def.params));
        while (at_sym(",")) {
          ++pos_;
          call.params.push_back(expr(&def.params));
        }
      }
      expect_sym(")");
    }
    while (true) {
      const Token arg = cur();
      const std::string a = expect_id("a qubit argument");
      if (at_sym("[")) fail("indexing is not allowed inside a gate definition");
      int idx = -1;
      for (std::size_t i = 0; i < def.args.size(); ++i)
        if (def.args[i] == a) idx = static_cast<int>(i);
      if (idx < 0) fail_at(arg, "unknown qubit argument '" + a + "'");
      call.args.push_back(idx);
      if (!at_sym(",")) break;
      ++pos_;
    }
    expect_sym(";");
    check_gate_signature(call.name, static_cast<int>(call.params.size()),
                         static_cast<int>(call.args.size()), name_tok);
    return call;
  }

  // -- expressions: sum := prod {(+|-) prod}; prod := unary {(*|/) unary};
  //    unary := - unary | power; power := primary [^ unary]
  ExprPtr expr(const std::vector<std::string>* params) {
    ExprPtr e = product(params);
    while (at_sym("+") || at_sym("-")) e = binary(e, params, &QasmParser::product);
    return e;
  }
  ExprPtr product(const std::vector<std::string>* params) {
    ExprPtr e = unary(params);
    while (at_sym("*") || at_sym("/")) e = binary(e, params, &QasmParser::unary);
    return e;
  }
  ExprPtr binary(ExprPtr lhs, const std::vector<std::string>* params,
                 ExprPtr (QasmParser::*next)(const std::vector<std::string>*)) {
    auto e = std::make_shared<Expr>();
    e->kind = Expr::Bin;
    e->op = cur().text[0];
    e->line = cur().line;
    e->col = cur().col;
    ++pos_;
    e->a = std::move(lhs);
    e->b = (this->*next)(params);
    return e;
  }
  ExprPtr unary(const std::vector<std::string>* params) {
    if (at_sym("-") || at_sym("+")) {
      const bool neg = at_sym("-");
      ++pos_;
      ExprPtr inner = unary(params);
      if (!neg) return inner;
      auto e = std::make_shared<Expr>();
      e->kind = Expr::Neg;
      e->a = std::move(inner);
      return e;
    }
    ExprPtr base = primary(params);
    if (at_sym("^")) return binary(base, params, &QasmParser::unary);
    return base;
  }
  ExprPtr primary(const std::vector<std::string>* params) {
    auto e = std::make_shared<Expr>();
    e->line = cur().line;
    e->col = cur().col;
    if (at(Tok::Real) || at(Tok::Int)) {
      e->kind = Expr::Num;
      e->value = cur().num;
      ++pos_;
      return e;
    }
    if (at_sym("(")) {
      ++pos_;
      ExprPtr inner = expr(params);
      expect_sym(")");
      return inner;
    }
    if (!at(Tok::Id)) fail("expected an expression, found " + describe_cur());
    const std::string name = cur().text;
    const Token name_tok = cur();
    ++pos_;
    if (name == "pi") {
      e->kind = Expr::Num;
      e->value = std::numbers::pi;
      return e;
    }
    static const std::set<std::string> fns = {"sin", "cos", "tan", "exp", "ln", "sqrt"};
    if (fns.count(name)) {
      e->kind = Expr::Fn;
      e->fn = name;
      expect_sym("(");
      e->a = expr(params);
      expect_sym(")");
      return e;
    }
    if (params) {
      for (std::size_t i = 0; i < params->size(); ++i) {
        if ((*params)[i] == name) {
          e->kind = Expr::Param;
          e->param = static_cast<int>(i);
          return e;
        }
      }
    }
    fail_at(name_tok, "unknown identifier '" + name + "' in expression");
  }

  double eval(const Expr& e, const std::vector<double>& env, const std::string& src) const {
    double v = 0;
    switch (e.kind) {
      case Expr::Num:
        return e.value;
      case Expr::Param:
        return env[e.param];
      case Expr::Neg:
        return -eval(*e.a, env, src);
      case Expr::Fn: {
        const double x = eval(*e.a, env, src);
        if (e.fn == "sin")
          v = std::sin(x);
        else if (e.fn == "cos")
          v = std::cos(x);
        else if (e.fn == "tan")
          v = std::tan(x);
        else if (e.fn == "exp")
          v = std::exp(x);
        else if (e.fn == "ln")
          v = std::log(x);
        else
          v = std::sqrt(x);
        break;
      }
      case Expr::Bin: {
        const double a = eval(*e.a, env, src), b = eval(*e.b, env, src);
        switch (e.op) {
          case '+':
            v = a + b;
            break;
          case '-':
            v = a - b;
            break;
          case '*':
            v = a * b;
            break;
          case '/':
            if (b == 0) throw_at({src, e.line, e.col}, "division by zero");
            v = a / b;
            break;
          default:
            v = std::pow(a, b);
            break;
        }
        break;
      }
    }
    if (!std::isfinite(v)) throw_at({src, e.line, e.col}, "expression is not a finite number");
    return v;
  }

  // -- statements on qubits
  struct Arg {
    int first = 0, size = 1;  // a whole register (size > 1 or declared so) or one qubit
    bool whole = false;
    Token tok;
  };

  Arg qubit_arg() {
    Arg a;
    a.tok = cur();
    const std::string name = expect_id("a qubit register");
    auto it = qregs_.find(name);
    if (it == qregs_.end()) {
      if (cregs_.count(name)) fail_at(a.tok, "'" + name + "' is a classical register");
      fail_at(a.tok, "unknown quantum register '" + name + "'");
    }
    return indexed(a, it->second, name);
  }

  Arg indexed(Arg a, std::pair<int, int> reg, const std::string& name) {
    a.first = reg.first;
    a.size = reg.second;
    a.whole = true;
    if (at_sym("[")) {
      ++pos_;
      const Token idx_tok = cur();
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

  // Calls fn(j) for each broadcast index j over the arguments.
  template <class Fn>
  void broadcast(const std::vector<Arg>& args, const Token& at, Fn&& fn) {
    int n = 1;
    for (const Arg& a : args) {
      if (!a.whole) continue;
      if (n != 1 && a.size != n) {
        fail_at(at, "registers of different sizes (" + std::to_string(n) + " and " +
                        std::to_string(a.size) + ") cannot be combined");
      }
      n = a.size;
    }
    for (int j = 0; j < n; ++j) fn(j);
  }

  void barrier() {
    ++pos_;
    qubit_arg();
    while (at_sym(",")) {
      ++pos_;
      qubit_arg();
    }
    expect_sym(";");
  }

  void measure() {
    const Token kw = cur();
    ++pos_;
    Arg q = qubit_arg();
    expect_sym("->");
    const Token ct = cur();
    const std::string cname = expect_id("a classical register");
    auto it = cregs_.find(cname);
    if (it == cregs_.end()) fail_at(ct, "unknown classical register '" + cname + "'");
    Arg c = indexed(Arg{0, 1, false, ct}, {0, it->second}, cname);
    expect_sym(";");
    if (q.size != c.size) {
      fail_at(kw, "measure needs registers of equal size (" + std::to_string(q.size) + " and " +
                      std::to_string(c.size) + ")");
    }
    for (int j = 0; j < q.size; ++j) {
      if (measured_.insert(q.first + j).second) measured_order_.push_back(q.first + j);
    }
  }

  void check_gate_signature(const std::string& name, int nparams, int nargs, const Token& at) {
    int want_p = 0, want_q = 0;
    if (name == "U") {
      want_p = 3, want_q = 1;
    } else if (name == "CX") {
      want_p = 0, want_q = 2;
    } else if (auto it = defs_.find(name); it != defs_.end()) {
      want_p = static_cast<int>(it->second.params.size());
      want_q = static_cast<int>(it->second.args.size());
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
  }

  void gate_statement() {
    const Token name_tok = cur();
    const std::string name = expect_id("a gate name");
    std::vector<ExprPtr> pexprs;
    if (at_sym("(")) {
      ++pos_;
      if (!at_sym(")")) {
        pexprs.push_back(expr(nullptr));
        while (at_sym(",")) {
          ++pos_;
          pexprs.push_back(expr(nullptr));
        }
      }
      expect_sym(")");
    }
    std::vector<Arg> args{qubit_arg()};
    while (at_sym(",")) {
      ++pos_;
      args.push_back(qubit_arg());
    }
    expect_sym(";");
    check_gate_signature(name, static_cast<int>(pexprs.size()), static_cast<int>(args.size()),
                         name_tok);
    std::vector<double> params;
    for (const ExprPtr& e : pexprs) params.push_back(eval(*e, {}, source_));
    broadcast(args, name_tok, [&](int j) {
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
      apply(name, params, qubits, name_tok, 0);
    });
  }

  void apply(const std::string& name, const std::vector<double>& params,
             const std::vector<int>& qubits, const Token& at, int depth) {
    if (depth > 64) fail_at(at, "gate definitions nest too deeply");
    if (name == "U") return emit(GateId::U3, 0, params, qubits);
    if (name == "CX") return emit(GateId::CNOT, 0, params, qubits);
    if (auto it = defs_.find(name); it != defs_.end()) {
      const GateDef& def = it->second;
      if (def.opaque) fail_at(at, "opaque gate '" + name + "' has no definition to simulate");
      for (const GateCall& call : def.body) {
        std::vector<double> p;
        for (const ExprPtr& e : call.params) p.push_back(eval(*e, params, def.source));
        std::vector<int> q;
        for (int a : call.args) q.push_back(qubits[a]);
        apply(call.name, p, q, at, depth + 1);
      }
      return;
    }
    const Builtin& b = builtins_qelib1().at(name);
    emit(b.gate, b.extra_controls, params, qubits);
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
  std::vector<Token> toks_;
  std::size_t pos_ = 0;
  bool qelib1_ = false;
  std::map<std::string, std::pair<int, int>> qregs_;  // name -> (first qubit, size)
  std::map<std::string, int> cregs_;
  std::map<std::string, GateDef> defs_;
  int num_qubits_ = 0;
  std::vector<std::string> qubit_names_;
  std::vector<Operation> ops_;
  std::vector<double> angles_;
  std::set<int> measured_;
  std::vector<int> measured_order_;
};

}  // namespace

QasmProgram parse_qasm(std::string_view text, const std::string& source) {
  return QasmParser(text, source).parse();
}

QasmProgram read_qasm_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot read file");
  std::ostringstream s;
  s << f.rdbuf();
  if (f.bad()) throw Error(path + ": cannot read file");
  return parse_qasm(s.str(), path);
}

}  // namespace qmlsim
