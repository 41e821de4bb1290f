#include "circuit/bound.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <numeric>
#include <string>

#include "core/error.h"

namespace qmlsim {

Matrix to_canonical(Matrix m, bool diagonal, std::vector<int>& wires) {
  const int k = static_cast<int>(wires.size());
  if (k == 1) return m;       // table and canonical order agree (m moved in by owners)
  std::vector<int> order(k);  // order[j] = index into wires of the j-th smallest wire
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return wires[a] < wires[b]; });
  std::sort(wires.begin(), wires.end());
  const std::size_t dim = std::size_t{1} << k;
  // canonical index bit j <-> wire order[j], which in table order is bit (k-1-order[j]).
  std::vector<std::size_t> to_table(dim);
  for (std::size_t c = 0; c < dim; ++c) {
    std::size_t t = 0;
    for (int j = 0; j < k; ++j)
      if (c >> j & 1) t |= std::size_t{1} << (k - 1 - order[j]);
    to_table[c] = t;
  }
  if (diagonal) {
    Matrix out(dim);
    for (std::size_t r = 0; r < dim; ++r) out[r] = m[to_table[r]];
    return out;
  }
  Matrix out(dim * dim);
  for (std::size_t r = 0; r < dim; ++r)
    for (std::size_t c = 0; c < dim; ++c) out[r * dim + c] = m[to_table[r] * dim + to_table[c]];
  return out;
}

BoundGate adjoint(const BoundGate& g) {
  BoundGate a = g;
  const std::size_t dim = g.dim();
  if (g.diagonal) {
    for (cplx& x : a.matrix) x = std::conj(x);
    return a;
  }
  for (std::size_t r = 0; r < dim; ++r)
    for (std::size_t c = 0; c < dim; ++c) a.matrix[r * dim + c] = std::conj(g.matrix[c * dim + r]);
  return a;
}

Matrix antihermitian_part(const Matrix& m) {
  std::size_t dim = 0;
  while (dim * dim < m.size()) ++dim;
  assert(dim * dim == m.size());
  Matrix p(m.size());
  for (std::size_t r = 0; r < dim; ++r)
    for (std::size_t c = 0; c < dim; ++c)
      p[r * dim + c] = 0.5 * (m[r * dim + c] - std::conj(m[c * dim + r]));
  return p;
}

namespace {
// Mid-circuit measurements, resets and classically controlled operations run
// only in the dynamic-circuit engine, which binds them without their condition.
void refuse_dynamic(const Operation& op) {
  if (op.is_dynamic())
    throw Error(describe(op) +
                ": a mid-circuit measurement, reset or classically controlled operation runs "
                "only in forward simulation (expectation values, probabilities, samples), not "
                "in gradients or on this path");
}
}  // namespace

BoundGate bind_params(const Operation& op, std::span<const double> theta) {
  refuse_dynamic(op);
  if (op.is_channel())
    throw Error(describe(op) +
                ": a noise channel runs only on a density matrix (method density_matrix)");
  const GateInfo& g = gate_info(op.gate);
  BoundGate b;
  std::vector<int> targets(op.wires.begin() + g.num_controls, op.wires.end());
  b.controls.assign(op.wires.begin(), op.wires.begin() + g.num_controls);
  b.controls.insert(b.controls.end(), op.controls.begin(), op.controls.end());
  std::sort(b.controls.begin(), b.controls.end());

  Matrix m;
  b.diagonal = g.diagonal;
  if (op.gate == GateId::QubitUnitary) {
    m = *op.unitary;
  } else {
    std::array<double, kMaxGateParams> p{};
    for (int i = 0; i < g.num_params; ++i) p[i] = op.params[i].value(theta);
    const std::span<const double> values(p.data(), g.num_params);
    const int k = static_cast<int>(targets.size());
    m = b.diagonal ? target_diagonal(op.gate, values, k) : target_matrix(op.gate, values, k);
  }
  b.matrix = to_canonical(std::move(m), b.diagonal, targets);
  b.targets = std::move(targets);
  return b;
}

std::vector<BoundGate> bind_params(const Circuit& c, std::span<const double> theta) {
  assert(static_cast<int>(theta.size()) >= c.num_slots());
  std::vector<BoundGate> out;
  out.reserve(c.ops().size());
  for (const Operation& op : c.ops()) out.push_back(bind_params(op, theta));
  return out;
}

BoundGate column_half(const BoundGate& g, int n) {
  BoundGate c = g;
  for (int& q : c.targets) q += n;
  for (int& q : c.controls) q += n;
  for (cplx& x : c.matrix) x = std::conj(x);
  return c;
}

namespace {

// The operation's parameter values at theta, checked against the channel's ranges.
std::vector<double> channel_params(const Operation& op, std::span<const double> theta) {
  refuse_dynamic(op);
  std::vector<double> params;
  for (const ParamExpr& p : op.params) params.push_back(p.value(theta));
  if (op.channel != ChannelId::kraus)
    check_channel_params(op.channel, params);  // trainable values are checked here
  return params;
}

// A superoperator on the channel's wires (canonical, as `wires` sorts) and wires + n.
BoundGate on_both_halves(Matrix superop, std::vector<int> wires, int n, bool dual) {
  BoundGate b;
  b.targets = std::move(wires);
  for (int q : std::vector<int>(b.targets)) b.targets.push_back(q + n);  // the columns' wires
  b.matrix = std::move(superop);
  if (dual) b = adjoint(b);  // the dual map's superoperator is the conjugate transpose
  return b;
}

}  // namespace

std::vector<BoundGate> bind_kraus(const Operation& op, std::span<const double> theta) {
  const std::vector<double> params = channel_params(op, theta);
  std::vector<Matrix> kraus =
      op.channel == ChannelId::kraus ? *op.kraus : kraus_operators(op.channel, params);
  std::vector<BoundGate> out;
  for (Matrix& k : kraus) {
    BoundGate b;
    b.targets = op.wires;
    b.matrix = to_canonical(std::move(k), false, b.targets);
    out.push_back(std::move(b));
  }
  return out;
}

BoundGate bind_channel(const Operation& op, std::span<const double> theta, int n, bool dual) {
  std::vector<Matrix> kraus;
  std::vector<int> wires;
  for (BoundGate& k : bind_kraus(op, theta)) {
    wires = k.targets;
    kraus.push_back(std::move(k.matrix));
  }
  return on_both_halves(superoperator(kraus), std::move(wires), n, dual);
}

BoundGate bind_channel_derivative(const Operation& op, std::span<const double> theta, int n,
                                  int param) {
  assert(op.channel != ChannelId::kraus && op.channel != ChannelId::none);
  std::vector<KrausTerm> terms = kraus_terms(op.channel, channel_params(op, theta), param);
  std::vector<int> wires;
  for (KrausTerm& t : terms)
    for (Matrix* m : {&t.m, &t.dm}) {
      wires = op.wires;  // to_canonical sorts them
      *m = to_canonical(std::move(*m), false, wires);
    }
  return on_both_halves(superoperator_derivative(terms), std::move(wires), n, false);
}

}  // namespace qmlsim
