// Circuits on a state distributed over a group of processes (distributed/state.h),
// with the single-process engine's interfaces (grad/adjoint.h,
// grad/simulate.h): every process of the group calls with the same arguments
// and gets the same results. The models use these for examples whose state is
// split over a state group (EvalOptions::state_group).
#pragma once

#include <span>
#include <vector>

#include "comm/comm.h"
#include "distributed/state.h"
#include "grad/adjoint.h"
#include "grad/simulate.h"

namespace qmlsim::distributed {

// As qmlsim::simulate: expectation values, seeded samples (the single-process
// counts), the most probable basis state. No initial state: |0...0>.
template <class R>
SimulateResult simulate(const Circuit& c, std::span<const double> theta, const SimulateRequest& req,
                        const Options& options, const comm::Comm& group);

// As qmlsim::simulate_density_matrix (grad/density_matrix.h): rho as the
// 2n-qubit vector vec(rho) over the group, its gates and channels planned like
// any 2n-qubit gates (options.fusion fuses them per segment). Each process
// then holds whole columns of rho, so Tr(H rho) and the diagonal are read
// where they lie: partial sums added in process order, the diagonal gathered
// (samples are the single-process counts for the same seed). Starts from
// |0><0|; `state` (req.state) gathers rho on every process. Forward only.
// `forward` and `total` (optional) receive the layout's traffic after the
// circuit and after everything.
template <class R>
SimulateResult simulate_density_matrix(const Circuit& c, std::span<const double> theta,
                                       const SimulateRequest& req, const Options& options,
                                       const comm::Comm& group, RunStats* forward = nullptr,
                                       RunStats* total = nullptr);

// As qmlsim::adjoint_vjp with a WeightsFn: one forward pass, the weights from
// the expectation values, one backward pass on the distributed vectors.
template <class R>
AdjointResult adjoint_vjp(const Circuit& c, std::span<const double> theta,
                          const std::vector<PauliSum>& observables, const WeightsFn& weights,
                          const Options& options, const comm::Comm& group);

// Trajectories shared out over the processes of `group` (whole blocks of
// grad/trajectories.h in rank order; trajectory t seeded by its index): every
// process gets what qmlsim::simulate_trajectories and
// qmlsim::trajectories_vjp give in one process, bit for bit. Each process runs
// its share with `options` (its threads, its backend).
template <class R>
SimulateResult simulate_trajectories(const Circuit& c, std::span<const double> theta,
                                     const SimulateRequest& req, const EngineOptions& options,
                                     const comm::Comm& group);
template <class R>
AdjointResult trajectories_vjp(const Circuit& c, std::span<const double> theta,
                               const std::vector<PauliSum>& observables,
                               std::span<const double> weights, const EngineOptions& options,
                               const comm::Comm& group);

}  // namespace qmlsim::distributed
