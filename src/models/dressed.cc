#include "models/dressed.h"

#include <numbers>

#include "core/error.h"

namespace qmlsim::models {
namespace {

constexpr double kTwoPi = 2 * std::numbers::pi;

// Rot(p[0][i]) on every wire i; then CRot(p[1][k]) from w to t = (w - range) mod N,
// w <- t, for k = 0..N-1 starting at w = 0. p starts at slot s, shape [2, N, 3].
void entangling_layer(Circuit& c, int s, int range) {
  const int n = c.num_qubits();
  for (int i = 0; i < n; ++i)
    c.add(
        GateId::Rot, {i},
        {ParamExpr::ref(s + 3 * i), ParamExpr::ref(s + 3 * i + 1), ParamExpr::ref(s + 3 * i + 2)});
  int w = 0;
  for (int k = 0; k < n; ++k) {
    const int t = ((w - range) % n + n) % n;
    const int b = s + 3 * n + 3 * k;
    c.add(GateId::CRot, {w, t}, {ParamExpr::ref(b), ParamExpr::ref(b + 1), ParamExpr::ref(b + 2)});
    w = t;
  }
}

}  // namespace

DressedClassifier::DressedClassifier(int wires, int features) : circuit_(wires) {
  if (wires < 4 || wires > kMaxQubits)
    throw Error("the dressed classifier needs 4 to " + std::to_string(kMaxQubits) + " wires, got " +
                std::to_string(wires));
  num_qubits_ = wires;
  input_ = ml::Dense(layout_, "input", features, wires, ml::Activation::kSigmoid);
  quantum_offset_ = layout_.add("quantum/w1", {2, wires, 3});
  layout_.add("quantum/w2", {2, wires, 3});
  layout_.add("quantum/rot", {3});
  output_ = ml::Dense(layout_, "output", 1, 1);
  num_quantum_ = static_cast<std::size_t>(12 * wires + 3);
  num_inputs_ = static_cast<std::size_t>(wires);

  const int in = static_cast<int>(num_quantum_);  // first input slot
  for (int i = 0; i < wires; ++i) circuit_.add(GateId::RX, {i}, {ParamExpr::ref(in + i)});
  entangling_layer(circuit_, 0, 1);
  entangling_layer(circuit_, 6 * wires, 3);
  const int r = 12 * wires;
  circuit_.add(GateId::Rot, {0}, {ParamExpr::ref(r), ParamExpr::ref(r + 1), ParamExpr::ref(r + 2)});
  readouts_.push_back(pauli_z(0));
}

void DressedClassifier::init(std::span<double> params, Rng& rng) const {
  input_.init_torch(params, rng);
  for (std::size_t i = 0; i < num_quantum_; ++i)
    params[quantum_offset_ + i] = rng.uniform(0, kTwoPi);
  output_.init_torch(params, rng);
}

void DressedClassifier::encode(std::span<const double> params, std::span<const double> x,
                               std::span<double> inputs) const {
  std::vector<double> z(inputs.size());
  input_.forward(params, x, z, inputs);
  for (double& a : inputs) a = (a - 0.5) * kTwoPi;
}

void DressedClassifier::encode_backward(std::span<const double> params, std::span<const double> x,
                                        std::span<const double> d_inputs,
                                        std::span<double> grad) const {
  std::vector<double> z(d_inputs.size()), y(d_inputs.size()), dy(d_inputs.size());
  input_.forward(params, x, z, y);
  for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = d_inputs[i] * kTwoPi;
  input_.backward(params, x, z, dy, grad, {});
}

void DressedClassifier::head(std::span<const double> params, std::span<const double> e,
                             std::span<double> predictions) const {
  double z = 0;
  output_.forward(params, e, {&z, 1}, predictions);
}

void DressedClassifier::head_backward(std::span<const double> params, std::span<const double> e,
                                      std::span<const double> d_predictions, std::span<double> d_e,
                                      std::span<double> grad) const {
  double z = 0, y = 0;
  output_.forward(params, e, {&z, 1}, {&y, 1});
  output_.backward(params, e, {&z, 1}, d_predictions, grad, d_e);
}

}  // namespace qmlsim::models
