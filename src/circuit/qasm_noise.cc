// Braket's noise pragmas (qasm.h): `#pragma braket noise NAME(args) qubits`.
#include <set>

#include "circuit/channels.h"
#include "circuit/qasm_parser.h"
#include "core/error.h"

namespace qmlsim::qasm {

void QasmParser::pragma() {
  const Token where = stmt_;
  advance();
  const auto on_line = [&] { return !at(Tok::End) && cur_.line == where.line; };
  if (!on_line() || !at_id("braket"))
    fail_at(where, "unsupported pragma: qmlsim reads '#pragma braket noise ...'");
  advance();
  if (!on_line() || !at_id("noise"))
    fail_at(where, "unsupported pragma: of Braket's pragmas qmlsim reads 'noise' alone");
  advance();
  const Token name_tok = cur_;
  const std::string name = on_line() ? expect_id("a noise channel") : "";
  const std::optional<ChannelId> id = channel_by_name(name);
  if (!id) fail_at(name_tok, "unknown noise channel '" + name + "'");
  Operation op;
  op.channel = *id;
  expect_sym("(");
  if (*id == ChannelId::kraus) {
    op.kraus = std::make_shared<const std::vector<Matrix>>(kraus_matrices());
  } else if (!at_sym(")")) {
    op.params.push_back(ParamExpr::literal(constant()));
    while (at_sym(",")) {
      advance();
      op.params.push_back(ParamExpr::literal(constant()));
    }
  }
  expect_sym(")");
  if (!on_line()) fail_at(where, "the noise pragma names no qubits");
  const std::vector<Arg> args = qubit_args();
  if (on_line()) fail("expected the end of the pragma's line, found " + describe_cur());
  const int n = broadcast_count(args, where);
  for (int j = 0; j < n; ++j) {
    op.wires.clear();
    for (const Arg& a : args) op.wires.push_back(a.whole ? a.first + j : a.first);
    for (int q : op.wires) {
      if (measured_.count(q)) make_dynamic();
      touched_.insert(q);
    }
    try {
      Circuit check(num_qubits_);  // the channel's arity, ranges and Kraus set
      check.add(op);
    } catch (const Error& e) {
      fail_at(where, e.what());
    }
    if (static_cast<std::int64_t>(ops_.size()) >= limits_.max_gates)
      fail_at(where, "the program expands to more than the limit of " +
                         std::to_string(limits_.max_gates) + " gates; raise it with --max-gates");
    push_op(op);
  }
}

std::vector<Matrix> QasmParser::kraus_matrices() {
  std::vector<Matrix> out;
  do {
    if (!out.empty()) advance();  // the ',' between matrices
    const Token start = cur_;
    expect_sym("[");
    Matrix m;
    std::size_t rows = 0, cols = 0;
    do {
      if (rows) advance();
      expect_sym("[");
      std::size_t row = 0;
      do {
        if (row) advance();
        m.push_back(complex_number());
        ++row;
      } while (at_sym(","));
      expect_sym("]");
      if (rows && row != cols) fail_at(start, "the rows of a Kraus matrix differ in length");
      cols = row;
      ++rows;
    } while (at_sym(","));
    expect_sym("]");
    if (rows != cols) fail_at(start, "a Kraus matrix must be square");
    out.push_back(std::move(m));
  } while (at_sym(","));
  return out;
}

cplx QasmParser::complex_number() {
  cplx sum = 0;
  bool first = true;
  while (first || at_sym("+") || at_sym("-")) {
    double sign = 1;
    if (at_sym("+") || at_sym("-")) {
      sign = at_sym("-") ? -1 : 1;
      advance();
    }
    if (!at(Tok::Int) && !at(Tok::Real)) fail("expected a number, found " + describe_cur());
    const double v = sign * cur_.num;
    advance();
    if (at_id("im")) {
      advance();
      sum += cplx(0, v);
    } else {
      sum += v;
    }
    first = false;
  }
  return sum;
}

}  // namespace qmlsim::qasm
