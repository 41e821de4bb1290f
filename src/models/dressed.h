// The dressed quantum classifier on Sonar (docs/workloads.md, job 3): Linear(60 -> N),
// angles (sigmoid - 0.5) * 2 pi as RX on each wire, two entangling layers
// (ranges 1 and 3) of Rot + ring of CRot, Rot on wire 0, <Z0>, Linear(1 -> 1).
#pragma once

#include "ml/layers.h"
#include "models/hybrid.h"

namespace qmlsim::models {

class DressedClassifier : public HybridModel {
 public:
  // REQUIRES 4 <= wires (ranges 1 and 3 must not wrap onto the same wire).
  DressedClassifier(int wires, int features = 60);

  void init(std::span<double> params, Rng& rng) const override;
  const Circuit& quantum_circuit() const { return circuit_; }

 protected:
  const Circuit& circuit(std::span<const double>) const override { return circuit_; }
  std::vector<Circuit*> templates() override { return {&circuit_}; }
  void encode(std::span<const double> params, std::span<const double> x,
              std::span<double> inputs) const override;
  void encode_backward(std::span<const double> params, std::span<const double> x,
                       std::span<const double> d_inputs, std::span<double> grad) const override;
  void head(std::span<const double> params, std::span<const double> expvals,
            std::span<double> predictions) const override;
  void head_backward(std::span<const double> params, std::span<const double> expvals,
                     std::span<const double> d_predictions, std::span<double> d_expvals,
                     std::span<double> grad) const override;

 private:
  Circuit circuit_;
  ml::Dense input_, output_;
};

}  // namespace qmlsim::models
