#include "circuit/circuit.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace qmlsim {

Circuit::Circuit(int num_qubits, int num_clbits)
    : num_qubits_(num_qubits), num_clbits_(num_clbits) {
  if (num_clbits < 0 || num_clbits > kMaxClbits)
    throw Error(std::to_string(num_clbits) + " classical bits: at most " +
                std::to_string(kMaxClbits) + " are supported");
}

void Circuit::check_dynamic(const Operation& op) const {
  const std::string name = describe(op);
  if (op.is_instruction()) {
    if (op.is_channel() || !op.controls.empty() || !op.params.empty() || op.wires.size() != 1)
      throw Error(name + ": a measurement or reset acts on one wire, with no controls");
    if (op.instruction == Instruction::measure && (op.clbit < -1 || op.clbit >= num_clbits_))
      throw Error(name + ": classical bit " + std::to_string(op.clbit) + " is out of range for " +
                  std::to_string(num_clbits_) + " classical bit(s)");
  }
  const Condition& c = op.condition;
  std::vector<int> bits = c.bits;
  std::sort(bits.begin(), bits.end());
  for (int b : bits)
    if (b < 0 || b >= num_clbits_)
      throw Error(name + ": condition on classical bit " + std::to_string(b) +
                  ", out of range for " + std::to_string(num_clbits_) + " classical bit(s)");
  if (std::adjacent_find(bits.begin(), bits.end()) != bits.end())
    throw Error(name + ": a condition names a classical bit twice");
  if (bits.size() < 64 && c.value >> bits.size() != 0)
    throw Error(name + ": condition value " + std::to_string(c.value) + " does not fit in " +
                std::to_string(bits.size()) + " bit(s)");
}

void Circuit::check_channel(const Operation& op) const {
  const ChannelInfo& info = channel_info(op.channel);
  const std::string name(info.name);
  if (!op.controls.empty()) throw Error(name + ": a channel takes no controls");
  int wires = info.num_wires;
  if (op.channel == ChannelId::kraus) {
    if (!op.kraus) throw Error("kraus: no matrices");
    check_kraus_set(*op.kraus);
    wires = op.kraus->at(0).size() == 4 ? 1 : 2;
  }
  if (static_cast<int>(op.wires.size()) != wires)
    throw Error(name + " takes " + std::to_string(wires) + " wire(s), got " +
                std::to_string(op.wires.size()));
  if (static_cast<int>(op.params.size()) != info.num_params)
    throw Error(name + " takes " + std::to_string(info.num_params) + " parameter(s), got " +
                std::to_string(op.params.size()));
  std::vector<double> literals;
  for (const ParamExpr& p : op.params) {
    if (p.slot >= 0) return;  // trainable: checked when bound
    literals.push_back(p.shift);
  }
  check_channel_params(op.channel, literals);
}

void Circuit::check_wires(const std::string& name, const Operation& op) const {
  std::vector<int> all = op.controls;
  all.insert(all.end(), op.wires.begin(), op.wires.end());
  for (int w : all) {
    if (w < 0 || w >= num_qubits_) {
      throw Error(name + ": wire " + std::to_string(w) + " is out of range for " +
                  std::to_string(num_qubits_) + " qubit(s)");
    }
  }
  std::sort(all.begin(), all.end());
  if (std::adjacent_find(all.begin(), all.end()) != all.end()) {
    throw Error(name + ": a wire appears twice");
  }
}

void Circuit::add(Operation op) {
  if (op.is_dynamic()) {
    check_dynamic(op);
    ++dynamic_;
    if (op.is_instruction()) {
      check_wires(describe(op), op);
      ops_.push_back(std::move(op));
      return;
    }
  }
  if (op.is_channel()) {
    check_channel(op);
    check_wires(std::string(channel_info(op.channel).name), op);
    for (const ParamExpr& p : op.params) num_slots_ = std::max(num_slots_, p.slot + 1);
    ++channels_;
    ops_.push_back(std::move(op));
    return;
  }
  const GateInfo& g = gate_info(op.gate);
  const std::string name(g.name);
  if (g.num_wires > 0 && static_cast<int>(op.wires.size()) != g.num_wires) {
    throw Error(name + " takes " + std::to_string(g.num_wires) + " wire(s), got " +
                std::to_string(op.wires.size()));
  }
  if (op.wires.empty()) throw Error(name + " needs at least one wire");
  if (static_cast<int>(op.params.size()) != g.num_params) {
    throw Error(name + " takes " + std::to_string(g.num_params) + " parameter(s), got " +
                std::to_string(op.params.size()));
  }
  check_wires(name, op);
  if (op.gate == GateId::QubitUnitary) {
    const std::size_t dim = std::size_t{1} << op.wires.size();
    if (!op.unitary || op.unitary->size() != dim * dim) {
      throw Error("QubitUnitary on " + std::to_string(op.wires.size()) + " wire(s) needs a " +
                  std::to_string(dim) + "x" + std::to_string(dim) + " matrix");
    }
    if (!is_unitary(*op.unitary, 1e-6)) throw Error("QubitUnitary: matrix is not unitary");
  }
  for (const ParamExpr& p : op.params) num_slots_ = std::max(num_slots_, p.slot + 1);
  ops_.push_back(std::move(op));
}

void Circuit::add(GateId g, std::vector<int> wires, std::vector<double> literals) {
  std::vector<ParamExpr> params;
  for (double v : literals) params.push_back(ParamExpr::literal(v));
  add(g, std::move(wires), std::move(params));
}

void Circuit::add(GateId g, std::vector<int> wires, std::vector<ParamExpr> params) {
  Operation op;
  op.gate = g;
  op.wires = std::move(wires);
  op.params = std::move(params);
  add(std::move(op));
}

std::string describe(const Operation& op) {
  std::ostringstream s;
  if (op.condition.active()) {
    s << "if(";
    for (std::size_t j = op.condition.bits.size(); j-- > 0;)
      s << "c" << op.condition.bits[j] << (j ? "," : "");
    s << (op.condition.negated ? "!=" : "==") << op.condition.value << ") ";
  }
  if (op.instruction == Instruction::measure) {
    s << "measure " << (op.wires.empty() ? -1 : op.wires[0]);
    if (op.clbit >= 0) s << " -> c" << op.clbit;
    return s.str();
  }
  if (op.instruction == Instruction::reset) {
    s << "reset " << (op.wires.empty() ? -1 : op.wires[0]);
    return s.str();
  }
  if (!op.controls.empty()) s << "C" << op.controls.size() << "-";
  s << (op.is_channel() ? channel_info(op.channel).name : gate_info(op.gate).name);
  if (!op.params.empty()) {
    s << "(";
    for (std::size_t i = 0; i < op.params.size(); ++i) {
      const ParamExpr& p = op.params[i];
      if (i) s << ",";
      if (p.slot < 0)
        s << p.shift;
      else
        s << p.scale << "*theta[" << p.slot << "]+" << p.shift;
    }
    s << ")";
  }
  s << " ";
  for (std::size_t i = 0; i < op.controls.size(); ++i) s << op.controls[i] << ",";
  for (std::size_t i = 0; i < op.wires.size(); ++i) s << (i ? "," : "") << op.wires[i];
  return s.str();
}

Circuit with_gate_noise(const Circuit& c, const std::vector<GateNoise>& noise) {
  Circuit out(c.num_qubits(), c.num_clbits());
  for (const Operation& op : c.ops()) {
    out.add(op);
    if (op.is_channel() || op.is_dynamic()) continue;
    std::vector<int> wires = op.controls;
    wires.insert(wires.end(), op.wires.begin(), op.wires.end());
    for (int q : wires) {
      for (const GateNoise& n : noise) {
        if (n.p == 0) continue;
        Operation ch;
        ch.channel = n.channel;
        ch.wires = {q};
        ch.params = {ParamExpr::literal(n.p)};
        out.add(std::move(ch));
      }
    }
  }
  return out;
}

}  // namespace qmlsim
