#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "circuit/readout.h"
#include "ml/datasets.h"
#include "models/dressed.h"
#include "models/qaoa.h"
#include "models/qasm_hybrid.h"
#include "models/qcnn.h"
#include "testing/dense_oracle.h"

namespace qmlsim::models {
namespace {

std::vector<std::size_t> all_of(const ml::Dataset& d) {
  std::vector<std::size_t> i(d.size());
  std::iota(i.begin(), i.end(), std::size_t{0});
  return i;
}

// Total loss over the batch, from predictions only (no gradient code involved).
double total_loss(const HybridModel& m, const std::vector<double>& p, const ml::Dataset& d,
                  const ml::Loss& loss, const EvalOptions& o) {
  const std::vector<double> pred = m.predict(p, d, all_of(d), o);
  const std::size_t k = m.outputs();
  double l = 0;
  for (std::size_t i = 0; i < d.size(); ++i)
    l += loss.value(std::span<const double>(&pred[i * k], k), d.y[i]);
  return l;
}

// The full hybrid gradient (classical layers + adjoint) against central finite differences.
void expect_gradient_matches_fd(const HybridModel& m, const ml::Dataset& d, const ml::Loss& loss) {
  Rng rng(11);
  std::vector<double> p(m.layout().size());
  m.init(p, rng);
  EvalOptions o;
  o.threads = 2;
  std::vector<double> grad(p.size(), 0.0);
  m.loss_and_gradient(p, d, all_of(d), loss, grad, o);
  const double h = 1e-5;
  for (std::size_t i = 0; i < p.size(); ++i) {
    auto a = p, b = p;
    a[i] += h;
    b[i] -= h;
    const double fd = (total_loss(m, a, d, loss, o) - total_loss(m, b, d, loss, o)) / (2 * h);
    EXPECT_NEAR(grad[i], fd, 1e-6 * std::max(1.0, std::abs(fd))) << "parameter " << i;
  }
}

TEST(Qcnn, ParameterCountsOfThePublishedModels) {
  EXPECT_EQ(Qcnn(8, QcnnVariant::kHybrid).layout().size(), 21u + 49u);
  EXPECT_EQ(Qcnn(8, QcnnVariant::kPure).layout().size(), 63u);
}

TEST(Qcnn, HybridAndPureGradientsMatchFiniteDifferences) {
  Rng rng(3);
  const ml::Dataset d = ml::qcnn_excitations(4, 2, rng);
  const ml::Loss mse = ml::Loss::parse("mse", 0, "loss");
  expect_gradient_matches_fd(Qcnn(4, QcnnVariant::kHybrid, 3), d, mse);
  expect_gradient_matches_fd(Qcnn(5, QcnnVariant::kPure), ml::qcnn_excitations(5, 1, rng), mse);
}

// [noise] in a config: channels after every gate, and the gradient through
// them (on the density matrix) still the finite differences of the loss.
TEST(Qcnn, NoiseAfterEveryGateKeepsTheGradientExact) {
  Rng rng(4);
  const ml::Dataset d = ml::qcnn_excitations(4, 2, rng);
  Qcnn m(4, QcnnVariant::kHybrid, 3);
  EXPECT_FALSE(m.has_channels());
  m.add_gate_noise({{ChannelId::depolarizing, 0.02}, {ChannelId::amplitude_damping, 0.05}});
  EXPECT_TRUE(m.has_channels());
  expect_gradient_matches_fd(m, d, ml::Loss::parse("mse", 0, "loss"));
}

// noise.readout_error: the readouts become the observables of what is read
// (a pure QCNN's prediction <Z> reads as (1 - 2p) <Z>), the gradient exact.
TEST(Qcnn, ReadoutErrorReadsThePredictionsAndKeepsTheGradientExact) {
  Rng rng(5);
  const ml::Dataset d = ml::qcnn_excitations(4, 2, rng);
  Qcnn clean(4, QcnnVariant::kPure), noisy(4, QcnnVariant::kPure);
  noisy.add_readout_error(0.1);
  ReadoutError e;
  e.qubits.assign(4, ReadoutFlip{0.1, 0.1});
  ASSERT_EQ(noisy.readouts().size(), clean.readouts().size());
  for (std::size_t k = 0; k < clean.readouts().size(); ++k)
    EXPECT_EQ(noisy.readouts()[k].to_string(), read_through(clean.readouts()[k], e).to_string());
  std::vector<double> params(clean.layout().size());
  clean.init(params, rng);
  std::vector<std::size_t> index(d.size());
  for (std::size_t i = 0; i < index.size(); ++i) index[i] = i;
  const std::vector<double> a = clean.predict(params, d, index, {});
  const std::vector<double> b = noisy.predict(params, d, index, {});
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], 0.8 * a[i], 1e-12);
  expect_gradient_matches_fd(noisy, d, ml::Loss::parse("mse", 0, "loss"));
}

TEST(Qcnn, ConvolutionPairsFollowCirq) {
  // 4 qubits: (0,1), (2,3), then (1,2), (3,0); each two_qubit_unitary has 15 gates.
  Circuit c(4);
  qcnn_conv_layer(c, {0, 1, 2, 3}, 0);
  ASSERT_EQ(c.ops().size(), 60u);
  const std::vector<std::pair<int, int>> pairs = {{0, 1}, {2, 3}, {1, 2}, {3, 0}};
  for (std::size_t k = 0; k < 4; ++k) {
    const Operation& zz = c.ops()[15 * k + 6];
    EXPECT_EQ(zz.gate, GateId::IsingZZ);
    EXPECT_EQ(zz.wires, (std::vector<int>{pairs[k].first, pairs[k].second}));
    EXPECT_EQ(zz.params[0].slot, 6);  // the upstream fix: s6, s7, s8
    EXPECT_EQ(c.ops()[15 * k + 8].params[0].slot, 8);
  }
  // Odd counts do not close the ring (zip stops at the shorter list).
  Circuit odd(3);
  qcnn_conv_layer(odd, {0, 1, 2}, 0);
  EXPECT_EQ(odd.ops().size(), 30u);
}

TEST(Dressed, ParameterCountAndGradient) {
  const DressedClassifier m(4, 5);
  EXPECT_EQ(m.layout().size(), 5u * 4 + 4 + 12 * 4 + 3 + 2);
  EXPECT_EQ(DressedClassifier(10).layout().size(), 61u * 10 + 12 * 10 + 3 + 2);
  ml::Dataset d;
  std::mt19937_64 g(5);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 3; ++i) d.add({u(g), u(g), u(g), u(g), u(g)}, i % 2 ? 1.0 : -1.0);
  expect_gradient_matches_fd(m, d, ml::Loss::parse("margin_ranking", 0.1, "loss"));
  expect_gradient_matches_fd(m, d, ml::Loss::parse("mse", 0, "loss"));
}

// The declarations of the test circuits below: data x, weights w and t.
constexpr const char* kHybridHeader = R"(OPENQASM 3.0;
include "stdgates.inc";
input array[float[64], 3] x;
input float[64] t;
input array[float[64], 4] w;
qubit[3] q;
)";

QasmHybridSpec hybrid_spec() {
  QasmHybridSpec s;
  // Nonlinear angle expressions of both kinds of input, a gate definition and a modifier.
  s.program = parse_qasm(std::string(kHybridHeader) + R"(gate ent(a) u, v { cry(a) u, v; cx v, u; }
ry(x[0] * w[0]) q[0];
ry(sin(x[1]) + w[1]) q[1];
rx(x[2] ** 2) q[2];
ent(w[2] - t) q[0], q[1];
ctrl @ rz(w[3] * t) q[1], q[2];
rx(t) q[0];
)",
                         "h.qasm");
  s.source = "h.qasm";
  s.weights = {"w", "t"};
  s.data_inputs = {"x"};
  s.readouts = {parse_pauli_sum("Z0", "r"), parse_pauli_sum("0.5*X1*Z2 - Y0", "r")};
  s.encoder = {{5, ml::Activation::kTanh}, {3, ml::Activation::kNone}};
  s.head = {{2, ml::Activation::kSigmoid}, {1, ml::Activation::kNone}};
  s.features = 4;
  return s;
}

TEST(QasmHybrid, GradientThroughEncoderCircuitInputsAndHead) {
  const QasmHybrid m(hybrid_spec());
  EXPECT_EQ(m.layout().size(), 5u + (4 * 5 + 5) + (5 * 3 + 3) + (2 * 2 + 2) + (2 + 1));
  ml::Dataset d;
  std::mt19937_64 g(9);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int i = 0; i < 4; ++i) d.add({u(g), u(g), u(g), u(g)}, i % 2 ? 1.0 : -1.0);
  expect_gradient_matches_fd(m, d, ml::Loss::parse("bce", 0, "loss"));
  expect_gradient_matches_fd(m, d, ml::Loss::parse("mse", 0, "loss"));
  // Without an encoder the features are the data inputs; without a head, one readout.
  QasmHybridSpec plain = hybrid_spec();
  plain.encoder.clear();
  plain.head.clear();
  plain.readouts.resize(1);
  plain.features = 3;
  ml::Dataset d3;
  for (int i = 0; i < 3; ++i) d3.add({u(g), u(g), u(g)}, i % 2 ? 1.0 : -1.0);
  expect_gradient_matches_fd(QasmHybrid(plain), d3, ml::Loss::parse("hinge", 0, "loss"));
  // Three classes: a head of 3 logits, or the 2 readouts as logits of 2 classes, with cce.
  QasmHybridSpec three = hybrid_spec();
  three.head.back().units = 3;
  three.outputs = 3;
  const QasmHybrid m3(three);
  EXPECT_EQ(m3.outputs(), 3u);
  ml::Dataset d4;
  for (int i = 0; i < 4; ++i) d4.add({u(g), u(g), u(g), u(g)}, i % 3);
  expect_gradient_matches_fd(m3, d4, ml::Loss::parse("cce", 0, "loss"));
  QasmHybridSpec two = hybrid_spec();
  two.head.clear();
  two.outputs = 2;
  ml::Dataset d2;
  for (int i = 0; i < 3; ++i) d2.add({u(g), u(g), u(g), u(g)}, i % 2);
  expect_gradient_matches_fd(QasmHybrid(two), d2, ml::Loss::parse("cce", 0, "loss"));
}

// A circuit with noise channels trains on the density matrix: the whole
// hybrid gradient, through the channels, against finite differences.
TEST(QasmHybrid, NoisyCircuitGradientThroughTheDensityMatrix) {
  QasmHybridSpec s = hybrid_spec();
  s.program = parse_qasm(std::string(kHybridHeader) + R"(ry(x[0] * w[0]) q[0];
#pragma braket noise depolarizing(0.05) q[0]
ry(sin(x[1]) + w[1]) q[1];
cx q[0], q[1];
#pragma braket noise amplitude_damping(0.1) q
rx(x[2] ** 2) q[2];
ctrl @ rz(w[3] * t) q[1], q[2];
#pragma braket noise phase_damping(0.2) q[2]
rx(t + w[2]) q[0];
)",
                         "noisy.qasm");
  const QasmHybrid m(s);
  ml::Dataset d;
  std::mt19937_64 g(5);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int i = 0; i < 4; ++i) d.add({u(g), u(g), u(g), u(g)}, i % 2 ? 1.0 : -1.0);
  expect_gradient_matches_fd(m, d, ml::Loss::parse("bce", 0, "loss"));
}

TEST(QasmHybrid, InconsistentSpecificationsAreOneLineErrors) {
  auto error_of = [](QasmHybridSpec s) {
    try {
      QasmHybrid m(std::move(s));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  QasmHybridSpec s = hybrid_spec();
  s.weights = {"w"};
  EXPECT_EQ(error_of(s),
            "h.qasm: input 't' is neither a weight nor a data input "
            "(model.weights, model.data_inputs)");
  s = hybrid_spec();
  s.weights.push_back("u");
  EXPECT_EQ(error_of(s), "h.qasm: declares no input 'u' (listed as a weight)");
  s = hybrid_spec();
  s.data_inputs.push_back("x");
  EXPECT_EQ(error_of(s), "h.qasm: input 'x' is listed twice");
  s = hybrid_spec();
  s.encoder.pop_back();
  EXPECT_EQ(error_of(s),
            "model.encoder: 5 values per example reach the circuit, whose data "
            "inputs take 3");
  s = hybrid_spec();
  s.head.pop_back();
  EXPECT_NE(error_of(s).find("model.head: the model's output has 2 values"), std::string::npos);
  s = hybrid_spec();
  s.readouts.push_back(parse_pauli_sum("Z5", "r"));
  EXPECT_EQ(error_of(s),
            "model.readouts: readout 3 (1*Z5): names qubit 5, beyond the 3 qubit(s) of h.qasm");
  // A mid-circuit measurement (with noise too) is refused by key, before training,
  // not as a classical bit out of range at the first gradient.
  s = hybrid_spec();
  s.program =
      parse_qasm(std::string(kHybridHeader) +
                     "bit c;\nry(x[0] * w[0] + x[1] + x[2] + w[1] + w[2] + w[3] + t) q[0];\n"
                     "c = measure q[0];\nif (c) x q[1];\n"
                     "#pragma braket noise depolarizing(0.1) q[2]\n",
                 "h.qasm");
  EXPECT_NE(error_of(s).find("model.circuit: h.qasm has a mid-circuit measurement"),
            std::string::npos)
      << error_of(s);
}

TEST(Dressed, CircuitEqualsTheOriginalsInlinedCRot) {
  // The original PennyLane job writes CRot(a,b,c) on (w,t) as seven gates.
  const int n = 5;
  const DressedClassifier m(n, 2);
  const Circuit& ours = m.quantum_circuit();
  Circuit theirs(n);
  std::mt19937_64 g(9);
  std::uniform_real_distribution<double> u(-3, 3);
  std::vector<double> theta(static_cast<std::size_t>(ours.num_slots()));
  for (double& t : theta) t = u(g);
  for (const Operation& op : ours.ops()) {
    if (op.gate != GateId::CRot) {
      theirs.add(op);
      continue;
    }
    const double a = op.params[0].value(theta), b = op.params[1].value(theta),
                 c = op.params[2].value(theta);
    const int w = op.wires[0], t = op.wires[1];
    theirs.add(GateId::RZ, {t}, std::vector<double>{(a - c) / 2});
    theirs.add(GateId::CNOT, {w, t});
    theirs.add(GateId::RZ, {t}, std::vector<double>{-(a + c) / 2});
    theirs.add(GateId::RY, {t}, std::vector<double>{-b / 2});
    theirs.add(GateId::CNOT, {w, t});
    theirs.add(GateId::RY, {t}, std::vector<double>{b / 2});
    theirs.add(GateId::RZ, {t}, std::vector<double>{c});
  }
  testing::State zero(std::size_t{1} << n, 0.0);
  zero[0] = 1;
  const auto a = testing::run_dense(ours, theta, zero);
  const auto b = testing::run_dense(theirs, theta, zero);
  // Equal up to a global phase: compare <Z_q> on every wire and |<a|b>| = 1.
  cplx overlap = 0;
  for (std::size_t i = 0; i < a.size(); ++i) overlap += std::conj(a[i]) * b[i];
  EXPECT_NEAR(std::abs(overlap), 1.0, 1e-12);
}

ml::Graph ring(int n) {
  ml::Graph g;
  g.nodes = n;
  for (int i = 0; i < n; ++i)
    g.edges.push_back({std::min(i, (i + 1) % n), std::max(i, (i + 1) % n)});
  return g;
}

TEST(Qaoa, CostGradientAndExhaustiveCut) {
  ml::Graph g = ring(5);
  g.edges.push_back({0, 2});
  const QaoaMaxCut m(g, 2);
  EvalOptions o;
  // At zero angles the state is uniform: the expected cut is |E| / 2.
  EXPECT_NEAR(m.cost(std::vector<double>(4, 0.0), {}, o), -3.0, 1e-12);
  const std::vector<double> p = {0.3, -0.5, 0.7, 0.2};
  std::vector<double> grad(4);
  const double c = m.cost(p, grad, o);
  EXPECT_NEAR(c, m.cost(p, {}, o), 1e-12);
  for (std::size_t i = 0; i < 4; ++i) {
    auto a = p, b = p;
    a[i] += 1e-6;
    b[i] -= 1e-6;
    EXPECT_NEAR(grad[i], (m.cost(a, {}, o) - m.cost(b, {}, o)) / 2e-6, 1e-6);
  }
  // Odd ring of 5 plus a chord 0-2: the maximum cut is 5 of 6 edges.
  EXPECT_EQ(m.max_cut(2).size, 5);
  EXPECT_EQ(m.cut_size(0b01010), 4);
  const QaoaMaxCut::Readout r = m.readout(p, 200, 7, o);
  EXPECT_EQ(r.most_probable.size, m.cut_size(r.most_probable.assignment));
  EXPECT_EQ(r.best_sampled.size, m.cut_size(r.best_sampled.assignment));
  EXPECT_LE(r.best_sampled.size, 5);
  EXPECT_GE(r.best_sampled.size, 4);  // 200 samples of 32 states find a good cut
}

// Noise after every gate: the cost is Tr(H_C rho) of the dense density-matrix
// oracle, its gradient finite differences of it (density matrix and, for a
// damping-free model, trajectories' own estimate within their error); readout
// error p on every qubit scales each <Z_i Z_j> by (1 - 2p)^2.
TEST(Qaoa, NoiseAfterEveryGateAndReadoutError) {
  ml::Graph g = ring(4);
  const std::vector<double> p = {0.3, -0.5, 0.7, 0.2};
  QaoaMaxCut noisy(g, 2);
  noisy.add_gate_noise({{ChannelId::depolarizing, 0.03}, {ChannelId::amplitude_damping, 0.02}});
  ASSERT_TRUE(noisy.has_channels());
  EvalOptions by_trajectories;
  by_trajectories.method = Method::trajectories;
  EXPECT_EQ(noisy.state_qubits(EvalOptions{}), 8);
  EXPECT_EQ(noisy.state_qubits(by_trajectories), 4);
  const double want = testing::expval_dense_density(
      noisy.cost_hamiltonian(), testing::run_dense_density(noisy.circuit(), p), 4);
  EvalOptions o;
  std::vector<double> grad(4);
  EXPECT_NEAR(noisy.cost(p, grad, o), want, 1e-12);
  for (std::size_t i = 0; i < 4; ++i) {
    auto a = p, b = p;
    a[i] += 1e-6;
    b[i] -= 1e-6;
    EXPECT_NEAR(grad[i], (noisy.cost(a, {}, o) - noisy.cost(b, {}, o)) / 2e-6, 1e-6);
  }
  const QaoaMaxCut::Readout r = noisy.readout(p, 100, 3, o);
  EXPECT_EQ(r.most_probable.size, noisy.cut_size(r.most_probable.assignment));
  EXPECT_GE(r.best_sampled.size, 0);
  EvalOptions traj = o;
  traj.method = Method::trajectories;
  traj.trajectories = 4000;
  QaoaMaxCut depolarized(g, 2);
  depolarized.add_gate_noise({{ChannelId::depolarizing, 0.03}});
  const double exact = depolarized.cost(p, {}, o);
  EXPECT_NEAR(depolarized.cost(p, grad, traj), exact, 0.05);  // a few standard errors
  EXPECT_EQ(depolarized.readout(p, 0, 3, traj).most_probable.size,
            depolarized.readout(p, 0, 3, o).most_probable.size);

  const double flip = 0.1, edges = 4;
  QaoaMaxCut clean(g, 2), read(g, 2);
  read.add_readout_error(flip);
  std::vector<double> clean_grad(4), read_grad(4);
  const double c = clean.cost(p, clean_grad, o);
  EXPECT_NEAR(read.cost(p, read_grad, o), std::pow(1 - 2 * flip, 2) * (c + edges / 2) - edges / 2,
              1e-12);
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(read_grad[i], std::pow(1 - 2 * flip, 2) * clean_grad[i], 1e-12);
  // The same seed: the same true samples, then flipped.
  EXPECT_EQ(read.readout(p, 500, 9, o).most_probable.assignment,
            clean.readout(p, 500, 9, o).most_probable.assignment);
}

}  // namespace
}  // namespace qmlsim::models
