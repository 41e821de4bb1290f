// Gate calls expanded into the circuit: definitions resolved and inlined, register
// broadcasts, modifiers (ctrl, negctrl, inv, pow), inverses and fractional powers
// of table gates, and each angle as a slot (an expression of the inputs).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "circuit/qasm_parser.h"

namespace qmlsim::qasm {

std::shared_ptr<const GateDef> QasmParser::resolve_gate(const GateCall& call, int nargs) const {
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

void QasmParser::gate_statement() {
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
      if (measured_.count(q)) make_dynamic();  // a gate after a measurement
    }
    apply_call(call, params, qubits, Context{});
  }
}

void QasmParser::apply_call(const GateCall& call, const std::vector<Expr>& params,
                            const std::vector<int>& qubits, const Context& ctx) {
  const std::size_t nc = call.ctrl_neg.size();
  if ((call.def && call.def->gates == 0) || call.exponent == 0) return;
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

void QasmParser::apply_target(const GateCall& call, const std::vector<Expr>& params,
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
  emit_inverse(g, controls, wires, params);
}

bool QasmParser::rotation_like(GateId g) {
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

void QasmParser::emit_inverse(GateId g, const std::vector<int>& controls,
                              const std::vector<int>& wires, const std::vector<Expr>& p) {
  const InverseRule& r = gate_info(g).inverse;  // the table's inverse rule
  std::vector<Expr> q;
  for (int j = 0; j < gate_info(r.gate).num_params; ++j) {
    const int from = r.negate_from[j];
    q.push_back(from < 0 ? number(r.constant[j]) : scaled(p[static_cast<std::size_t>(from)], -1));
  }
  if (r.phase != 0) emit_phase(number(r.phase), controls);
  emit(r.gate, controls, wires, q);
}

void QasmParser::fractional_power(const GateCall& call, const std::vector<Expr>& p,
                                  const std::vector<int>& qubits, std::vector<int> controls,
                                  double k) {
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

void QasmParser::add_global_phase(const Expr& theta) {
  // A phase under a classical condition multiplies one branch of a mixture:
  // it changes nothing observable.
  if (!conditions_.empty() || never_) return;
  if (theta.size() == 1 && theta[0].kind == ExprOp::Num) {
    phase_ = std::remainder(phase_ + theta[0].value, 2 * std::numbers::pi);
    return;
  }
  if (static_cast<std::int64_t>(ops_.size() + input_phases_.size()) >= limits_.max_gates) {
    fail_at(stmt_, "the program expands to more than the limit of " +
                       std::to_string(limits_.max_gates) + " gates; raise it with --max-gates");
  }
  input_phases_.push_back(theta);
}

void QasmParser::emit(GateId g, const std::vector<int>& controls, const std::vector<int>& wires,
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
  push_op(std::move(op));
}

}  // namespace qmlsim::qasm
