// A hybrid model whose circuit is an OpenQASM 3 file (the `hybrid` job kind):
// features -> optional dense encoder -> the circuit's data inputs; the circuit's
// weight inputs are trainable; Pauli readouts -> optional dense head -> one
// prediction, or one logit per class. Every `input` of the file must be named as a weight or a data
// input. The circuit's gate angles are expressions of its inputs
// (QasmProgram::angles_at); gradients chain through them (input_gradient).
#pragma once

#include <string>
#include <vector>

#include "circuit/qasm.h"
#include "ml/layers.h"
#include "models/hybrid.h"

namespace qmlsim::models {

struct LayerSpec {
  int units = 1;
  ml::Activation activation = ml::Activation::kNone;
};

struct QasmHybridSpec {
  QasmProgram program;
  std::string source;                    // the circuit file, for messages
  std::vector<std::string> weights;      // input names trained as circuit weights
  std::vector<std::string> data_inputs;  // input names fed from each example
  std::vector<PauliSum> readouts;
  std::vector<LayerSpec> encoder, head;  // the last encoder layer outputs the data inputs
  int features = 0;                      // values per example
  int outputs = 1;                       // predictions per example: 1, or one per class
  double init_low = 0, init_high = 6.283185307179586;  // circuit weights ~ U(low, high)
  bool glorot = false;  // dense layers: Keras' Glorot-uniform, else PyTorch's default
};

class QasmHybrid : public HybridModel {
 public:
  // Errors (one line, naming the circuit file or the layer) for inputs that are
  // neither weights nor data, names the file does not declare, layer sizes that
  // do not meet, readouts beyond the circuit's qubits.
  explicit QasmHybrid(QasmHybridSpec spec);

  void init(std::span<double> params, Rng& rng) const override;

 protected:
  const Circuit& circuit(std::span<const double>) const override { return spec_.program.circuit; }
  std::vector<Circuit*> templates() override { return {&spec_.program.circuit}; }
  void encode(std::span<const double> params, std::span<const double> x,
              std::span<double> inputs) const override;
  void encode_backward(std::span<const double> params, std::span<const double> x,
                       std::span<const double> d_inputs, std::span<double> grad) const override;
  void head(std::span<const double> params, std::span<const double> expvals,
            std::span<double> predictions) const override;
  void head_backward(std::span<const double> params, std::span<const double> expvals,
                     std::span<const double> d_predictions, std::span<double> d_expvals,
                     std::span<double> grad) const override;
  std::vector<double> slots(std::vector<double> theta) const override;
  std::vector<double> slots_backward(std::span<const double> theta,
                                     std::vector<double> d_slots) const override;

 private:
  // Runs the layers forward, keeping every layer's input and pre-activation.
  struct Trace {
    std::vector<std::vector<double>> in, z;
    std::vector<double> out;
  };
  static Trace forward(const std::vector<ml::Dense>& layers, std::span<const double> params,
                       std::span<const double> x);
  static void backward(const std::vector<ml::Dense>& layers, std::span<const double> params,
                       const Trace& t, std::vector<double> dy, std::span<double> grad,
                       std::span<double> dx);

  // theta (weights, then data inputs, as listed) in the program's input order.
  std::vector<double> program_inputs(std::span<const double> theta) const;

  QasmHybridSpec spec_;
  std::vector<ml::Dense> encoder_, head_;
  std::vector<int> theta_to_input_;  // theta index -> index among the program's input values
};

}  // namespace qmlsim::models
