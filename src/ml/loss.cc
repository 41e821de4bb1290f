#include "ml/loss.h"

#include <cmath>

#include "core/error.h"
#include "ml/layers.h"

namespace qmlsim::ml {

Loss Loss::parse(const std::string& name, double margin, const std::string& what) {
  if (name == "mse") return {LossKind::kMse, 0};
  if (name == "margin_ranking") return {LossKind::kMarginRanking, margin};
  if (name == "hinge") return {LossKind::kHinge, 0};
  if (name == "bce") return {LossKind::kBce, 0};
  throw Error(what + ": unknown loss '" + name + "' (mse, margin_ranking, hinge, bce)");
}

double Loss::value(double p, double y) const {
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
  }
  return 0;
}

double Loss::derivative(double p, double y) const {
  switch (kind) {
    case LossKind::kMse:
      return 2 * (p - y);
    case LossKind::kMarginRanking:
      return -y * p + margin > 0 ? -y : 0.0;
    case LossKind::kHinge:
      return 1.0 - y * p > 0 ? -y : 0.0;
    case LossKind::kBce:
      return sigmoid(p) - (y + 1) / 2;
  }
  return 0;
}

}  // namespace qmlsim::ml
