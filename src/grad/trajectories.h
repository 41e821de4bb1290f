// Noisy circuits by quantum trajectories (Monte Carlo wave functions): each
// trajectory is one state vector through which every channel applies one of
// its Kraus operators K_i, drawn with probability p_i = ||K_i psi||^2 and
// normalised, so the mean of a trajectory readout is the density matrix's.
// Memory is one state per concurrent trajectory, so circuits whose density
// matrix does not fit still run.
//
// Branches are drawn as qsim draws them: each K_i has a lower bound lb_i <=
// p_i whatever the state (the least eigenvalue of K_i^dagger K_i); one uniform
// r picks branch i outright where r falls in the lower bounds' cumulative
// intervals, and only otherwise are the p_i measured (one expectation-value
// pass of K_i^dagger K_i as a Pauli sum) and r's remainder placed among the
// p_i - lb_i. A Kraus operator proportional to a unitary (every Pauli
// channel's) has lb_i = p_i: its branch costs no pass and joins the fused
// gate queue as a unitary. Phase damping runs as the equivalent Z mixture.
//
// Trajectory t draws from its own seeded stream (options.seed, t), and means
// are summed in trajectory order, so results are the same for any thread
// count. The trajectories of each block of kTrajectoryBlock run the prefix
// where their draws agree once (trajectories.cc, Spine); the blocks fix it,
// so it does not change results across thread or process counts.
//
// Gradients: where every channel is a mixture of unitaries, each trajectory
// is a fixed unitary circuit whose branches do not depend on the parameters,
// and the mean of their adjoint gradients is an unbiased estimate; other
// channels (damping, thermal relaxation, general Kraus sets) are refused,
// pointing to the density matrix.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "circuit/circuit.h"
#include "circuit/observable.h"
#include "grad/adjoint.h"
#include "grad/options.h"
#include "grad/simulate.h"

namespace qmlsim {

// The mean over options.trajectories trajectories of each readout: <H_k> (with
// their standard errors in expval_errors), probabilities, and req.shots
// samples shared out over the trajectories (trajectory t draws its share from
// its own state). No final state or most probable state: those belong to one
// trajectory, not to the mixture (an Error).
template <class R>
SimulateResult simulate_trajectories(const Circuit& c, std::span<const double> theta,
                                     const SimulateRequest& req, const EngineOptions& options);

// simulate_trajectories in parts, for processes that each run some of the
// trajectories: probabilities are summed in blocks of kTrajectoryBlock
// trajectories, then block after block, and expectation values per
// trajectory, so the combined result is bit for bit the same for any split
// (and any thread count).
inline constexpr std::int64_t kTrajectoryBlock = 64;

// One part's trajectories, in order: each one's <H_k> (row after row), the
// probabilities summed per block (when requested), the samples.
struct TrajectoryShare {
  std::vector<double> expvals;
  std::vector<double> probabilities;
  std::map<index_t, std::int64_t> counts;
};

// The trajectories part `part` of `parts` runs: whole blocks, contiguous,
// parts in order.
std::pair<std::int64_t, std::int64_t> trajectory_range(std::int64_t count, int part, int parts);

// Trajectories [first, last) of the run simulate_trajectories makes
// (REQUIRES first a multiple of kTrajectoryBlock).
template <class R>
TrajectoryShare trajectory_share(const Circuit& c, std::span<const double> theta,
                                 const SimulateRequest& req, const EngineOptions& options,
                                 std::int64_t first, std::int64_t last);

// The run's result from every part's share concatenated in part order.
SimulateResult combine_trajectories(const TrajectoryShare& all, const SimulateRequest& req,
                                    std::int64_t count);

// trajectories_vjp in parts, as above: trajectories [first, last), a row per
// trajectory of its <H_k> then its gradient (theta.size() entries); and the
// VJP from every part's rows concatenated in part order.
template <class R>
std::vector<double> trajectory_vjp_share(const Circuit& c, std::span<const double> theta,
                                         const std::vector<PauliSum>& observables,
                                         std::span<const double> weights,
                                         const EngineOptions& options, std::int64_t first,
                                         std::int64_t last);
AdjointResult combine_trajectory_vjps(std::span<const double> rows, std::size_t observables,
                                      std::size_t params, std::int64_t count);

// The mean over trajectories of each trajectory's adjoint VJP (an unbiased
// estimate of the noisy circuit's), with the mean <H_k>. Throws Error unless
// every channel of c is a mixture of unitaries.
template <class R>
AdjointResult trajectories_vjp(const Circuit& c, std::span<const double> theta,
                               const std::vector<PauliSum>& observables,
                               std::span<const double> weights, const EngineOptions& options);

}  // namespace qmlsim
