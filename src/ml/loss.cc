#include "ml/loss.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "ml/layers.h"

namespace qmlsim::ml {

Loss Loss::parse(const std::string& name, double margin, const std::string& what) {
  if (name == "mse") return {LossKind::kMse, 0};
  if (name == "margin_ranking") return {LossKind::kMarginRanking, margin};
  if (name == "hinge") return {LossKind::kHinge, 0};
  if (name == "bce") return {LossKind::kBce, 0};
  if (name == "cce") return {LossKind::kCce, 0};
  throw Error(what + ": unknown loss '" + name + "' (mse, margin_ranking, hinge, bce, cce)");
}

void softmax(std::span<const double> p, std::span<double> out) {
  const double m = *std::max_element(p.begin(), p.end());
  double sum = 0;
  for (std::size_t k = 0; k < p.size(); ++k) sum += out[k] = std::exp(p[k] - m);
  for (double& v : out) v /= sum;
}

namespace {

double log_sum_exp(std::span<const double> p) {
  const double m = *std::max_element(p.begin(), p.end());
  double sum = 0;
  for (double v : p) sum += std::exp(v - m);
  return m + std::log(sum);
}

}  // namespace

double Loss::value(std::span<const double> ps, double y) const {
  if (kind == LossKind::kCce) return log_sum_exp(ps) - ps[static_cast<std::size_t>(y)];
  const double p = ps[0];
  switch (kind) {
    case LossKind::kMse:
      return (p - y) * (p - y);
    case LossKind::kMarginRanking:
      return std::max(0.0, -y * p + margin);
    case LossKind::kHinge:
      return std::max(0.0, 1.0 - y * p);
    case LossKind::kBce: {
      const double t = (y + 1) / 2;  // log(1 + e^p) - t p, computed without overflow
      return std::max(p, 0.0) + std::log1p(std::exp(-std::abs(p))) - t * p;
    }
    case LossKind::kCce:
      break;
  }
  return 0;
}

void Loss::derivative(std::span<const double> ps, double y, std::span<double> d) const {
  if (kind == LossKind::kCce) {
    softmax(ps, d);
    d[static_cast<std::size_t>(y)] -= 1;
    return;
  }
  const double p = ps[0];
  switch (kind) {
    case LossKind::kMse:
      d[0] = 2 * (p - y);
      break;
    case LossKind::kMarginRanking:
      d[0] = -y * p + margin > 0 ? -y : 0.0;
      break;
    case LossKind::kHinge:
      d[0] = 1.0 - y * p > 0 ? -y : 0.0;
      break;
    case LossKind::kBce:
      d[0] = sigmoid(p) - (y + 1) / 2;
      break;
    case LossKind::kCce:
      break;
  }
}

int predicted_class(std::span<const double> p) {
  if (p.size() == 1) return p[0] >= 0 ? 1 : -1;
  return static_cast<int>(std::max_element(p.begin(), p.end()) - p.begin());
}

double correct(std::span<const double> p, double y) { return predicted_class(p) == y ? 1.0 : 0.0; }

}  // namespace qmlsim::ml
