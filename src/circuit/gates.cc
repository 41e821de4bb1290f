#include "circuit/gates.h"

#include <array>
#include <cassert>
#include <cmath>
#include <numbers>

#include "core/bits.h"
#include "core/error.h"

namespace qmlsim {
namespace {

using G = GateId;
constexpr double kHalf = 0.5;
constexpr double kPi = std::numbers::pi;

// Inverse rules (InverseRule): a gate without parameters (itself or another),
// or the same gate at negated parameters.
constexpr InverseRule fixed(G g) { return {g, {-1, -1, -1}, {}, 0}; }
constexpr InverseRule negated(G g) { return {g, {0, 1, 2}, {}, 0}; }

// id, name, wires, params, controls, base, diagonal, frequencies, inverse, shift terms
constexpr std::array<GateInfo, static_cast<int>(G::kCount)> kTable = {{
    {G::I, "I", 1, 0, 0, G::I, true, {}, fixed(G::I), 0},
    {G::X, "X", 1, 0, 0, G::X, false, {}, fixed(G::X), 0},
    {G::Y, "Y", 1, 0, 0, G::Y, false, {}, fixed(G::Y), 0},
    {G::Z, "Z", 1, 0, 0, G::Z, true, {}, fixed(G::Z), 0},
    {G::H, "H", 1, 0, 0, G::H, false, {}, fixed(G::H), 0},
    {G::S, "S", 1, 0, 0, G::S, true, {}, fixed(G::Sdg), 0},
    {G::Sdg, "Sdg", 1, 0, 0, G::Sdg, true, {}, fixed(G::S), 0},
    {G::T, "T", 1, 0, 0, G::T, true, {}, fixed(G::Tdg), 0},
    {G::Tdg, "Tdg", 1, 0, 0, G::Tdg, true, {}, fixed(G::T), 0},
    {G::SX, "SX", 1, 0, 0, G::SX, false, {}, {G::RX, {-1}, {-kPi / 2}, -kPi / 4}, 0},
    {G::RX, "RX", 1, 1, 0, G::RX, false, {kHalf}, negated(G::RX), 2},
    {G::RY, "RY", 1, 1, 0, G::RY, false, {kHalf}, negated(G::RY), 2},
    {G::RZ, "RZ", 1, 1, 0, G::RZ, true, {kHalf}, negated(G::RZ), 2},
    {G::PhaseShift, "PhaseShift", 1, 1, 0, G::PhaseShift, true, {1}, negated(G::PhaseShift), 2},
    {G::Rot, "Rot", 1, 3, 0, G::Rot, false, {kHalf, kHalf, kHalf}, {G::Rot, {2, 1, 0}, {}, 0}, 2},
    {G::U1, "U1", 1, 1, 0, G::U1, true, {1}, negated(G::U1), 2},
    {G::U2, "U2", 1, 2, 0, G::U2, false, {1, 1}, {G::U3, {-1, 1, 0}, {-kPi / 2}, 0}, 2},
    {G::U3, "U3", 1, 3, 0, G::U3, false, {kHalf, 1, 1}, {G::U3, {0, 2, 1}, {}, 0}, 2},
    {G::CNOT, "CNOT", 2, 0, 1, G::X, false, {}, fixed(G::CNOT), 0},
    {G::CY, "CY", 2, 0, 1, G::Y, false, {}, fixed(G::CY), 0},
    {G::CZ, "CZ", 2, 0, 1, G::Z, true, {}, fixed(G::CZ), 0},
    {G::CH, "CH", 2, 0, 1, G::H, false, {}, fixed(G::CH), 0},
    {G::SWAP, "SWAP", 2, 0, 0, G::SWAP, false, {}, fixed(G::SWAP), 0},
    {G::ISWAP, "ISWAP", 2, 0, 0, G::ISWAP, false, {}, {G::PSWAP, {-1}, {-kPi / 2}, 0}, 0},
    {G::CRX, "CRX", 2, 1, 1, G::RX, false, {kHalf}, negated(G::CRX), 4},
    {G::CRY, "CRY", 2, 1, 1, G::RY, false, {kHalf}, negated(G::CRY), 4},
    {G::CRZ, "CRZ", 2, 1, 1, G::RZ, true, {kHalf}, negated(G::CRZ), 4},
    {G::CRot,
     "CRot",
     2,
     3,
     1,
     G::Rot,
     false,
     {kHalf, kHalf, kHalf},
     {G::CRot, {2, 1, 0}, {}, 0},
     4},
    {G::ControlledPhaseShift,
     "ControlledPhaseShift",
     2,
     1,
     1,
     G::PhaseShift,
     true,
     {1},
     negated(G::ControlledPhaseShift),
     4},
    {G::IsingXX, "IsingXX", 2, 1, 0, G::IsingXX, false, {kHalf}, negated(G::IsingXX), 2},
    {G::IsingYY, "IsingYY", 2, 1, 0, G::IsingYY, false, {kHalf}, negated(G::IsingYY), 2},
    {G::IsingZZ, "IsingZZ", 2, 1, 0, G::IsingZZ, true, {kHalf}, negated(G::IsingZZ), 2},
    {G::IsingXY, "IsingXY", 2, 1, 0, G::IsingXY, false, {kHalf}, negated(G::IsingXY), 4},
    {G::MultiRZ, "MultiRZ", -1, 1, 0, G::MultiRZ, true, {kHalf}, negated(G::MultiRZ), 2},
    {G::Toffoli, "Toffoli", 3, 0, 2, G::X, false, {}, fixed(G::Toffoli), 0},
    {G::CSWAP, "CSWAP", 3, 0, 1, G::SWAP, false, {}, fixed(G::CSWAP), 0},
    {G::SingleExcitation,
     "SingleExcitation",
     2,
     1,
     0,
     G::SingleExcitation,
     false,
     {kHalf},
     negated(G::SingleExcitation),
     2},
    {G::SingleExcitationPlus,
     "SingleExcitationPlus",
     2,
     1,
     0,
     G::SingleExcitationPlus,
     false,
     {kHalf},
     negated(G::SingleExcitationPlus),
     2},
    {G::SingleExcitationMinus,
     "SingleExcitationMinus",
     2,
     1,
     0,
     G::SingleExcitationMinus,
     false,
     {kHalf},
     negated(G::SingleExcitationMinus),
     2},
    {G::DoubleExcitation,
     "DoubleExcitation",
     4,
     1,
     0,
     G::DoubleExcitation,
     false,
     {kHalf},
     negated(G::DoubleExcitation),
     2},
    {G::DoubleExcitationPlus,
     "DoubleExcitationPlus",
     4,
     1,
     0,
     G::DoubleExcitationPlus,
     false,
     {kHalf},
     negated(G::DoubleExcitationPlus),
     2},
    {G::DoubleExcitationMinus,
     "DoubleExcitationMinus",
     4,
     1,
     0,
     G::DoubleExcitationMinus,
     false,
     {kHalf},
     negated(G::DoubleExcitationMinus),
     2},
    {G::PSWAP, "PSWAP", 2, 1, 0, G::PSWAP, false, {1}, negated(G::PSWAP), 2},
    {G::ECR, "ECR", 2, 0, 0, G::ECR, false, {}, fixed(G::ECR), 0},
    {G::SISWAP, "SISWAP", 2, 0, 0, G::SISWAP, false, {}, {G::IsingXY, {-1}, {-kPi / 2}, 0}, 0},
    {G::QubitUnitary,
     "QubitUnitary",
     -1,
     0,
     0,
     G::QubitUnitary,
     false,
     {},
     fixed(G::QubitUnitary),
     0},
}};

constexpr bool table_in_enum_order() {
  for (int i = 0; i < static_cast<int>(G::kCount); ++i)
    if (static_cast<int>(kTable[i].id) != i) return false;
  return true;
}
static_assert(table_in_enum_order(), "kTable rows must follow GateId order");

// Every inverse rule reads only its gate's parameters and fills every
// parameter of the inverse gate.
constexpr bool inverse_rules_in_range() {
  for (const GateInfo& g : kTable) {
    const GateInfo& inv = kTable[static_cast<int>(g.inverse.gate)];
    for (int j = 0; j < inv.num_params; ++j)
      if (g.inverse.negate_from[j] >= g.num_params) return false;
    if (g.num_params > 0 && g.shift_terms != 2 && g.shift_terms != 4) return false;
  }
  return true;
}
static_assert(inverse_rules_in_range(), "an inverse rule reads a parameter its gate lacks");

const cplx kI{0, 1};

Matrix m2(cplx a, cplx b, cplx c, cplx d) { return {a, b, c, d}; }

Matrix diag(std::initializer_list<cplx> d) {
  const int n = static_cast<int>(d.size());
  Matrix m(n * n, 0.0);
  int i = 0;
  for (cplx v : d) {
    m[i * n + i] = v;
    ++i;
  }
  return m;
}

Matrix two_qubit(std::initializer_list<cplx> rows) { return Matrix(rows); }

// Matrix of a gate with no intrinsic controls.
Matrix base_matrix(G id, std::span<const double> p, int k) {
  using std::cos, std::exp, std::sin;
  const double r2 = std::numbers::sqrt2 / 2;
  switch (id) {
    case G::I:
      return diag({1, 1});
    case G::X:
      return m2(0, 1, 1, 0);
    case G::Y:
      return m2(0, -kI, kI, 0);
    case G::Z:
      return diag({1, -1});
    case G::H:
      return m2(r2, r2, r2, -r2);
    case G::S:
      return diag({1, kI});
    case G::Sdg:
      return diag({1, -kI});
    case G::T:
      return diag({1, exp(kI * (std::numbers::pi / 4))});
    case G::Tdg:
      return diag({1, exp(-kI * (std::numbers::pi / 4))});
    case G::SX:
      return m2({0.5, 0.5}, {0.5, -0.5}, {0.5, -0.5}, {0.5, 0.5});
    case G::RX: {
      const double c = cos(p[0] / 2), s = sin(p[0] / 2);
      return m2(c, -kI * s, -kI * s, c);
    }
    case G::RY: {
      const double c = cos(p[0] / 2), s = sin(p[0] / 2);
      return m2(c, -s, s, c);
    }
    case G::RZ:
      return diag({exp(-kI * (p[0] / 2)), exp(kI * (p[0] / 2))});
    case G::PhaseShift:
    case G::U1:
      return diag({1, exp(kI * p[0])});
    // Phases of angle sums are products of each angle's phase: the matrix stays
    // unitary to rounding even where a + c would round away c (huge angles).
    case G::Rot: {
      const double cb = cos(p[1] / 2), sb = sin(p[1] / 2);
      const cplx ea = exp(kI * (p[0] / 2)), ec = exp(kI * (p[2] / 2));
      return m2(std::conj(ea * ec) * cb, -ea * std::conj(ec) * sb, std::conj(ea) * ec * sb,
                ea * ec * cb);
    }
    case G::U2: {
      const cplx ephi = exp(kI * p[0]), elam = exp(kI * p[1]);
      return m2(r2, -r2 * elam, r2 * ephi, r2 * (ephi * elam));
    }
    case G::U3: {
      const double c = cos(p[0] / 2), s = sin(p[0] / 2);
      const cplx ephi = exp(kI * p[1]), elam = exp(kI * p[2]);
      return m2(c, -elam * s, ephi * s, (ephi * elam) * c);
    }
    case G::SWAP:
      return two_qubit({1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1});
    case G::ISWAP:
      return two_qubit({1, 0, 0, 0, 0, 0, kI, 0, 0, kI, 0, 0, 0, 0, 0, 1});
    case G::IsingXX: {
      const cplx c = cos(p[0] / 2), s = -kI * sin(p[0] / 2);
      return two_qubit({c, 0, 0, s, 0, c, s, 0, 0, s, c, 0, s, 0, 0, c});
    }
    case G::IsingYY: {
      const cplx c = cos(p[0] / 2), s = kI * sin(p[0] / 2);
      return two_qubit({c, 0, 0, s, 0, c, -s, 0, 0, -s, c, 0, s, 0, 0, c});
    }
    case G::IsingZZ: {
      const cplx a = exp(-kI * (p[0] / 2)), b = exp(kI * (p[0] / 2));
      return diag({a, b, b, a});
    }
    case G::IsingXY: {
      const cplx c = cos(p[0] / 2), s = kI * sin(p[0] / 2);
      return two_qubit({1, 0, 0, 0, 0, c, s, 0, 0, s, c, 0, 0, 0, 0, 1});
    }
    // Givens rotations of the excitation gates: RY(t) on |01>, |10> (single) or
    // on |0011>, |1100> (double); the other basis states keep 1 or take the
    // phase e^{-+i t/2} (Minus, Plus).
    case G::SingleExcitation:
    case G::SingleExcitationPlus:
    case G::SingleExcitationMinus:
    case G::DoubleExcitation:
    case G::DoubleExcitationPlus:
    case G::DoubleExcitationMinus: {
      const bool single = id == G::SingleExcitation || id == G::SingleExcitationPlus ||
                          id == G::SingleExcitationMinus;
      const std::size_t dim = single ? 4 : 16, a = single ? 1 : 3, b = single ? 2 : 12;
      cplx phase = 1;
      if (id == G::SingleExcitationPlus || id == G::DoubleExcitationPlus)
        phase = exp(kI * (p[0] / 2));
      if (id == G::SingleExcitationMinus || id == G::DoubleExcitationMinus)
        phase = exp(-kI * (p[0] / 2));
      Matrix m(dim * dim, 0.0);
      for (std::size_t j = 0; j < dim; ++j) m[j * dim + j] = phase;
      const double c = cos(p[0] / 2), s = sin(p[0] / 2);
      m[a * dim + a] = c;
      m[a * dim + b] = -s;
      m[b * dim + a] = s;
      m[b * dim + b] = c;
      return m;
    }
    case G::PSWAP: {
      const cplx e = exp(kI * p[0]);
      return two_qubit({1, 0, 0, 0, 0, 0, e, 0, 0, e, 0, 0, 0, 0, 0, 1});
    }
    case G::ECR:
      return two_qubit(
          {0, 0, r2, kI * r2, 0, 0, kI * r2, r2, r2, -kI * r2, 0, 0, -kI * r2, r2, 0, 0});
    case G::SISWAP:
      return two_qubit({1, 0, 0, 0, 0, r2, kI * r2, 0, 0, kI * r2, r2, 0, 0, 0, 0, 1});
    case G::MultiRZ: {
      const index_t dim = index_t{1} << k;
      Matrix m(dim * dim, 0.0);
      const cplx a = exp(-kI * (p[0] / 2)), b = exp(kI * (p[0] / 2));
      for (index_t j = 0; j < dim; ++j) m[j * dim + j] = parity(j) ? b : a;
      return m;
    }
    default:
      break;
  }
  assert(false && "base_matrix: gate has controls or no closed form");
  return {};
}

}  // namespace

const GateInfo& gate_info(GateId id) { return kTable[static_cast<int>(id)]; }

std::optional<GateId> gate_by_name(std::string_view name) {
  for (const GateInfo& g : kTable)
    if (g.name == name) return g.id;
  return std::nullopt;
}

std::vector<double> inverse_params(GateId id, std::span<const double> params) {
  const InverseRule& r = gate_info(id).inverse;
  std::vector<double> q(static_cast<std::size_t>(gate_info(r.gate).num_params));
  for (std::size_t j = 0; j < q.size(); ++j)
    q[j] =
        r.negate_from[j] < 0 ? r.constant[j] : -params[static_cast<std::size_t>(r.negate_from[j])];
  return q;
}

Matrix target_matrix(GateId id, std::span<const double> params, int num_targets) {
  const GateInfo& g = gate_info(id);
  assert(id != GateId::QubitUnitary);
  assert(static_cast<int>(params.size()) == g.num_params);
  return base_matrix(g.base, params, num_targets);
}

namespace {

// dM/dtheta_p of `form` (the dense target matrix or its diagonal), exactly:
// w (M(theta + s) - M(theta - s)) / 2 with s = pi / (2w) (GateInfo::frequency).
Matrix shift_rule(GateId id, std::span<const double> params, int num_targets, int p,
                  Matrix (*form)(GateId, std::span<const double>, int)) {
  const GateInfo& g = gate_info(id);
  assert(p >= 0 && p < g.num_params);
  const double w = g.frequency[p];
  const double s = std::numbers::pi / (2 * w);
  std::array<double, kMaxGateParams> plus{}, minus{};
  for (int i = 0; i < g.num_params; ++i) plus[i] = minus[i] = params[i];
  plus[p] += s;
  minus[p] -= s;
  Matrix a = form(id, std::span(plus.data(), g.num_params), num_targets);
  const Matrix b = form(id, std::span(minus.data(), g.num_params), num_targets);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = w * (a[i] - b[i]) / 2.0;
  return a;
}

}  // namespace

Matrix target_diagonal(GateId id, std::span<const double> params, int num_targets) {
  const GateInfo& g = gate_info(id);
  assert(g.diagonal && static_cast<int>(params.size()) == g.num_params);
  const index_t dim = index_t{1} << num_targets;
  Matrix d(dim);
  if (g.base == GateId::MultiRZ) {  // variable width: never dense
    const cplx a = exp(-kI * (params[0] / 2)), b = exp(kI * (params[0] / 2));
    for (index_t j = 0; j < dim; ++j) d[j] = parity(j) ? b : a;
    return d;
  }
  const Matrix m = base_matrix(g.base, params, num_targets);  // fixed width: small
  for (index_t j = 0; j < dim; ++j) d[j] = m[j * dim + j];
  return d;
}

Matrix target_diagonal_derivative(GateId id, std::span<const double> params, int num_targets,
                                  int p) {
  return shift_rule(id, params, num_targets, p, target_diagonal);
}

Matrix full_matrix(GateId id, std::span<const double> params, int num_wires) {
  const GateInfo& g = gate_info(id);
  const int nt = num_wires - g.num_controls;
  const Matrix t = target_matrix(id, params, nt);
  const index_t dim = index_t{1} << num_wires, tdim = index_t{1} << nt;
  // Controls are the most significant bits: identity except the all-ones control block.
  Matrix m(dim * dim, 0.0);
  const index_t block = dim - tdim;
  for (index_t i = 0; i < block; ++i) m[i * dim + i] = 1.0;
  for (index_t r = 0; r < tdim; ++r)
    for (index_t c = 0; c < tdim; ++c) m[(block + r) * dim + block + c] = t[r * tdim + c];
  return m;
}

Matrix target_matrix_derivative(GateId id, std::span<const double> params, int num_targets, int p) {
  return shift_rule(id, params, num_targets, p, target_matrix);
}

bool is_unitary(const Matrix& m, double tol) {
  const std::size_t dim = static_cast<std::size_t>(std::llround(std::sqrt(m.size())));
  if (dim * dim != m.size()) return false;
  for (std::size_t i = 0; i < dim; ++i)
    for (std::size_t j = 0; j < dim; ++j) {
      cplx acc = 0;
      for (std::size_t k = 0; k < dim; ++k) acc += std::conj(m[k * dim + i]) * m[k * dim + j];
      if (std::abs(acc - (i == j ? 1.0 : 0.0)) > tol) return false;
    }
  return true;
}

}  // namespace qmlsim
