// The typed program the Python doors hand over (python/qmlsim/_program.py
// builds it; python/qmlsim_ext.cc only converts): gates of the gate table and
// channels of the channel table on numbered qubits, over numbered parameters.
// Every field is checked once, here, with a one-line Error naming the op.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "circuit/circuit.h"
#include "core/types.h"

namespace qmlsim {

// A parameter: value = scale * values[slot] + shift of the program's parameter
// values (the IR's ParamExpr), so gradients come back per program parameter,
// chain rules of linear maps included.
struct ProgramParam {
  int slot = 0;
  double scale = 1.0;
  double shift = 0.0;
};
using ProgramParamArg = std::variant<double, ProgramParam>;  // a literal or a parameter

// One gate of the table on `targets` (its own wires, intrinsic controls first),
// under extra `controls` (on |1>, or on |0> where control_values says false);
// `matrix` (first target most significant) for QubitUnitary only. Or a noise
// channel of the channel table (circuit/channels.h) on `targets`, without
// controls; `kraus` (each first target most significant) for "kraus" only.
// Or "measure" (one target, its outcome into classical bit `clbit`, or none
// for -1) or "reset" (one target). Any op may be classically controlled: it
// runs where the classical bits `condition_bits` hold `condition_value` (bit j
// of the value for condition_bits[j]), or, negated, where they do not.
struct ProgramOp {
  std::string gate;
  std::vector<int> targets;
  std::vector<ProgramParamArg> params;
  std::vector<int> controls;
  std::vector<bool> control_values;
  std::vector<cplx> matrix;
  std::vector<std::vector<cplx>> kraus;
  int clbit = -1;
  std::vector<int> condition_bits = {};
  std::uint64_t condition_value = 0;
  bool condition_negated = false;
};

// A circuit on num_qubits qubits and num_clbits classical bits over
// num_params parameters; runs start from
// `initial` (empty: |0...0>) and states come back times e^{i global_phase}.
struct Program {
  Circuit circuit;
  int num_params = 0;
  std::vector<cplx> initial;
  double global_phase = 0;

  // Throws Error on any op, qubit count, parameter slot, initial state or
  // phase that is not valid.
  Program(int num_qubits, const std::vector<ProgramOp>& ops, int num_params,
          std::vector<cplx> initial_state, double phase, int num_clbits = 0);

  // The parameter values as the engine's slots: REQUIRES nothing; throws
  // Error unless there are num_params finite values.
  std::span<const double> theta(const std::vector<double>& values) const;

 private:
  ParamExpr param(const ProgramParamArg& arg, const std::string& name) const;
  void add(const ProgramOp& op);
  void add_channel(ChannelId id, const ProgramOp& op);
  void add_instruction(Instruction kind, const ProgramOp& op);
};

// Throws Error unless `initial` is empty (|0...0>), 2^n amplitudes of norm 1,
// or a density matrix: 4^n entries, rho[r][c] at r 2^n + c, Hermitian with
// trace 1 and a non-negative diagonal (positivity is not checked).
void check_initial_state(std::span<const cplx> initial, int n);

}  // namespace qmlsim
