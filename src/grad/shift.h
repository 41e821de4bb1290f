// Gradients by parameter shift and by central finite differences: slower than
// the adjoint method (two or four circuit runs per parameter occurrence), used
// as independent test oracles and available as methods.
//
// Shift rules, per occurrence of a trainable angle a in a gate:
//   two-term  f'(a) = [f(a + pi/2) - f(a - pi/2)] / 2             (one frequency)
//   four-term f'(a) = c1 [f(a + pi/2) - f(a - pi/2)] - c2 [f(a + 3pi/2) - f(a - 3pi/2)]
//             c1 = (sqrt2 + 1) / (4 sqrt2), c2 = (sqrt2 - 1) / (4 sqrt2)
// The four-term rule is used for gates with controls and for IsingXY, whose
// generators have eigenvalue gaps 1/2 and 1.
#pragma once

#include <span>
#include <vector>

#include "circuit/circuit.h"
#include "circuit/observable.h"

namespace qmlsim {

// <H> at theta, with the angle of parameter p of operation op moved by delta
// (op < 0: no move).
template <class R>
double shifted_expval(const Circuit& c, std::span<const double> theta, const PauliSum& h, int op,
                      int p, double delta, int threads = 1);

// d<H>/dtheta[slot] for every slot (size theta.size()).
template <class R>
std::vector<double> parameter_shift_gradient(const Circuit& c, std::span<const double> theta,
                                             const PauliSum& h, int threads = 1);

template <class R>
std::vector<double> finite_difference_gradient(const Circuit& c, std::span<const double> theta,
                                               const PauliSum& h, double step, int threads = 1);

// True if the four-term rule is needed for this operation's angles.
bool needs_four_term_rule(const Operation& op);

}  // namespace qmlsim
