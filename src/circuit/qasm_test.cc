#include "circuit/qasm.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
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
      // Without a version line a file is OpenQASM 3, whose library is stdgates.inc.
      {"!include \"qelib1.inc\";", "1:9", "only \"stdgates.inc\" is supported"},
      {"qreg q[2];\nx q[01];", "4:5", "integer 01 has a leading zero"},
      {"qreg q[00];", "3:8", "leading zero"},
      {"OPENQASM 4.0;", "1:10", "only OpenQASM 2.0 and 3 are supported"},
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
      // Conditions: on measured bits, with values their registers can hold.
      {"qreg q[2];\ncreg c[2];\nif (c==1) x q[0];", "5:1", "no measurement in the program"},
      {"qreg q[2];\ncreg c[2];\nmeasure q[0] -> c[0];\nif (c==4) x q[0];", "6:8",
       "a register of 2 bit(s) cannot hold 4"},
      {"qreg q[2];\ncreg c[2];\nmeasure q[0] -> c[0];\nif (c<1) x q[0];", "6:6", "expected '=='"},
      {"qreg q[2];\ncreg c[2];\nmeasure q[0] -> c[0];\nif (c==1) qreg r[1];", "6:11",
       "expected a gate, 'measure' or 'reset'"},
      {"qreg q[2];\ncreg c[2];\nmeasure q[0] -> c[0];\nif (c==1) measure q -> c;", "6:11",
       "supported once per body"},
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
      // Broadcast: whole registers must have one size, size 1 included.
      {"qreg r[1];\nqreg q[1];\nqreg s[2];\nx q[0];\ncx r,s;", "7:1", "different sizes (1 and 2)"},
      {"qreg q[3];\nqreg r[1];\nx r;\ncx r,q;", "6:1", "different sizes (1 and 3)"},
      // Literals must be finite doubles, on every path.
      {"qreg q[1];\nrx(1e999) q[0];", "4:4", "number 1e999 is too large for a double"},
      {"qreg q[1];\nrx(-1e999) q[0];", "4:5", "too large for a double"},
      {"qreg q[1];\nrx((1e999)) q[0];", "4:5", "too large for a double"},
      {"qreg q[1];\ngate g(a) x { rx(a) x; }\ng(1e999) q[0];", "5:3", "too large for a double"},
      {"qreg q[1];\ngate g(a) x { rx(a*1e300*1e300) x; }\ng(1) q[0];", "4:25",
       "not a finite number"},
      // Names: parameters may not hide constants, functions or qubit arguments;
      // spec gates stay reserved; keywords name no gate.
      {"gate g(pi) a { rx(pi) a; }", "3:8", "parameter 'pi' would hide the built-in constant"},
      {"gate g(sin) a { rx(sin) a; }", "3:8", "would hide the built-in function 'sin'"},
      {"gate g(a) a { rx(a) a; }", "3:8", "'a' names both a parameter and a qubit argument"},
      {"gate cx a, b { CX a, b; }", "3:6", "already defined by qelib1.inc"},
      {"gate measure a { }", "3:6", "reserved word"},
      {"gate swap a, b { }\ngate swap a, b { }", "4:6", "already defined"},
      {"!OPENQASM 2.0;\ngate h a { U(pi/2,0,pi) a; }\ninclude \"qelib1.inc\";", "3:9",
       "qelib1.inc defines gate 'h', which this file defined before"},
      {"qreg q[1];\ngate f a { g a; }", "4:12", "unknown gate 'g'"},
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

std::string error_of(const std::string& text, const QasmLimits& limits = {}) {
  try {
    parse_qasm(text, "e.qasm", limits);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Qasm, DeepExpressionsAreRefusedAndLongOnesEvaluated) {
  const std::string h = "OPENQASM 2.0;\nqreg q[1];\n";
  auto u = [&](const std::string& angle) { return h + "U(" + angle + ",0,0) q[0];\n"; };
  auto rep = [](const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
  };
  // The issue's reproducers overflowed the stack; each is a located error now.
  for (const std::string& angle :
       {rep("(", 13000) + "1" + rep(")", 13000), rep("-", 19000) + "1", rep("1^", 19000) + "1",
        rep("sin(", 20000) + "1" + rep(")", 20000), rep("(", 257) + "1" + rep(")", 257)}) {
    const std::string msg = error_of(u(angle));
    EXPECT_EQ(msg.rfind("e.qasm:3:", 0), 0u) << msg;
    EXPECT_NE(msg.find("nests more than 256 levels deep"), std::string::npos) << msg;
  }
  // 256 levels are fine, and so is a flat sum of any length (no recursion).
  EXPECT_EQ(error_of(u(rep("(", 256) + "1" + rep(")", 256))), "");
  for (int terms : {58000, 600000}) {
    const QasmProgram p = parse_qasm(u(rep("0.5+", terms) + "0.25"), "e.qasm");
    EXPECT_DOUBLE_EQ(p.angles[0], 0.5 * terms + 0.25);
  }
  const QasmProgram p = parse_qasm(u(rep("-", 256) + "1.5"), "e.qasm");
  EXPECT_DOUBLE_EQ(p.angles[0], 1.5);
  EXPECT_EQ(error_of(u(rep("9", 400))).find("e.qasm:3:3: number 99999999999999999999..."), 0u);
}

TEST(Qasm, FileDefinitionsOfNonSpecGatesWin) {
  // Phase estimation of 3*pi/8 in the style of the specification's example,
  // which defines its own `cu` (qmlsim builds in a 4-parameter cu).
  const std::string text = R"(OPENQASM 2.0;
include "qelib1.inc";
gate cphase(a) c, t { u1(a/2) c; cx c, t; u1(-a/2) t; cx c, t; u1(a/2) t; }
gate cu c, t { cphase(3*pi/8) c, t; }
qreg q[4];
x q[3];
h q[0]; h q[1]; h q[2];
cu q[0], q[3];
cu q[1], q[3]; cu q[1], q[3];
cu q[2], q[3]; cu q[2], q[3]; cu q[2], q[3]; cu q[2], q[3];
)";
  Circuit c(4);
  c.add(GateId::X, {3});
  for (int q = 0; q < 3; ++q) c.add(GateId::H, {q});
  for (int q = 0; q < 3; ++q) {
    for (int r = 0; r < (1 << q); ++r) {
      c.add(GateId::ControlledPhaseShift, {q, 3}, std::vector<double>{3 * std::numbers::pi / 8});
    }
  }
  EXPECT_LT(testing::max_abs_diff(run_qasm(text), run_circuit(c)), 1e-12);

  // Every built-in beyond the spec's qelib1.inc yields to the file's definition.
  const std::string h = "OPENQASM 2.0;\ninclude \"qelib1.inc\";\n";
  for (const char* name :
       {"cu",  "p",   "sx",      "sxdg", "swap", "iswap", "cswap", "crx", "cry",  "cp",  "csx",
        "c3x", "c4x", "c3sqrtx", "rxx",  "ryy",  "rzz",   "u",     "u0",  "rccx", "rc3x"}) {
    const std::string prog = h + "gate " + name + " a { x a; }\nqreg q[1];\n" + name + " q[0];\n";
    const State s = run_qasm(prog);
    EXPECT_NEAR(std::norm(s[1]), 1.0, 1e-12) << name;
  }
  // The prelude's gates keep the built-ins they were defined with: cu's phase
  // is still the built-in p after the file redefines p.
  const std::string redefined_p = h + R"(gate p(l) a { rx(l) a; }
qreg q[2];
x q[0];
cu(0, 0, 0, 0.7) q[0], q[1];
)";
  Circuit want(2);
  want.add(GateId::X, {0});
  want.add(GateId::PhaseShift, {0}, std::vector<double>{0.7});
  EXPECT_LT(testing::max_abs_diff(run_qasm(redefined_p), run_circuit(want)), 1e-12);
}

TEST(Qasm, ExpansionIsCappedBeforeItHappens) {
  // Each definition doubles the one before: 2^23 gates from a few lines.
  std::string text = "OPENQASM 2.0;\ninclude \"qelib1.inc\";\ngate g0 a { x a; }\n";
  for (int i = 1; i <= 23; ++i) {
    text += "gate g" + std::to_string(i) + " a { g" + std::to_string(i - 1) + " a; g" +
            std::to_string(i - 1) + " a; }\n";
  }
  const std::string msg = error_of(text + "qreg q[2];\nh q;\ng23 q[0];\n");
  EXPECT_EQ(msg.rfind("e.qasm:29:1: the program expands to more than the limit of 5000000 gates "
                      "(2 before this statement, which adds 8388608)",
                      0),
            0u)
      << msg;
  // The limit is exact and can be changed.
  QasmLimits limits;
  limits.max_gates = 1024 + 2;
  EXPECT_NE(error_of(text + "qreg q[2];\nh q;\ng10 q[0];\ng0 q[1];\n", limits), "");
  const QasmProgram p = parse_qasm(text + "qreg q[2];\nh q;\ng10 q[0];\n", "e.qasm", limits);
  EXPECT_EQ(p.circuit.ops().size(), 1026u);
  // Definitions that expand to nothing cost nothing, however deep the doubling.
  std::string empty = "OPENQASM 2.0;\ngate e0 a { }\n";
  for (int i = 1; i < 64; ++i) {
    empty += "gate e" + std::to_string(i) + " a { e" + std::to_string(i - 1) + " a; e" +
             std::to_string(i - 1) + " a; }\n";
  }
  EXPECT_EQ(parse_qasm(empty + "qreg q[1];\ne63 q[0];\n", "e.qasm").circuit.ops().size(), 0u);
  // ... but not nested deeper than 64 levels.
  EXPECT_NE(error_of(empty + "gate e64 a { e63 a; }\n").find("nest more than 64 levels"),
            std::string::npos);
}

TEST(Qasm, FilesAreReadWithinTheirLimit) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string path = (dir / ("qmlsim_limit_" + std::to_string(getpid()) + ".qasm")).string();
  std::ofstream(path) << "OPENQASM 2.0;\nqreg q[1];\n// " << std::string(100, 'x') << "\n";
  QasmLimits limits;
  limits.max_file_bytes = 100;
  try {
    read_qasm_file(path, limits);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": larger than the limit of 100 bytes; raise it with --max-file-mib");
  }
  limits.max_file_bytes = 200;
  EXPECT_EQ(read_qasm_file(path, limits).circuit.num_qubits(), 1);
  std::filesystem::remove(path);
  // An endless file is refused at the limit, not read until memory runs out.
  EXPECT_THROW(read_qasm_file("/dev/zero", limits), Error);
  try {
    read_qasm_file(dir.string());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir.string() + ": is a directory, not an OpenQASM file");
  }
}

TEST(Qasm, ErrorsEscapeControlBytes) {
  const std::string text = std::string("OPENQASM 2.0;\nqreg q[1];\n") + '\0' + "\x1b[2J";
  const std::string msg = error_of(text);
  EXPECT_EQ(msg, "e.qasm:3:1: unexpected character '\\x00'");
  EXPECT_EQ(error_of("OPENQASM 2.0;\ninclude \"a\x07"
                     "b\";"),
            "e.qasm:2:9: cannot include \"a\\x07b\": only \"qelib1.inc\" is supported (built in)");
}

}  // namespace
}  // namespace qmlsim
