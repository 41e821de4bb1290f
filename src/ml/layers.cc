#include "ml/layers.h"

#include <cmath>
#include <vector>

#include "core/error.h"

namespace qmlsim::ml {

Activation parse_activation(const std::string& name, const std::string& what) {
  if (name == "none" || name == "linear") return Activation::kNone;
  if (name == "sigmoid") return Activation::kSigmoid;
  if (name == "tanh") return Activation::kTanh;
  if (name == "relu") return Activation::kRelu;
  throw Error(what + ": unknown activation '" + name + "' (none, sigmoid, tanh, relu)");
}

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

double activate(Activation a, double z) {
  switch (a) {
    case Activation::kNone:
      return z;
    case Activation::kSigmoid:
      return sigmoid(z);
    case Activation::kTanh:
      return std::tanh(z);
    case Activation::kRelu:
      return z > 0 ? z : 0.0;
  }
  return z;
}

double activate_derivative(Activation a, double z) {
  switch (a) {
    case Activation::kNone:
      return 1.0;
    case Activation::kSigmoid: {
      const double s = sigmoid(z);
      return s * (1 - s);
    }
    case Activation::kTanh: {
      const double t = std::tanh(z);
      return 1 - t * t;
    }
    case Activation::kRelu:
      return z > 0 ? 1.0 : 0.0;
  }
  return 1.0;
}

Dense::Dense(ParamLayout& layout, const std::string& name, int in, int out, Activation act)
    : in_(in), out_(out), act_(act) {
  w_ = layout.add(name + "/weight", {out, in});
  b_ = layout.add(name + "/bias", {out});
}

void Dense::init_torch(std::span<double> params, Rng& rng) const {
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_));
  for (int i = 0; i < in_ * out_; ++i) params[w_ + i] = rng.uniform(-bound, bound);
  for (int o = 0; o < out_; ++o) params[b_ + o] = rng.uniform(-bound, bound);
}

void Dense::init_glorot(std::span<double> params, Rng& rng) const {
  const double bound = std::sqrt(6.0 / static_cast<double>(in_ + out_));
  for (int i = 0; i < in_ * out_; ++i) params[w_ + i] = rng.uniform(-bound, bound);
  for (int o = 0; o < out_; ++o) params[b_ + o] = 0.0;
}

void Dense::forward(std::span<const double> params, std::span<const double> x, std::span<double> z,
                    std::span<double> y) const {
  for (int o = 0; o < out_; ++o) {
    double acc = params[b_ + o];
    const double* w = &params[w_ + static_cast<std::size_t>(o) * in_];
    for (int i = 0; i < in_; ++i) acc += w[i] * x[i];
    z[o] = acc;
    y[o] = activate(act_, acc);
  }
}

void Dense::backward(std::span<const double> params, std::span<const double> x,
                     std::span<const double> z, std::span<const double> dy, std::span<double> grad,
                     std::span<double> dx) const {
  if (!dx.empty())
    for (int i = 0; i < in_; ++i) dx[i] = 0.0;
  for (int o = 0; o < out_; ++o) {
    const double dz = dy[o] * activate_derivative(act_, z[o]);
    grad[b_ + o] += dz;
    const std::size_t row = w_ + static_cast<std::size_t>(o) * in_;
    for (int i = 0; i < in_; ++i) {
      grad[row + i] += dz * x[i];
      if (!dx.empty()) dx[i] += dz * params[row + i];
    }
  }
}

}  // namespace qmlsim::ml
