// The statements of OpenQASM 2.0 and 3: the version line, include, registers,
// inputs and constants, gate definitions, qubit arguments, reset, barrier and
// measurement.
#include <algorithm>
#include <cmath>

#include "circuit/qasm_parser.h"

namespace qmlsim::qasm {

QasmProgram QasmParser::parse() {
  parse_header();
  while (!at(Tok::End)) statement();
  check_conditions_read();
  QasmProgram out;
  if (dynamic_ && num_clbits_ > kMaxClbits)
    throw Error(source_ + ": a dynamic circuit with " + std::to_string(num_clbits_) +
                " classical bits: at most " + std::to_string(kMaxClbits) + " are supported");
  out.circuit = Circuit(num_qubits_, dynamic_ ? num_clbits_ : 0);
  for (Operation& op : ops_) {  // a static circuit's measurements are its readout
    if (dynamic_ || op.instruction != Instruction::measure) out.circuit.add(std::move(op));
  }
  out.clbit_registers = std::move(creg_order_);
  out.angles = std::move(angles_);
  out.measured = std::move(measured_order_);
  out.qubit_names = std::move(qubit_names_);
  out.inputs = std::move(inputs_);
  out.global_phase = phase_;
  if (!input_angles_.empty() || !input_phases_.empty()) {
    auto exprs = std::make_shared<QasmAngleExprs>();
    exprs->source = source_;
    exprs->slots = std::move(input_angles_);
    exprs->constant_phase = phase_;
    exprs->phases = std::move(input_phases_);
    out.input_angles = std::move(exprs);
  }
  return out;
}

int QasmParser::whole_number(double v, const Token& t, const char* what) const {
  if (v > 1e9) fail_at(t, std::string(what) + " is too large");
  if (v < 0 || v != std::floor(v)) fail_at(t, std::string(what) + " must be a whole number");
  return static_cast<int>(v);
}

int QasmParser::expect_int(const char* what) {
  const Token t = cur_;
  if (version_ == 3) return whole_number(constant(), t, what);
  if (!at(Tok::Int)) fail(std::string("expected ") + what + ", found " + describe_cur());
  const double v = cur_.num;
  advance();
  return whole_number(v, t, what);
}

int QasmParser::literal_index() {
  const Token t = cur_;
  if (version_ == 3) {  // nested in the enclosing expression: its state is kept
    const auto* params = params_;
    const bool inputs = inputs_allowed_;
    params_ = nullptr;
    inputs_allowed_ = false;
    Expr e;
    nest();
    sum(e);
    --depth_;
    params_ = params;
    inputs_allowed_ = inputs;
    return whole_number(eval(e, {}, {}, source_), t, "an index");
  }
  double v = -1;
  if (at(Tok::Int)) {
    v = cur_.num;
  } else if (auto c = at(Tok::Id) ? consts_.find(cur_.text) : consts_.end(); c != consts_.end()) {
    v = c->second;
  } else {
    fail("expected an index (a whole number or an integer constant), found " + describe_cur());
  }
  advance();
  return whole_number(v, t, "an index");
}

// The version line is optional in OpenQASM 3 (and required in 2.0): a file
// without one is OpenQASM 3.
void QasmParser::parse_header() {
  if (!at_id("OPENQASM")) {
    version_ = 3;
    return;
  }
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
  if (version_ == 2) lex_.refuse_leading_zeros();  // before the lexer reads past ';'
  expect_sym(";");
}

void QasmParser::statement() {
  if (!at(Tok::Id)) fail("expected a statement, found " + describe_cur());
  stmt_ = cur_;
  const std::string w = cur_.text;
  if (block_depth_ > 0 && top_level_only(w)) {
    fail("'" + w + "' may appear only at the top level, not in a loop or subroutine body");
  }
  if (w == "#pragma") return pragma();
  if (w == "include") return include();
  if (w == "qreg" || w == "creg") return reg_decl(w == "qreg");
  if (w == "gate") return gate_decl(false);
  if (w == "barrier") return barrier();
  if (w == "measure") return measure();
  if (w == "reset") return reset();
  if (w == "OPENQASM") fail("OPENQASM may appear only once, at the start");
  if (version_ == 2) {
    if (w == "opaque") return gate_decl(true);
    if (w == "if") return if_statement();
    return gate_statement();
  }
  if (w == "qubit" || w == "bit") return typed_register(w == "qubit");
  if (w == "input") return input_decl();
  if (w == "const") return const_decl(true);
  if (w == "int" || w == "uint" || w == "float" || w == "angle" || w == "bool" || w == "array") {
    return const_decl(false);
  }
  if (w == "for") return for_loop();
  if (w == "if") return if_statement();
  if (w == "else") fail("'else' without an 'if'");
  if (w == "def") return def_decl();
  if (w == "return") return return_statement();
  if (auto s = subs_.find(w); s != subs_.end()) return call_subroutine(*s->second);
  if (w == "opaque") fail("'opaque' is not part of OpenQASM 3");
  if (auto why = unsupported_v3(w)) {
    fail("'" + w + "' is not supported (" + *why +
         "): qmlsim runs circuits of gates and "
         "terminal measurements");
  }
  if (cregs_.count(w)) return measure_assignment();
  gate_statement();
}

void QasmParser::include() {
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

void QasmParser::declare_register(const Token& name_tok, const std::string& name,
                                  const Token& size_tok, int size, bool quantum) {
  if (qregs_.count(name) || cregs_.count(name) || input_index(name) || consts_.count(name) ||
      const_arrays_.count(name) || subs_.count(name)) {
    fail_at(name_tok, "'" + name + "' is already declared");
  }
  if (version_ == 3 && keyword(name, 3)) fail_at(name_tok, "'" + name + "' is a reserved word");
  if (size <= 0) fail_at(size_tok, "register size must be positive");
  if (!quantum) {
    cregs_[name] = {num_clbits_, size};
    creg_order_.emplace_back(name, size);
    num_clbits_ += size;
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

void QasmParser::scalar_type(const char* what) {
  const Token t = cur_;
  const std::string type = expect_id("a type");
  if (type != "float" && type != "angle" && type != "int" && type != "uint" && type != "bool") {
    fail_at(t, std::string(what) + " of type '" + type +
                   "' is not supported (float, angle, int, uint or bool)");
  }
  if (type != "bool" && at_sym("[")) {
    advance();
    expect_int("a bit width");
    expect_sym("]");
  }
  last_type_ = type;
}

void QasmParser::input_decl() {
  advance();
  QasmInput in;
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
  const Token name_tok = cur_;
  in.name = expect_id("an input name");
  expect_sym(";");
  if (declared(in.name) || keyword(in.name, 3) || functions(3).count(in.name)) {
    fail_at(name_tok, "'" + in.name + "' is already declared or reserved");
  }
  in.offset = num_input_values_;
  num_input_values_ += in.size;
  inputs_.push_back(std::move(in));
}

void QasmParser::const_decl(bool is_const) {
  if (is_const) advance();
  int length = -1;  // an array's, or -1 for a scalar
  if (at_id("array")) {
    advance();
    expect_sym("[");
    scalar_type("an array");
    expect_sym(",");
    const Token n_tok = cur_;
    length = expect_int("an array length");
    if (length <= 0) fail_at(n_tok, "an array length must be positive");
    if (at_sym(",")) fail("multi-dimensional arrays are not supported");
    expect_sym("]");
  } else if (is_const && at(Tok::Id) && !keyword(cur_.text, 3)) {
    last_type_ = "float";  // `const name = value;`, as early OpenQASM 3 drafts wrote it
  } else {
    scalar_type("a constant");
  }
  const std::string type = last_type_;
  const Token name_tok = cur_;
  const std::string name = expect_id(is_const ? "a constant name" : "a variable name");
  if (declared(name) || keyword(name, 3) || functions(3).count(name)) {
    fail_at(name_tok, "'" + name + "' is already declared or reserved");
  }
  if (!at_sym("=")) {
    fail("'" + name +
         "' has no value: qmlsim reads classical values only as constants (declared with a "
         "constant value and never assigned)");
  }
  advance();
  auto value = [&] {
    const Token t = cur_;
    double v = constant();
    if ((type == "int" || type == "uint") && v != std::floor(v)) {
      fail_at(t, "an " + type + " value needs a whole number, got " + std::to_string(v));
    }
    if (type == "uint" && v < 0) fail_at(t, "a uint value cannot be negative");
    if (type == "bool") v = v != 0 ? 1 : 0;
    return v;
  };
  if (length < 0) {
    const double v = value();
    expect_sym(";");
    consts_[name] = v;
    if (block_depth_ > 0) block_names_.push_back(name);
    return;
  }
  const Token open = cur_;
  expect_sym("{");
  std::vector<double> values;
  while (true) {
    if (static_cast<int>(values.size()) == length) {
      fail("array '" + name + "' has length " + std::to_string(length) + ": too many values");
    }
    values.push_back(value());
    if (!at_sym(",")) break;
    advance();
  }
  expect_sym("}");
  expect_sym(";");
  if (static_cast<int>(values.size()) != length) {
    fail_at(open, "array '" + name + "' has length " + std::to_string(length) + ", given " +
                      std::to_string(values.size()) + " values");
  }
  const_arrays_[name] = std::move(values);
  if (block_depth_ > 0) block_names_.push_back(name);
}

std::vector<std::string> QasmParser::id_list(const char* what, std::vector<Token>* toks) {
  std::vector<std::string> out;
  while (true) {
    toks->push_back(cur_);
    out.push_back(expect_id(what));
    if (!at_sym(",")) return out;
    advance();
  }
}

void QasmParser::check_new_gate_name(const std::string& name, const Token& at) const {
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
  if (qregs_.count(name) || cregs_.count(name) || input_index(name) || consts_.count(name) ||
      const_arrays_.count(name) || subs_.count(name)) {
    fail_at(at, "'" + name + "' is already declared");
  }
}

void QasmParser::gate_decl(bool opaque) {
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
  if (version_ == 2 || !at_sym("{")) def->args = id_list("a qubit argument name", &arg_toks);
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
  if (name == "global_phase" && def->args.empty() && def->params.size() == 1 && def->body.empty()) {
    // Qiskit's exporter writes GlobalPhaseGate as this empty zero-qubit gate;
    // it is read as what it stands for, gphase(p0).
    GateCall phase;
    phase.name = "gphase";
    phase.line = name_tok.line;
    phase.col = name_tok.col;
    ExprOp p0;
    p0.kind = ExprOp::Param;
    phase.params.push_back({p0});
    def->body.push_back(std::move(phase));
    def->gates = 1;
  }
  defs_[name] = std::move(def);
}

GateCall QasmParser::gate_call(const std::vector<std::string>* params,
                               const std::vector<std::string>* args) {
  GateCall call;
  if (version_ == 3) modifiers(call, params);
  const Token name_tok = cur_;
  call.line = cur_.line;
  call.col = cur_.col;
  call.name = expect_id("a gate name");
  if (at_sym("="))
    fail("assigning to '" + call.name + "' is not supported: qmlsim has no classical variables");
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

void QasmParser::modifiers(GateCall& call, const std::vector<std::string>* params) {
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
        if (n + static_cast<int>(call.ctrl_neg.size()) >= kMaxQubits) {  // before any is stored
          fail_at(n_tok, "a gate cannot have " + std::to_string(n) + " more controls: qmlsim " +
                             "supports at most " + std::to_string(kMaxQubits) + " qubits");
        }
        expect_sym(")");
      }
      for (int i = 0; i < n; ++i) call.ctrl_neg.push_back(m.text == "negctrl");
    }
    expect_sym("@");
  }
}

QasmParser::Arg QasmParser::qubit_arg() {
  const Token tok = cur_;
  const std::string name = expect_id("a qubit register");
  auto it = qregs_.find(name);
  if (it == qregs_.end()) {
    if (cregs_.count(name)) fail_at(tok, "'" + name + "' is a classical register");
    fail_at(tok, "unknown quantum register '" + name + "'");
  }
  return indexed(it->second, name);
}

QasmParser::Arg QasmParser::indexed(std::pair<int, int> reg, const std::string& name) {
  Arg a{reg.first, reg.second, true};
  if (at_sym("[")) {
    advance();
    const Token idx_tok = cur_;
    const int idx = expect_int("an index");
    int last = idx;
    Token last_tok = idx_tok;
    if (version_ == 3 && at_sym(":")) {  // a slice q[a:b], both ends included
      advance();
      last_tok = cur_;
      last = expect_int("a slice's end");
      if (at_sym(":")) fail("slices with a step are not supported");
      if (last < idx) fail_at(last_tok, "a slice's end must not precede its start");
    }
    expect_sym("]");
    if (last >= reg.second) {
      fail_at(last_tok, "index " + std::to_string(last) + " is out of range for register '" + name +
                            "' of size " + std::to_string(reg.second));
    }
    a.first += idx;
    a.size = last - idx + 1;
    a.whole = last != idx;  // a slice broadcasts like a register
  }
  return a;
}

std::vector<QasmParser::Arg> QasmParser::qubit_args() {
  std::vector<Arg> args;
  if (at_sym(";")) return args;
  args.push_back(qubit_arg());
  while (at_sym(",")) {
    advance();
    args.push_back(qubit_arg());
  }
  return args;
}

int QasmParser::broadcast_count(const std::vector<Arg>& args, const Token& at) const {
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

void QasmParser::reset() {
  advance();
  const Arg a = qubit_arg();
  expect_sym(";");
  for (int j = 0; j < a.size; ++j) {
    if (!touched_.count(a.first + j)) continue;  // still |0>
    make_dynamic();
    Operation op;
    op.instruction = Instruction::reset;
    op.wires = {a.first + j};
    push_op(std::move(op));
  }
}

void QasmParser::record_measurement(const Token& kw, const Arg& q, const Arg& c) {
  if (q.size != c.size) {
    fail_at(kw, "measure needs registers of equal size (" + std::to_string(q.size) + " and " +
                    std::to_string(c.size) + ")");
  }
  for (int j = 0; j < q.size; ++j) {
    const int bit = c.first < 0 ? -1 : c.first + j;
    bool into_condition = false;
    for (const Condition& alt : conditions_)
      into_condition =
          into_condition || std::find(alt.bits.begin(), alt.bits.end(), bit) != alt.bits.end();
    if (into_condition && into_condition_.set)
      fail_at(kw,
              "measuring into a classical bit its 'if' reads is supported once per body, as "
              "its last operation");
    touched_.insert(q.first + j);
    if (measured_.insert(q.first + j).second) measured_order_.push_back(q.first + j);
    if (bit >= 0) written_bits_.insert(bit);
    if (!conditions_.empty() || never_) make_dynamic();
    Operation op;
    op.instruction = Instruction::measure;
    op.wires = {q.first + j};
    op.clbit = bit;
    push_op(std::move(op));
    if (into_condition) into_condition_ = {kw, ops_.size(), true};
  }
}

QasmParser::Arg QasmParser::classical_arg() {
  const Token ct = cur_;
  const std::string cname = expect_id("a classical register");
  auto it = cregs_.find(cname);
  if (it == cregs_.end()) fail_at(ct, "unknown classical register '" + cname + "'");
  return indexed(it->second, cname);
}

}  // namespace qmlsim::qasm
