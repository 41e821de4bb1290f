// Static control flow of OpenQASM 3, unrolled as it is read: `for` loops over
// constant ranges, sets and arrays, and `def` subroutines with qubit and
// angle arguments and no result. A body's tokens are read once and parsed again
// for every iteration or call, so each statement in it keeps its own checks and
// locations, and the expansion limits count what it emits.
#include <algorithm>
#include <cmath>

#include "circuit/qasm_parser.h"

namespace qmlsim::qasm {

namespace {

constexpr std::size_t kMaxBlockTokens = std::size_t{1} << 21;  // about 128 MiB of tokens

}  // namespace

void QasmParser::replay_budget_exceeded() const {
  fail_at(stmt_, "loops and subroutine calls read more than " + std::to_string(replay_budget()) +
                     " tokens in all (16 per gate of the --max-gates limit of " +
                     std::to_string(limits_.max_gates) + "); raise it with --max-gates");
}

std::shared_ptr<const QasmParser::Block> QasmParser::capture_block(const char* what) {
  auto b = std::make_shared<Block>();
  const Token open = cur_;
  // Inside a running block, cur_ is tokens[pos - 1] of the innermost replay.
  Replay* const outer = replay_.empty() ? nullptr : &replay_.back();
  b->tokens = outer ? outer->block->tokens : std::make_shared<std::vector<Token>>();
  bool empty = true;
  auto take = [&] {
    if (b->last - b->first >= kMaxBlockTokens) {
      fail_at(open, std::string("a ") + what + " longer than " + std::to_string(kMaxBlockTokens) +
                        " tokens is not supported");
    }
    if (!outer) b->tokens->push_back(cur_);
    const std::size_t at_index = outer ? outer->pos - 1 : b->tokens->size() - 1;
    if (empty) b->first = at_index;
    b->last = at_index + 1;
    empty = false;
    advance();
  };
  if (at_sym("{")) {
    advance();
    for (int depth = 1;;) {
      if (at(Tok::End)) fail_at(open, std::string("unterminated ") + what + ": expected '}'");
      if (at_sym("{")) ++depth;
      if (at_sym("}") && --depth == 0) break;
      take();
    }
    b->end.line = cur_.line;
    b->end.col = cur_.col;
    advance();
    return b;
  }
  for (int depth = 0;;) {  // one statement: up to its ';', or the '}' that closes a scope in it
    if (at(Tok::End)) fail_at(open, std::string("unterminated ") + what + ": expected ';'");
    if (at_sym("}") && depth == 0) fail("expected ';', found '}'");
    if (at_sym("{")) ++depth;
    const bool last = (at_sym(";") && depth == 0) || (at_sym("}") && --depth == 0);
    take();
    if (last) break;
  }
  b->end.line = cur_.line;
  b->end.col = cur_.col;
  return b;
}

void QasmParser::run_block(const Block& b) {
  const Token after = cur_;
  const std::size_t scope = block_names_.size();
  ++block_depth_;
  replay_.push_back({&b, b.first});
  advance();
  while (!at(Tok::End) && !returning_) statement();
  replay_.pop_back();
  --block_depth_;
  for (std::size_t k = scope; k < block_names_.size(); ++k) {  // its constants end with it
    consts_.erase(block_names_[k]);
    const_arrays_.erase(block_names_[k]);
  }
  block_names_.resize(scope);
  cur_ = after;
}

std::vector<double> QasmParser::loop_values() {
  std::vector<double> values;
  if (at_sym("[")) {  // [a:b] or [a:step:b], both ends included
    advance();
    auto bound = [&](const char* what) {
      const Token t = cur_;
      const double v = constant();
      if (v != std::floor(v))
        fail_at(t, std::string("a range's ") + what + " must be a whole number");
      if (std::abs(v) > 1e15) fail_at(t, std::string("a range's ") + what + " is too large");
      return v;
    };
    const double a = bound("start");
    expect_sym(":");
    double step = 1;
    double b = bound("end");
    if (at_sym(":")) {
      advance();
      step = b;
      b = bound("end");
    }
    expect_sym("]");
    if (step == 0) fail_at(stmt_, "a range's step cannot be 0");
    const double count = std::max(0.0, std::floor((b - a) / step) + 1);
    if (count > static_cast<double>(limits_.max_gates)) {
      fail_at(stmt_, "the loop runs " + std::to_string(static_cast<std::int64_t>(count)) +
                         " iterations, more than the limit of " +
                         std::to_string(limits_.max_gates) + "; raise it with --max-gates");
    }
    for (double i = 0; i < count; ++i) values.push_back(a + i * step);
    return values;
  }
  if (at_sym("{")) {  // a set of values, in the order written
    advance();
    values.push_back(constant());
    while (at_sym(",")) {
      advance();
      values.push_back(constant());
    }
    expect_sym("}");
    return values;
  }
  if (auto a = at(Tok::Id) ? const_arrays_.find(cur_.text) : const_arrays_.end();
      a != const_arrays_.end()) {
    advance();
    return a->second;
  }
  fail("expected a range [a:b], a set {a, b, ...} or an array after 'in', found " + describe_cur());
}

void QasmParser::for_loop() {
  const Token kw = cur_;
  advance();
  if (at_id("int") || at_id("uint") || at_id("float") || at_id("angle") || at_id("bool")) {
    scalar_type("a loop variable");
  }
  const Token name_tok = cur_;
  const std::string name = expect_id("a loop variable");
  if (qregs_.count(name) || cregs_.count(name) || input_index(name) || const_arrays_.count(name) ||
      subs_.count(name) || keyword(name, 3) || functions(3).count(name)) {
    fail_at(name_tok, "'" + name + "' is already declared or reserved");
  }
  if (!at_id("in")) fail("expected 'in' after the loop variable, found " + describe_cur());
  advance();
  const std::vector<double> values = loop_values();
  const std::shared_ptr<const Block> body = capture_block("loop body");
  loop_iterations_ = saturating_add(loop_iterations_, static_cast<std::int64_t>(values.size()));
  if (loop_iterations_ > limits_.max_gates) {
    fail_at(kw, "loops run more than the limit of " + std::to_string(limits_.max_gates) +
                    " iterations in all; raise it with --max-gates");
  }
  const auto shadowed =
      consts_.find(name) != consts_.end() ? std::optional<double>(consts_.at(name)) : std::nullopt;
  const auto emitted = [this] {
    return static_cast<std::int64_t>(ops_.size() + input_phases_.size());
  };
  const std::int64_t before = emitted();
  for (std::size_t i = 0; i < values.size() && !returning_; ++i) {
    consts_[name] = values[i];
    run_block(*body);
    const std::int64_t per = emitted() - before;
    const auto rest = static_cast<std::int64_t>(values.size() - 1);
    if (i == 0 && per > 0 && saturating_mul(per, rest) > limits_.max_gates - emitted()) {
      fail_at(kw, "the loop expands to more than the limit of " +
                      std::to_string(limits_.max_gates) + " gates (its first iteration adds " +
                      std::to_string(per) + ", and " + std::to_string(rest) +
                      " more follow); raise it with --max-gates");
    }
  }
  if (shadowed) {
    consts_[name] = *shadowed;
  } else {
    consts_.erase(name);
  }
}

void QasmParser::def_decl() {
  advance();
  const Token name_tok = cur_;
  const std::string name = expect_id("a subroutine name");
  if (declared(name) || keyword(name, 3) || functions(3).count(name) || builtins().count(name)) {
    fail_at(name_tok, "'" + name + "' is already declared or reserved");
  }
  auto sub = std::make_shared<Subroutine>();
  if (!at_sym("(")) {
    fail("expected '(' after the subroutine name, found " + describe_cur() +
         " (arguments are declared in the parentheses: def " + name + "(qubit q) { ... })");
  }
  advance();
  while (!at_sym(")")) {
    Subroutine::Param p;
    if (at_id("qubit")) {
      advance();
      p.qubit = true;
      if (at_sym("[")) {
        advance();
        const Token size_tok = cur_;
        p.size = expect_int("a register size");
        if (p.size <= 0) fail_at(size_tok, "register size must be positive");
        expect_sym("]");
      }
    } else if (at_id("const") || at_id("mutable") || at_id("array") || at_id("readonly")) {
      fail("array arguments of subroutines are not supported");
    } else {
      scalar_type("an argument");
    }
    const Token arg_tok = cur_;
    p.name = expect_id("an argument name");
    if (keyword(p.name, 3) || functions(3).count(p.name) || named_constant(p.name, 3)) {
      fail_at(arg_tok, "'" + p.name + "' is a reserved word");
    }
    for (const Subroutine::Param& q : sub->params)
      if (q.name == p.name) fail_at(arg_tok, "argument '" + p.name + "' appears twice");
    sub->params.push_back(std::move(p));
    if (!at_sym(",")) break;
    advance();
  }
  expect_sym(")");
  if (at_sym("->")) {
    fail("subroutine '" + name +
         "' returns a value, which is not supported: qmlsim runs subroutines of gates");
  }
  if (at(Tok::Id)) {
    fail("expected '{' to start the body of subroutine '" + name +
         "' (qubit arguments are declared in the parentheses: def " + name + "(qubit q) { ... })");
  }
  if (!at_sym("{")) fail("expected '{' to start the body of subroutine '" + name + "'");
  sub->body = capture_block("subroutine body");
  subs_[name] = std::move(sub);
}

void QasmParser::call_subroutine(const Subroutine& s) {
  const Token name_tok = cur_;
  advance();
  expect_sym("(");
  const auto want = s.params.size();
  auto count_error = [&](std::size_t got) {
    fail_at(name_tok, "subroutine '" + name_tok.text + "' takes " + std::to_string(want) +
                          " argument(s), got " + std::to_string(got) +
                          (got < want ? "" : " or more"));
  };
  std::vector<Arg> qubits(want);
  std::vector<Expr> values(want);
  for (std::size_t i = 0; i < want; ++i) {
    if (at_sym(")")) count_error(i);
    if (i > 0) expect_sym(",");
    const Subroutine::Param& p = s.params[i];
    const Token arg_tok = cur_;
    if (!p.qubit) {
      values[i] = substitute(expression(nullptr, true), {}, source_);
      continue;
    }
    qubits[i] = qubit_arg();
    if (qubits[i].size != p.size) {
      fail_at(arg_tok, "argument '" + p.name + "' of subroutine '" + name_tok.text + "' takes " +
                           std::to_string(p.size) + " qubit(s), got " +
                           std::to_string(qubits[i].size));
    }
    for (std::size_t j = 0; j < i; ++j) {
      const Arg& o = qubits[j];
      if (s.params[j].qubit && qubits[i].first < o.first + o.size &&
          o.first < qubits[i].first + qubits[i].size) {
        fail_at(arg_tok, "the same qubit is passed to subroutine '" + name_tok.text + "' twice");
      }
    }
  }
  if (!at_sym(")")) count_error(want + 1);
  advance();
  expect_sym(";");
  if (call_depth_ >= kMaxGateNesting) {
    fail_at(name_tok,
            "subroutine calls nest more than " + std::to_string(kMaxGateNesting) + " levels deep");
  }
  // The arguments shadow every global of the same name for the call.
  const auto qregs = qregs_;
  const auto consts = consts_;
  const auto arrays = const_arrays_;
  const auto locals = locals_;
  for (std::size_t i = 0; i < want; ++i) {
    const std::string& name = s.params[i].name;
    qregs_.erase(name);
    consts_.erase(name);
    const_arrays_.erase(name);
    locals_.erase(name);
    if (s.params[i].qubit) {
      qregs_[name] = {qubits[i].first, qubits[i].size};
    } else if (values[i].size() == 1 && values[i][0].kind == ExprOp::Num) {
      consts_[name] = values[i][0].value;
    } else {
      locals_[name] = std::move(values[i]);
    }
  }
  ++call_depth_;
  run_block(*s.body);
  --call_depth_;
  returning_ = false;
  qregs_ = qregs;
  consts_ = consts;
  const_arrays_ = arrays;
  locals_ = locals;
}

void QasmParser::return_statement() {
  if (call_depth_ == 0) fail("'return' outside a subroutine");
  advance();
  if (!at_sym(";")) fail("returning a value is not supported: qmlsim runs subroutines of gates");
  advance();
  returning_ = true;
}

}  // namespace qmlsim::qasm
