#include "models/qcnn.h"

#include <numbers>

#include "core/error.h"

namespace qmlsim::models {

constexpr double kPi = std::numbers::pi;

void qcnn_one_qubit_unitary(Circuit& c, int q, int s) {
  c.add(GateId::RX, {q}, {ParamExpr::ref(s, kPi)});
  c.add(GateId::RY, {q}, {ParamExpr::ref(s + 1, kPi)});
  c.add(GateId::RZ, {q}, {ParamExpr::ref(s + 2, kPi)});
}

void qcnn_two_qubit_unitary(Circuit& c, int a, int b, int s) {
  qcnn_one_qubit_unitary(c, a, s);
  qcnn_one_qubit_unitary(c, b, s + 3);
  c.add(GateId::IsingZZ, {a, b}, {ParamExpr::ref(s + 6, kPi)});
  c.add(GateId::IsingYY, {a, b}, {ParamExpr::ref(s + 7, kPi)});
  c.add(GateId::IsingXX, {a, b}, {ParamExpr::ref(s + 8, kPi)});
  qcnn_one_qubit_unitary(c, a, s + 9);
  qcnn_one_qubit_unitary(c, b, s + 12);
}

void qcnn_two_qubit_pool(Circuit& c, int source, int sink, int s) {
  qcnn_one_qubit_unitary(c, sink, s);
  qcnn_one_qubit_unitary(c, source, s + 3);
  c.add(GateId::CNOT, {source, sink}, std::vector<double>{});
  // The inverse of the sink's basis selector.
  c.add(GateId::RZ, {sink}, {ParamExpr::ref(s + 2, -kPi)});
  c.add(GateId::RY, {sink}, {ParamExpr::ref(s + 1, -kPi)});
  c.add(GateId::RX, {sink}, {ParamExpr::ref(s, -kPi)});
}

void qcnn_conv_layer(Circuit& c, const std::vector<int>& q, int s) {
  for (std::size_t i = 0; i + 1 < q.size(); i += 2) qcnn_two_qubit_unitary(c, q[i], q[i + 1], s);
  std::vector<int> second;  // Q2, Q4, ..., then Q0
  for (std::size_t i = 2; i < q.size(); i += 2) second.push_back(q[i]);
  second.push_back(q[0]);
  for (std::size_t i = 1, k = 0; i < q.size() && k < second.size(); i += 2, ++k)
    if (q[i] != second[k]) qcnn_two_qubit_unitary(c, q[i], second[k], s);
}

void qcnn_pool_layer(Circuit& c, const std::vector<int>& sources, const std::vector<int>& sinks,
                     int s) {
  for (std::size_t i = 0; i < std::min(sources.size(), sinks.size()); ++i)
    qcnn_two_qubit_pool(c, sources[i], sinks[i], s);
}

void cluster_state(Circuit& c) {
  const int n = c.num_qubits();
  for (int q = 0; q < n; ++q) c.add(GateId::H, {q});
  if (n == 2) {
    c.add(GateId::CZ, {0, 1});
    return;
  }
  for (int q = 0; q < n; ++q) c.add(GateId::CZ, {q, (q + 1) % n});
}

Qcnn::Qcnn(int qubits, QcnnVariant variant, int hidden) : variant_(variant) {
  if (qubits < 2 || qubits > kMaxQubits)
    throw Error("QCNN needs 2 to " + std::to_string(kMaxQubits) + " qubits, got " +
                std::to_string(qubits));
  if (hidden < 1) throw Error("QCNN hidden layer needs at least 1 unit");
  num_qubits_ = qubits;
  std::vector<int> all(static_cast<std::size_t>(qubits));
  for (int q = 0; q < qubits; ++q) all[static_cast<std::size_t>(q)] = q;

  // Layers as (conv, pool) pairs on the remaining qubits; slots follow the layout.
  Circuit body(qubits);
  int slot = 0;
  std::vector<int> remaining = all;
  const int layers = variant == QcnnVariant::kHybrid ? 1 : 1 << 30;
  quantum_offset_ = 0;
  for (int l = 0; l < layers && remaining.size() > 1; ++l) {
    const std::size_t h = remaining.size() / 2;
    const std::vector<int> sources(remaining.begin(), remaining.begin() + h);
    const std::vector<int> sinks(remaining.begin() + h, remaining.end());
    const std::string suffix = variant == QcnnVariant::kHybrid ? "" : std::to_string(l + 1);
    layout_.add("quantum/conv" + suffix, {15});
    layout_.add("quantum/pool" + suffix, {6});
    qcnn_conv_layer(body, remaining, slot);
    qcnn_pool_layer(body, sources, sinks, slot + 15);
    slot += 21;
    remaining = sinks;
  }
  num_quantum_ = static_cast<std::size_t>(slot);
  num_inputs_ = 1;
  for (int q : remaining) readouts_.push_back(pauli_z(q));
  if (variant == QcnnVariant::kHybrid) {
    dense1_ = ml::Dense(layout_, "dense1", static_cast<int>(remaining.size()), hidden);
    dense2_ = ml::Dense(layout_, "dense2", hidden, 1);
  }
  for (int q = 0; q < qubits; ++q) {
    Circuit c(qubits);
    cluster_state(c);
    c.add(GateId::RX, {q}, {ParamExpr::ref(slot)});
    for (const Operation& op : body.ops()) c.add(op);
    circuits_.push_back(std::move(c));
  }
}

void Qcnn::init(std::span<double> params, Rng& rng) const {
  for (std::size_t i = 0; i < num_quantum_; ++i) params[i] = rng.uniform(0, 2 * kPi);
  if (variant_ == QcnnVariant::kHybrid) {
    dense1_.init_glorot(params, rng);
    dense2_.init_glorot(params, rng);
  }
}

const Circuit& Qcnn::circuit(std::span<const double> x) const {
  const auto q = static_cast<std::size_t>(x[0]);
  return circuits_.at(q);
}

void Qcnn::encode(std::span<const double>, std::span<const double> x,
                  std::span<double> inputs) const {
  inputs[0] = x[1];
}

void Qcnn::head(std::span<const double> params, std::span<const double> e,
                std::span<double> predictions) const {
  if (variant_ == QcnnVariant::kPure) {
    predictions[0] = e[0];
    return;
  }
  std::vector<double> z1(static_cast<std::size_t>(dense1_.out())), y1(z1.size()), z2(1);
  dense1_.forward(params, e, z1, y1);
  dense2_.forward(params, y1, z2, predictions);
}

void Qcnn::head_backward(std::span<const double> params, std::span<const double> e,
                         std::span<const double> d_predictions, std::span<double> d_e,
                         std::span<double> grad) const {
  if (variant_ == QcnnVariant::kPure) {
    d_e[0] = d_predictions[0];
    return;
  }
  std::vector<double> z1(static_cast<std::size_t>(dense1_.out())), y1(z1.size()), z2(1), y2(1);
  dense1_.forward(params, e, z1, y1);
  dense2_.forward(params, y1, z2, y2);
  std::vector<double> dy1(y1.size());
  dense2_.backward(params, y1, z2, d_predictions, grad, dy1);
  dense1_.backward(params, e, z1, dy1, grad, d_e);
}

}  // namespace qmlsim::models
