// The gate table against independent definitions: exponentials of Pauli
// generators written out by hand, products of rotations, and unitarity.
#include "circuit/gates.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

namespace qmlsim {
namespace {

const cplx I{0, 1};

Matrix kron(const Matrix& a, const Matrix& b) {
  const std::size_t da = static_cast<std::size_t>(std::sqrt(a.size()));
  const std::size_t db = static_cast<std::size_t>(std::sqrt(b.size()));
  Matrix m(da * db * da * db);
  for (std::size_t i = 0; i < da; ++i)
    for (std::size_t j = 0; j < da; ++j)
      for (std::size_t k = 0; k < db; ++k)
        for (std::size_t l = 0; l < db; ++l)
          m[(i * db + k) * da * db + j * db + l] = a[i * da + j] * b[k * db + l];
  return m;
}

Matrix mul(const Matrix& a, const Matrix& b) {
  const std::size_t d = static_cast<std::size_t>(std::sqrt(a.size()));
  Matrix m(d * d, 0.0);
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = 0; j < d; ++j)
      for (std::size_t k = 0; k < d; ++k) m[i * d + j] += a[i * d + k] * b[k * d + j];
  return m;
}

// exp(-i t/2 P) = cos(t/2) I - i sin(t/2) P for a Pauli word P (P^2 = I).
Matrix pauli_rotation(const Matrix& p, double t) {
  const std::size_t d = static_cast<std::size_t>(std::sqrt(p.size()));
  Matrix m(d * d);
  for (std::size_t i = 0; i < d * d; ++i) {
    m[i] = -I * std::sin(t / 2) * p[i] + (i % (d + 1) == 0 ? std::cos(t / 2) : 0.0);
  }
  return m;
}

const Matrix kX = {0, 1, 1, 0}, kY = {0, -I, I, 0}, kZ = {1, 0, 0, -1}, kId = {1, 0, 0, 1};

void expect_near(const Matrix& a, const Matrix& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_LT(std::abs(a[i] - b[i]), 1e-12) << what << " entry " << i;
}

Matrix controlled(const Matrix& u) {  // control is the first (most significant) wire
  const std::size_t d = static_cast<std::size_t>(std::sqrt(u.size()));
  Matrix m(4 * d * d, 0.0);
  for (std::size_t i = 0; i < d; ++i) m[i * 2 * d + i] = 1.0;
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = 0; j < d; ++j) m[(d + i) * 2 * d + d + j] = u[i * d + j];
  return m;
}

TEST(Gates, RotationsAreExponentialsOfPaulis) {
  for (double t : {0.0, 0.3, -1.7, 3.0}) {
    const double p[] = {t};
    expect_near(full_matrix(GateId::RX, p, 1), pauli_rotation(kX, t), "RX");
    expect_near(full_matrix(GateId::RY, p, 1), pauli_rotation(kY, t), "RY");
    expect_near(full_matrix(GateId::RZ, p, 1), pauli_rotation(kZ, t), "RZ");
    expect_near(full_matrix(GateId::IsingXX, p, 2), pauli_rotation(kron(kX, kX), t), "IsingXX");
    expect_near(full_matrix(GateId::IsingYY, p, 2), pauli_rotation(kron(kY, kY), t), "IsingYY");
    expect_near(full_matrix(GateId::IsingZZ, p, 2), pauli_rotation(kron(kZ, kZ), t), "IsingZZ");
    expect_near(full_matrix(GateId::MultiRZ, p, 3), pauli_rotation(kron(kZ, kron(kZ, kZ)), t),
                "MultiRZ");
    // IsingXY = exp(i t/4 (XX + YY)); XX and YY commute.
    expect_near(full_matrix(GateId::IsingXY, p, 2),
                mul(pauli_rotation(kron(kX, kX), -t / 2), pauli_rotation(kron(kY, kY), -t / 2)),
                "IsingXY");
    expect_near(full_matrix(GateId::CRX, p, 2), controlled(pauli_rotation(kX, t)), "CRX");
    expect_near(full_matrix(GateId::CRY, p, 2), controlled(pauli_rotation(kY, t)), "CRY");
    expect_near(full_matrix(GateId::CRZ, p, 2), controlled(pauli_rotation(kZ, t)), "CRZ");
    const Matrix phase = {1, 0, 0, std::exp(I * t)};
    expect_near(full_matrix(GateId::PhaseShift, p, 1), phase, "PhaseShift");
    expect_near(full_matrix(GateId::U1, p, 1), phase, "U1");
    expect_near(full_matrix(GateId::ControlledPhaseShift, p, 2), controlled(phase), "CPhase");
  }
}

TEST(Gates, RotAndUGatesAreProductsOfRotations) {
  const double a = 0.4, b = -1.1, c = 2.3;
  auto rz = [](double t) { return pauli_rotation(kZ, t); };
  auto ry = [](double t) { return pauli_rotation(kY, t); };
  const double rot[] = {a, b, c};
  const Matrix want = mul(rz(c), mul(ry(b), rz(a)));
  expect_near(full_matrix(GateId::Rot, rot, 1), want, "Rot");
  expect_near(full_matrix(GateId::CRot, rot, 2), controlled(want), "CRot");
  // U3(t, p, l) = e^{i(p+l)/2} RZ(p) RY(t) RZ(l)
  const double u3[] = {a, b, c};
  Matrix u = mul(rz(b), mul(ry(a), rz(c)));
  for (cplx& x : u) x *= std::exp(I * ((b + c) / 2));
  expect_near(full_matrix(GateId::U3, u3, 1), u, "U3");
  const double u2[] = {b, c};
  const double u3_from_u2[] = {std::numbers::pi / 2, b, c};
  expect_near(full_matrix(GateId::U2, u2, 1), full_matrix(GateId::U3, u3_from_u2, 1), "U2");
}

TEST(Gates, FixedGates) {
  const double r2 = std::numbers::sqrt2 / 2;
  expect_near(full_matrix(GateId::H, {}, 1), {r2, r2, r2, -r2}, "H");
  expect_near(full_matrix(GateId::S, {}, 1), {1, 0, 0, I}, "S");
  expect_near(mul(full_matrix(GateId::T, {}, 1), full_matrix(GateId::T, {}, 1)),
              full_matrix(GateId::S, {}, 1), "T^2 = S");
  expect_near(mul(full_matrix(GateId::SX, {}, 1), full_matrix(GateId::SX, {}, 1)), kX, "SX^2 = X");
  expect_near(mul(full_matrix(GateId::S, {}, 1), full_matrix(GateId::Sdg, {}, 1)), kId, "S Sdg");
  expect_near(mul(full_matrix(GateId::T, {}, 1), full_matrix(GateId::Tdg, {}, 1)), kId, "T Tdg");
  expect_near(full_matrix(GateId::CNOT, {}, 2), controlled(kX), "CNOT");
  expect_near(full_matrix(GateId::CY, {}, 2), controlled(kY), "CY");
  expect_near(full_matrix(GateId::CZ, {}, 2), controlled(kZ), "CZ");
  expect_near(full_matrix(GateId::CH, {}, 2), controlled(full_matrix(GateId::H, {}, 1)), "CH");
  expect_near(full_matrix(GateId::Toffoli, {}, 3), controlled(controlled(kX)), "Toffoli");
  const Matrix swap = {1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1};
  expect_near(full_matrix(GateId::SWAP, {}, 2), swap, "SWAP");
  expect_near(full_matrix(GateId::CSWAP, {}, 3), controlled(swap), "CSWAP");
  // ISWAP = exp(i pi/4 (XX + YY))
  expect_near(full_matrix(GateId::ISWAP, {}, 2),
              mul(pauli_rotation(kron(kX, kX), -std::numbers::pi / 2),
                  pauli_rotation(kron(kY, kY), -std::numbers::pi / 2)),
              "ISWAP");
}

// exp(-i t G) for a Hermitian G, by a Taylor series after scaling by 2^-8 and
// squaring back (independent of the table's closed forms).
Matrix exp_generator(const Matrix& g, double t) {
  const std::size_t d = static_cast<std::size_t>(std::sqrt(g.size()));
  Matrix a(d * d), sum(d * d, 0.0), term(d * d, 0.0);
  for (std::size_t i = 0; i < d * d; ++i) a[i] = -I * t * g[i] / 256.0;
  for (std::size_t i = 0; i < d; ++i) sum[i * d + i] = term[i * d + i] = 1.0;
  for (int k = 1; k < 30; ++k) {
    term = mul(term, a);
    for (std::size_t i = 0; i < d * d; ++i) sum[i] += term[i] / std::tgamma(k + 1.0);
  }
  for (int k = 0; k < 8; ++k) sum = mul(sum, sum);
  return sum;
}

// The generator acting as Y/2 on the pair of basis states (a, b), plus `rest`
// times the projector on every other basis state.
Matrix givens_generator(std::size_t dim, std::size_t a, std::size_t b, double rest) {
  Matrix g(dim * dim, 0.0);
  g[b * dim + a] = I / 2.0;
  g[a * dim + b] = -I / 2.0;
  for (std::size_t j = 0; j < dim; ++j)
    if (j != a && j != b) g[j * dim + j] = rest;
  return g;
}

// The gates lightning.qubit has natively that PennyLane defines by generators
// or products: excitations (Givens rotations), PSWAP, ECR, SISWAP.
TEST(Gates, ExcitationsAndTwoQubitGatesMatchTheirDefinitions) {
  for (double t : {-2.1, 0.0, 0.37, 1.9}) {
    const std::vector<double> p = {t};
    // SingleExcitation = exp(-i t (Y (x) X - X (x) Y) / 4), first wire first.
    Matrix yx = kron(kY, kX), xy = kron(kX, kY), gen(16);
    for (std::size_t i = 0; i < 16; ++i) gen[i] = (yx[i] - xy[i]) / 4.0;
    expect_near(full_matrix(GateId::SingleExcitation, p, 2), exp_generator(gen, t),
                "SingleExcitation");
    expect_near(full_matrix(GateId::SingleExcitationMinus, p, 2),
                exp_generator(givens_generator(4, 1, 2, 0.5), t), "SingleExcitationMinus");
    expect_near(full_matrix(GateId::SingleExcitationPlus, p, 2),
                exp_generator(givens_generator(4, 1, 2, -0.5), t), "SingleExcitationPlus");
    // DoubleExcitation: |0011> -> cos |0011> + sin |1100> (wires 0-3, first most significant).
    expect_near(full_matrix(GateId::DoubleExcitation, p, 4),
                exp_generator(givens_generator(16, 3, 12, 0), t), "DoubleExcitation");
    expect_near(full_matrix(GateId::DoubleExcitationMinus, p, 4),
                exp_generator(givens_generator(16, 3, 12, 0.5), t), "DoubleExcitationMinus");
    expect_near(full_matrix(GateId::DoubleExcitationPlus, p, 4),
                exp_generator(givens_generator(16, 3, 12, -0.5), t), "DoubleExcitationPlus");
    // PSWAP = SWAP diag(1, e^{it}, e^{it}, 1).
    const Matrix swap = {1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1};
    const cplx e = std::exp(I * t);
    expect_near(full_matrix(GateId::PSWAP, p, 2),
                mul(swap, {1, 0, 0, 0, 0, e, 0, 0, 0, 0, e, 0, 0, 0, 0, 1}), "PSWAP");
  }
  // ECR = (X (x) I - Y (x) X) / sqrt(2); SISWAP = exp(i pi/8 (XX + YY)), ISWAP's square root.
  Matrix ecr = kron(kX, kId), yx = kron(kY, kX);
  for (std::size_t i = 0; i < 16; ++i) ecr[i] = (ecr[i] - yx[i]) / std::numbers::sqrt2;
  expect_near(full_matrix(GateId::ECR, {}, 2), ecr, "ECR");
  const Matrix siswap = mul(pauli_rotation(kron(kX, kX), -std::numbers::pi / 4),
                            pauli_rotation(kron(kY, kY), -std::numbers::pi / 4));
  expect_near(full_matrix(GateId::SISWAP, {}, 2), siswap, "SISWAP");
  expect_near(mul(siswap, siswap), full_matrix(GateId::ISWAP, {}, 2), "SISWAP^2");
}

TEST(Gates, EveryGateIsUnitaryAndDerivativesAreExact) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> angle(-3, 3);
  for (int gi = 0; gi < static_cast<int>(GateId::kCount); ++gi) {
    const auto id = static_cast<GateId>(gi);
    const GateInfo& g = gate_info(id);
    if (id == GateId::QubitUnitary) continue;
    const int wires = g.num_wires > 0 ? g.num_wires : 3;
    std::vector<double> p(g.num_params);
    for (double& x : p) x = angle(rng);
    EXPECT_TRUE(is_unitary(full_matrix(id, p, wires))) << g.name;
    EXPECT_EQ(gate_by_name(g.name), id);
    for (int k = 0; k < g.num_params; ++k) {  // against a central difference
      const Matrix d = target_matrix_derivative(id, p, wires - g.num_controls, k);
      std::vector<double> hi = p, lo = p;
      hi[k] += 1e-6;
      lo[k] -= 1e-6;
      const Matrix a = target_matrix(id, hi, wires - g.num_controls);
      const Matrix b = target_matrix(id, lo, wires - g.num_controls);
      for (std::size_t i = 0; i < d.size(); ++i) {
        EXPECT_LT(std::abs(d[i] - (a[i] - b[i]) / 2e-6), 1e-8) << g.name << " param " << k;
      }
    }
  }
  EXPECT_FALSE(gate_by_name("cnot").has_value());
  EXPECT_FALSE(is_unitary({1, 1, 0, 1}));
}

// Diagonal gates are bound from their diagonal alone (a wide MultiRZ is never
// formed dense): it equals the dense matrix's diagonal, off-diagonal zeros.
// Every row's inverse rule: e^{i phase} G(q) U(p) = I over all wires, controls
// included (QubitUnitary's rule names itself: its conjugate transpose).
TEST(Gates, InverseRulesGiveTheInverseMatrix) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> angle(-4, 4);
  for (int i = 0; i < static_cast<int>(GateId::kCount); ++i) {
    const GateInfo& g = gate_info(static_cast<GateId>(i));
    if (g.id == GateId::QubitUnitary) {
      EXPECT_EQ(g.inverse.gate, GateId::QubitUnitary);
      continue;
    }
    const int wires = g.num_wires > 0 ? g.num_wires : 3;
    std::vector<double> p(static_cast<std::size_t>(g.num_params));
    for (double& v : p) v = angle(rng);
    const std::vector<double> q = inverse_params(g.id, p);
    ASSERT_EQ(static_cast<int>(q.size()), gate_info(g.inverse.gate).num_params) << g.name;
    Matrix m = mul(full_matrix(g.inverse.gate, q, wires), full_matrix(g.id, p, wires));
    const cplx phase = std::polar(1.0, g.inverse.phase);
    const std::size_t d = std::size_t{1} << wires;
    for (std::size_t r = 0; r < d; ++r)
      for (std::size_t c = 0; c < d; ++c)
        EXPECT_NEAR(std::abs(phase * m[r * d + c] - (r == c ? 1.0 : 0.0)), 0, 1e-12)
            << g.name << " entry " << r << "," << c;
  }
}

TEST(Gates, DiagonalsEqualTheDenseMatricesDiagonals) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> angle(-3, 3);
  int checked = 0;
  for (int gi = 0; gi < static_cast<int>(GateId::kCount); ++gi) {
    const auto id = static_cast<GateId>(gi);
    const GateInfo& g = gate_info(id);
    if (!g.diagonal) continue;
    for (int targets : {1, 2, 5}) {
      if (g.num_wires > 0) targets = g.num_wires - g.num_controls;
      std::vector<double> p(g.num_params);
      for (double& x : p) x = angle(rng);
      const std::size_t dim = std::size_t{1} << targets;
      const Matrix dense = target_matrix(id, p, targets), diag = target_diagonal(id, p, targets);
      ASSERT_EQ(diag.size(), dim) << g.name;
      for (std::size_t r = 0; r < dim; ++r)
        for (std::size_t c = 0; c < dim; ++c)
          EXPECT_EQ(dense[r * dim + c], r == c ? diag[r] : cplx{0}) << g.name;
      for (int k = 0; k < g.num_params; ++k) {
        const Matrix dd = target_matrix_derivative(id, p, targets, k);
        const Matrix d = target_diagonal_derivative(id, p, targets, k);
        for (std::size_t r = 0; r < dim; ++r) EXPECT_EQ(d[r], dd[r * dim + r]) << g.name;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 8);
}

TEST(Gates, HugeAnglesStillGiveUnitaryMatrices) {
  // Found by the fuzz target: U3(t, 0.8, 8.9e109) computed e^{i(phi+lambda)}
  // from the rounded sum, which drops phi: the matrix was not unitary.
  for (GateId g : {GateId::U3, GateId::U2, GateId::Rot}) {
    const int np = gate_info(g).num_params;
    std::vector<double> p = {0.7, 0.8, 8.9e109};
    p.resize(np);
    if (np == 2) p = {0.8, 8.9e109};
    EXPECT_TRUE(is_unitary(target_matrix(g, p, 1), 1e-12)) << gate_info(g).name;
  }
}

}  // namespace
}  // namespace qmlsim
