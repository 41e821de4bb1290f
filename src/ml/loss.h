// Losses of one scalar prediction against a label in {-1, +1}, and the
// accuracy rule the reference jobs use (sign of the prediction).
#pragma once

#include <string>

namespace qmlsim::ml {

enum class LossKind {
  kMse,            // (p - y)^2
  kMarginRanking,  // max(0, -y p + margin): PyTorch's MarginRankingLoss against zero
  kHinge,          // max(0, 1 - y p)
  kBce,            // binary cross-entropy on the logit p with target (y + 1) / 2
};

struct Loss {
  LossKind kind = LossKind::kMse;
  double margin = 0.0;  // kMarginRanking only

  // Parses "mse", "margin_ranking", "hinge", "bce"; throws Error naming `what`.
  static Loss parse(const std::string& name, double margin, const std::string& what);

  double value(double prediction, double label) const;
  // d value / d prediction (a subgradient at kinks: 0).
  double derivative(double prediction, double label) const;
};

// 1 when sign(prediction) == label, a prediction of exactly 0 counting as +1.
inline double correct(double prediction, double label) {
  return (prediction >= 0 ? 1.0 : -1.0) == label ? 1.0 : 0.0;
}

}  // namespace qmlsim::ml
