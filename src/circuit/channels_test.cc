// The channel table: every channel trace preserving over its range, its
// conventions (Braket's and PennyLane's) on states whose image is known, the
// superoperator against sum K rho K^dagger, and its range checks.
#include "circuit/channels.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>

#include "circuit/bound.h"
#include "circuit/circuit.h"
#include "core/error.h"

namespace qmlsim {
namespace {

// Valid parameters for every table channel, drawn at random.
std::vector<double> random_params(ChannelId id, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  if (id == ChannelId::thermal_relaxation) {
    const double t1 = 1 + 9 * u(rng);
    return {t1, (2 * t1 - 1e-3) * u(rng) + 1e-3, 3 * u(rng), u(rng)};
  }
  std::vector<double> p(static_cast<std::size_t>(channel_info(id).num_params));
  for (double& x : p) x = u(rng) / static_cast<double>(p.size());
  return p;
}

// sum K rho K^dagger for d x d row-major matrices.
Matrix apply_kraus(const std::vector<Matrix>& ks, const Matrix& rho, std::size_t d) {
  Matrix out(d * d);
  for (const Matrix& k : ks)
    for (std::size_t i = 0; i < d; ++i)
      for (std::size_t j = 0; j < d; ++j)
        for (std::size_t a = 0; a < d; ++a)
          for (std::size_t b = 0; b < d; ++b)
            out[i * d + j] += k[i * d + a] * rho[a * d + b] * std::conj(k[j * d + b]);
  return out;
}

Matrix random_density(std::size_t d, std::mt19937_64& rng) {
  std::normal_distribution<double> g;
  Matrix a(d * d), rho(d * d);
  for (cplx& x : a) x = {g(rng), g(rng)};
  double tr = 0;
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = 0; j < d; ++j) {
      for (std::size_t k = 0; k < d; ++k) rho[i * d + j] += a[i * d + k] * std::conj(a[j * d + k]);
      if (i == j) tr += rho[i * d + j].real();
    }
  for (cplx& x : rho) x /= tr;
  return rho;
}

const ChannelId kTableChannels[] = {
    ChannelId::depolarizing,      ChannelId::two_qubit_depolarizing,
    ChannelId::bit_flip,          ChannelId::phase_flip,
    ChannelId::pauli_channel,     ChannelId::two_qubit_dephasing,
    ChannelId::amplitude_damping, ChannelId::generalized_amplitude_damping,
    ChannelId::phase_damping,     ChannelId::thermal_relaxation};

TEST(Channels, EveryChannelIsTracePreservingAndItsSuperoperatorActsAsItsKrausSet) {
  std::mt19937_64 rng(5);
  for (ChannelId id : kTableChannels) {
    for (int trial = 0; trial < 20; ++trial) {
      const std::vector<double> p = random_params(id, rng);
      ASSERT_NO_THROW(check_channel_params(id, p)) << channel_info(id).name;
      const std::vector<Matrix> ks = kraus_operators(id, p);
      ASSERT_NO_THROW(check_kraus_set(ks, 1e-12)) << channel_info(id).name;
      const std::size_t d = channel_info(id).num_wires == 1 ? 2 : 4;
      const Matrix rho = random_density(d, rng), want = apply_kraus(ks, rho, d);
      const Matrix s = superoperator(ks);
      for (std::size_t r = 0; r < d; ++r)
        for (std::size_t c = 0; c < d; ++c) {
          cplx got = 0;  // (S vec rho)[r + d c]
          for (std::size_t r2 = 0; r2 < d; ++r2)
            for (std::size_t c2 = 0; c2 < d; ++c2)
              got += s[(r + d * c) * d * d + r2 + d * c2] * rho[r2 * d + c2];
          ASSERT_LT(std::abs(got - want[r * d + c]), 1e-13) << channel_info(id).name;
        }
    }
  }
}

// The superoperator's derivative by each parameter against central finite
// differences of superoperator(kraus_operators) (an independent path: no
// weights, no derivative code), at random interior points; and at a
// probability of 0, where the Kraus operators' own derivatives are infinite,
// against a one-sided difference.
TEST(Channels, SuperoperatorDerivativesEqualFiniteDifferences) {
  std::mt19937_64 rng(9);
  auto superop = [](ChannelId id, const std::vector<double>& p) {
    return superoperator(kraus_operators(id, p));
  };
  for (ChannelId id : kTableChannels) {
    const int params = channel_info(id).num_params;
    for (int trial = 0; trial < 6; ++trial) {
      std::vector<double> p = random_params(id, rng);
      for (int k = 0; k < params; ++k) {
        const Matrix got = superoperator_derivative(kraus_terms(id, p, k));
        const double h = 1e-6, p0 = p[static_cast<std::size_t>(k)];
        p[static_cast<std::size_t>(k)] = p0 + h;
        const Matrix up = superop(id, p);
        p[static_cast<std::size_t>(k)] = p0 - h;
        const Matrix down = superop(id, p);
        p[static_cast<std::size_t>(k)] = p0;
        for (std::size_t i = 0; i < got.size(); ++i)
          ASSERT_LT(std::abs(got[i] - (up[i] - down[i]) / (2 * h)), 1e-7)
              << channel_info(id).name << " parameter " << k << " entry " << i;
      }
    }
    if (id == ChannelId::thermal_relaxation) continue;
    std::vector<double> zero(static_cast<std::size_t>(params), 0.0), step = zero;
    const double h = 1e-7;
    step[0] = h;
    const Matrix got = superoperator_derivative(kraus_terms(id, zero, 0));
    const Matrix at0 = superop(id, zero), at_h = superop(id, step);
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i].real()) && std::isfinite(got[i].imag()));
      ASSERT_LT(std::abs(got[i] - (at_h[i] - at0[i]) / h), 1e-6) << channel_info(id).name;
    }
  }
  // The dampings' coherences go as sqrt(1 - gamma): no derivative at gamma = 1.
  const double full[] = {1.0};
  EXPECT_THROW(kraus_terms(ChannelId::amplitude_damping, full, 0), Error);
  EXPECT_NO_THROW(kraus_terms(ChannelId::amplitude_damping, full));
}

TEST(Channels, ConventionsOnKnownStates) {
  std::mt19937_64 rng(8);
  const Matrix rho = random_density(2, rng);
  // depolarizing(3/4) is the fully depolarizing channel (Braket, PennyLane, Cirq).
  const double p34[] = {0.75};
  const Matrix mixed = apply_kraus(kraus_operators(ChannelId::depolarizing, p34), rho, 2);
  EXPECT_NEAR(mixed[0].real(), 0.5, 1e-15);
  EXPECT_NEAR(std::abs(mixed[1]), 0, 1e-15);
  // amplitude_damping(1) takes everything to |0>; generalized(gamma = 1, p) to
  // populations (p, 1 - p).
  const double one[] = {1.0}, gad[] = {1.0, 0.3};
  EXPECT_NEAR(apply_kraus(kraus_operators(ChannelId::amplitude_damping, one), rho, 2)[0].real(), 1,
              1e-15);
  const Matrix g =
      apply_kraus(kraus_operators(ChannelId::generalized_amplitude_damping, gad), rho, 2);
  EXPECT_NEAR(g[0].real(), 0.3, 1e-15);
  EXPECT_NEAR(g[3].real(), 0.7, 1e-15);
  // phase_damping(gamma) scales coherences by sqrt(1 - gamma), keeps populations.
  const double pd[] = {0.36};
  const Matrix d = apply_kraus(kraus_operators(ChannelId::phase_damping, pd), rho, 2);
  EXPECT_NEAR(std::abs(d[1] - 0.8 * rho[1]), 0, 1e-15);
  EXPECT_NEAR(d[0].real(), rho[0].real(), 1e-15);
  // thermal_relaxation(t1, t2, time, pe): rho11 -> pe + (rho11 - pe) e^{-t/t1},
  // rho01 -> rho01 e^{-t/t2} (Aer's argument order).
  const double tr[] = {2.0, 3.0, 0.7, 0.2};
  const Matrix t = apply_kraus(kraus_operators(ChannelId::thermal_relaxation, tr), rho, 2);
  EXPECT_NEAR(t[3].real(), 0.2 + (rho[3].real() - 0.2) * std::exp(-0.7 / 2), 1e-14);
  EXPECT_NEAR(std::abs(t[1] - rho[1] * std::exp(-0.7 / 3)), 0, 1e-14);
  // Extreme but valid parameters give the limits (fully relaxed to pe, no
  // coherence), not an error about derivatives nobody asked for.
  for (const std::array<double, 4> x : {std::array<double, 4>{1e-300, 1e-300, 1.0, 0.0},
                                        std::array<double, 4>{1e-320, 2e-320, 5.0, 0.3},
                                        std::array<double, 4>{1.0, 1e-310, 1.0, 0.0}}) {
    const Matrix e = apply_kraus(kraus_operators(ChannelId::thermal_relaxation, x), rho, 2);
    const double relaxed = x[1] < 1e-300 && x[0] == 1.0 ? rho[3].real() * std::exp(-1.0) : x[3];
    EXPECT_NEAR(e[3].real(), relaxed, 1e-14) << x[0];
    EXPECT_NEAR(std::abs(e[1]), 0, 1e-14) << x[0];
  }
  // bit_flip(p): (1 - p) rho + p X rho X.
  const double bf[] = {0.25};
  const Matrix b = apply_kraus(kraus_operators(ChannelId::bit_flip, bf), rho, 2);
  EXPECT_NEAR(b[0].real(), 0.75 * rho[0].real() + 0.25 * rho[3].real(), 1e-15);
}

TEST(Channels, OutOfRangeParametersAndBadKrausSetsAreErrors) {
  const double neg[] = {-0.1}, big[] = {1.5}, nan[] = {std::nan("")};
  for (ChannelId id : {ChannelId::depolarizing, ChannelId::bit_flip, ChannelId::amplitude_damping,
                       ChannelId::phase_damping, ChannelId::two_qubit_dephasing}) {
    EXPECT_THROW(check_channel_params(id, neg), Error);
    EXPECT_THROW(check_channel_params(id, big), Error);
    EXPECT_THROW(check_channel_params(id, nan), Error);
  }
  const double pauli[] = {0.5, 0.4, 0.3};
  EXPECT_THROW(check_channel_params(ChannelId::pauli_channel, pauli), Error);
  const double t2_too_long[] = {1.0, 2.5, 0.1, 0};
  try {
    check_channel_params(ChannelId::thermal_relaxation, t2_too_long);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "thermal_relaxation: t2 = 2.500000 is outside (0, 2 t1]");
  }
  EXPECT_THROW(check_kraus_set({Matrix{1, 0, 0, 0.5}}), Error);  // not trace preserving
  EXPECT_THROW(check_kraus_set({Matrix{1, 0, 0}}), Error);       // not square
  EXPECT_THROW(check_kraus_set({Matrix(64, 0.0)}), Error);       // three qubits
  EXPECT_THROW(check_kraus_set({Matrix{1, 0, 0, 1}, Matrix{1, 0, 0, 1, 0}}), Error);
  EXPECT_NO_THROW(check_kraus_set({Matrix{1, 0, 0, 0}, Matrix{0, 1, 0, 0}}));  // reset to |0>
}

TEST(Channels, CircuitsCheckChannelsAndStateVectorsRefuseThem) {
  Circuit c(2);
  Operation op;
  op.channel = ChannelId::depolarizing;
  op.wires = {2};
  op.params = {ParamExpr::literal(0.1)};
  EXPECT_THROW(c.add(op), Error);  // a missing qubit
  op.wires = {0, 1};
  EXPECT_THROW(c.add(op), Error);  // two wires for a one-qubit channel
  op.wires = {1};
  op.params = {ParamExpr::literal(1.2)};
  EXPECT_THROW(c.add(op), Error);
  op.params = {ParamExpr::literal(0.1)};
  op.controls = {0};
  EXPECT_THROW(c.add(op), Error);
  op.controls.clear();
  c.add(op);
  EXPECT_TRUE(c.has_channels());
  try {
    bind_params(c, {});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("density matrix"), std::string::npos) << e.what();
  }
  // A trainable parameter is checked when bound.
  Circuit t(1);
  op.wires = {0};
  op.params = {ParamExpr::ref(0)};
  t.add(op);
  const double bad[] = {1.5};
  EXPECT_THROW(bind_channel(t.ops()[0], bad, 1), Error);
}

// with_gate_noise: the channels after each gate on each of its wires
// (controls included), in order; strength 0 adds nothing; ranges checked.
TEST(Channels, NoiseAfterEveryGate) {
  Circuit c(3);
  c.add(GateId::H, {0});
  Operation cx;
  cx.gate = GateId::RX;
  cx.wires = {2};
  cx.controls = {1};
  cx.params = {ParamExpr::ref(0)};
  c.add(cx);
  Operation flip;
  flip.channel = ChannelId::bit_flip;
  flip.wires = {0};
  flip.params = {ParamExpr::literal(0.1)};
  c.add(flip);
  const Circuit n = with_gate_noise(c, {{ChannelId::depolarizing, 0.1},
                                        {ChannelId::phase_damping, 0},
                                        {ChannelId::amplitude_damping, 0.2}});
  std::vector<std::string> got;
  for (const Operation& op : n.ops())
    got.push_back(op.is_channel() ? std::string(channel_info(op.channel).name) + " " +
                                        std::to_string(op.wires[0])
                                  : describe(op));
  ASSERT_EQ(n.ops().size(), 1u + 2u + 1u + 4u + 1u) << ::testing::PrintToString(got);
  EXPECT_EQ(n.ops()[1].channel, ChannelId::depolarizing);
  EXPECT_EQ(n.ops()[1].wires, std::vector<int>{0});
  EXPECT_EQ(n.ops()[2].channel, ChannelId::amplitude_damping);
  EXPECT_EQ(n.ops()[4].wires, std::vector<int>{1});  // the control first
  EXPECT_EQ(n.ops()[6].wires, std::vector<int>{2});
  EXPECT_EQ(n.ops()[8].channel, ChannelId::bit_flip);  // a channel gets no noise after it
  EXPECT_EQ(n.num_slots(), 1);
  EXPECT_THROW(with_gate_noise(c, {{ChannelId::depolarizing, 1.5}}), Error);
}

}  // namespace
}  // namespace qmlsim
