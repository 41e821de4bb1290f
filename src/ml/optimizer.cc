#include "ml/optimizer.h"

#include <cmath>

#include "core/error.h"

namespace qmlsim::ml {

Optimizer::Optimizer(const OptimizerConfig& config, std::size_t num_params, const std::string& what)
    : c_(config) {
  if (c_.kind == "adam") {
    if (!(c_.beta1 >= 0 && c_.beta1 < 1) || !(c_.beta2 >= 0 && c_.beta2 < 1) || !(c_.epsilon > 0))
      throw Error(what + ": Adam needs 0 <= beta1, beta2 < 1 and epsilon > 0");
    m_.assign(num_params, 0.0);
    v_.assign(num_params, 0.0);
  } else if (c_.kind != "sgd") {
    throw Error(what + ": unknown optimizer '" + c_.kind + "' (sgd, adam)");
  }
}

void Optimizer::step(std::span<double> params, std::span<const double> grad, double lr) {
  if (c_.kind == "sgd") {
    for (std::size_t i = 0; i < params.size(); ++i) params[i] -= lr * grad[i];
    return;
  }
  ++t_;
  const double c1 = 1 - std::pow(c_.beta1, static_cast<double>(t_));
  const double c2 = 1 - std::pow(c_.beta2, static_cast<double>(t_));
  for (std::size_t i = 0; i < params.size(); ++i) {
    m_[i] = c_.beta1 * m_[i] + (1 - c_.beta1) * grad[i];
    v_[i] = c_.beta2 * v_[i] + (1 - c_.beta2) * grad[i] * grad[i];
    params[i] -= lr * (m_[i] / c1) / (std::sqrt(v_[i] / c2) + c_.epsilon);
  }
}

std::map<std::string, std::vector<double>> Optimizer::state() const {
  if (c_.kind == "sgd") return {};
  return {{"m", m_}, {"v", v_}, {"t", {static_cast<double>(t_)}}};
}

void Optimizer::set_state(const std::map<std::string, std::vector<double>>& s) {
  if (c_.kind == "sgd") return;
  auto get = [&](const char* k, std::size_t n) -> const std::vector<double>& {
    auto it = s.find(k);
    if (it == s.end() || it->second.size() != n)
      throw Error(std::string("optimizer state '") + k + "' missing or of the wrong size");
    return it->second;
  };
  m_ = get("m", m_.size());
  v_ = get("v", v_.size());
  t_ = static_cast<std::int64_t>(get("t", 1)[0]);
}

double step_learning_rate(double lr0, double gamma, int step_epochs, int epoch) {
  return lr0 * std::pow(gamma, static_cast<double>(epoch / std::max(1, step_epochs)));
}

}  // namespace qmlsim::ml
