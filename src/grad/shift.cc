#include "grad/shift.h"

#include <cmath>
#include <numbers>

#include "backends/cpu/statevector.h"

namespace qmlsim {

bool needs_four_term_rule(const Operation& op) {
  return !op.controls.empty() || gate_info(op.gate).shift_terms == 4;
}

template <class R>
double shifted_expval(const Circuit& c, std::span<const double> theta, const PauliSum& h, int op,
                      int p, double delta, int threads) {
  std::vector<BoundGate> gates;
  gates.reserve(c.ops().size());
  for (int i = 0; i < static_cast<int>(c.ops().size()); ++i) {
    if (i != op) {
      gates.push_back(bind_params(c.ops()[i], theta));
      continue;
    }
    Operation moved = c.ops()[i];
    moved.params[p].shift += delta;
    gates.push_back(bind_params(moved, theta));
  }
  cpu::StateVector<R> sv(c.num_qubits(), threads);
  sv.apply(gates);
  return sv.expval(h);
}

template <class R>
std::vector<double> parameter_shift_gradient(const Circuit& c, std::span<const double> theta,
                                             const PauliSum& h, int threads) {
  using std::numbers::pi;
  const double c1 = (std::numbers::sqrt2 + 1) / (4 * std::numbers::sqrt2);
  const double c2 = (std::numbers::sqrt2 - 1) / (4 * std::numbers::sqrt2);
  std::vector<double> grad(theta.size(), 0.0);
  for (int i = 0; i < static_cast<int>(c.ops().size()); ++i) {
    const Operation& op = c.ops()[i];
    for (int p = 0; p < static_cast<int>(op.params.size()); ++p) {
      const ParamExpr& e = op.params[p];
      if (e.slot < 0) continue;
      auto f = [&](double d) { return shifted_expval<R>(c, theta, h, i, p, d, threads); };
      const double near = f(pi / 2) - f(-pi / 2);
      const double d =
          needs_four_term_rule(op) ? c1 * near - c2 * (f(3 * pi / 2) - f(-3 * pi / 2)) : near / 2;
      grad[static_cast<std::size_t>(e.slot)] += e.scale * d;
    }
  }
  return grad;
}

template <class R>
std::vector<double> finite_difference_gradient(const Circuit& c, std::span<const double> theta,
                                               const PauliSum& h, double step, int threads) {
  std::vector<double> grad(theta.size(), 0.0), t(theta.begin(), theta.end());
  for (std::size_t s = 0; s < theta.size(); ++s) {
    t[s] = theta[s] + step;
    const double hi = shifted_expval<R>(c, t, h, -1, 0, 0, threads);
    t[s] = theta[s] - step;
    const double lo = shifted_expval<R>(c, t, h, -1, 0, 0, threads);
    t[s] = theta[s];
    grad[s] = (hi - lo) / (2 * step);
  }
  return grad;
}

#define QMLSIM_INSTANTIATE(R)                                                                      \
  template double shifted_expval<R>(const Circuit&, std::span<const double>, const PauliSum&, int, \
                                    int, double, int);                                             \
  template std::vector<double> parameter_shift_gradient<R>(                                        \
      const Circuit&, std::span<const double>, const PauliSum&, int);                              \
  template std::vector<double> finite_difference_gradient<R>(                                      \
      const Circuit&, std::span<const double>, const PauliSum&, double, int);
QMLSIM_INSTANTIATE(float)
QMLSIM_INSTANTIATE(double)
#undef QMLSIM_INSTANTIATE

}  // namespace qmlsim
