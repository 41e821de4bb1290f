// The OpenQASM 2.0 / 3 parser (internal to the reader): one class, its members
// defined by topic in qasm_statements.cc (statements and declarations),
// qasm_expr.cc (the expression grammar) and qasm_expand.cc (gate calls expanded
// into the circuit: modifiers, inverses, powers, controls).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "circuit/circuit.h"
#include "circuit/qasm.h"
#include "circuit/qasm_expr.h"
#include "circuit/qasm_lexer.h"
#include "circuit/qasm_library.h"
#include "core/error.h"

namespace qmlsim::qasm {

constexpr int kMaxExprDepth = 256;   // nested parentheses, functions, signs and powers
constexpr int kMaxGateNesting = 64;  // gate definitions calling gate definitions

class QasmParser {
 public:
  QasmParser(std::string_view text, std::string source, const QasmLimits& limits)
      : source_(std::move(source)), lex_(text, source_), limits_(limits) {
    advance();
  }

  QasmProgram parse();

 private:
  // -- token helpers. Tokens come from the lexer, or, while a loop or
  // subroutine body runs, from that body's tokens (read once, replayed).
  void advance() {
    if (replay_.empty()) {
      cur_ = lex_.next();
      return;
    }
    if (++replayed_ > replay_budget()) replay_budget_exceeded();
    Replay& r = replay_.back();
    cur_ = r.pos < r.block->last ? (*r.block->tokens)[r.pos++] : r.block->end;
  }
  // Tokens that loops and calls may read again, in all: 16 per gate of
  // `max_gates` (a nest of loops that emits nothing still ends).
  std::int64_t replay_budget() const { return saturating_mul(limits_.max_gates, 16); }
  [[noreturn]] void replay_budget_exceeded() const;
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
    if (at(Tok::End)) return replay_.empty() ? "end of file" : "the end of the block";
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
  int expect_int(const char* what);
  // An index inside an expression: in OpenQASM 2.0 an integer literal or
  // constant; in OpenQASM 3 a constant expression, parsed nested in the
  // enclosing one (its depth counts toward kMaxExprDepth).
  int literal_index();
  // A whole number in [0, 1e9] (an index, a count), or a located error.
  int whole_number(double v, const Token& t, const char* what) const;

  // A constant expression (no inputs, no gate parameters), evaluated.
  double constant() { return eval(expression(nullptr, false), {}, {}, source_); }

  void parse_header();

  void statement();

  void include();

  const std::map<std::string, Builtin, std::less<>>& builtins() const {
    return version_ == 2 ? builtins_qelib1() : builtins_stdgates();
  }
  bool reserved_by_library(std::string_view gate) const {
    return version_ == 2 ? spec_qelib1_gate(gate)
                         : builtins_stdgates().count(gate) > 0 || gate == "cu";
  }

  // -- declarations
  void declare_register(const Token& name_tok, const std::string& name, const Token& size_tok,
                        int size, bool quantum);

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
  void scalar_type(const char* what);

  void input_decl();

  // `const T name = value;` and, in OpenQASM 3, `T name = value;` and
  // `[const] array[T, n] name = {v, ...};`: named constant values. (qmlsim has
  // no classical assignment, so an initialised variable never changes.)
  void const_decl(bool is_const);

  // Whether a name is taken by a register, input, constant, gate or subroutine.
  bool declared(const std::string& name) const {
    return qregs_.count(name) || cregs_.count(name) || input_index(name) || consts_.count(name) ||
           const_arrays_.count(name) || subs_.count(name) || defs_.count(name);
  }

  // -- static control flow (OpenQASM 3), unrolled as it is read (qasm_control.cc).
  // A block's tokens are read once and parsed again for every iteration or call.
  // A block read from the file owns its tokens; a block nested in it, captured
  // while the outer one runs, is a range of the same tokens, so a nest of
  // blocks costs memory in proportion to the file, not to its depth.
  struct Block {
    std::shared_ptr<std::vector<Token>> tokens;  // shared with the blocks nested in it
    std::size_t first = 0, last = 0;             // this block's: tokens[first, last)
    Token end;                                   // reported as "the end of the block"
  };
  struct Replay {
    const Block* block;
    std::size_t pos = 0;  // into block->tokens
  };
  // `{ statements }`, or one statement, read into a Block.
  std::shared_ptr<const Block> capture_block(const char* what);
  // Parses the block's statements, then continues after the statement that ran it.
  void run_block(const Block& b);
  // `for [type] name in [a:b] | [a:step:b] | {v, ...} | array { ... }` (ranges include b).
  void for_loop();
  std::vector<double> loop_values();
  // `def name(qubit a, qubit[n] r, angle[32] t, float x, ...) { ... }`: no return value.
  void def_decl();
  struct Subroutine {
    struct Param {
      std::string name;
      bool qubit = false;
      int size = 1;  // qubits of a qubit argument
    };
    std::vector<Param> params;
    std::shared_ptr<const Block> body;
  };
  void call_subroutine(const Subroutine& s);
  void return_statement();
  // Statements that declare global things may not appear in a loop or subroutine.
  // (Noise pragmas may: in an `if` body a channel is conditioned as a gate is.)
  static bool top_level_only(std::string_view w) {
    return w == "include" || w == "qreg" || w == "creg" || w == "gate" || w == "opaque" ||
           w == "qubit" || w == "bit" || w == "input" || w == "def";
  }

  const QasmInput* input_index(const std::string& name) const {
    for (const QasmInput& in : inputs_)
      if (in.name == name) return &in;
    return nullptr;
  }

  std::vector<std::string> id_list(const char* what, std::vector<Token>* toks);

  // A new gate may take the name of a built-in beyond the specification's
  // qelib1.inc, or of a prelude gate; not of a gate of the file or the library.
  void check_new_gate_name(const std::string& name, const Token& at) const;

  void gate_decl(bool opaque);

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
  GateCall gate_call(const std::vector<std::string>* params, const std::vector<std::string>* args);

  void modifiers(GateCall& call, const std::vector<std::string>* params);

  // -- expressions, emitted in postfix order:
  //    sum := prod {(+|-) prod}; prod := unary {(*|/) unary};
  //    unary := (-|+) unary | power; power := primary [(^ in 2.0 | ** in 3) unary];
  //    primary := number | constant | param | input | input[i] | fn ( sum ) | ( sum )
  // Parentheses, functions, signs and powers nest at most kMaxExprDepth deep.
  // `params`: a gate body's parameters; `inputs`: whether inputs may appear.
  Expr expression(const std::vector<std::string>* params, bool inputs);
  void nest() {
    if (++depth_ > kMaxExprDepth) {
      fail("expression nests more than " + std::to_string(kMaxExprDepth) +
           " levels deep (parentheses, functions, signs and powers)");
    }
  }
  ExprOp op_here(ExprOp::Kind k) const;
  void sum(Expr& out);
  void product(Expr& out);
  void unary(Expr& out);
  void primary(Expr& out);

  // -- statements on qubits
  struct Arg {
    int first = 0, size = 1;  // a whole register, a slice q[a:b], or one qubit
    bool whole = false;       // a register or slice of several qubits (broadcasts)
  };

  Arg qubit_arg();

  Arg indexed(std::pair<int, int> reg, const std::string& name);

  std::vector<Arg> qubit_args();

  // How many times a statement applies: the common size of its whole-register
  // arguments (which must all be equal, size 1 included), or 1 if there are none.
  int broadcast_count(const std::vector<Arg>& args, const Token& at) const;

  // `reset` of qubits no gate has touched yet is a no-op (they are |0>), as
  // at the start of many programs; after a gate it is a reset operation.
  void reset();

  void barrier() {
    advance();
    qubit_args();
    expect_sym(";");
  }

  // Measures q into classical bits c (c.first < 0: into none, OpenQASM 3's
  // `measure q;`).
  void record_measurement(const Token& kw, const Arg& q, const Arg& c);

  Arg classical_arg();

  void measure() {  // measure q -> c;  (OpenQASM 3 also: measure q;)
    const Token kw = cur_;
    advance();
    const Arg q = qubit_arg();
    if (version_ == 3 && at_sym(";")) {
      advance();
      return record_measurement(kw, q, Arg{-1, q.size, q.whole});
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
  std::shared_ptr<const GateDef> resolve_gate(const GateCall& call, int nargs) const;

  void gate_statement();

  // `#pragma braket noise NAME(args) qubits` (one line, no semicolon): the
  // channel of that name (circuit/channels.h) on those qubits, or on each
  // qubit of a register. Other pragmas are refused.
  void pragma();
  std::vector<Matrix> kraus_matrices();  // kraus's arguments: [[a, b], [c, d]], ...
  cplx complex_number();                 // a real, an imaginary `bim`, or `a + bim`

  // -- expansion. A context carries the controls and inversion of the calls
  // that led here; `params` are expressions of the inputs (numbers if constant).
  struct Context {
    std::vector<int> controls;
    bool inverse = false;
  };

  // One call: negated controls wrapped in X, then gate^exponent under the controls.
  void apply_call(const GateCall& call, const std::vector<Expr>& params,
                  const std::vector<int>& qubits, const Context& ctx);

  void apply_target(const GateCall& call, const std::vector<Expr>& params,
                    const std::vector<int>& qubits, const Context& ctx);

  // The table gate's intrinsic controls moved to `controls`: (base gate, wires).
  static GateId to_base(GateId g, std::vector<int>& controls, std::vector<int>& wires) {
    const GateInfo& info = gate_info(g);
    controls.insert(controls.end(), wires.begin(), wires.begin() + info.num_controls);
    wires.erase(wires.begin(), wires.begin() + info.num_controls);
    return info.base;
  }

  // Gates whose parameters are all angles of one generator: g(t)^k = g(k t).
  static bool rotation_like(GateId g);

  // g^-1 under `controls`, by the gate table's inverse rule.
  void emit_inverse(GateId g, const std::vector<int>& controls, const std::vector<int>& wires,
                    const std::vector<Expr>& p);

  // gate^k for a non-integer k, on the principal branch.
  void fractional_power(const GateCall& call, const std::vector<Expr>& p,
                        const std::vector<int>& qubits, std::vector<int> controls, double k);

  // A global phase: nothing alone; on |1...1> of the controls when controlled.
  void emit_phase(const Expr& theta, std::vector<int> controls) {
    if (controls.empty()) return add_global_phase(theta);
    const int target = controls.back();
    controls.pop_back();
    emit(GateId::PhaseShift, controls, {target}, {theta});
  }

  void emit(GateId g, const std::vector<int>& controls, const std::vector<int>& wires,
            const std::vector<Expr>& params);
  // An uncontrolled phase e^{i theta}: kept as the program's global phase.
  void add_global_phase(const Expr& theta);

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
  std::map<std::string, std::pair<int, int>> cregs_;  // name -> (first bit, size)
  std::map<std::string, double> consts_;  // constants, loop variables, constant arguments
  std::map<std::string, std::vector<double>> const_arrays_;
  std::map<std::string, Expr> locals_;  // a subroutine's angle arguments that depend on inputs
  std::map<std::string, std::shared_ptr<const Subroutine>> subs_;
  std::vector<Replay> replay_;
  int block_depth_ = 0;  // loop bodies and subroutine calls being run
  // Constants declared in the blocks being run, innermost last: each block's
  // end with it (declared names are new, so ending one is erasing it).
  std::vector<std::string> block_names_;
  int call_depth_ = 0;  // subroutine calls being run
  bool returning_ = false;
  std::int64_t loop_iterations_ = 0;
  std::int64_t replayed_ = 0;       // tokens read from loop and subroutine bodies
  double phase_ = 0;                // the global phase's constant part
  std::vector<Expr> input_phases_;  // its parts that depend on inputs
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

  // -- dynamic circuits (qasm_dynamic.cc)
  // `if (condition) body [else body]` (OpenQASM 3) and `if (c == n) op;`
  // (2.0): the body's operations run under the condition's alternatives.
  void if_statement();
  // A condition over classical bits in postfix order (CondOp), evaluated for
  // every assignment of the bits it reads.
  struct CondOp {
    enum Kind {
      Num,
      Bit,
      Reg,
      Not,
      BitNot,
      And,
      Or,
      BitAnd,
      BitOr,
      BitXor,
      Eq,
      Ne,
      Lt,
      Le,
      Gt,
      Ge
    };
    Kind kind = Num;
    std::uint64_t value = 0;  // Num
    int first = 0, size = 1;  // Bit (size 1), Reg
  };
  std::vector<CondOp> condition_expression();
  void cond_binary(std::vector<CondOp>& out, int level);
  void cond_unary(std::vector<CondOp>& out);
  // The assignments of `bits` (bit j of an assignment = bits[j]) where e is
  // true, and where it is false.
  std::pair<std::vector<std::uint64_t>, std::vector<std::uint64_t>> satisfying(
      const std::vector<CondOp>& e, const std::vector<int>& bits, const Token& at) const;
  // The current alternatives refined by `bits` taking one of `values`.
  std::vector<Condition> refine(const std::vector<int>& bits,
                                const std::vector<std::uint64_t>& values, const Token& at) const;
  // Appends op once per current alternative (unconditionally when none).
  void push_op(Operation op);
  // Marks the program dynamic (a measurement or reset that matters, or an
  // `if`); then every measurement stays in the circuit.
  void make_dynamic() { dynamic_ = true; }

  std::vector<Condition> conditions_;  // mutually exclusive; empty: unconditional
  bool never_ = false;                 // the current branch's condition can never hold
  bool dynamic_ = false;
  int num_clbits_ = 0;
  std::vector<std::pair<std::string, int>> creg_order_;
  std::set<int> written_bits_;  // classical bits a measurement has written so far
  // Each `if` and the bits it reads: at least one must be written by some
  // measurement of the program (bits start at 0, so a condition may come
  // before the measurement, as in an unrolled repeat-until-success loop).
  std::vector<std::pair<Token, std::vector<int>>> conditions_read_;
  // A measurement into a bit the enclosing `if` reads: the engine checks each
  // operation's condition when it runs, so it is allowed only as the body's
  // last operation (copies for other alternatives then re-measure the same
  // qubit: no change), once, and without an `else`.
  struct MeasureIntoCondition {
    Token at;
    std::size_t end = 0;  // ops_.size() after it
    bool set = false;
  };
  MeasureIntoCondition into_condition_;
  void check_conditions_read() const;
};

}  // namespace qmlsim::qasm
