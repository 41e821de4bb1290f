#include "circuit/program.h"

#include <cmath>
#include <memory>
#include <optional>
#include <utility>

#include "circuit/channels.h"
#include "circuit/gates.h"
#include "core/error.h"

namespace qmlsim {

namespace {

int checked_qubits(int n) {
  if (n < 1 || n > kMaxQubits)
    throw Error("wires: " + std::to_string(n) + " is out of range (1 to " +
                std::to_string(kMaxQubits) + " qubits)");
  return n;
}

}  // namespace

void check_initial_state(std::span<const cplx> initial, int n) {
  if (initial.empty()) return;
  const std::size_t dim = std::size_t{1} << n;
  for (const cplx& a : initial)
    if (!std::isfinite(a.real()) || !std::isfinite(a.imag()))
      throw Error("initial state: an entry is not a finite number");
  if (n < 32 && initial.size() == dim * dim) {  // a density matrix, row-major
    double trace = 0;
    for (std::size_t r = 0; r < dim; ++r) {
      trace += initial[r * dim + r].real();
      if (initial[r * dim + r].real() < -1e-9)
        throw Error("initial state: a density matrix with a negative diagonal entry");
      for (std::size_t c = 0; c < r; ++c)
        if (std::abs(initial[r * dim + c] - std::conj(initial[c * dim + r])) > 1e-8)
          throw Error("initial state: the density matrix is not Hermitian");
    }
    if (!(std::abs(trace - 1) < 1e-6)) throw Error("initial state: a density matrix of trace != 1");
    return;
  }
  if (initial.size() != dim)
    throw Error("initial state: " + std::to_string(initial.size()) + " amplitudes for " +
                std::to_string(n) + " qubit(s) (" + std::to_string(dim) + ", or " +
                std::to_string(dim * dim) + " for a density matrix)");
  double norm = 0;
  for (const cplx& a : initial) norm += std::norm(a);
  if (!(std::abs(norm - 1) < 1e-6)) throw Error("initial state: not normalised");
}

Program::Program(int num_qubits, const std::vector<ProgramOp>& ops, int params,
                 std::vector<cplx> initial_state, double phase, int num_clbits)
    : circuit(checked_qubits(num_qubits), num_clbits),
      num_params(params),
      initial(std::move(initial_state)),
      global_phase(phase) {
  if (num_params < 0) throw Error("num_params: " + std::to_string(num_params) + " is negative");
  if (!std::isfinite(global_phase)) throw Error("global phase: not a finite number");
  check_initial_state(initial, num_qubits);
  for (const ProgramOp& op : ops) add(op);
}

std::span<const double> Program::theta(const std::vector<double>& values) const {
  if (values.size() != static_cast<std::size_t>(num_params))
    throw Error("parameter values: " + std::to_string(values.size()) + " for a program of " +
                std::to_string(num_params) + " parameter(s)");
  for (double v : values)
    if (!std::isfinite(v)) throw Error("parameter values: not a finite number");
  return values;
}

ParamExpr Program::param(const ProgramParamArg& arg, const std::string& name) const {
  if (const double* v = std::get_if<double>(&arg)) {
    if (!std::isfinite(*v)) throw Error(name + ": parameter is not a finite number");
    return ParamExpr::literal(*v);
  }
  const ProgramParam& p = std::get<ProgramParam>(arg);
  if (p.slot < 0 || p.slot >= num_params)
    throw Error(name + ": parameter slot " + std::to_string(p.slot) + " is out of range (" +
                std::to_string(num_params) + " parameters)");
  if (!std::isfinite(p.scale) || !std::isfinite(p.shift))
    throw Error(name + ": parameter scale or shift is not a finite number");
  return ParamExpr::ref(p.slot, p.scale, p.shift);
}

void Program::add_channel(ChannelId id, const ProgramOp& spec) {
  if (!spec.controls.empty()) throw Error("channel " + spec.gate + ": takes no controls");
  Operation op;
  op.channel = id;
  op.wires = spec.targets;
  for (const ProgramParamArg& arg : spec.params)
    op.params.push_back(param(arg, "channel " + spec.gate));
  op.condition = {spec.condition_bits, spec.condition_value, spec.condition_negated};
  if (id == ChannelId::kraus) {
    std::vector<Matrix> kraus(spec.kraus.begin(), spec.kraus.end());
    op.kraus = std::make_shared<const std::vector<Matrix>>(std::move(kraus));
  } else if (!spec.kraus.empty()) {
    throw Error("channel " + spec.gate + ": Kraus matrices are for the channel 'kraus' only");
  }
  circuit.add(std::move(op));
}

void Program::add_instruction(Instruction kind, const ProgramOp& spec) {
  if (!spec.controls.empty() || !spec.params.empty())
    throw Error(spec.gate + ": takes no controls or parameters");
  Operation op;
  op.instruction = kind;
  op.wires = spec.targets;
  op.clbit = kind == Instruction::measure ? spec.clbit : -1;
  op.condition = {spec.condition_bits, spec.condition_value, spec.condition_negated};
  circuit.add(std::move(op));
}

void Program::add(const ProgramOp& spec) {
  if (spec.gate == "measure") return add_instruction(Instruction::measure, spec);
  if (spec.gate == "reset") return add_instruction(Instruction::reset, spec);
  if (spec.condition_bits.empty() && (spec.condition_value != 0 || spec.condition_negated))
    throw Error(spec.gate + ": a condition value without condition bits");
  const Condition condition{spec.condition_bits, spec.condition_value, spec.condition_negated};
  if (const std::optional<ChannelId> ch = channel_by_name(spec.gate)) return add_channel(*ch, spec);
  const std::optional<GateId> g = gate_by_name(spec.gate);
  if (!g) throw Error("unknown gate or channel '" + spec.gate + "'");
  if (!spec.control_values.empty() && spec.control_values.size() != spec.controls.size())
    throw Error("gate " + spec.gate + ": " + std::to_string(spec.control_values.size()) +
                " control value(s) for " + std::to_string(spec.controls.size()) + " control(s)");
  std::vector<int> flips;  // controls on |0>: X before and after
  for (std::size_t i = 0; i < spec.control_values.size(); ++i)
    if (!spec.control_values[i]) flips.push_back(spec.controls[i]);
  auto flip = [&] {
    for (int q : flips) {
      Operation x;
      x.gate = GateId::X;
      x.wires = {q};
      x.condition = condition;
      circuit.add(std::move(x));
    }
  };
  flip();
  Operation op;
  op.gate = *g;
  op.condition = condition;
  op.wires = spec.targets;
  op.controls = spec.controls;
  for (const ProgramParamArg& arg : spec.params)
    op.params.push_back(param(arg, "gate " + spec.gate));
  if (*g == GateId::QubitUnitary) op.unitary = std::make_shared<Matrix>(spec.matrix);
  circuit.add(std::move(op));
  flip();
}

}  // namespace qmlsim
