// OpenQASM reader, versions 2.0 and 3 (the version line selects the dialect;
// a file without one is OpenQASM 3; both produce the same circuit IR).
//
// OpenQASM 2.0: qreg/creg, the qelib1.inc gates (built in; no file is read),
// user `gate` definitions, parameter expressions (pi, + - * / ^, sin cos tan
// exp ln sqrt), `barrier`, `measure`, `reset`, `if (c == n) op;`.
//
// OpenQASM 3: `qubit[n] q;` (and qreg), `bit[n] c;` (and creg), slices
// q[a:b], the stdgates.inc gates (built in), inputs (`input float[64] x;`,
// angle, int, uint, bool, and `input array[float[64], N] w;` indexed w[3]),
// constants (`const`, and variables declared with a constant value, scalars
// and arrays), the modifiers `ctrl @`, `ctrl(n) @`, `negctrl @`, `inv @`,
// `pow(k) @` on any gate, `gphase`, `U`, `barrier`, `measure`
// (`c = measure q;`, `measure q -> c;`), `reset`, `if (condition) body [else
// body]` (qasm_dynamic.cc), expressions with ** and
// arcsin/arccos/arctan, constants pi/π, tau/τ, euler/ℇ, true/false; static
// control flow unrolled as it is read: `for` over constant ranges, sets and
// arrays, `def` subroutines with qubit and angle arguments and no result.
// Angles may depend on inputs: each angle of each gate is one slot whose value
// is an expression of the inputs (`QasmProgram::bind_inputs`), and gradients
// chain through it (`input_gradient`). Uncontrolled phases form the program's
// global phase; Qiskit's exported zero-qubit `global_phase` gate is one.
//
// Noise, in both: Braket's pragmas `#pragma braket noise NAME(args) qubits`
// (one line, no semicolon; the channels of circuit/channels.h, `kraus` with
// matrices [[a, b], [c, d]] whose entries may be complex: 0.6im, 0.6+0.8im),
// on single qubits or, broadcast, on each qubit of a register. Other pragmas
// are refused.
//
// Dynamic circuits, in both: a measurement followed by operations on its
// qubit, `reset` after a gate, or an `if` make the circuit dynamic
// (Circuit::has_dynamic: measure and reset instructions, conditions on
// classical bits numbered across the registers in declaration order);
// otherwise measurements are the readout and stay out of the circuit.
//
// Rejected with a located error, in both: `opaque` gates that are used, a
// condition on bits no measurement of the program writes, a comparison value its
// register cannot hold; in OpenQASM 3 also `while`, `switch`, `else if`,
// `extern`, timing, calibrations, aliases, subroutines with results and
// classical variables without a constant value.
//
// Gate names: OpenQASM 2.0 reserves the gates of the specification's
// qelib1.inc once included; the further gates qmlsim builds in (cu, p, sx,
// swap, rzz, ...) yield to a definition in the file. OpenQASM 3 builds in
// exactly stdgates.inc. Gate bodies are bound to the gates in force where they
// are defined.
//
// Limits (each a located one-line Error): expressions nest at most 256 levels
// (any length otherwise: they are evaluated without recursion), gate
// definitions and subroutine calls nest at most 64 levels, literals must be
// finite doubles, an angle's expression of the inputs has at most 100,000
// operations, a program may expand to at most `QasmLimits::max_gates` gates,
// and loops run at most as many iterations in all.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "circuit/circuit.h"

namespace qmlsim {

struct QasmInput {
  std::string name;
  int size = 1;        // elements: 1 for a scalar
  bool array = false;  // declared `input array[float[64], size] name;`
  int offset = 0;      // index of its first element among all input values
};

class QasmAngleExprs;  // the input-dependent angles (defined in qasm_expr.h)

struct QasmProgram {
  // Every angle of every gate, after expanding user gates and modifiers, is
  // one slot, numbered in program order; `angles` holds their values. Slots
  // that depend on inputs hold 0 until bind_inputs sets them.
  Circuit circuit;
  std::vector<double> angles;
  std::vector<int> measured;             // qubits named by `measure`, in order of appearance
  std::vector<std::string> qubit_names;  // "q[0]", ... in global qubit order
  std::vector<QasmInput> inputs;         // OpenQASM 3 `input` declarations, in order
  // Classical registers (name, size) in declaration order; a dynamic
  // circuit's classical bits are numbered across them in that order.
  std::vector<std::pair<std::string, int>> clbit_registers;
  std::shared_ptr<const QasmAngleExprs> input_angles;  // null if nothing depends on an input
  // e^{i global_phase} multiplies the final state: the uncontrolled `gphase`
  // calls (and phases of modifiers) at the bound inputs. Expectation values and
  // their gradients do not depend on it; states written out include it.
  double global_phase = 0;

  int num_input_values() const;  // all inputs' elements
  // All input values in declaration order from values given by name; an
  // input not declared, not given or given the wrong count is an Error.
  std::vector<double> input_values(const std::map<std::string, std::vector<double>>& by_name) const;
  // Sets the input-dependent angles (and the global phase) for input values x
  // (inputs in declaration order, arrays element by element). The wrong count
  // is an Error; so is an angle that is not finite there, located at its
  // expression.
  void bind_inputs(std::span<const double> x);
  double global_phase_at(std::span<const double> x) const;
  // The same without changing the program: all angles at input values x.
  std::vector<double> angles_at(std::span<const double> x) const;
  // The chain rule: d/d(input values) at x from d/d(angles) (size = slots).
  std::vector<double> input_gradient(std::span<const double> x,
                                     std::span<const double> d_angles) const;
};

struct QasmLimits {
  // Gates after expanding user gates, modifiers and register broadcasts.
  // About 300 bytes of memory each while the program is built (docs/circuits.md).
  std::int64_t max_gates = 5'000'000;
  // Bytes read_qasm_file reads before refusing the file.
  std::int64_t max_file_bytes = std::int64_t{256} << 20;
};

// Parses `text`; errors are reported as "source:line:column: message".
QasmProgram parse_qasm(std::string_view text, const std::string& source,
                       const QasmLimits& limits = {});

// Reads and parses a file: "path: cannot read file" if it cannot be opened,
// "path: is a directory", or "path: larger than the limit of N bytes".
QasmProgram read_qasm_file(const std::string& path, const QasmLimits& limits = {});

}  // namespace qmlsim
