// Losses of a model's outputs against a label, and the accuracy rule. Binary
// losses take one output p and a label in {-1, +1} (regression: any number,
// mse); categorical cross-entropy takes one logit per class and the label's
// class index 0..K-1.
#pragma once

#include <span>
#include <string>

namespace qmlsim::ml {

enum class LossKind {
  kMse,            // (p - y)^2
  kMarginRanking,  // max(0, -y p + margin): PyTorch's MarginRankingLoss against zero
  kHinge,          // max(0, 1 - y p)
  kBce,            // binary cross-entropy on the logit p with target (y + 1) / 2
  kCce,            // categorical cross-entropy on logits p: log sum_k e^{p_k} - p_y
};

struct Loss {
  LossKind kind = LossKind::kMse;
  double margin = 0.0;  // kMarginRanking only

  // Parses "mse", "margin_ranking", "hinge", "bce", "cce"; throws Error naming `what`.
  static Loss parse(const std::string& name, double margin, const std::string& what);
  // True for kCce: one output per class, labels are class indices.
  bool categorical() const { return kind == LossKind::kCce; }

  // REQUIRES p.size() == 1 for the binary losses, >= 2 with y in 0..p.size()-1 for kCce.
  double value(std::span<const double> p, double y) const;
  // d value / d p into d (size p.size()); a subgradient at kinks: 0.
  void derivative(std::span<const double> p, double y, std::span<double> d) const;

  // One output.
  double value(double p, double y) const { return value(std::span<const double>(&p, 1), y); }
  double derivative(double p, double y) const {
    double d = 0;
    derivative(std::span<const double>(&p, 1), y, std::span<double>(&d, 1));
    return d;
  }
};

// One output: 1 when sign(p) == y, a p of exactly 0 counting as +1. Several:
// 1 when the largest output (the first of equals) is at index y.
double correct(std::span<const double> p, double y);
inline double correct(double p, double y) { return correct(std::span<const double>(&p, 1), y); }

// The class index of outputs p (several) or the sign class -1/+1 (one).
int predicted_class(std::span<const double> p);

// softmax(p), computed without overflow.
void softmax(std::span<const double> p, std::span<double> out);

}  // namespace qmlsim::ml
