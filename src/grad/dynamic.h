// Dynamic circuits: mid-circuit measurements, resets and classically
// controlled operations (circuit.h's Instruction and Condition).
//
// The circuit is walked depth first over the outcomes of its measurements
// and resets; a state is copied only where both outcomes continue, and the
// last outcome goes on in the parent's state, so a branch shares its prefix
// with its siblings and only distinct branches are simulated.
// - Exactly (no shots): every outcome of probability above 1e-14, weighted by
//   its probability, up to EngineOptions::max_branches branches. With noise
//   channels the walk runs on the density matrix (channels as superoperators,
//   measurements as projections, resets as the reset channel) unless the
//   method is trajectories.
// - With shots (one-shot sampling, per shot exactly as a trajectory collapses
//   it): the shots are split binomially at each measurement and
//   multinomially over a channel's Kraus branches, and each branch with shots
//   left is simulated once; its final state is sampled for its shots. Seeded:
//   the same seed gives the same samples for any thread count.
// - With Method::trajectories, expectation values and probabilities are the
//   mean over options.trajectories such one-shot trajectories.
// A classical record is one 64-bit word (bit k = classical bit k); a
// measurement overwrites its bit. On the options' backend (the walk is written
// over the state type); gradients are refused (the outcome probabilities
// depend on the parameters).
#pragma once

#include <span>

#include "circuit/circuit.h"
#include "grad/options.h"
#include "grad/simulate.h"

namespace qmlsim {

// c (with c.has_dynamic()) at theta, read out as requested: exact expectation
// values, probabilities and record_probabilities (or their trajectory means),
// and with req.shots the samples with their classical records; trajectory
// means come with their standard errors (expval_errors). With req.leaves,
// every branch walked (the shot walk's with shots, nothing sampled). A final state
// or most probable state is an Error (a dynamic circuit ends in a mixture);
// so is a walk beyond options.max_branches (naming the limit and sampling
// with shots as the alternative).
template <class R>
SimulateResult simulate_dynamic(const Circuit& c, std::span<const double> theta,
                                const SimulateRequest& req, const EngineOptions& options);

}  // namespace qmlsim
