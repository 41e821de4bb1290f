// Circuit IR: a list of gate applications whose angles are literals or
// references to trainable slots with a scale and shift.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "circuit/channels.h"
#include "circuit/gates.h"

namespace qmlsim {

// value = scale * theta[slot] + shift; a literal has slot = -1 and value = shift.
struct ParamExpr {
  int slot = -1;
  double scale = 1.0;
  double shift = 0.0;

  static ParamExpr literal(double v) { return {-1, 0.0, v}; }
  static ParamExpr ref(int slot, double scale = 1.0, double shift = 0.0) {
    return {slot, scale, shift};
  }
  double value(std::span<const double> theta) const {
    return slot < 0 ? shift : scale * theta[slot] + shift;
  }
};

// A gate, or (channel != none) a noise channel from the channel table, whose
// `params` are the channel's and `gate` is unused. Channels take no controls.
struct Operation {
  GateId gate = GateId::I;
  std::vector<int> wires;     // the gate's own wires (intrinsic controls first, as the table says)
  std::vector<int> controls;  // extra control wires (on |1>), applied on top of the gate
  std::vector<ParamExpr> params;
  std::shared_ptr<const Matrix> unitary;  // QubitUnitary only; first wire most significant
  ChannelId channel = ChannelId::none;
  std::shared_ptr<const std::vector<Matrix>>
      kraus;  // ChannelId::kraus only; first wire most significant

  bool is_channel() const { return channel != ChannelId::none; }
};

class Circuit {
 public:
  explicit Circuit(int num_qubits = 0) : num_qubits_(num_qubits) {}

  int num_qubits() const { return num_qubits_; }
  // Number of trainable slots referenced (1 + the largest slot index).
  int num_slots() const { return num_slots_; }
  const std::vector<Operation>& ops() const { return ops_; }
  // Whether any operation is a noise channel (then only the density-matrix
  // engine runs it: grad/density_matrix.h).
  bool has_channels() const { return channels_ > 0; }

  // Appends an operation after checking it (wire range, distinct wires, arity,
  // unitary matrix; a channel's literal parameters in range, a Kraus set trace
  // preserving); throws Error with a description otherwise.
  void add(Operation op);

  // Convenience builders.
  void add(GateId g, std::vector<int> wires, std::vector<double> literals = {});
  void add(GateId g, std::vector<int> wires, std::vector<ParamExpr> params);

 private:
  int num_qubits_ = 0;
  int num_slots_ = 0;
  int channels_ = 0;
  std::vector<Operation> ops_;
  void check_channel(const Operation& op) const;
  // Every wire and control in range, none twice; errors start with `name`.
  void check_wires(const std::string& name, const Operation& op) const;
};

// One-qubit noise after every gate: `channel` (a channel of the table with one
// parameter) of strength `p` on each wire the gate touches, controls included.
struct GateNoise {
  ChannelId channel = ChannelId::none;
  double p = 0;
};
// `c` with `noise` after each of its gates, in order (its channels stay as
// they are); noise of strength 0 is left out. Throws Error for a channel
// that does not take one parameter or a strength out of its range.
Circuit with_gate_noise(const Circuit& c, const std::vector<GateNoise>& noise);

// Human-readable one-line description, e.g. "CRX(0.5) 1,3".
std::string describe(const Operation& op);

}  // namespace qmlsim
