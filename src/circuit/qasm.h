// OpenQASM 2.0 reader. Supports qreg/creg, the qelib1.inc gates (built in; no
// file is read), user `gate` definitions, parameter expressions (pi, + - * / ^,
// sin cos tan exp ln sqrt), `barrier`, and terminal `measure`. `reset`, `if`,
// `opaque` gates and mid-circuit measurement are rejected with a located error.
//
// Gate names: the gates of the specification's qelib1.inc are reserved once it
// is included; the further gates qmlsim builds in (cu, p, sx, swap, rzz, ...)
// yield to a definition in the file, as other OpenQASM 2 readers do. Gate
// bodies are bound to the gates in force where they are defined.
//
// Limits (each a located one-line Error): expressions nest at most 256 levels
// (any length otherwise: they are evaluated without recursion), gate
// definitions nest at most 64 levels, literals must be finite doubles, and a
// program may expand to at most `QasmLimits::max_gates` gates, checked before
// a statement is expanded.
#pragma once

#include <cstdint>
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

struct QasmLimits {
  // Gates after expanding user gates and register broadcasts. About 300 bytes
  // of memory each while the program is built (README).
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
