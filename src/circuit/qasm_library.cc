// The built-in gate libraries of the OpenQASM reader and its reserved words
// (qasm_library.h).
#include "circuit/qasm_library.h"

#include <set>

namespace qmlsim::qasm {

const std::map<std::string, Builtin, std::less<>>& builtins_qelib1() {
  static const std::map<std::string, Builtin, std::less<>> m = {
      {"u3", {GateId::U3, 0}},
      {"u2", {GateId::U2, 0}},
      {"u1", {GateId::U1, 0}},
      {"u", {GateId::U3, 0}},
      {"p", {GateId::PhaseShift, 0}},
      {"cx", {GateId::CNOT, 0}},
      {"id", {GateId::I, 0}},
      {"x", {GateId::X, 0}},
      {"y", {GateId::Y, 0}},
      {"z", {GateId::Z, 0}},
      {"h", {GateId::H, 0}},
      {"s", {GateId::S, 0}},
      {"sdg", {GateId::Sdg, 0}},
      {"t", {GateId::T, 0}},
      {"tdg", {GateId::Tdg, 0}},
      {"sx", {GateId::SX, 0}},
      {"rx", {GateId::RX, 0}},
      {"ry", {GateId::RY, 0}},
      {"rz", {GateId::RZ, 0}},
      {"cz", {GateId::CZ, 0}},
      {"cy", {GateId::CY, 0}},
      {"ch", {GateId::CH, 0}},
      {"swap", {GateId::SWAP, 0}},
      {"iswap", {GateId::ISWAP, 0}},
      {"ccx", {GateId::Toffoli, 0}},
      {"cswap", {GateId::CSWAP, 0}},
      {"crx", {GateId::CRX, 0}},
      {"cry", {GateId::CRY, 0}},
      {"crz", {GateId::CRZ, 0}},
      {"cu1", {GateId::ControlledPhaseShift, 0}},
      {"cp", {GateId::ControlledPhaseShift, 0}},
      {"cu3", {GateId::U3, 1}},
      {"csx", {GateId::SX, 1}},
      {"c3x", {GateId::X, 3}},
      {"c4x", {GateId::X, 4}},
      {"c3sqrtx", {GateId::SX, 3}},
      {"rxx", {GateId::IsingXX, 0}},
      {"ryy", {GateId::IsingYY, 0}},
      {"rzz", {GateId::IsingZZ, 0}},
  };
  return m;
}

// stdgates.inc (OpenQASM 3): exactly its gates, each onto the gate table
// (the specification defines them by their matrices); cu is in the prelude.
const std::map<std::string, Builtin, std::less<>>& builtins_stdgates() {
  static const std::map<std::string, Builtin, std::less<>> m = {
      {"p", {GateId::PhaseShift, 0}},
      {"x", {GateId::X, 0}},
      {"y", {GateId::Y, 0}},
      {"z", {GateId::Z, 0}},
      {"h", {GateId::H, 0}},
      {"s", {GateId::S, 0}},
      {"sdg", {GateId::Sdg, 0}},
      {"t", {GateId::T, 0}},
      {"tdg", {GateId::Tdg, 0}},
      {"sx", {GateId::SX, 0}},
      {"rx", {GateId::RX, 0}},
      {"ry", {GateId::RY, 0}},
      {"rz", {GateId::RZ, 0}},
      {"cx", {GateId::CNOT, 0}},
      {"cy", {GateId::CY, 0}},
      {"cz", {GateId::CZ, 0}},
      {"cp", {GateId::ControlledPhaseShift, 0}},
      {"crx", {GateId::CRX, 0}},
      {"cry", {GateId::CRY, 0}},
      {"crz", {GateId::CRZ, 0}},
      {"ch", {GateId::CH, 0}},
      {"swap", {GateId::SWAP, 0}},
      {"ccx", {GateId::Toffoli, 0}},
      {"cswap", {GateId::CSWAP, 0}},
      {"CX", {GateId::CNOT, 0}},
      {"phase", {GateId::PhaseShift, 0}},
      {"cphase", {GateId::ControlledPhaseShift, 0}},
      {"id", {GateId::I, 0}},
      {"u1", {GateId::U1, 0}},
      {"u2", {GateId::U2, 0}},
      {"u3", {GateId::U3, 0}},
  };
  return m;
}

// The gates of the specification's qelib1.inc: reserved once it is included.
// qmlsim's further built-in gates (cu, p, sx, swap, ...) yield to a file's own.
bool spec_qelib1_gate(std::string_view name) {
  static const std::set<std::string, std::less<>> names = {
      "u3",  "u2", "u1", "cx", "id", "x",  "y",  "z",   "h",   "s",   "sdg", "t",
      "tdg", "rx", "ry", "rz", "cz", "cy", "ch", "ccx", "crz", "cu1", "cu3"};
  return names.count(name) > 0;
}

bool keyword(std::string_view name, int version) {
  static const std::set<std::string, std::less<>> v2 = {"OPENQASM", "include", "qreg",    "creg",
                                                        "gate",     "opaque",  "barrier", "measure",
                                                        "reset",    "if",      "pi"};
  static const std::set<std::string, std::less<>> v3 = [] {
    auto s = v2;
    for (const char* w : {"qubit",    "bit",     "input",  "output", "const",    "ctrl",  "negctrl",
                          "inv",      "pow",     "gphase", "U",      "for",      "while", "def",
                          "extern",   "box",     "delay",  "let",    "defcal",   "cal",   "return",
                          "float",    "int",     "uint",   "angle",  "bool",     "array", "complex",
                          "duration", "stretch", "π",      "tau",    "τ",        "euler", "ℇ",
                          "else",     "switch",  "case",   "break",  "continue", "end"})
      s.insert(w);
    return s;
  }();
  return (version == 2 ? v2 : v3).count(name) > 0;
}

// OpenQASM 3 statements qmlsim does not simulate, with the reason shown.
std::optional<std::string> unsupported_v3(std::string_view word) {
  static const std::map<std::string, std::string, std::less<>> m = {
      {"while", "loops on measured values (for loops over constant ranges are supported)"},
      {"switch", "classical control flow"},
      {"break", "classical control flow"},
      {"continue", "classical control flow"},
      {"end", "classical control flow"},
      {"extern", "extern functions"},
      {"kernel", "extern functions"},
      {"box", "timing"},
      {"boxas", "timing"},
      {"length", "timing"},
      {"delay", "timing"},
      {"duration", "timing"},
      {"stretch", "timing"},
      {"defcal", "pulse-level calibration"},
      {"cal", "pulse-level calibration"},
      {"defcalgrammar", "pulse-level calibration"},
      {"let", "aliases"},
      {"output", "outputs"},
      {"complex", "classical variables"},
  };
  if (auto it = m.find(word); it != m.end()) return it->second;
  return std::nullopt;
}

}  // namespace qmlsim::qasm
