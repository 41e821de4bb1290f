#include "circuit/qasm.h"

#include <gtest/gtest.h>

#include <fstream>
#include <numbers>

#include "testing/dense_oracle.h"

namespace qmlsim {
namespace {

using testing::State;

State run_qasm(const std::string& text) {
  const QasmProgram p = parse_qasm(text, "t.qasm");
  State psi(std::size_t{1} << p.circuit.num_qubits(), 0.0);
  psi[0] = 1;
  return testing::run_dense(p.circuit, p.angles, psi);
}

State run_circuit(const Circuit& c) {
  State psi(std::size_t{1} << c.num_qubits(), 0.0);
  psi[0] = 1;
  return testing::run_dense(c, {}, psi);
}

TEST(Qasm, Qelib1GatesMatchTheGateTable) {
  const std::string text = R"(OPENQASM 2.0;
include "qelib1.inc";
qreg q[3];
creg c[3];
h q;                          // broadcast over the register
cx q[0], q[1];
rz(pi/4) q[2];
u3(0.1, 0.2, -0.3) q[1];
crx(2*pi/3) q[2], q[0];
ccx q[0], q[1], q[2];
cu1(-0.7) q[1], q[2];
rzz(0.25) q[0], q[2];
cu3(0.5, 0.6, 0.7) q[2], q[1];
barrier q;
measure q -> c;
)";
  Circuit c(3);
  for (int i = 0; i < 3; ++i) c.add(GateId::H, {i});
  c.add(GateId::CNOT, {0, 1});
  c.add(GateId::RZ, {2}, std::vector<double>{std::numbers::pi / 4});
  c.add(GateId::U3, {1}, std::vector<double>{0.1, 0.2, -0.3});
  c.add(GateId::CRX, {2, 0}, std::vector<double>{2 * std::numbers::pi / 3});
  c.add(GateId::Toffoli, {0, 1, 2});
  c.add(GateId::ControlledPhaseShift, {1, 2}, std::vector<double>{-0.7});
  c.add(GateId::IsingZZ, {0, 2}, std::vector<double>{0.25});
  Operation cu3;
  cu3.gate = GateId::U3;
  cu3.controls = {2};
  cu3.wires = {1};
  for (double v : {0.5, 0.6, 0.7}) cu3.params.push_back(ParamExpr::literal(v));
  c.add(cu3);
  EXPECT_LT(testing::max_abs_diff(run_qasm(text), run_circuit(c)), 1e-12);
  const QasmProgram p = parse_qasm(text, "t.qasm");
  EXPECT_EQ(p.measured, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(p.angles.size(), 10u);  // every angle of every parametric gate is a slot
}

TEST(Qasm, UserGatesExpressionsAndSeveralRegisters) {
  const std::string text = R"(OPENQASM 2.0;
include "qelib1.inc";
gate layer(a, b) x, y { ry(a/2 + b^2) x; cx x, y; rz(-sin(a)*cos(b) + sqrt(4) - ln(exp(1))) y; }
qreg a[1];
qreg b[2];
layer(0.3, -0.4) a[0], b[1];
layer(1.1, 2) b[0], a[0];
U(0.1, 0.2, 0.3) b[1];
CX b[1], b[0];
)";
  Circuit c(3);
  auto layer = [&](double a, double b, int x, int y) {
    c.add(GateId::RY, {x}, std::vector<double>{a / 2 + b * b});
    c.add(GateId::CNOT, {x, y});
    c.add(GateId::RZ, {y}, std::vector<double>{-std::sin(a) * std::cos(b) + 2 - 1});
  };
  layer(0.3, -0.4, 0, 2);
  layer(1.1, 2, 1, 0);
  c.add(GateId::U3, {2}, std::vector<double>{0.1, 0.2, 0.3});
  c.add(GateId::CNOT, {2, 1});
  EXPECT_LT(testing::max_abs_diff(run_qasm(text), run_circuit(c)), 1e-12);
  EXPECT_EQ(parse_qasm(text, "t").qubit_names, (std::vector<std::string>{"a[0]", "b[0]", "b[1]"}));
}

TEST(Qasm, PreludeGatesAreCorrect) {
  // sxdg is SX^dagger up to a global phase; rccx is Toffoli up to relative phases
  // on the |11x> block: check them through measurable quantities.
  const std::string text = R"(OPENQASM 2.0;
include "qelib1.inc";
qreg q[3];
h q[0]; h q[1];
sx q[2]; sxdg q[2];
rccx q[0], q[1], q[2];
)";
  const State s = run_qasm(text);
  // probability of q2 = 1 equals P(q0 = q1 = 1) = 1/4
  double p = 0;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (i >> 2 & 1) p += std::norm(s[i]);
  EXPECT_NEAR(p, 0.25, 1e-12);
}

struct BadQasm {
  const char* text;
  const char* where;    // "line:column"
  const char* message;  // part of the message
};

TEST(Qasm, MalformedProgramsGiveLocatedErrors) {
  const std::string h = "OPENQASM 2.0;\ninclude \"qelib1.inc\";\n";
  const BadQasm cases[] = {
      {"!qreg q[1];", "1:1", "expected 'OPENQASM 2.0;'"},
      {"OPENQASM 3.0;", "1:10", "only OpenQASM 2.0"},
      {"OPENQASM 2.0", "1:13", "expected ';'"},
      {"OPENQASM 2.0;\nqreg q[2];\nh q[0];", "3:1", "missing include"},
      {"OPENQASM 2.0;\ninclude \"other.inc\";", "2:9", "only \"qelib1.inc\""},
      {"OPENQASM 2.0;\ninclude qelib1;", "2:9", "file name in quotes"},
      {"qreg q[0];", "3:8", "must be positive"},
      {"qreg q[2];\nqreg q[3];", "4:6", "already declared"},
      {"qreg q[41];", "3:8", "too many qubits"},
      {"qreg q[2];\nh r[0];", "4:3", "unknown quantum register 'r'"},
      {"qreg q[2];\nh q[2];", "4:5", "out of range"},
      {"qreg q[2];\ncx q[0], q[0];", "4:1", "same qubit twice"},
      {"qreg q[2];\ncx q[0];", "4:1", "takes 2 qubit(s), got 1"},
      {"qreg q[2];\nrx q[0];", "4:1", "takes 1 parameter(s), got 0"},
      {"qreg q[2];\nfoo q[0];", "4:1", "unknown gate 'foo'"},
      {"qreg q[2];\nh q[0]", "4:7", "expected ';'"},
      {"qreg q[2];\nrx(pi/0) q[0];", "4:6", "division by zero"},
      {"qreg q[2];\nrx(ln(-1)) q[0];", "4:4", "not a finite number"},
      {"qreg q[2];\nrx(theta) q[0];", "4:4", "unknown identifier 'theta'"},
      {"qreg q[2];\nrx(1 +) q[0];", "4:7", "expected an expression"},
      {"qreg q[2];\nreset q[0];", "4:1", "'reset' is not supported"},
      {"qreg q[2];\ncreg c[2];\nif (c==1) x q[0];", "5:1", "'if') are not supported"},
      {"qreg q[2];\ncreg c[2];\nmeasure q[0] -> c[0];\nh q[0];", "6:1", "mid-circuit measurement"},
      {"qreg q[2];\ncreg c[1];\nmeasure q -> c;", "5:1", "equal size"},
      {"qreg q[2];\nqreg r[3];\ncx q, r;", "5:1", "different sizes"},
      {"gate g a { h b; }", "3:14", "unknown qubit argument 'b'"},
      {"gate g a { h a;", "3:16", "unterminated body"},
      {"gate g a { g a; }", "3:12", "unknown gate 'g'"},
      {"gate h a { x a; }", "3:6", "already defined"},
      {"gate g(t, t) a { }", "3:6", "parameter 't' appears twice"},
      {"opaque o a;\nqreg q[1];\no q[0];", "5:1", "opaque gate 'o'"},
      {"qreg q[1];\nh q[0]; $", "4:9", "unexpected character '$'"},
      {"/* never closed", "3:1", "unterminated comment"},
      {"qreg q[1];\ncreg c[1];\nh c[0];", "5:3", "is a classical register"},
      {"qreg q[2];\nmeasure q[0] -> d[0];", "4:17", "unknown classical register 'd'"},
  };
  int n = 0;
  for (const BadQasm& c : cases) {
    // Cases starting with OPENQASM, or with '!' (removed), are taken as they are.
    std::string text = c.text;
    if (text[0] == '!')
      text = text.substr(1);
    else if (text.rfind("OPENQASM", 0) != 0)
      text = h + text;
    try {
      parse_qasm(text, "bad.qasm");
      ADD_FAILURE() << "no error for:\n" << text;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(std::string("bad.qasm:") + c.where + ": ", 0), 0u)
          << text << "\n-> " << msg;
      EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
    ++n;
  }
  EXPECT_GE(n, 30);
}

TEST(Qasm, MissingFileIsAnError) { EXPECT_THROW(read_qasm_file("/nonexistent/x.qasm"), Error); }

}  // namespace
}  // namespace qmlsim
