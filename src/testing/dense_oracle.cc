#include "testing/dense_oracle.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <memory>
#include <numbers>

namespace qmlsim::testing {

Matrix full_operator(const Operation& op, int n, std::span<const double> theta) {
  // Wires, most significant first: extra controls, then the gate's own wires.
  std::vector<int> wires = op.controls;
  wires.insert(wires.end(), op.wires.begin(), op.wires.end());
  const int k = static_cast<int>(wires.size());
  const int nc = static_cast<int>(op.controls.size());
  Matrix gate;
  if (op.gate == GateId::QubitUnitary) {
    gate = *op.unitary;
  } else {
    std::vector<double> p;
    for (const ParamExpr& e : op.params) p.push_back(e.value(theta));
    gate = full_matrix(op.gate, p, static_cast<int>(op.wires.size()));
  }
  const std::size_t gdim = std::size_t{1} << (k - nc), kdim = std::size_t{1} << k;
  // Local matrix with the extra controls: identity unless all of them are 1.
  Matrix local(kdim * kdim, 0.0);
  for (std::size_t i = 0; i < kdim - gdim; ++i) local[i * kdim + i] = 1.0;
  for (std::size_t r = 0; r < gdim; ++r)
    for (std::size_t c = 0; c < gdim; ++c)
      local[(kdim - gdim + r) * kdim + kdim - gdim + c] = gate[r * gdim + c];
  const std::size_t dim = std::size_t{1} << n;
  Matrix full(dim * dim, 0.0);
  for (std::size_t col = 0; col < dim; ++col) {
    std::size_t c = 0;
    for (int j = 0; j < k; ++j) c |= ((col >> wires[j]) & 1) << (k - 1 - j);
    for (std::size_t r = 0; r < kdim; ++r) {
      std::size_t row = col;
      for (int j = 0; j < k; ++j) {
        const std::size_t b = (r >> (k - 1 - j)) & 1;
        row = (row & ~(std::size_t{1} << wires[j])) | (b << wires[j]);
      }
      full[row * dim + col] = local[r * kdim + c];
    }
  }
  return full;
}

State apply_dense(const Matrix& m, const State& psi) {
  const std::size_t dim = psi.size();
  State out(dim, 0.0);
  for (std::size_t r = 0; r < dim; ++r) {
    cplx acc = 0;
    for (std::size_t c = 0; c < dim; ++c) acc += m[r * dim + c] * psi[c];
    out[r] = acc;
  }
  return out;
}

State run_dense(const Circuit& c, std::span<const double> theta, State psi) {
  for (const Operation& op : c.ops())
    psi = apply_dense(full_operator(op, c.num_qubits(), theta), psi);
  return psi;
}

Matrix pauli_matrix(const PauliSum& h, int n) {
  const std::size_t dim = std::size_t{1} << n;
  Matrix total(dim * dim, 0.0);
  const cplx I{0, 1};
  for (const PauliTerm& t : h.terms) {
    // Kronecker product, qubit n-1 most significant.
    Matrix m{1.0};
    std::size_t d = 1;
    for (int q = n - 1; q >= 0; --q) {
      const bool x = t.xmask >> q & 1, z = t.zmask >> q & 1;
      const cplx p[4] = {x ? 0.0 : 1.0, x ? (z ? -I : cplx{1}) : 0.0, x ? (z ? I : cplx{1}) : 0.0,
                         x ? 0.0 : (z ? -1.0 : 1.0)};
      Matrix next(4 * d * d, 0.0);
      for (std::size_t a = 0; a < d; ++a)
        for (std::size_t b = 0; b < d; ++b)
          for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j)
              next[(a * 2 + i) * 2 * d + b * 2 + j] = m[a * d + b] * p[i * 2 + j];
      m = std::move(next);
      d *= 2;
    }
    for (std::size_t i = 0; i < dim * dim; ++i) total[i] += t.coeff * m[i];
  }
  return total;
}

double expval_dense(const PauliSum& h, const State& psi) {
  const int n = static_cast<int>(std::log2(psi.size()));
  const State hpsi = apply_dense(pauli_matrix(h, n), psi);
  cplx acc = 0;
  for (std::size_t i = 0; i < psi.size(); ++i) acc += std::conj(psi[i]) * hpsi[i];
  return acc.real();
}

State random_state(int n, std::mt19937_64& rng) {
  std::normal_distribution<double> g;
  State s(std::size_t{1} << n);
  double norm = 0;
  for (cplx& a : s) {
    a = {g(rng), g(rng)};
    norm += std::norm(a);
  }
  for (cplx& a : s) a /= std::sqrt(norm);
  return s;
}

Matrix random_unitary(int k, std::mt19937_64& rng) {
  const std::size_t dim = std::size_t{1} << k;
  std::normal_distribution<double> g;
  std::vector<State> cols(dim, State(dim));
  for (std::size_t c = 0; c < dim; ++c) {
    for (cplx& a : cols[c]) a = {g(rng), g(rng)};
    for (std::size_t p = 0; p < c; ++p) {
      cplx dot = 0;
      for (std::size_t i = 0; i < dim; ++i) dot += std::conj(cols[p][i]) * cols[c][i];
      for (std::size_t i = 0; i < dim; ++i) cols[c][i] -= dot * cols[p][i];
    }
    double nrm = 0;
    for (cplx a : cols[c]) nrm += std::norm(a);
    for (cplx& a : cols[c]) a /= std::sqrt(nrm);
  }
  Matrix m(dim * dim);
  for (std::size_t r = 0; r < dim; ++r)
    for (std::size_t c = 0; c < dim; ++c) m[r * dim + c] = cols[c][r];
  return m;
}

double max_abs_diff(const State& a, const State& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

Matrix cross_matrix_sum(const BoundGate& g, const State& bra, const State& ket) {
  const std::size_t dim = g.dim();
  Matrix m(dim * dim, 0.0);
  for (index_t base = 0; base < ket.size(); ++base) {
    bool group = true;  // target bits 0, control bits 1
    for (int t : g.targets) group = group && !(base >> t & 1);
    for (int c : g.controls) group = group && (base >> c & 1);
    if (!group) continue;
    for (std::size_t a = 0; a < dim; ++a)
      for (std::size_t b = 0; b < dim; ++b) {
        index_t ia = base, ib = base;
        for (int j = 0; j < g.num_targets(); ++j) {
          if (a >> j & 1) ia |= index_t{1} << g.targets[j];
          if (b >> j & 1) ib |= index_t{1} << g.targets[j];
        }
        m[a * dim + b] += std::conj(bra[ia]) * ket[ib];
      }
  }
  return m;
}

Circuit random_circuit(int n, int num_gates, std::mt19937_64& rng, bool with_extra_controls) {
  Circuit c(n);
  std::uniform_real_distribution<double> angle(-std::numbers::pi, std::numbers::pi);
  std::vector<int> qubits(n);
  for (int i = 0; i < n; ++i) qubits[i] = i;
  while (static_cast<int>(c.ops().size()) < num_gates) {
    const auto id = static_cast<GateId>(rng() % static_cast<int>(GateId::kCount));
    const GateInfo& g = gate_info(id);
    int wires = g.num_wires;
    if (wires < 0) wires = 1 + static_cast<int>(rng() % std::min(n, 3));
    const int extra = with_extra_controls && rng() % 4 == 0 ? 1 : 0;
    if (wires + extra > n) continue;
    std::shuffle(qubits.begin(), qubits.end(), rng);
    Operation op;
    op.gate = id;
    op.controls.assign(qubits.begin(), qubits.begin() + extra);
    op.wires.assign(qubits.begin() + extra, qubits.begin() + extra + wires);
    for (int p = 0; p < g.num_params; ++p) op.params.push_back(ParamExpr::literal(angle(rng)));
    if (id == GateId::QubitUnitary) {
      op.unitary = std::make_shared<Matrix>(random_unitary(wires, rng));
    }
    c.add(std::move(op));
  }
  return c;
}

Matrix dense_sums(const Matrix& m, std::size_t dim) {
  if (m.size() != dim || dim * dim == dim) return m;
  Matrix out(dim * dim, cplx{0});
  for (std::size_t a = 0; a < dim; ++a) out[a * dim + a] = m[a];
  return out;
}

namespace {

Matrix multiply(const Matrix& a, const Matrix& b, std::size_t d) {
  Matrix out(d * d, 0.0);
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t k = 0; k < d; ++k)
      for (std::size_t j = 0; j < d; ++j) out[i * d + j] += a[i * d + k] * b[k * d + j];
  return out;
}

Matrix dagger(const Matrix& a, std::size_t d) {
  Matrix out(d * d);
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = 0; j < d; ++j) out[i * d + j] = std::conj(a[j * d + i]);
  return out;
}

}  // namespace

Matrix run_dense_density(const Circuit& c, std::span<const double> theta, Matrix rho) {
  const int n = c.num_qubits();
  const std::size_t d = std::size_t{1} << n;
  if (rho.empty()) {
    rho.assign(d * d, 0.0);
    rho[0] = 1;
  }
  for (const Operation& op : c.ops()) {
    std::vector<Matrix> ks;
    if (!op.is_channel()) {
      ks.push_back(full_operator(op, n, theta));
    } else {
      std::vector<double> p;
      for (const ParamExpr& e : op.params) p.push_back(e.value(theta));
      const std::vector<Matrix> local =
          op.channel == ChannelId::kraus ? *op.kraus : kraus_operators(op.channel, p);
      for (const Matrix& k : local) {
        Operation as_matrix;  // the Kraus operator on the channel's wires
        as_matrix.gate = GateId::QubitUnitary;
        as_matrix.wires = op.wires;
        as_matrix.unitary = std::make_shared<const Matrix>(k);
        ks.push_back(full_operator(as_matrix, n, theta));
      }
    }
    Matrix next(d * d, 0.0);
    for (const Matrix& k : ks) {
      const Matrix term = multiply(multiply(k, rho, d), dagger(k, d), d);
      for (std::size_t i = 0; i < d * d; ++i) next[i] += term[i];
    }
    rho = std::move(next);
  }
  return rho;
}

double expval_dense_density(const PauliSum& h, const Matrix& rho, int n) {
  const std::size_t d = std::size_t{1} << n;
  const Matrix hm = pauli_matrix(h, n);
  cplx tr = 0;
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t k = 0; k < d; ++k) tr += hm[i * d + k] * rho[k * d + i];
  return tr.real();
}

namespace {

const GateId kParametric[] = {GateId::RX,
                              GateId::RY,
                              GateId::RZ,
                              GateId::PhaseShift,
                              GateId::Rot,
                              GateId::U1,
                              GateId::U2,
                              GateId::U3,
                              GateId::CRX,
                              GateId::CRY,
                              GateId::CRZ,
                              GateId::CRot,
                              GateId::ControlledPhaseShift,
                              GateId::IsingXX,
                              GateId::IsingYY,
                              GateId::IsingZZ,
                              GateId::IsingXY,
                              GateId::MultiRZ};
const GateId kFixed[] = {GateId::H,       GateId::CNOT, GateId::SX, GateId::ISWAP,
                         GateId::Toffoli, GateId::CY,   GateId::T};

}  // namespace

Circuit random_parametric_circuit(int n, int gates, int slots, std::mt19937_64& rng) {
  Circuit c(n);
  std::uniform_real_distribution<double> u(-2, 2);
  const double scales[] = {1.0, 2.0, -0.5, std::numbers::pi};
  std::vector<int> q(n);
  for (int i = 0; i < n; ++i) q[i] = i;
  while (static_cast<int>(c.ops().size()) < gates) {
    const bool fixed = rng() % 4 == 0;
    const GateId id = fixed ? kFixed[rng() % 7] : kParametric[rng() % 18];
    const GateInfo& g = gate_info(id);
    const int wires = g.num_wires > 0 ? g.num_wires : 1 + static_cast<int>(rng() % 3);
    const int extra = rng() % 6 == 0 ? 1 : 0;
    if (wires + extra > n) continue;
    std::shuffle(q.begin(), q.end(), rng);
    Operation op;
    op.gate = id;
    op.controls.assign(q.begin(), q.begin() + extra);
    op.wires.assign(q.begin() + extra, q.begin() + extra + wires);
    for (int p = 0; p < g.num_params; ++p) {
      if (rng() % 8 == 0) {
        op.params.push_back(ParamExpr::literal(u(rng)));
      } else {
        op.params.push_back(
            ParamExpr::ref(static_cast<int>(rng() % slots), scales[rng() % 4], u(rng)));
      }
    }
    c.add(std::move(op));
  }
  return c;
}

PauliSum random_observable(int n, std::mt19937_64& rng) {
  PauliSum h;
  std::uniform_real_distribution<double> u(-1, 1);
  for (int t = 0; t < 3; ++t) {
    index_t x = 0, z = 0;
    for (int k = 0; k < 2; ++k) {
      const int qb = static_cast<int>(rng() % n);
      if (rng() % 2) x |= index_t{1} << qb;
      if (rng() % 2 || !(x >> qb & 1)) z |= index_t{1} << qb;
    }
    h.add(u(rng), x, z);
  }
  return h;
}

// A random channel of the table (or a Kraus set) on random wires of n.
Operation random_channel(int n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  const ChannelId ids[] = {ChannelId::depolarizing,
                           ChannelId::two_qubit_depolarizing,
                           ChannelId::bit_flip,
                           ChannelId::phase_flip,
                           ChannelId::pauli_channel,
                           ChannelId::two_qubit_dephasing,
                           ChannelId::amplitude_damping,
                           ChannelId::generalized_amplitude_damping,
                           ChannelId::phase_damping,
                           ChannelId::thermal_relaxation,
                           ChannelId::kraus};
  Operation op;
  op.channel = ids[rng() % std::size(ids)];
  const ChannelInfo& info = channel_info(op.channel);
  int wires = info.num_wires;
  if (op.channel == ChannelId::kraus) {  // a reset towards |1> mixed with the identity
    const double q = u(rng);
    op.kraus = std::make_shared<const std::vector<Matrix>>(
        std::vector<Matrix>{Matrix{std::sqrt(1 - q), 0, 0, std::sqrt(1 - q)},
                            Matrix{0, 0, std::sqrt(q), 0}, Matrix{0, 0, 0, std::sqrt(q)}});
    wires = 1;
  } else if (op.channel == ChannelId::thermal_relaxation) {
    op.params = {ParamExpr::literal(2.0), ParamExpr::literal(3.0), ParamExpr::literal(u(rng)),
                 ParamExpr::literal(0.1)};
  } else {
    for (int p = 0; p < info.num_params; ++p)
      op.params.push_back(ParamExpr::literal(u(rng) / info.num_params));
  }
  if (wires > n) return random_channel(n, rng);
  op.wires.push_back(static_cast<int>(rng() % n));
  while (static_cast<int>(op.wires.size()) < wires) {
    const int w = static_cast<int>(rng() % n);
    if (w != op.wires[0]) op.wires.push_back(w);
  }
  return op;
}

// A random parametric circuit with a random channel after about every third gate.
Circuit noisy_circuit(int n, int gates, int slots, std::mt19937_64& rng) {
  const Circuit clean = random_parametric_circuit(n, gates, slots, rng);
  Circuit c(n);
  for (const Operation& op : clean.ops()) {
    c.add(op);
    if (rng() % 3 == 0) c.add(random_channel(n, rng));
  }
  c.add(random_channel(n, rng));
  return c;
}

}  // namespace qmlsim::testing
