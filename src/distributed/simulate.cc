#include "distributed/simulate.h"

#include "backends/cpu/density.h"
#include "circuit/bound.h"
#include "core/error.h"
#include "grad/adjoint_parts.h"
#include "grad/density_matrix.h"
#include "grad/trajectories.h"

namespace qmlsim::distributed {

template <class R>
SimulateResult simulate(const Circuit& c, std::span<const double> theta, const SimulateRequest& req,
                        const Options& options, const comm::Comm& group) {
  DistState<R> s(c.num_qubits(), group, options);
  s.apply(bind_params(c, theta));
  SimulateResult out;
  out.expvals = s.expvals(req.observables);
  if (req.shots > 0) out.counts = s.sample(req.shots, req.seed);
  if (req.most_probable) out.most_probable = s.most_probable();
  return out;
}

template <class R>
SimulateResult simulate_density_matrix(const Circuit& c, std::span<const double> theta,
                                       const SimulateRequest& req, const Options& options,
                                       const comm::Comm& group, RunStats* forward,
                                       RunStats* total) {
  const int n = c.num_qubits();
  DistState<R> s(2 * n, group, options);  // vec(|0><0|) = |0...0>
  if (s.slice_qubits() < n)
    throw Error("--distributed: " + std::to_string(group.size()) +
                " processes split a density matrix of " + std::to_string(n) +
                " qubits beyond its columns (at most 2^" + std::to_string(n) + ")");
  EngineOptions unfused;  // the plan fuses per segment
  unfused.fusion = 0;
  s.apply(density_matrix_gates(c, theta, unfused));
  if (forward) *forward = s.stats();
  s.canonicalize();  // process r holds columns r 2^(m-n) .. (r + 1) 2^(m-n) - 1
  const index_t columns = index_t{1} << (s.slice_qubits() - n);
  const index_t c0 = s.slice() * columns, c1 = c0 + columns;
  const R* mine = s.local().data();
  SimulateResult out;
  std::vector<double> partial;
  for (const PauliSum& h : req.observables)
    partial.push_back(cpu::density_trace_columns(mine, n, c0, c1, h));
  const std::vector<double> all = group.allgather(partial);  // rank after rank
  out.expvals.assign(req.observables.size(), 0.0);
  for (std::size_t i = 0; i < all.size(); ++i) out.expvals[i % partial.size()] += all[i];
  if (req.probabilities || req.shots > 0 || req.most_probable)
    read_out_diagonal(group.allgather(cpu::density_diagonal_columns(mine, n, c0, c1)), req, out);
  if (req.state) {
    const std::vector<cplx> v = s.gather();  // vec(rho) to row-major rho
    const index_t dim = index_t{1} << n;
    out.state.resize(v.size());
    for (index_t r = 0; r < dim; ++r)
      for (index_t col = 0; col < dim; ++col) out.state[r * dim + col] = v[r + dim * col];
  }
  if (total) *total = s.stats();
  return out;
}

template <class R>
AdjointResult adjoint_vjp(const Circuit& c, std::span<const double> theta,
                          const std::vector<PauliSum>& observables, const WeightsFn& weights,
                          const Options& options, const comm::Comm& group) {
  DistState<R> s(c.num_qubits(), group, options);
  s.apply(bind_params(c, theta));
  AdjointResult r;
  r.expvals = s.expvals(observables);
  const std::vector<double> w = weights(r.expvals);
  double value = 0;
  r.gradient = s.gradient(c, theta, weighted_sum(observables, w), &value);
  return r;
}

template <class R>
SimulateResult simulate_trajectories(const Circuit& c, std::span<const double> theta,
                                     const SimulateRequest& req, const EngineOptions& options,
                                     const comm::Comm& group) {
  const auto [first, last] = trajectory_range(options.trajectories, group.rank(), group.size());
  const TrajectoryShare mine = trajectory_share<R>(c, theta, req, options, first, last);
  TrajectoryShare all;
  all.expvals = group.allgather(mine.expvals);
  if (req.probabilities) all.probabilities = group.allgather(mine.probabilities);
  std::vector<double> counts;  // (outcome, hits) pairs: exact as doubles up to 2^53
  for (const auto& [outcome, hits] : mine.counts) {
    counts.push_back(static_cast<double>(outcome));
    counts.push_back(static_cast<double>(hits));
  }
  const std::vector<double> gathered = group.allgather(counts);
  for (std::size_t j = 0; j + 1 < gathered.size(); j += 2)
    all.counts[static_cast<index_t>(gathered[j])] += static_cast<std::int64_t>(gathered[j + 1]);
  return combine_trajectories(all, req, options.trajectories);
}

template <class R>
AdjointResult trajectories_vjp(const Circuit& c, std::span<const double> theta,
                               const std::vector<PauliSum>& observables,
                               std::span<const double> weights, const EngineOptions& options,
                               const comm::Comm& group) {
  const auto [first, last] = trajectory_range(options.trajectories, group.rank(), group.size());
  const std::vector<double> rows = group.allgather(
      trajectory_vjp_share<R>(c, theta, observables, weights, options, first, last));
  return combine_trajectory_vjps(rows, observables.size(), theta.size(), options.trajectories);
}

#define QMLSIM_DIST_SIMULATE(R)                                                                   \
  template SimulateResult simulate<R>(const Circuit&, std::span<const double>,                    \
                                      const SimulateRequest&, const Options&, const comm::Comm&); \
  template SimulateResult simulate_density_matrix<R>(const Circuit&, std::span<const double>,     \
                                                     const SimulateRequest&, const Options&,      \
                                                     const comm::Comm&, RunStats*, RunStats*);    \
  template AdjointResult adjoint_vjp<R>(const Circuit&, std::span<const double>,                  \
                                        const std::vector<PauliSum>&, const WeightsFn&,           \
                                        const Options&, const comm::Comm&);                       \
  template SimulateResult simulate_trajectories<R>(const Circuit&, std::span<const double>,       \
                                                   const SimulateRequest&, const EngineOptions&,  \
                                                   const comm::Comm&);                            \
  template AdjointResult trajectories_vjp<R>(                                                     \
      const Circuit&, std::span<const double>, const std::vector<PauliSum>&,                      \
      std::span<const double>, const EngineOptions&, const comm::Comm&);
QMLSIM_DIST_SIMULATE(float)
QMLSIM_DIST_SIMULATE(double)
#undef QMLSIM_DIST_SIMULATE

}  // namespace qmlsim::distributed
