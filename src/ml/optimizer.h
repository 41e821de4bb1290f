// Optimizers over a flat parameter vector, with their state exposed as named
// vectors so checkpoints can save and restore it exactly.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace qmlsim::ml {

struct OptimizerConfig {
  std::string kind = "adam";  // "sgd" or "adam"
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
};

class Optimizer {
 public:
  // Throws Error naming `what` for an unknown kind or bad hyperparameters.
  Optimizer(const OptimizerConfig& config, std::size_t num_params, const std::string& what);

  // params -= update(grad) at learning rate lr. Adam as in Kingma & Ba with bias
  // correction (PyTorch's and Keras' form: eps added to sqrt(v_hat)).
  void step(std::span<double> params, std::span<const double> grad, double lr);

  // "m", "v", "t" for Adam; empty for SGD.
  std::map<std::string, std::vector<double>> state() const;
  // Throws Error when a vector is missing or has the wrong size.
  void set_state(const std::map<std::string, std::vector<double>>& s);

 private:
  OptimizerConfig c_;
  std::vector<double> m_, v_;
  std::int64_t t_ = 0;
};

// Step schedule: lr0 * gamma^floor(epoch / step_epochs) (PyTorch's StepLR).
double step_learning_rate(double lr0, double gamma, int step_epochs, int epoch);

}  // namespace qmlsim::ml
