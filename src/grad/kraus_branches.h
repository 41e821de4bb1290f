// A channel's Kraus operators as the branches a state-vector run draws from
// (trajectories, grad/trajectories.h; shots of dynamic circuits,
// grad/dynamic.h): each with a lower bound on its probability that holds for
// every state, and the operator K^dagger K whose expectation value is the
// branch's probability.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "circuit/bound.h"
#include "circuit/circuit.h"
#include "circuit/observable.h"

namespace qmlsim {

// One channel's branches at theta.
struct Branches {
  std::vector<BoundGate> kraus;  // K_i on the channel's wires (canonical)
  std::vector<double> lower;     // lb_i <= ||K_i psi||^2 for every psi
  std::vector<char> unitary;     // K_i = sqrt(lb_i) U_i
  std::vector<char> identity;    // ... and U_i is a phase times the identity
  std::vector<BoundGate> gate;   // U_i where unitary, else K_i
  std::vector<PauliSum> weight;  // K_i^dagger K_i as a Pauli sum (p_i = <psi|it|psi>)
  bool mixture() const {
    return std::all_of(unitary.begin(), unitary.end(), [](char u) { return u; });
  }
};

// The branches of channel `op` at theta (phase damping as the equivalent Z
// mixture). Throws Error for parameter values out of range.
Branches branches_of(const Operation& op, std::span<const double> theta);

}  // namespace qmlsim
