// A circuit unrolled for differentiation: every parametric gate becomes one or
// more single-parameter steps U(a) = exp(i a G) with a Pauli-sum generator G
// (Rot = RZ RY RZ, U3 = P(phi) RY(theta) P(lambda), controls multiply G by the
// projector onto |1...1>), and gates with no trainable parameter become fixed
// steps. Pure circuit logic; evaluated by the adjoint method and the oracles.
#pragma once

#include <span>
#include <vector>

#include "circuit/bound.h"
#include "circuit/observable.h"

namespace qmlsim {

struct TapeStep {
  BoundGate gate;      // bound at the current parameter values
  int slot = -1;       // trainable slot, or -1 for a fixed step
  double scale = 0;    // d(angle)/d(slot)
  PauliSum generator;  // G with U(a) = exp(i a G); empty for fixed steps
};

// Unrolls c at parameter values theta (indexed by slot).
std::vector<TapeStep> make_tape(const Circuit& c, std::span<const double> theta);

}  // namespace qmlsim
