// OpenQASM 3: stdgates against the gate table, modifiers against equivalent
// plain programs (exactly, global phase included, since phases matter under
// control), inputs and the chain rule against finite differences, and the
// constructs it rejects. States come from the dense oracle.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <numbers>

#include "circuit/qasm.h"
#include "circuit/qasm_library.h"
#include "testing/dense_oracle.h"

namespace qmlsim {
namespace {

using testing::State;

const std::string kHead = "OPENQASM 3.0;\ninclude \"stdgates.inc\";\nqubit[4] q;\n";
// A prefix that leaves a generic entangled state, so equivalences are tested
// on every amplitude.
const std::string kScramble =
    "U(0.3, 0.2, 0.1) q[0]; U(1.1, -0.4, 0.7) q[1]; U(2.0, 0.5, -1.2) q[2]; U(0.9, 1.3, 0.2) "
    "q[3];\ncx q[0], q[1]; cx q[2], q[3]; cx q[1], q[2];\n";

State run(const QasmProgram& p) {
  State psi(std::size_t{1} << p.circuit.num_qubits(), 0.0);
  psi[0] = 1;
  return testing::run_dense(p.circuit, p.angles, psi);
}

State run_text(const std::string& text) { return run(parse_qasm(text, "t.qasm")); }

// d<h>/d(angle) for every slot of p, by central differences of width eps.
std::vector<double> angle_gradient(const QasmProgram& p, const PauliSum& h, double eps) {
  std::vector<double> d(p.angles.size());
  for (std::size_t s = 0; s < p.angles.size(); ++s) {
    QasmProgram q = p;
    q.angles[s] += eps;
    const double up = testing::expval_dense(h, run(q));
    q.angles[s] -= 2 * eps;
    d[s] = (up - testing::expval_dense(h, run(q))) / (2 * eps);
  }
  return d;
}

// `a` and `b` act the same on a scrambled 4-qubit state, phase included.
void expect_equivalent(const std::string& a, const std::string& b) {
  const State sa = run_text(kHead + kScramble + a), sb = run_text(kHead + kScramble + b);
  EXPECT_LT(testing::max_abs_diff(sa, sb), 1e-12) << a << "\n  vs\n" << b;
}

// `inv @` reads each gate's inverse rule from the gate table: under a control
// (where its phase shows), inv @ g then g is the identity for every built-in.
TEST(Qasm3, InverseOfEveryBuiltinFromTheTable) {
  for (const auto& [name, builtin] : qasm::builtins_stdgates()) {
    const GateInfo& info = gate_info(builtin.gate);
    std::string params;
    for (int j = 0; j < info.num_params; ++j) params += (j ? ", " : "(") + std::to_string(0.3 + j);
    if (!params.empty()) params += ")";
    std::string qubits = "q[0]";
    for (int w = 1; w <= info.num_wires + builtin.extra_controls; ++w)
      qubits += ", q[" + std::to_string(w) + "]";
    const std::string call = name + params + " " + qubits + ";";
    expect_equivalent("ctrl @ inv @ " + call + " ctrl @ " + call, "");
  }
}

TEST(Qasm3, StdgatesMatchTheGateTable) {
  const std::string text = kHead + R"(bit[4] c;
h q[0]; x q[1]; y q[2]; z q[3]; s q[0]; sdg q[1]; t q[2]; tdg q[3]; sx q[0];
rx(0.1) q[0]; ry(0.2) q[1]; rz(0.3) q[2]; p(0.4) q[3];
cx q[0], q[1]; cy q[1], q[2]; cz q[2], q[3]; cp(0.5) q[0], q[2]; crx(0.6) q[1], q[3];
cry(0.7) q[2], q[0]; crz(0.8) q[3], q[1]; ch q[0], q[3]; swap q[1], q[2];
ccx q[0], q[1], q[2]; cswap q[3], q[0], q[1];
CX q[2], q[3]; phase(0.9) q[0]; cphase(1.0) q[1], q[0]; id q[2];
u1(1.1) q[3]; u2(1.2, 1.3) q[0]; u3(1.4, 1.5, 1.6) q[1];
c = measure q;
)";
  Circuit c(4);
  using G = GateId;
  auto add = [&](G g, std::vector<int> w, std::vector<double> p = {}) { c.add(g, w, p); };
  add(G::H, {0}), add(G::X, {1}), add(G::Y, {2}), add(G::Z, {3}), add(G::S, {0});
  add(G::Sdg, {1}), add(G::T, {2}), add(G::Tdg, {3}), add(G::SX, {0});
  add(G::RX, {0}, {0.1}), add(G::RY, {1}, {0.2}), add(G::RZ, {2}, {0.3});
  add(G::PhaseShift, {3}, {0.4});
  add(G::CNOT, {0, 1}), add(G::CY, {1, 2}), add(G::CZ, {2, 3});
  add(G::ControlledPhaseShift, {0, 2}, {0.5}), add(G::CRX, {1, 3}, {0.6});
  add(G::CRY, {2, 0}, {0.7}), add(G::CRZ, {3, 1}, {0.8}), add(G::CH, {0, 3}), add(G::SWAP, {1, 2});
  add(G::Toffoli, {0, 1, 2}), add(G::CSWAP, {3, 0, 1});
  add(G::CNOT, {2, 3}), add(G::PhaseShift, {0}, {0.9}), add(G::ControlledPhaseShift, {1, 0}, {1.0});
  add(G::I, {2});
  add(G::U1, {3}, {1.1}), add(G::U2, {0}, {1.2, 1.3}), add(G::U3, {1}, {1.4, 1.5, 1.6});
  State psi(16, 0.0);
  psi[0] = 1;
  const QasmProgram p = parse_qasm(text, "t.qasm");
  EXPECT_LT(testing::max_abs_diff(run(p), testing::run_dense(c, {}, psi)), 1e-12);
  EXPECT_EQ(p.measured, (std::vector<int>{0, 1, 2, 3}));

  // cu(theta, phi, lambda, gamma) = |0><0| (x) I + e^{i gamma} |1><1| (x) U(theta, phi, lambda).
  const Matrix u = target_matrix(GateId::U3, std::vector<double>{0.1, 0.2, 0.3}, 1);
  const cplx g = std::polar(1.0, 0.4);
  Operation cu;
  cu.gate = GateId::QubitUnitary;
  cu.wires = {0, 3};  // first wire (the control) most significant
  cu.unitary = std::make_shared<Matrix>(
      Matrix{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, g * u[0], g * u[1], 0, 0, g * u[2], g * u[3]});
  Circuit want(4);
  want.add(GateId::H, {0});
  want.add(GateId::H, {3});
  want.add(cu);
  EXPECT_LT(
      testing::max_abs_diff(run_text(kHead + "h q[0]; h q[3];\ncu(0.1, 0.2, 0.3, 0.4) q[0], q[3];"),
                            testing::run_dense(want, {}, psi)),
      1e-12);
}

TEST(Qasm3, ModifiersEqualTheirPlainForms) {
  expect_equivalent("ctrl @ x q[0], q[1];", "cx q[0], q[1];");
  expect_equivalent("negctrl @ x q[0], q[1];", "x q[0]; cx q[0], q[1]; x q[0];");
  expect_equivalent("ctrl(2) @ x q[0], q[1], q[2];", "ccx q[0], q[1], q[2];");
  expect_equivalent("ctrl @ ctrl @ x q[3], q[1], q[2];", "ccx q[3], q[1], q[2];");
  expect_equivalent("ctrl @ negctrl @ rx(0.4) q[0], q[1], q[2];",
                    "x q[1]; ctrl(2) @ rx(0.4) q[0], q[1], q[2]; x q[1];");
  expect_equivalent("inv @ s q[0]; inv @ t q[1];", "sdg q[0]; tdg q[1];");
  expect_equivalent("inv @ rx(0.3) q[0]; inv @ crz(0.5) q[1], q[2];",
                    "rx(-0.3) q[0]; crz(-0.5) q[1], q[2];");
  // Exact inverses, phase included (tested under a control, where it shows).
  for (const char* g : {"U(0.1, 0.2, 0.3)", "u2(0.4, 0.5)", "sx", "h", "y", "sdg", "p(0.7)"}) {
    const std::string gate(g);
    expect_equivalent("ctrl @ inv @ " + gate + " q[0], q[1]; ctrl @ " + gate + " q[0], q[1];", "");
  }
  expect_equivalent("inv @ ctrl @ swap q[0], q[1], q[2]; cswap q[0], q[1], q[2];", "");
  expect_equivalent("pow(2) @ sx q[0];", "x q[0];");
  expect_equivalent("pow(3) @ h q[0];", "h q[0];");
  expect_equivalent("pow(-1) @ t q[0];", "tdg q[0];");
  expect_equivalent("pow(-2) @ s q[0];", "z q[0];");
  // Principal roots, exact under a control.
  expect_equivalent("ctrl @ pow(0.5) @ x q[0], q[1];", "ctrl @ sx q[0], q[1];");
  expect_equivalent("ctrl @ pow(1/2) @ z q[0], q[1];", "ctrl @ s q[0], q[1];");
  expect_equivalent("ctrl @ pow(1/2) @ s q[0], q[1];", "ctrl @ t q[0], q[1];");
  expect_equivalent("ctrl @ pow(0.5) @ sx q[0], q[1]; ctrl @ pow(0.5) @ sx q[0], q[1];",
                    "ctrl @ sx q[0], q[1];");
  expect_equivalent("ctrl @ pow(0.5) @ y q[0], q[1]; ctrl @ pow(0.5) @ y q[0], q[1];",
                    "cy q[0], q[1];");
  expect_equivalent(
      "pow(0.5) @ rz(0.8) q[0]; pow(0.25) @ cx q[1], q[2]; pow(0.75) @ cx q[1], q[2];",
      "rz(0.4) q[0]; cx q[1], q[2];");
  expect_equivalent("ctrl @ inv @ pow(0.5) @ x q[0], q[1]; ctrl @ sx q[0], q[1];", "");
  // gphase: a phase on the controls' |1...1>; nothing unobservable when alone.
  expect_equivalent("ctrl @ gphase(0.7) q[0];", "p(0.7) q[0];");
  expect_equivalent("ctrl(2) @ gphase(0.7) q[0], q[1];", "cp(0.7) q[0], q[1];");
  expect_equivalent("gphase(0.2);", "");
  // Modifiers on gate definitions: reversed and inverted bodies, controls on every gate.
  const std::string g = "gate g(a) x, y { rx(a) x; cx x, y; ry(2 * a) y; gphase(a / 3); }\n";
  expect_equivalent(g + "inv @ g(0.3) q[0], q[1]; g(0.3) q[0], q[1];", "");
  expect_equivalent(g + "ctrl @ g(0.3) q[2], q[0], q[1];",
                    "crx(0.3) q[2], q[0]; ccx q[2], q[0], q[1]; cry(0.6) q[2], q[1]; "
                    "p(0.1) q[2];");
  expect_equivalent(g + "pow(2) @ g(0.3) q[0], q[1];", g + "g(0.3) q[0], q[1]; g(0.3) q[0], q[1];");
}

TEST(Qasm3, AnglesFollowTheirInputsAndGradientsChainThroughThem) {
  const std::string text = R"(OPENQASM 3;
include "stdgates.inc";
input float[64] theta;
input angle[32] phi;
input array[float[64], 3] w;
const float[64] half = π / 2;
const int n = 3;
gate layer(a, b) x, y { ry(a / 2 + b ** 2) x; cx x, y; rz(-sin(a) * cos(b) + arctan(b)) y; }
qubit[n] q;
h q;
rx(theta) q[0];
ry(w[0] * w[1] + sin(phi)) q[1];
crz(theta ** 2) q[0], q[1];
layer(theta / 2, w[2]) q[1], q[2];
inv @ layer(exp(w[0]) - half, ln(2 + phi)) q[2], q[0];
U(half, tau / 8, euler) q[2];
)";
  QasmProgram p = parse_qasm(text, "in.qasm");
  ASSERT_EQ(p.inputs.size(), 3u);
  EXPECT_EQ(p.inputs[2].name, "w");
  EXPECT_EQ(p.inputs[2].offset, 2);
  EXPECT_TRUE(p.inputs[2].array);
  ASSERT_EQ(p.num_input_values(), 5);
  const std::vector<double> x = {0.3, 0.2, 0.1, -0.4, 0.7};
  EXPECT_EQ(p.input_values({{"w", {0.1, -0.4, 0.7}}, {"theta", {0.3}}, {"phi", {0.2}}}), x);
  EXPECT_THROW(p.input_values({{"w", {0.1}}, {"theta", {0.3}}, {"phi", {0.2}}}), Error);
  EXPECT_THROW(p.input_values({{"w", {0.1, -0.4, 0.7}}, {"theta", {0.3}}}), Error);
  EXPECT_THROW(
      p.input_values({{"w", {0.1, -0.4, 0.7}}, {"theta", {0.3}}, {"phi", {0.2}}, {"v", {1}}}),
      Error);
  p.bind_inputs(x);

  // The same circuit with the angles written out.
  const double pi = std::numbers::pi;
  Circuit c(3);
  for (int i = 0; i < 3; ++i) c.add(GateId::H, {i});
  c.add(GateId::RX, {0}, std::vector<double>{0.3});
  c.add(GateId::RY, {1}, std::vector<double>{0.1 * -0.4 + std::sin(0.2)});
  c.add(GateId::CRZ, {0, 1}, std::vector<double>{0.09});
  auto layer = [&](double a, double b, int u, int v, bool inverse) {
    const double r1 = a / 2 + b * b, r2 = -std::sin(a) * std::cos(b) + std::atan(b);
    if (!inverse) {
      c.add(GateId::RY, {u}, std::vector<double>{r1});
      c.add(GateId::CNOT, {u, v});
      c.add(GateId::RZ, {v}, std::vector<double>{r2});
    } else {
      c.add(GateId::RZ, {v}, std::vector<double>{-r2});
      c.add(GateId::CNOT, {u, v});
      c.add(GateId::RY, {u}, std::vector<double>{-r1});
    }
  };
  layer(0.15, 0.7, 1, 2, false);
  layer(std::exp(0.1) - pi / 2, std::log(2.2), 2, 0, true);
  c.add(GateId::U3, {2}, std::vector<double>{pi / 2, pi / 4, std::numbers::e});
  State psi(8, 0.0);
  psi[0] = 1;
  EXPECT_LT(testing::max_abs_diff(run(p), testing::run_dense(c, {}, psi)), 1e-12);

  // d<H>/d(input) by the chain rule through the angles' expressions, against
  // central differences over the inputs themselves.
  const PauliSum h = parse_pauli_sum("0.5*Z0*Z1 - X2 + 0.3*Y1", "h");
  auto value = [&](const std::vector<double>& at) {
    QasmProgram q = p;
    q.bind_inputs(at);
    return testing::expval_dense(h, run(q));
  };
  const double eps = 1e-5;
  const std::vector<double> d_angles = angle_gradient(p, h, eps);
  const std::vector<double> grad = p.input_gradient(x, d_angles);
  ASSERT_EQ(grad.size(), 5u);
  for (std::size_t k = 0; k < 5; ++k) {
    std::vector<double> up = x, down = x;
    up[k] += eps;
    down[k] -= eps;
    EXPECT_NEAR(grad[k], (value(up) - value(down)) / (2 * eps), 1e-8) << "input value " << k;
  }
}

struct Bad {
  const char* text;     // after the header (OPENQASM 3.0; include; qubit[2] q;)
  const char* where;    // "line:column"
  const char* message;  // part of the message
};

// A noise pragma in an `if` body is conditioned as the body's gates are (Aer
// applies a noise model inside control flow); in a loop it repeats.
TEST(Qasm3, NoisePragmasInBlocksFollowTheirBlocks) {
  const QasmProgram p = parse_qasm(
      "OPENQASM 3.0;\ninclude \"stdgates.inc\";\nqubit[2] q;\nbit c;\nh q[0];\n"
      "c = measure q[0];\nif (c) {\n  x q[1];\n  #pragma braket noise depolarizing(0.6) q[1]\n}\n"
      "for int i in [0:1] {\n  #pragma braket noise bit_flip(0.1) q[0]\n}\n",
      "noise.qasm");
  const std::vector<Operation>& ops = p.circuit.ops();
  ASSERT_EQ(ops.size(), 6u);
  EXPECT_EQ(ops[3].channel, ChannelId::depolarizing);
  EXPECT_EQ(ops[3].condition.bits, std::vector<int>{0});
  EXPECT_EQ(ops[3].condition.value, 1u);
  EXPECT_EQ(ops[4].channel, ChannelId::bit_flip);
  EXPECT_FALSE(ops[5].condition.active());
}

TEST(Qasm3, BraketNoisePragmasBecomeChannels) {
  const QasmProgram p = parse_qasm(
      "OPENQASM 3.0;\ninclude \"stdgates.inc\";\nqubit[2] q;\nh q[0];\n"
      "#pragma braket noise depolarizing(0.1) q[0]\n"
      "#pragma braket noise amplitude_damping(pi / 16) q\n"
      "#pragma braket noise generalized_amplitude_damping(0.2, 0.3) q[1]\n"
      "#pragma braket noise two_qubit_dephasing(0.05) q[1], q[0]\n"
      "#pragma braket noise kraus([[0.8, 0], [0, 0.8]], [[0, 0.6im], [-0.6im, 0]]) q[1]\n"
      "#pragma braket noise kraus([[1, 0], [0, 0.6+0.8im]]) q[0]\n"
      "cx q[0], q[1];\n",
      "noise.qasm");
  const std::vector<Operation>& ops = p.circuit.ops();
  ASSERT_EQ(ops.size(), 9u);
  EXPECT_EQ(ops[1].channel, ChannelId::depolarizing);
  EXPECT_EQ(ops[2].channel, ChannelId::amplitude_damping);  // q broadcast: q[0], q[1]
  EXPECT_EQ(ops[3].wires, std::vector<int>{1});
  EXPECT_NEAR(ops[3].params[0].shift, std::numbers::pi / 16, 1e-15);
  EXPECT_EQ(ops[4].params[1].shift, 0.3);
  EXPECT_EQ(ops[5].wires, (std::vector<int>{1, 0}));
  ASSERT_EQ(ops[6].channel, ChannelId::kraus);
  EXPECT_EQ((*ops[6].kraus)[1][1], cplx(0, 0.6));
  EXPECT_EQ((*ops[6].kraus)[1][2], cplx(0, -0.6));
  EXPECT_EQ((*ops[7].kraus)[0][3], cplx(0.6, 0.8));
  EXPECT_TRUE(p.circuit.has_channels());
  EXPECT_TRUE(p.angles.empty());
}

TEST(Qasm3, UnsupportedConstructsGiveLocatedErrors) {
  const std::string h = "OPENQASM 3.0;\ninclude \"stdgates.inc\";\nqubit[2] q;\n";
  const Bad cases[] = {
      {"bit c;\nif (c) x q[0];", "5:1", "no measurement in the program"},
      {"for int i in [0:1] { if (true) x q[0]; }", "4:22", "reads no classical bit"},
      {"bit[2] c;\nc = measure q;\nif (c == 7) x q[0];", "6:7", "2 bit(s) cannot hold 7"},
      {"bit c;\nc = measure q[0];\nif (c) x q[0]; else if (c) x q[1];", "6:21", "'else if'"},
      {"bit c;\nc = measure q[0];\nif (q) x q[0];", "6:5", "expected a classical bit"},
      {"else x q[0];", "4:1", "'else' without an 'if'"},
      {"bit c;\nif (!c) { c = measure q[0]; x q[1]; }", "5:15", "only as the last operation"},
      {"bit c;\nif (!c) { c = measure q[0]; } else { x q[1]; }", "5:15", "without 'else'"},
      {"while (true) { }", "4:1", "loops on measured values"},
      {"def f(qubit a) -> bit { return measure a; }", "4:16", "returns a value"},
      {"def f(qubit a) { return measure a; }\nf(q[0]);", "4:25", "returning a value"},
      {"return;", "4:1", "'return' outside a subroutine"},
      {"for i in [0:1] { qubit r; }", "4:18", "only at the top level"},
      {"def f(qubit a) { gate g b { x b; } }\nf(q[0]);", "4:18", "only at the top level"},
      {"def f(qubit[2] a) { x a; }\nf(q[0]);", "5:3", "takes 2 qubit(s), got 1"},
      {"def f(qubit a, qubit b) { cx a, b; }\nf(q[1], q[1]);", "5:9", "same qubit is passed"},
      {"def f(qubit a, qubit[2] b) { x a; }\nf(q[1], q);", "5:9", "same qubit is passed"},
      {"def f(qubit a, angle t) { rx(t) a; }\nf(q[1]);", "5:1", "takes 2 argument(s), got 1"},
      {"def f(qubit a) { x a; }\nf(q[1], q[0]);", "5:1", "takes 1 argument(s), got 2 or more"},
      {"def f(qubit a) { f(a); }\nf(q[0]);", "4:18", "nest more than 64 levels"},
      {"def f(array[int[8], 2] a) { }", "4:7", "array arguments"},
      {"for i in [0:1] { x q[0]; ", "4:16", "unterminated loop body"},
      {"for i in [0:1] x q[0]", "4:16", "unterminated loop body"},
      {"for i in [0:0:3] { }", "4:1", "step cannot be 0"},
      {"for i in [0:1.5] { }", "4:13", "must be a whole number"},
      {"for i in (0, 1) { }", "4:10", "expected a range"},
      {"for q in [0:1] { }", "4:5", "already declared"},
      {"for i in [0:2] { x q[i]; }", "4:22", "out of range for register 'q'"},
      {"const array[float[64], 2] a = {1, 2, 3};", "4:38", "too many values"},
      {"const array[float[64], 3] a = {1, 2};", "4:31", "given 2 values"},
      {"const array[float[64], 2] a = {1, 2};\nrx(a[2]) q[0];", "5:6", "out of range for array"},
      {"const array[float[64], 2] a = {1, 2};\nrx(a) q[0];", "5:4", "needs an index"},
      {"input float t;\nx q[t];", "5:5", "input 't' cannot be used here"},
      {"def f(qubit a, angle t) { x a[t]; }\ninput float u;\nf(q[0], u);", "4:31",
       "depends on an input"},
      {"extern f(float) -> float;", "4:1", "extern functions"},
      {"#pragma braket noise bit_flip(1.5) q[0]", "4:1",
       "probability = 1.500000 is outside [0, 1]"},
      {"#pragma braket noise flip(0.1) q[0]", "4:22", "unknown noise channel 'flip'"},
      {"#pragma braket noise bit_flip(0.1)\nx q[0];", "4:1", "names no qubits"},
      {"#pragma braket noise bit_flip(0.1) q[0], q[1]", "4:1", "takes 1 wire(s), got 2"},
      {"#pragma braket noise kraus([[1, 0], [0, 0.5]]) q[0]", "4:1", "not trace preserving"},
      {"#pragma braket noise kraus([[1, 0], [0]]) q[0]", "4:28", "differ in length"},
      {"#pragma braket noise depolarizing(0.1) q[0] q[1]", "4:45", "end of the pragma's line"},
      {"#pragma braket verbatim", "4:1", "'noise' alone"},
      {"#pragma qiskit something", "4:1", "unsupported pragma"},
      {"for i in [0:1] {\n#pragma braket noise bit_flip(1.5) q[0]\n}", "5:1", "bit_flip"},
      {"delay[10ns] q[0];", "4:1", "timing"},
      {"box { x q[0]; }", "4:1", "timing"},
      {"int[32] k;", "4:10", "'k' has no value"},
      {"complex[float[64]] z = 1;", "4:1", "classical variables"},
      {"let r = q;", "4:1", "aliases"},
      {"opaque o a;", "4:1", "'opaque' is not part of OpenQASM 3"},
      {"input bit b;", "4:7", "of type 'bit' is not supported"},
      {"input array[float[64], 2, 2] m;", "4:25", "multi-dimensional input arrays"},
      {"input float x;\ngate g a { rx(x) a; }", "5:15", "input 'x' cannot be used here"},
      {"input array[float[64], 2] w;\nrx(w[2]) q[0];", "5:6", "out of range for input array 'w'"},
      {"input array[float[64], 2] w;\nrx(w) q[0];", "5:4", "needs an index"},
      {"rx(2 ^ 3) q[0];", "4:6", "'^' is bitwise xor"},
      {"const int k = 1.5;", "4:15", "whole number"},
      {"input float x;\nconst float y = x;", "5:17", "input 'x' cannot be used here"},
      {"pow(0.5) @ h q[0];", "4:12", "non-integer k"},
      {"ctrl @ x q[0];", "4:8", "takes 2 qubit(s) with its controls, got 1"},
      {"ctrl(0) @ x q[0], q[1];", "4:6", "at least 1"},
      {"ctrl(792300367) @ x q[0], q[1];", "4:6", "cannot have 792300367 more controls"},
      {"ctrl(30) @ ctrl(20) @ x q[0], q[1];", "4:17", "cannot have 20 more controls"},
      {"gate x a { }", "4:6", "already defined by stdgates.inc"},
      {"gate cu a { }", "4:6", "already defined by stdgates.inc"},
      {"gate g a { cx a, a; }", "4:18", "used twice in one gate"},
      {"bit[2] c;\nc = measure q[0];", "5:5", "equal size"},
      {"rx(1e999) q[0];", "4:4", "too large for a double"},
      {"qubit r;\nqubit r;", "5:7", "already declared"},
  };
  for (const Bad& c : cases) {
    const std::string text = h + c.text;
    try {
      parse_qasm(text, "bad.qasm");
      ADD_FAILURE() << "no error for:\n" << text;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(std::string("bad.qasm:") + c.where + ": ", 0), 0u)
          << text << "\n-> " << msg;
      EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
    }
  }
  // Without the include, stdgates names are unknown (with a hint); U and gphase are built in.
  try {
    parse_qasm("OPENQASM 3;\nqubit q;\nh q;\n", "t.qasm");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing include \"stdgates.inc\""), std::string::npos);
  }
  // reset before any gate is a no-op; `qubit q[n];` is the older declaration form.
  EXPECT_EQ(parse_qasm("OPENQASM 3;\nqubit q[3];\nreset q;\nU(1, 2, 3) q[1];\n", "t.qasm")
                .circuit.num_qubits(),
            3);
  EXPECT_EQ(parse_qasm("OPENQASM 3;\nqubit q;\nU(1, 2, 3) q;\ngphase(1);\n", "t.qasm")
                .circuit.ops()
                .size(),
            1u);
}

TEST(Qasm3, ExpansionIsCappedForModifiersToo) {
  QasmLimits limits;
  limits.max_gates = 100;
  const std::string h = "OPENQASM 3;\ninclude \"stdgates.inc\";\nqubit[2] q;\n";
  EXPECT_THROW(parse_qasm(h + "pow(1000000000000) @ x q[0];", "t.qasm", limits), Error);
  EXPECT_THROW(parse_qasm(h + "gate g a { pow(50) @ x a; }\npow(3) @ g q[0];", "t.qasm", limits),
               Error);
  // A power of a gate that expands to nothing costs nothing.
  EXPECT_EQ(parse_qasm(h + "gate e a { }\npow(1000000000000) @ e q[0];\n", "t.qasm", limits)
                .circuit.ops()
                .size(),
            0u);
  EXPECT_EQ(parse_qasm(h + "pow(100) @ x q[0];", "t.qasm", limits).circuit.ops().size(), 100u);
}

TEST(Qasm3, TheVersionLineIsOptional) {
  const std::string body = "include \"stdgates.inc\";\nqubit[2] q;\nh q[0];\ncx q[0], q[1];\n";
  const QasmProgram with = parse_qasm("OPENQASM 3.0;\n" + body, "t.qasm");
  const QasmProgram without = parse_qasm("// no version line\n" + body, "t.qasm");
  EXPECT_LT(testing::max_abs_diff(run(with), run(without)), 1e-15);
  try {  // a file without one is OpenQASM 3: qelib1.inc is not its library
    parse_qasm("include \"qelib1.inc\";\n", "t.qasm");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.qasm:1:9: cannot include \"qelib1.inc\""),
              std::string::npos)
        << e.what();
  }
}

TEST(Qasm3, StaticLoopsEqualTheirUnrolledForms) {
  // Ranges include their end; steps may be negative; sets and arrays keep their order.
  expect_equivalent("for int i in [0:3] { h q[i]; }", "h q[0]; h q[1]; h q[2]; h q[3];");
  expect_equivalent("for uint[8] i in [3:-2:0] { rx(0.1 * i) q[i]; }",
                    "rx(0.3) q[3]; rx(0.1) q[1];");
  expect_equivalent("for i in {2, 0, 3} ry(i / 4) q[i];",
                    "ry(0.5) q[2]; ry(0) q[0]; ry(0.75) q[3];");
  expect_equivalent(
      "const array[float[64], 3] w = {0.5, -0.25, 2};\nfor float t in w { rz(t) q[1]; }",
      "rz(0.5) q[1]; rz(-0.25) q[1]; rz(2) q[1];");
  // Nested loops whose ranges depend on outer variables; index expressions.
  expect_equivalent("for int i in [0:2] { for int j in [i + 1:3] { cp(i + j) q[i], q[j]; } }",
                    "cp(1) q[0], q[1]; cp(2) q[0], q[2]; cp(3) q[0], q[3]; cp(3) q[1], q[2]; "
                    "cp(4) q[1], q[3]; cp(5) q[2], q[3];");
  expect_equivalent("for int i in [0:1] cx q[2 * i], q[2 * i + 1];",
                    "cx q[0], q[1]; cx q[2], q[3];");
  // Constants declared in a body belong to one iteration; a loop variable
  // shadows a constant until the loop ends.
  expect_equivalent(
      "const int i = 3;\nfor int i in [0:1] { const float a = 0.5 * i; int b = i + 1; rx(a + b) "
      "q[i]; }\nrx(i) q[0];",
      "rx(1) q[0]; rx(2.5) q[1]; rx(3) q[0];");
  expect_equivalent("for int i in [1:0] { x q[0]; }", "");  // an empty range
  // Typed constants and initialised variables, booleans, arrays indexed by expressions.
  expect_equivalent(
      "const uint n = 2;\nconst bool on = true;\nangle[32] a = pi / n;\nrx(a * on) q[n];\n"
      "array[int[8], 3] k = {3, 1, 0};\nx q[k[n - 1] + k[2]];",
      "rx(pi / 2) q[2]; x q[1];");
}

TEST(Qasm3, SubroutinesExpandAtTheirCalls) {
  expect_equivalent(
      "def rot(qubit a, angle t) { rx(t) a; rz(-t) a; }\nrot(q[1], 0.25);\nrot(q[3], pi / 3);",
      "rx(0.25) q[1]; rz(-0.25) q[1]; rx(pi / 3) q[3]; rz(-pi / 3) q[3];");
  // Register arguments broadcast; arguments shadow globals; calls nest; `return` ends a call.
  expect_equivalent(
      "const float t = 9;\n"
      "def pair(qubit[2] q, angle t) { ry(t) q; cx q[0], q[1]; return; x q[0]; }\n"
      "qubit[2] w;\npair(w, 0.5);\nrx(t) q[0];",
      "qubit[2] w;\nry(0.5) w; cx w[0], w[1];\nrx(9) q[0];");
  expect_equivalent("def f(qubit a, int k) { for int i in [1:k] { h a; s a; } }\nf(q[2], 3);",
                    "h q[2]; s q[2]; h q[2]; s q[2]; h q[2]; s q[2];");
  // Angle arguments may depend on inputs: gradients chain through them.
  const std::string text = R"(include "stdgates.inc";
input array[float[64], 2] x;
def enc(qubit a, qubit b, angle t, angle u) { ry(t) a; cx a, b; rz(u * t) b; }
qubit[2] q;
for int i in [0:1] { enc(q[i], q[1 - i], x[i] ** 2, x[1 - i]); }
)";
  QasmProgram p = parse_qasm(text, "sub.qasm");
  const std::vector<double> x = {0.4, -0.7};
  p.bind_inputs(x);
  Circuit c(2);
  auto enc = [&](int a, int b, double t, double u) {
    c.add(GateId::RY, {a}, std::vector<double>{t});
    c.add(GateId::CNOT, {a, b});
    c.add(GateId::RZ, {b}, std::vector<double>{u * t});
  };
  enc(0, 1, 0.16, -0.7);
  enc(1, 0, 0.49, 0.4);
  State psi(4, 0.0);
  psi[0] = 1;
  EXPECT_LT(testing::max_abs_diff(run(p), testing::run_dense(c, {}, psi)), 1e-12);
  const PauliSum h = parse_pauli_sum("X0 + 0.5*Y1 + Z0*X1", "h");
  const double eps = 1e-6;
  const std::vector<double> d_angles = angle_gradient(p, h, eps);
  const std::vector<double> grad = p.input_gradient(x, d_angles);
  for (std::size_t k = 0; k < 2; ++k) {
    std::vector<double> up = x, down = x;
    up[k] += eps;
    down[k] -= eps;
    QasmProgram a = p, b = p;
    a.bind_inputs(up);
    b.bind_inputs(down);
    const double fd =
        (testing::expval_dense(h, run(a)) - testing::expval_dense(h, run(b))) / (2 * eps);
    EXPECT_NEAR(grad[k], fd, 1e-7) << "input value " << k;
  }
}

TEST(Qasm3, GlobalPhasesAreKept) {
  const std::string h = "OPENQASM 3.0;\ninclude \"stdgates.inc\";\nqubit[2] q;\n";
  EXPECT_NEAR(parse_qasm(h + "gphase(0.3);\nx q[0];\ngphase(0.2);", "t.qasm").global_phase, 0.5,
              1e-15);
  // Qiskit's exporter writes GlobalPhaseGate as an empty zero-qubit gate.
  EXPECT_NEAR(parse_qasm(h + "gate global_phase(p0) {\n}\nglobal_phase(0.5) ;\nh q[0];", "t.qasm")
                  .global_phase,
              0.5, 1e-15);
  // inv @ sx = e^{-i pi/4} RX(-pi/2); a zero-qubit gate whose body is gphase.
  EXPECT_NEAR(parse_qasm(h + "inv @ sx q[0];", "t.qasm").global_phase, -std::numbers::pi / 4,
              1e-15);
  EXPECT_NEAR(
      parse_qasm(h + "gate ph(a) { gphase(2 * a); }\ninv @ ph(0.25);", "t.qasm").global_phase, -0.5,
      1e-15);
  // Under control a global phase is a phase gate on the controls.
  expect_equivalent("gate global_phase(p0) {\n}\nctrl @ global_phase(0.5) q[1];", "p(0.5) q[1];");
  // A phase that depends on an input follows it.
  QasmProgram p =
      parse_qasm(h + "input float t;\ngphase(t / 2);\nrx(t) q[0];\ngphase(1);", "t.qasm");
  const std::vector<double> x = {0.8};
  p.bind_inputs(x);
  EXPECT_NEAR(p.global_phase, 1.4, 1e-15);
  EXPECT_NEAR(p.global_phase_at(std::vector<double>{2.0}), 2.0, 1e-15);
}

TEST(Qasm3, LoopsAndCallsAreCappedBeforeTheyExpand) {
  QasmLimits limits;
  limits.max_gates = 100;
  const std::string h = "OPENQASM 3;\ninclude \"stdgates.inc\";\nqubit[2] q;\n";
  auto error = [&](const std::string& text) -> std::string {
    try {
      parse_qasm(h + text, "t.qasm", limits);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  // A huge range is refused before any iteration runs (and before its values exist).
  EXPECT_NE(error("for i in [0:1000000000000] { x q[0]; }").find("t.qasm:4:1: the loop runs"),
            std::string::npos);
  // After its first iteration a loop that would pass the limit is refused.
  EXPECT_NE(error("for i in [1:40] { x q[0]; y q[1]; z q[0]; }")
                .find("first iteration adds 3, and 39 more follow"),
            std::string::npos);
  // Empty iterations count too.
  EXPECT_NE(error("for i in [1:50] { for j in [1:50] { } }").find("loops run more than"),
            std::string::npos);
  // Input-dependent arguments passed down nested calls cannot grow without bound.
  std::string nest = "input float x;\ndef f0(qubit a, angle t) { rx(t) a; }\n";
  for (int k = 1; k < 20; ++k) {
    nest += "def f" + std::to_string(k) + "(qubit a, angle t) { f" + std::to_string(k - 1) +
            "(a, t * t + t * t); }\n";
  }
  EXPECT_NE(error(nest + "f19(q[0], x);").find("grows beyond 100000 operations"),
            std::string::npos);
  // So do the tokens loops read again: a nest that emits nothing still ends.
  EXPECT_NE(error("for i in [1:90] { const int a = i; const int b = a + 1; const int c = b * 2; }")
                .find("read more than 1600 tokens"),
            std::string::npos);
  EXPECT_EQ(
      parse_qasm(h + "for i in [1:50] { x q[0]; y q[1]; }", "t.qasm", limits).circuit.ops().size(),
      100u);
}

// Nested blocks share the file's tokens: 3,000 nested one-iteration loops
// (each level once kept a copy of everything inside it: gigabytes) parse
// within 10x the file's size plus a constant, measured as the growth of a
// forked child's peak resident memory.
TEST(Qasm3, NestedBlocksCostMemoryInProportionToTheFile) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer keeps freed memory in quarantine; measured in release";
#else
  constexpr int kDepth = 3000;
  std::string text = kHead;
  for (int k = 0; k < kDepth; ++k) text += "for int i" + std::to_string(k) + " in [0:0] {\n";
  text += "x q[0];\n" + std::string(kDepth, '}') + "\n";
  const auto rss_kib = [] {
    std::ifstream statm("/proc/self/statm");
    long pages = 0, resident = 0;
    statm >> pages >> resident;
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
  };
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const long before = rss_kib();
    const bool one_gate = parse_qasm(text, "nest.qasm").circuit.ops().size() == 1;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const long grown_kib = usage.ru_maxrss - before;
    const long bound_kib = 10 * static_cast<long>(text.size()) / 1024 + 64 * 1024;
    std::fprintf(stderr, "peak growth %ld KiB for a %zu-byte file (bound %ld KiB)\n", grown_kib,
                 text.size(), bound_kib);
    _exit(one_gate && grown_kib < bound_kib ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "over the memory bound (see the child's line above)";
#endif
}

}  // namespace
}  // namespace qmlsim
