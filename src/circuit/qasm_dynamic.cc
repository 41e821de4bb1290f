// Dynamic circuits in OpenQASM: `if` on measured bits (2.0's `if (c == n) op;`
// and 3's `if (condition) { ... } else { ... }` with bit and register
// comparisons, logical and bitwise operators, casts to bool, int and uint). A condition is
// evaluated at parse time for every assignment of the classical bits it reads; the body's
// operations carry the satisfying assignments as circuit Conditions (one, a
// negated one, or one copy per assignment, which are mutually exclusive).
#include <algorithm>

#include "circuit/qasm_parser.h"

namespace qmlsim::qasm {

namespace {

constexpr int kMaxConditionBits = 12;
constexpr std::size_t kMaxAlternatives = 4096;

}  // namespace

void QasmParser::check_conditions_read() const {
  for (const auto& [kw, bits] : conditions_read_)
    if (std::none_of(bits.begin(), bits.end(), [&](int b) { return written_bits_.count(b) > 0; }))
      fail_at(kw, "the condition reads classical bits that no measurement in the program writes");
}

void QasmParser::push_op(Operation op) {
  if (never_) return;
  if (conditions_.empty()) {
    ops_.push_back(std::move(op));
    return;
  }
  if (static_cast<std::int64_t>(ops_.size() + conditions_.size()) > limits_.max_gates)
    fail_at(stmt_, "the program expands to more than the limit of " +
                       std::to_string(limits_.max_gates) + " gates; raise it with --max-gates");
  for (const Condition& c : conditions_) {
    Operation o = op;
    o.condition = c;
    ops_.push_back(std::move(o));
  }
}

std::vector<QasmParser::CondOp> QasmParser::condition_expression() {
  std::vector<CondOp> out;
  nest();
  cond_binary(out, 0);
  --depth_;
  return out;
}

// Levels, loosest first: || && | ^ & and the comparisons (one, not chained).
void QasmParser::cond_binary(std::vector<CondOp>& out, int level) {
  static const std::vector<std::pair<std::string, CondOp::Kind>> levels[] = {
      {{"||", CondOp::Or}},
      {{"&&", CondOp::And}},
      {{"|", CondOp::BitOr}},
      {{"^", CondOp::BitXor}},
      {{"&", CondOp::BitAnd}},
      {{"==", CondOp::Eq},
       {"!=", CondOp::Ne},
       {"<", CondOp::Lt},
       {"<=", CondOp::Le},
       {">", CondOp::Gt},
       {">=", CondOp::Ge}}};
  if (level == 6) return cond_unary(out);
  const std::size_t lhs = out.size();
  cond_binary(out, level + 1);
  for (;;) {
    const auto op = std::find_if(levels[level].begin(), levels[level].end(),
                                 [&](const auto& o) { return at_sym(o.first); });
    if (op == levels[level].end()) return;
    const Token at = cur_;
    advance();
    const std::size_t rhs = out.size();
    cond_binary(out, level + 1);
    // A register compared with a value it cannot hold is a mistake, not `false`.
    const bool reg_num = rhs - lhs == 1 && out.size() - rhs == 1 && out[lhs].kind == CondOp::Reg &&
                         out[rhs].kind == CondOp::Num;
    if (reg_num && level == 5 && out[lhs].size < 64 && out[rhs].value >> out[lhs].size != 0)
      fail_at(at, "a register of " + std::to_string(out[lhs].size) + " bit(s) cannot hold " +
                      std::to_string(out[rhs].value));
    out.push_back(CondOp{op->second});
    if (level == 5) return;
  }
}

void QasmParser::cond_unary(std::vector<CondOp>& out) {
  if (at_sym("!") || at_sym("~")) {
    const CondOp::Kind k = at_sym("!") ? CondOp::Not : CondOp::BitNot;
    advance();
    nest();
    cond_unary(out);
    --depth_;
    out.push_back(CondOp{k});
    return;
  }
  if (at_sym("(")) {
    advance();
    nest();
    cond_binary(out, 0);
    --depth_;
    expect_sym(")");
    return;
  }
  if (at_id("bool") || at_id("int") || at_id("uint")) {  // casts: bool(c[0]), int(c)
    const bool to_bool = at_id("bool");
    advance();
    if (!to_bool && at_sym("[")) {  // int[8](c)
      advance();
      expect_int("a width");
      expect_sym("]");
    }
    expect_sym("(");
    nest();
    cond_binary(out, 0);
    --depth_;
    expect_sym(")");
    if (to_bool) {
      out.push_back(CondOp{CondOp::Not});
      out.push_back(CondOp{CondOp::Not});
    }
    return;
  }
  if (at(Tok::Int)) {
    CondOp n;
    n.value = static_cast<std::uint64_t>(expect_int("a value"));
    out.push_back(n);
    return;
  }
  if (at_id("true") || at_id("false")) {
    CondOp n;
    n.value = at_id("true");
    advance();
    out.push_back(n);
    return;
  }
  if (!at(Tok::Id) || !cregs_.count(cur_.text))
    fail("expected a classical bit or register, a value, '!' or '(' in the condition, found " +
         describe_cur());
  const Arg a = classical_arg();
  CondOp r;
  r.kind = a.whole ? CondOp::Reg : CondOp::Bit;
  r.first = a.first;
  r.size = a.size;
  out.push_back(r);
}

std::pair<std::vector<std::uint64_t>, std::vector<std::uint64_t>> QasmParser::satisfying(
    const std::vector<CondOp>& e, const std::vector<int>& bits, const Token& at) const {
  if (static_cast<int>(bits.size()) > kMaxConditionBits)
    fail_at(at, "a condition on more than " + std::to_string(kMaxConditionBits) +
                    " classical bits is not supported");
  std::pair<std::vector<std::uint64_t>, std::vector<std::uint64_t>> out;
  for (std::uint64_t a = 0; a < std::uint64_t{1} << bits.size(); ++a) {
    auto bit = [&](int b) -> std::uint64_t {
      const auto j = std::lower_bound(bits.begin(), bits.end(), b) - bits.begin();
      return a >> j & 1;
    };
    std::vector<std::pair<std::uint64_t, int>> stack;  // (value, width)
    for (const CondOp& op : e) {
      if (op.kind == CondOp::Num) {
        stack.emplace_back(op.value, 64);
        continue;
      }
      if (op.kind == CondOp::Bit || op.kind == CondOp::Reg) {
        std::uint64_t v = 0;
        for (int j = 0; j < op.size; ++j) v |= bit(op.first + j) << j;
        stack.emplace_back(v, op.size);
        continue;
      }
      const auto [y, wy] = stack.back();
      if (op.kind == CondOp::Not || op.kind == CondOp::BitNot) {
        const std::uint64_t mask = wy >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << wy) - 1;
        stack.back() = {op.kind == CondOp::Not ? y == 0 : ~y & mask,
                        op.kind == CondOp::Not ? 1 : wy};
        continue;
      }
      stack.pop_back();
      auto& [x, wx] = stack.back();
      const int w = std::max(wx, wy);
      switch (op.kind) {
        case CondOp::And:
          x = x && y, wx = 1;
          break;
        case CondOp::Or:
          x = x || y, wx = 1;
          break;
        case CondOp::BitAnd:
          x &= y, wx = w;
          break;
        case CondOp::BitOr:
          x |= y, wx = w;
          break;
        case CondOp::BitXor:
          x ^= y, wx = w;
          break;
        case CondOp::Eq:
          x = x == y, wx = 1;
          break;
        case CondOp::Ne:
          x = x != y, wx = 1;
          break;
        case CondOp::Lt:
          x = x < y, wx = 1;
          break;
        case CondOp::Le:
          x = x <= y, wx = 1;
          break;
        case CondOp::Gt:
          x = x > y, wx = 1;
          break;
        default:
          x = x >= y, wx = 1;
          break;
      }
    }
    (stack.back().first ? out.first : out.second).push_back(a);
  }
  return out;
}

std::vector<Condition> QasmParser::refine(const std::vector<int>& bits,
                                          const std::vector<std::uint64_t>& values,
                                          const Token& at) const {
  const std::uint64_t all = std::uint64_t{1} << bits.size();
  if (conditions_.empty()) {
    if (values.size() == 1) return {Condition{bits, values[0], false}};
    if (values.size() + 1 == all) {  // all but one: a negated condition
      std::uint64_t missing = 0;
      while (std::find(values.begin(), values.end(), missing) != values.end()) ++missing;
      return {Condition{bits, missing, true}};
    }
    std::vector<Condition> out;
    for (std::uint64_t v : values) out.push_back(Condition{bits, v, false});
    return out;
  }
  std::vector<Condition> outer;  // the enclosing alternatives, negated ones spelled out
  for (const Condition& c : conditions_) {
    if (!c.negated) {
      outer.push_back(c);
      continue;
    }
    for (std::uint64_t v = 0; v < std::uint64_t{1} << c.bits.size(); ++v)
      if (v != c.value) outer.push_back(Condition{c.bits, v, false});
  }
  std::vector<Condition> out;
  for (const Condition& o : outer) {
    for (std::uint64_t v : values) {
      Condition m = o;
      bool consistent = true;
      for (std::size_t j = 0; j < bits.size() && consistent; ++j) {
        const std::uint64_t b = v >> j & 1;
        const auto k = std::find(m.bits.begin(), m.bits.end(), bits[j]) - m.bits.begin();
        if (k < static_cast<std::ptrdiff_t>(m.bits.size())) {
          consistent = (m.value >> k & 1) == b;
        } else {
          m.value |= b << m.bits.size();
          m.bits.push_back(bits[j]);
        }
      }
      if (consistent) out.push_back(std::move(m));
    }
    if (out.size() > kMaxAlternatives)
      fail_at(at, "nested conditions expand to more than " + std::to_string(kMaxAlternatives) +
                      " alternatives");
  }
  return out;
}

void QasmParser::if_statement() {
  const Token kw = cur_;
  advance();
  expect_sym("(");
  std::vector<CondOp> e;
  if (version_ == 2) {  // if (c == n) or, as Qiskit writes it, if (c[i] == n)
    if (!at(Tok::Id) || !cregs_.count(cur_.text))
      fail("expected a classical register in the condition, found " + describe_cur());
    e = {CondOp{}};
    const Arg a = classical_arg();
    e[0].kind = a.whole ? CondOp::Reg : CondOp::Bit;
    e[0].first = a.first;
    e[0].size = a.size;
    if (!at_sym("==")) fail("expected '==' in the condition, found " + describe_cur());
    advance();
    const Token vt = cur_;
    CondOp v;
    v.value = static_cast<std::uint64_t>(expect_int("the value compared with"));
    if (a.size < 64 && v.value >> a.size != 0)
      fail_at(vt, "a register of " + std::to_string(a.size) + " bit(s) cannot hold " +
                      std::to_string(v.value));
    e.push_back(v);
    e.push_back(CondOp{CondOp::Eq});
  } else {
    e = condition_expression();
  }
  expect_sym(")");
  std::vector<int> bits;
  for (const CondOp& op : e)
    for (int j = 0; op.kind == CondOp::Bit || op.kind == CondOp::Reg ? j < op.size : false; ++j)
      bits.push_back(op.first + j);
  std::sort(bits.begin(), bits.end());
  bits.erase(std::unique(bits.begin(), bits.end()), bits.end());
  if (bits.empty()) fail_at(kw, "the condition reads no classical bit");
  conditions_read_.emplace_back(kw, bits);  // checked against the measurements at the end
  const auto [yes, no] = satisfying(e, bits, kw);
  make_dynamic();
  const std::vector<Condition> outer = conditions_;
  const bool outer_never = never_;
  const MeasureIntoCondition outer_into = into_condition_;
  auto branch = [&](const std::vector<std::uint64_t>& values, bool has_else, auto&& body) {
    conditions_ = values.empty() ? std::vector<Condition>{} : refine(bits, values, kw);
    never_ = outer_never || conditions_.empty();
    into_condition_ = {};
    body();
    if (into_condition_.set && (ops_.size() != into_condition_.end || has_else))
      fail_at(into_condition_.at,
              "measuring into a classical bit its 'if' reads is supported only as the last "
              "operation of an 'if' without 'else'");
    conditions_ = outer;
    never_ = outer_never;
    into_condition_ = outer_into;
  };
  if (version_ == 2) {  // one quantum operation
    if (!at(Tok::Id) || (keyword(cur_.text, 2) && !at_id("measure") && !at_id("reset")))
      fail("expected a gate, 'measure' or 'reset' after the condition, found " + describe_cur());
    branch(yes, false, [&] { statement(); });
    return;
  }
  const std::shared_ptr<const Block> then_body = capture_block("if body");
  std::shared_ptr<const Block> else_body;
  if (at_id("else")) {
    advance();
    if (at_id("if"))
      fail("'else if' is not supported: write the second 'if' in braces, else { if (...) ... }");
    else_body = capture_block("else body");
  }
  branch(yes, else_body != nullptr, [&] { run_block(*then_body); });
  if (else_body) branch(no, false, [&] { run_block(*else_body); });
}

}  // namespace qmlsim::qasm
