// OpenQASM 2.0 reader. Supports qreg/creg, the qelib1.inc gates (built in; no
// file is read), user `gate` definitions, parameter expressions (pi, + - * / ^,
// sin cos tan exp ln sqrt), `barrier`, and terminal `measure`. `reset`, `if`,
// `opaque` gates and mid-circuit measurement are rejected with a located error.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "circuit/circuit.h"

namespace qmlsim {

struct QasmProgram {
  // Every angle of every parametric gate, after expanding user gates, is one
  // trainable slot, numbered in program order; `angles` holds their values.
  Circuit circuit;
  std::vector<double> angles;
  std::vector<int> measured;             // qubits named by `measure`, in order of appearance
  std::vector<std::string> qubit_names;  // "q[0]", ... in global qubit order
};

// Parses `text`; errors are reported as "source:line:column: message".
QasmProgram parse_qasm(std::string_view text, const std::string& source);

// Reads and parses a file ("path: cannot read file" if it cannot be opened).
QasmProgram read_qasm_file(const std::string& path);

}  // namespace qmlsim
