#include "grad/kraus_branches.h"

#include <algorithm>
#include <cmath>

#include "circuit/channels.h"

namespace qmlsim {
namespace {

// M^dagger M of a square row-major matrix of dimension d.
Matrix gram(const Matrix& m, std::size_t d) {
  Matrix out(d * d, 0);
  for (std::size_t r = 0; r < d; ++r)
    for (std::size_t c = 0; c < d; ++c)
      for (std::size_t k = 0; k < d; ++k) out[r * d + c] += std::conj(m[k * d + r]) * m[k * d + c];
  return out;
}

// A Hermitian matrix on canonical targets as a Pauli sum: coefficient
// Tr(P M) / d of every Pauli word P on the targets (Y where both masks are set).
PauliSum pauli_sum_of(const Matrix& m, const std::vector<int>& targets) {
  const std::size_t k = targets.size(), d = std::size_t{1} << k;
  PauliSum h;
  for (std::size_t x = 0; x < d; ++x) {
    for (std::size_t z = 0; z < d; ++z) {
      cplx trace = 0;
      for (std::size_t b = 0; b < d; ++b) {  // Tr(P M) = sum_b P[b^x][b] M[b][b^x]
        cplx entry = 1;
        for (std::size_t j = 0; j < k; ++j) {
          const bool xj = x >> j & 1, zj = z >> j & 1, bj = b >> j & 1;
          if (zj && bj) entry = -entry;
          if (xj && zj) entry *= cplx{0, 1};
        }
        trace += entry * m[b * d + (b ^ x)];
      }
      const double coeff = trace.real() / static_cast<double>(d);
      if (std::abs(coeff) < 1e-15) continue;
      index_t xmask = 0, zmask = 0;
      for (std::size_t j = 0; j < k; ++j) {
        if (x >> j & 1) xmask |= index_t{1} << targets[j];
        if (z >> j & 1) zmask |= index_t{1} << targets[j];
      }
      h.add(coeff, xmask, zmask);
    }
  }
  return h;
}

// The least eigenvalue of a Hermitian Gram matrix where it is cheap to know
// (one qubit, or diagonal), else 0: a lower bound either way.
double least_eigenvalue(const Matrix& g, std::size_t d) {
  if (d == 2) {
    const double a = g[0].real(), c = g[3].real();
    return std::max(0.0, (a + c) / 2 - std::hypot((a - c) / 2, std::abs(g[1])));
  }
  double least = g[0].real();
  for (std::size_t r = 0; r < d; ++r)
    for (std::size_t c = 0; c < d; ++c) {
      if (r != c && std::abs(g[r * d + c]) > 1e-14) return 0;
      if (r == c) least = std::min(least, g[r * d + c].real());
    }
  return std::max(0.0, least);
}

}  // namespace

Branches branches_of(const Operation& op, std::span<const double> theta) {
  Branches b;
  if (op.channel == ChannelId::phase_damping) {  // the same map as a Z mixture
    const double gamma = op.params[0].value(theta);
    check_channel_params(op.channel, std::span<const double>(&gamma, 1));
    const double q = (1 - std::sqrt(1 - gamma)) / 2;
    BoundGate keep, flip;
    keep.targets = flip.targets = op.wires;
    keep.matrix = {std::sqrt(1 - q), 0, 0, std::sqrt(1 - q)};
    flip.matrix = {std::sqrt(q), 0, 0, -std::sqrt(q)};
    b.kraus = {keep, flip};
  } else {
    b.kraus = bind_kraus(op, theta);
  }
  for (const BoundGate& k : b.kraus) {
    const std::size_t d = k.dim();
    const Matrix g = gram(k.matrix, d);
    const double scale = g[0].real();
    bool unitary = true;
    for (std::size_t r = 0; r < d; ++r)
      for (std::size_t c = 0; c < d; ++c)
        unitary = unitary && std::abs(g[r * d + c] - (r == c ? scale : 0.0)) < 1e-12;
    BoundGate gate = k;
    bool identity = false;
    if (unitary && scale > 0) {
      for (cplx& a : gate.matrix) a /= std::sqrt(scale);
      identity = true;
      for (std::size_t r = 0; r < d; ++r)
        for (std::size_t c = 0; c < d; ++c)
          identity = identity &&
                     std::abs(gate.matrix[r * d + c] - (r == c ? gate.matrix[0] : cplx{0})) < 1e-12;
    }
    b.lower.push_back(unitary ? scale : least_eigenvalue(g, d));
    b.unitary.push_back(unitary);
    b.identity.push_back(identity);
    b.gate.push_back(std::move(gate));
    b.weight.push_back(pauli_sum_of(g, k.targets));
  }
  return b;
}

}  // namespace qmlsim
