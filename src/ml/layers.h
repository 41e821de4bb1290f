// Classical layers for hybrid models: a dense (fully connected) layer with an
// optional activation, over parameters stored in a flat vector (ml/params.h).
#pragma once

#include <span>
#include <string>

#include "core/rng.h"
#include "ml/params.h"

namespace qmlsim::ml {

enum class Activation { kNone, kSigmoid, kTanh, kRelu };

// Parses "none", "sigmoid", "tanh", "relu"; throws Error naming `what` otherwise.
Activation parse_activation(const std::string& name, const std::string& what);
double activate(Activation a, double z);
// d activate(z) / dz.
double activate_derivative(Activation a, double z);

double sigmoid(double z);

// y = act(W x + b) with W of shape [out, in] (PyTorch's layout) and b of shape [out].
class Dense {
 public:
  Dense() = default;
  // Registers "<name>/weight" and "<name>/bias" in the layout.
  Dense(ParamLayout& layout, const std::string& name, int in, int out,
        Activation act = Activation::kNone);

  int in() const { return in_; }
  int out() const { return out_; }

  // PyTorch's default: weights and biases U(-1/sqrt(in), 1/sqrt(in)).
  void init_torch(std::span<double> params, Rng& rng) const;
  // Keras' default: weights Glorot-uniform U(-sqrt(6/(in+out)), +...), biases zero.
  void init_glorot(std::span<double> params, Rng& rng) const;

  // z (pre-activation) and y, each of size out. REQUIRES x.size() == in.
  void forward(std::span<const double> params, std::span<const double> x, std::span<double> z,
               std::span<double> y) const;
  // Given dL/dy, adds dL/dW and dL/db to grad and writes dL/dx (when dx is not empty).
  void backward(std::span<const double> params, std::span<const double> x,
                std::span<const double> z, std::span<const double> dy, std::span<double> grad,
                std::span<double> dx) const;

 private:
  int in_ = 0, out_ = 0;
  std::size_t w_ = 0, b_ = 0;
  Activation act_ = Activation::kNone;
};

}  // namespace qmlsim::ml
