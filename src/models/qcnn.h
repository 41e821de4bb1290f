// The QCNN of TensorFlow Quantum's cluster-state tutorial (docs/workloads.md, job 2),
// with the upstream fix (two_qubit_unitary uses s6, s7, s8 for the Ising gates).
// Example x = {q, theta}: the cluster state, then RX(theta) on qubit q.
#pragma once

#include <vector>

#include "ml/layers.h"
#include "models/hybrid.h"

namespace qmlsim::models {

enum class QcnnVariant {
  kHybrid,  // conv(all) [15], pool(first half -> second half) [6], <Z> on the
            // second half, Dense(m -> hidden), Dense(hidden -> 1)
  kPure,    // conv and pool down to one qubit; prediction = <Z> on it
};

class Qcnn : public HybridModel {
 public:
  // REQUIRES 2 <= qubits. Throws Error otherwise.
  Qcnn(int qubits, QcnnVariant variant, int hidden = 8);

  void init(std::span<double> params, Rng& rng) const override;

 protected:
  const Circuit& circuit(std::span<const double> x) const override;
  std::vector<Circuit*> templates() override {
    std::vector<Circuit*> out;
    for (Circuit& c : circuits_) out.push_back(&c);
    return out;
  }
  void encode(std::span<const double> params, std::span<const double> x,
              std::span<double> inputs) const override;
  void encode_backward(std::span<const double>, std::span<const double>, std::span<const double>,
                       std::span<double>) const override {}
  void head(std::span<const double> params, std::span<const double> expvals,
            std::span<double> predictions) const override;
  void head_backward(std::span<const double> params, std::span<const double> expvals,
                     std::span<const double> d_predictions, std::span<double> d_expvals,
                     std::span<double> grad) const override;

 private:
  QcnnVariant variant_;
  std::vector<Circuit> circuits_;  // one per excited qubit
  ml::Dense dense1_, dense2_;
};

// The blocks, appended to c; s is the first slot of the block's parameters.
void qcnn_one_qubit_unitary(Circuit& c, int q, int s);
void qcnn_two_qubit_unitary(Circuit& c, int a, int b, int s);
void qcnn_two_qubit_pool(Circuit& c, int source, int sink, int s);
// Cirq's pairing: (Q0,Q1),(Q2,Q3),...; then (Q1,Q2),(Q3,Q4),... with Q0 appended
// after the even-indexed ones (so the ring closes when |Q| is even).
void qcnn_conv_layer(Circuit& c, const std::vector<int>& q, int s);
void qcnn_pool_layer(Circuit& c, const std::vector<int>& sources, const std::vector<int>& sinks,
                     int s);
// Hadamard on every qubit, then CZ on the ring (0,1), ..., (n-1,0).
void cluster_state(Circuit& c);

}  // namespace qmlsim::models
