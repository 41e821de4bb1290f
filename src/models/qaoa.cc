#include "models/qaoa.h"

#include <omp.h>

#include <algorithm>

#include "core/error.h"
#include "distributed/simulate.h"
#include "grad/adjoint.h"
#include "grad/simulate.h"

namespace qmlsim::models {

QaoaMaxCut::QaoaMaxCut(ml::Graph graph, int depth)
    : graph_(std::move(graph)), circuit_(graph_.nodes) {
  if (depth < 1) throw Error("QAOA depth must be at least 1");
  if (graph_.nodes < 2 || graph_.nodes > kMaxQubits)
    throw Error("QAOA needs 2 to " + std::to_string(kMaxQubits) + " nodes, the graph has " +
                std::to_string(graph_.nodes));
  layout_.add("params", {2, depth});
  const int n = graph_.nodes;
  for (int q = 0; q < n; ++q) circuit_.add(GateId::H, {q});
  for (int k = 0; k < depth; ++k) {
    for (const auto& [u, v] : graph_.edges)
      circuit_.add(GateId::MultiRZ, {u, v}, {ParamExpr::ref(k)});
    for (int q = 0; q < n; ++q) circuit_.add(GateId::RX, {q}, {ParamExpr::ref(depth + k, 2.0)});
  }
  for (const auto& [u, v] : graph_.edges) cost_.add(0.5, 0, (index_t{1} << u) | (index_t{1} << v));
  cost_.add(-0.5 * static_cast<double>(graph_.edges.size()), 0, 0);
  measured_cost_ = cost_;
}

void QaoaMaxCut::add_gate_noise(const std::vector<GateNoise>& noise) {
  circuit_ = with_gate_noise(circuit_, noise);
}

void QaoaMaxCut::add_readout_error(double p) {
  if (p == 0) return;
  readout_.qubits.assign(static_cast<std::size_t>(graph_.nodes), ReadoutFlip{p, p});
  measured_cost_ = read_through(cost_, readout_);
}

void QaoaMaxCut::init(std::span<double> params, Rng& rng, double scale) const {
  for (double& p : params) p = scale * rng.uniform();
}

namespace {

// Noisy circuits run in one process (their density matrices, or trajectories).
void check_one_process(const Circuit& c, const EvalOptions& o) {
  if (o.distributed() && c.has_channels())
    throw Error("QAOA with noise runs each restart in one process (job.state_ranks = 1)");
}

template <class R>
double cost_impl(const Circuit& c, const PauliSum& h, std::span<const double> params,
                 std::span<double> grad, const EvalOptions& o) {
  check_one_process(c, o);
  if (!grad.empty()) {
    const double w[1] = {1.0};
    const AdjointResult r =
        o.distributed()
            ? distributed::adjoint_vjp<R>(
                  c, params, {h}, [](std::span<const double>) { return std::vector<double>{1.0}; },
                  dist_engine(o), *o.state_group)
            : adjoint_vjp<R>(c, params, {h}, w, engine(o));
    std::copy(r.gradient.begin(), r.gradient.end(), grad.begin());
    return r.expvals[0];
  }
  SimulateRequest req;
  req.observables = {h};
  return o.distributed()
             ? distributed::simulate<R>(c, params, req, dist_engine(o), *o.state_group).expvals[0]
             : simulate<R>(c, params, req, engine(o)).expvals[0];
}

template <class R>
QaoaMaxCut::Readout readout_impl(const QaoaMaxCut& m, const ReadoutError& readout,
                                 std::span<const double> params, std::int64_t shots,
                                 std::uint64_t seed, const EvalOptions& o) {
  check_one_process(m.circuit(), o);
  SimulateRequest req;
  req.shots = shots;
  req.seed = seed;
  // A noisy circuit's most probable state from its probabilities (trajectories
  // have no single final state to scan).
  const bool noisy = m.has_channels();
  req.most_probable = !noisy;
  req.probabilities = noisy;
  SimulateResult s = o.distributed() ? distributed::simulate<R>(m.circuit(), params, req,
                                                                dist_engine(o), *o.state_group)
                                     : simulate<R>(m.circuit(), params, req, engine(o));
  if (noisy)  // the lowest index among equals, as most_probable
    s.most_probable = static_cast<index_t>(
        std::max_element(s.probabilities.begin(), s.probabilities.end()) - s.probabilities.begin());
  s.counts = read_through(s.counts, readout, readout_seed(seed));
  QaoaMaxCut::Readout r;
  r.most_probable.assignment = s.most_probable;
  r.most_probable.size = m.cut_size(r.most_probable.assignment);
  r.best_sampled.size = -1;
  for (const auto& [x, count] : s.counts) {  // ascending x
    const int cut = m.cut_size(x);
    if (cut > r.best_sampled.size) r.best_sampled = {x, cut};
  }
  return r;
}

}  // namespace

double QaoaMaxCut::cost(std::span<const double> params, std::span<double> grad,
                        const EvalOptions& o) const {
  return o.precision == Precision::c64
             ? cost_impl<float>(circuit_, measured_cost_, params, grad, o)
             : cost_impl<double>(circuit_, measured_cost_, params, grad, o);
}

QaoaMaxCut::Readout QaoaMaxCut::readout(std::span<const double> params, std::int64_t shots,
                                        std::uint64_t seed, const EvalOptions& o) const {
  return o.precision == Precision::c64
             ? readout_impl<float>(*this, readout_, params, shots, seed, o)
             : readout_impl<double>(*this, readout_, params, shots, seed, o);
}

int QaoaMaxCut::cut_size(index_t x) const {
  int cut = 0;
  for (const auto& [u, v] : graph_.edges) cut += static_cast<int>(((x >> u) ^ (x >> v)) & 1);
  return cut;
}

QaoaMaxCut::Cut QaoaMaxCut::max_cut(int threads) const {
  const index_t count = index_t{1} << (graph_.nodes - 1);
  std::vector<Cut> best(static_cast<std::size_t>(std::max(1, threads)));
#pragma omp parallel num_threads(threads)
  {
    Cut local;
    local.size = -1;
#pragma omp for schedule(static)
    for (index_t x = 0; x < count; ++x) {
      const int c = cut_size(x);
      if (c > local.size) local = {x, c};
    }
    best[static_cast<std::size_t>(omp_get_thread_num())] = local;
  }
  Cut out{0, -1};
  for (const Cut& c : best)
    if (c.size > out.size || (c.size == out.size && c.assignment < out.assignment)) out = c;
  return out;
}

}  // namespace qmlsim::models
