// Circuit IR: a list of gate applications whose angles are literals or
// references to trainable slots with a scale and shift.
#pragma once

#include <cstdint>
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

// Classical control: an operation with a condition runs only where the
// classical bits `bits` (bits[j] is bit j of the compared value) hold `value`,
// or, negated, where they do not (an `else` branch). No bits: unconditional.
struct Condition {
  std::vector<int> bits;
  std::uint64_t value = 0;
  bool negated = false;

  bool active() const { return !bits.empty(); }
  // Whether the condition holds for a classical record (bit k = classical bit k).
  bool holds(std::uint64_t record) const {
    std::uint64_t v = 0;
    for (std::size_t j = 0; j < bits.size(); ++j) v |= (record >> bits[j] & 1) << j;
    return (v == value) != negated;
  }
  bool operator==(const Condition&) const = default;
};

// Mid-circuit instructions (the circuit is then dynamic: grad/dynamic.h).
// measure: qubit wires[0] in the computational basis, the outcome written to
// classical bit `clbit`, the state collapsed; reset: wires[0] to |0>.
enum class Instruction : std::uint8_t { none, measure, reset };

// A gate, or (channel != none) a noise channel from the channel table, whose
// `params` are the channel's and `gate` is unused, or (instruction != none) a
// measurement or reset. Channels and instructions take no controls.
struct Operation {
  GateId gate = GateId::I;
  std::vector<int> wires;     // the gate's own wires (intrinsic controls first, as the table says)
  std::vector<int> controls;  // extra control wires (on |1>), applied on top of the gate
  std::vector<ParamExpr> params;
  std::shared_ptr<const Matrix> unitary;  // QubitUnitary only; first wire most significant
  ChannelId channel = ChannelId::none;
  std::shared_ptr<const std::vector<Matrix>>
      kraus;  // ChannelId::kraus only; first wire most significant

  Instruction instruction = Instruction::none;
  int clbit = -1;       // measure: the classical bit written (-1: none, the outcome not kept)
  Condition condition;  // classical control (any kind of operation)

  bool is_channel() const { return channel != ChannelId::none; }
  bool is_instruction() const { return instruction != Instruction::none; }
  // Whether only the dynamic-circuit engine runs it (grad/dynamic.h).
  bool is_dynamic() const { return is_instruction() || condition.active(); }
};

// Classical bits a dynamic circuit may have (a record is one 64-bit word).
inline constexpr int kMaxClbits = 64;

class Circuit {
 public:
  // Throws Error for more than kMaxClbits classical bits.
  explicit Circuit(int num_qubits = 0, int num_clbits = 0);

  int num_qubits() const { return num_qubits_; }
  int num_clbits() const { return num_clbits_; }
  // Number of trainable slots referenced (1 + the largest slot index).
  int num_slots() const { return num_slots_; }
  const std::vector<Operation>& ops() const { return ops_; }
  // Whether any operation is a noise channel (then only the density-matrix
  // engine runs it: grad/density_matrix.h).
  bool has_channels() const { return channels_ > 0; }
  // Whether any operation is a measurement, a reset or classically
  // controlled (then only grad/dynamic.h runs it; gradients are refused).
  bool has_dynamic() const { return dynamic_ > 0; }

  // Appends an operation after checking it (wire range, distinct wires, arity,
  // unitary matrix; a channel's literal parameters in range, a Kraus set trace
  // preserving; an instruction on one wire, its classical bit in range; a
  // condition's bits in range, distinct, its value within them); throws Error
  // with a description otherwise.
  void add(Operation op);

  // Convenience builders.
  void add(GateId g, std::vector<int> wires, std::vector<double> literals = {});
  void add(GateId g, std::vector<int> wires, std::vector<ParamExpr> params);

 private:
  int num_qubits_ = 0;
  int num_slots_ = 0;
  int num_clbits_ = 0;
  int channels_ = 0;
  int dynamic_ = 0;
  std::vector<Operation> ops_;
  void check_channel(const Operation& op) const;
  void check_dynamic(const Operation& op) const;
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
