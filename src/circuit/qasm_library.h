// Gate definitions and the built-in libraries of the OpenQASM reader: qelib1.inc
// (OpenQASM 2) and stdgates.inc (OpenQASM 3), reserved words, the OpenQASM 3
// statements not simulated (internal to the reader, circuit/qasm*.cc).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "circuit/gates.h"
#include "circuit/qasm_expr.h"

namespace qmlsim::qasm {

struct GateDef;

// A gate application, in a gate body (qubits are argument indices) or at the
// top level (qubits are resolved per broadcast index).
struct GateCall {
  std::string name;
  std::shared_ptr<const GateDef> def;  // bound where it was read; null: a built-in
  std::vector<Expr> params;
  std::vector<int> args;       // in a body: indices into the definition's qubit arguments
  std::vector<bool> ctrl_neg;  // one per control qubit (the first args), true for negctrl
  double exponent = 1;         // pow(k) and inv modifiers: the call applies gate^exponent
  int line = 0, col = 0;
};

struct GateDef {
  std::vector<std::string> params, args;
  std::vector<GateCall> body;
  bool from_prelude = false;
  std::int64_t gates = 0;  // gates one application expands to (saturating at kManyGates)
  int nesting = 1;         // 1 + the deepest nesting of a gate it calls
  std::string opaque;      // an opaque gate in its expansion (itself, if opaque), or ""
};

constexpr std::int64_t kManyGates = std::int64_t{1} << 62;
constexpr std::size_t kMaxAngleOps = 100000;  // an angle's expression of the inputs

inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  return a > kManyGates - b ? kManyGates : a + b;
}
inline std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
  return b != 0 && a > kManyGates / b ? kManyGates : a * b;
}

// qelib1.inc gates that map onto the gate table: table gate plus extra controls.
struct Builtin {
  GateId gate;
  int extra_controls;
};
// The gates of qelib1.inc (OpenQASM 2) and of stdgates.inc (OpenQASM 3) that are
// table gates with extra controls.
const std::map<std::string, Builtin, std::less<>>& builtins_qelib1();
const std::map<std::string, Builtin, std::less<>>& builtins_stdgates();

// The four-parameter cu of stdgates.inc: e^{i gamma} U(theta, phi, lambda) on |1> of c.
constexpr std::string_view kStdgatesPrelude = R"(OPENQASM 3.0;
gate cu(theta, phi, lambda, gamma) c, t { p(gamma) c; ctrl @ U(theta, phi, lambda) c, t; }
)";
// The gates of the specification's qelib1.inc: reserved once it is included.
// qmlsim's further built-in gates (cu, p, sx, swap, ...) yield to a file's own.
bool spec_qelib1_gate(std::string_view name);
// Whether `name` is a reserved word of the version.
bool keyword(std::string_view name, int version);
// OpenQASM 3 statements qmlsim does not simulate, with the reason shown.
std::optional<std::string> unsupported_v3(std::string_view word);

// qelib1.inc gates with no single table row, defined as in qelib1.inc itself.
constexpr std::string_view kQelib1Prelude = R"(OPENQASM 2.0;
gate u0(gamma) q { U(0,0,0) q; }
gate sxdg a { s a; h a; s a; }
gate cu(theta,phi,lambda,gamma) c, t { p(gamma) c; cu3(theta,phi,lambda) c, t; }
gate rccx a,b,c {
  u2(0,pi) c; u1(pi/4) c; cx b, c; u1(-pi/4) c; cx a, c; u1(pi/4) c; cx b, c; u1(-pi/4) c;
  u2(0,pi) c;
}
gate rc3x a,b,c,d {
  u2(0,pi) d; u1(pi/4) d; cx c,d; u1(-pi/4) d; u2(0,pi) d; cx a,d; u1(pi/4) d; cx b,d;
  u1(-pi/4) d; cx a,d; u1(pi/4) d; cx b,d; u1(-pi/4) d; u2(0,pi) d; u1(pi/4) d; cx c,d;
  u1(-pi/4) d; u2(0,pi) d;
}
)";

}  // namespace qmlsim::qasm
