// Angle expressions of the OpenQASM reader: postfix programs evaluated with an
// explicit stack (no recursion), their reverse-mode gradient, and substitution of
// gate parameters (internal to the reader, circuit/qasm*.cc).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qmlsim {

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
  double constant_phase = 0;  // the global phase: this plus the sum of `phases`
  std::vector<Expr> phases;
};
namespace qasm {

inline bool unary_fn(ExprOp::Kind k) { return k == ExprOp::Neg || k >= ExprOp::Sin; }
inline bool binary_op(ExprOp::Kind k) { return k >= ExprOp::Add && k <= ExprOp::Pow; }

// The functions of the language: sin cos tan exp ln sqrt (both), arcsin arccos
// arctan (OpenQASM 3).
const std::map<std::string, ExprOp::Kind, std::less<>>& functions(int version);
// Named constants of the language: pi (both), tau and euler (OpenQASM 3).
std::optional<double> named_constant(std::string_view name, int version);
// a op b (b unused by unary operations); a domain error is located at op.
double apply_op(const ExprOp& op, double a, double b, const std::string& src);
// Evaluates `e` with gate parameter values `params` and input values `x`;
// every intermediate value must be finite ("src:line:col: ..." at the
// operation that is not). `values`, if given, receives each operation's value.
double eval(const Expr& e, std::span<const double> params, std::span<const double> x,
            const std::string& src, std::vector<double>* values = nullptr);
// Reverse mode: adds seed * d e / d x[k] to grad[k] for every input in `e`.
void accumulate_gradient(const Expr& e, std::span<const double> x, double seed,
                         const std::string& src, std::span<double> grad);
bool has_inputs(const Expr& e);
// `e` with parameter references replaced by `args` (each an expression of the
// inputs), folded to one number when it does not depend on an input.
Expr substitute(const Expr& e, const std::vector<Expr>& args, const std::string& src);
Expr number(double v);
// k * e, folded when e is a number.
Expr scaled(Expr e, double k);

}  // namespace qasm
}  // namespace qmlsim
