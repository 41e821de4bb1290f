// A circuit bound for differentiation: one step per operation, holding the
// bound gate and, for each of its trainable angles, the exact derivative of the
// gate's target matrix (GateInfo::frequency gives it in closed form) and the
// chain-rule factor d(angle)/d(slot). Pure circuit logic.
#pragma once

#include <span>
#include <vector>

#include "circuit/bound.h"

namespace qmlsim {

struct TapeDerivative {
  int slot = -1;
  double scale = 0;  // d(angle)/d(slot)
  Matrix d;          // dU/d(angle), canonical order of the step's targets: dense, or for a
                     // diagonal gate (GateInfo::diagonal) its diagonal alone
};

struct TapeStep {
  BoundGate gate;                           // at the current parameter values
  std::vector<TapeDerivative> derivatives;  // empty: nothing to differentiate
};

std::vector<TapeStep> make_tape(const Circuit& c, std::span<const double> theta);

}  // namespace qmlsim
