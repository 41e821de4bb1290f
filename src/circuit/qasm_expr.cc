// Angle expressions: evaluation, reverse mode and substitution (qasm_expr.h), and
// the parser's expression grammar (QasmParser::expression .. primary).
#include "circuit/qasm_expr.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "circuit/qasm_parser.h"
#include "core/error.h"

namespace qmlsim::qasm {

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
            const std::string& src, std::vector<double>* values) {
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

Expr QasmParser::expression(const std::vector<std::string>* params, bool inputs) {
  Expr out;
  depth_ = 0;
  params_ = params;
  inputs_allowed_ = inputs;
  sum(out);
  return out;
}

ExprOp QasmParser::op_here(ExprOp::Kind k) const {
  ExprOp op;
  op.kind = k;
  op.line = cur_.line;
  op.col = cur_.col;
  return op;
}

void QasmParser::sum(Expr& out) {
  product(out);
  while (at_sym("+") || at_sym("-")) {
    const ExprOp op = op_here(at_sym("+") ? ExprOp::Add : ExprOp::Sub);
    advance();
    product(out);
    out.push_back(op);
  }
}

void QasmParser::product(Expr& out) {
  unary(out);
  while (at_sym("*") || at_sym("/")) {
    const ExprOp op = op_here(at_sym("*") ? ExprOp::Mul : ExprOp::Div);
    advance();
    unary(out);
    out.push_back(op);
  }
}

void QasmParser::unary(Expr& out) {
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

void QasmParser::primary(Expr& out) {
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
  if (version_ == 3 && (name_tok.text == "true" || name_tok.text == "false")) {
    op.value = name_tok.text == "true" ? 1 : 0;
    out.push_back(op);
    return;
  }
  if (auto a = const_arrays_.find(name_tok.text); a != const_arrays_.end()) {
    if (!at_sym("[")) fail_at(name_tok, "array '" + a->first + "' needs an index");
    advance();
    const Token idx_tok = cur_;
    const int idx = literal_index();
    expect_sym("]");
    if (idx >= static_cast<int>(a->second.size())) {
      fail_at(idx_tok, "index " + std::to_string(idx) + " is out of range for array '" + a->first +
                           "' of length " + std::to_string(a->second.size()));
    }
    op.value = a->second[static_cast<std::size_t>(idx)];
    out.push_back(op);
    return;
  }
  if (auto l = locals_.find(name_tok.text); l != locals_.end()) {
    if (!inputs_allowed_) {
      fail_at(name_tok, "'" + name_tok.text + "' depends on an input and cannot be used here");
    }
    if (out.size() + l->second.size() > kMaxAngleOps) {  // arguments of arguments grow fast
      fail_at(name_tok, "an angle's expression grows beyond " + std::to_string(kMaxAngleOps) +
                            " operations through subroutine arguments");
    }
    out.insert(out.end(), l->second.begin(), l->second.end());
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

}  // namespace qmlsim::qasm
