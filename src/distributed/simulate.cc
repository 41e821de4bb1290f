#include "distributed/simulate.h"

#include "circuit/bound.h"
#include "grad/adjoint_parts.h"

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

#define QMLSIM_DIST_SIMULATE(R)                                                                   \
  template SimulateResult simulate<R>(const Circuit&, std::span<const double>,                    \
                                      const SimulateRequest&, const Options&, const comm::Comm&); \
  template AdjointResult adjoint_vjp<R>(const Circuit&, std::span<const double>,                  \
                                        const std::vector<PauliSum>&, const WeightsFn&,           \
                                        const Options&, const comm::Comm&);
QMLSIM_DIST_SIMULATE(float)
QMLSIM_DIST_SIMULATE(double)
#undef QMLSIM_DIST_SIMULATE

}  // namespace qmlsim::distributed
