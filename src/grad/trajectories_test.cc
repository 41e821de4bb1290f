// Trajectories against the density matrix (within their statistical error,
// fixed seeds), bit-identical on any thread count, and their gradients
// against finite differences of the same trajectories (a mixture's
// trajectories are fixed unitary circuits) and, statistically, against the
// density matrix's exact gradient.
#include "grad/trajectories.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/cuda/statevector.h"
#include "core/error.h"
#include "grad/density_matrix.h"
#include "testing/dense_oracle.h"

namespace qmlsim {
namespace {

EngineOptions trajectories(std::int64_t count, int threads = 1) {
  EngineOptions o;
  o.method = Method::trajectories;
  o.trajectories = count;
  o.threads = threads;
  o.seed = 7;
  return o;
}

std::vector<double> random_theta(int slots, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-3, 3);
  std::vector<double> t(static_cast<std::size_t>(slots));
  for (double& x : t) x = u(rng);
  return t;
}

// A circuit of Pauli-mixture channels only (depolarizing, dephasing, flips).
Circuit mixture_circuit(int n, std::mt19937_64& rng) {
  const Circuit clean = testing::random_parametric_circuit(n, 14, 3, rng);
  Circuit c(n);
  int k = 0;
  for (const Operation& op : clean.ops()) {
    c.add(op);
    if (++k % 3) continue;
    Operation ch;
    const ChannelId ids[] = {ChannelId::depolarizing, ChannelId::bit_flip, ChannelId::phase_flip,
                             ChannelId::phase_damping};
    ch.channel = ids[rng() % 4];
    ch.wires = {static_cast<int>(rng() % n)};
    ch.params = {ParamExpr::literal(0.05 + 0.1 * (k % 4))};
    c.add(std::move(ch));
  }
  return c;
}

TEST(Trajectories, MeansAgreeWithTheDensityMatrixWithinTheirErrors) {
  std::mt19937_64 rng(50);
  for (int trial = 0; trial < 8; ++trial) {
    const int n = 1 + trial % 4;
    const Circuit c = testing::noisy_circuit(n, 10, 3, rng);
    const std::vector<double> theta = random_theta(3, rng);
    SimulateRequest req;
    req.observables = {testing::random_observable(n, rng), testing::random_observable(n, rng)};
    req.probabilities = true;
    EngineOptions dm;
    dm.method = Method::density_matrix;
    const SimulateResult want = simulate<double>(c, theta, req, dm);
    const SimulateResult got = simulate<double>(c, theta, req, trajectories(3000));
    for (std::size_t k = 0; k < 2; ++k) {
      EXPECT_GT(got.expval_errors[k], 0) << "trial " << trial;
      EXPECT_LT(std::abs(got.expvals[k] - want.expvals[k]), 5 * got.expval_errors[k] + 1e-9)
          << "trial " << trial << " observable " << k;
    }
    double total = 0;
    for (std::size_t i = 0; i < want.probabilities.size(); ++i) {
      EXPECT_NEAR(got.probabilities[i], want.probabilities[i], 0.05) << "trial " << trial;
      total += got.probabilities[i];
    }
    EXPECT_NEAR(total, 1, 1e-9);
    SimulateRequest shots;  // samples drawn from (renormalised) trajectories
    shots.shots = 20000;
    const SimulateResult counts = simulate<double>(c, theta, shots, trajectories(2000));
    for (std::size_t i = 0; i < want.probabilities.size(); ++i) {
      const auto hit = counts.counts.find(static_cast<index_t>(i));
      const double freq = hit == counts.counts.end() ? 0.0 : hit->second / 20000.0;
      EXPECT_NEAR(freq, want.probabilities[i], 0.05) << "trial " << trial << " outcome " << i;
    }
  }
}

TEST(Trajectories, AreBitIdenticalOnAnyThreadCountAndSeededByIndex) {
  std::mt19937_64 rng(51);
  const Circuit c = testing::noisy_circuit(4, 16, 3, rng);
  const std::vector<double> theta = random_theta(3, rng);
  SimulateRequest req;
  req.observables = {testing::random_observable(4, rng)};
  req.shots = 1001;
  const SimulateResult one = simulate<double>(c, theta, req, trajectories(200, 1));
  const SimulateResult two = simulate<double>(c, theta, req, trajectories(200, 2));
  EXPECT_EQ(one.expvals, two.expvals);
  EXPECT_EQ(one.counts, two.counts);
  std::int64_t shots = 0;
  for (const auto& [outcome, hits] : one.counts) shots += hits;
  EXPECT_EQ(shots, 1001);
  EngineOptions other = trajectories(200, 1);
  other.seed = 8;
  EXPECT_NE(simulate<double>(c, theta, req, other).expvals, one.expvals);
}

// A run split into parts (as processes run it: whole blocks, in order) and
// combined equals the run in one piece bit for bit: values, standard
// errors, probabilities and samples, for 1 to 5 parts.
TEST(Trajectories, SharesCombineToTheWholeRunBitForBit) {
  std::mt19937_64 rng(52);
  const Circuit c = testing::noisy_circuit(3, 14, 2, rng);
  const std::vector<double> theta = random_theta(2, rng);
  SimulateRequest req;
  req.observables = {testing::random_observable(3, rng), testing::random_observable(3, rng)};
  req.shots = 777;
  req.probabilities = true;
  const EngineOptions o = trajectories(301, 2);
  const SimulateResult whole = simulate<double>(c, theta, req, o);
  for (int parts = 1; parts <= 5; ++parts) {
    TrajectoryShare all;
    std::int64_t covered = 0;
    for (int p = 0; p < parts; ++p) {
      const auto [first, last] = trajectory_range(301, p, parts);
      EXPECT_EQ(first, covered);
      covered = last;
      const TrajectoryShare s = trajectory_share<double>(c, theta, req, o, first, last);
      all.expvals.insert(all.expvals.end(), s.expvals.begin(), s.expvals.end());
      all.probabilities.insert(all.probabilities.end(), s.probabilities.begin(),
                               s.probabilities.end());
      for (const auto& [outcome, hits] : s.counts) all.counts[outcome] += hits;
    }
    EXPECT_EQ(covered, 301);
    const SimulateResult got = combine_trajectories(all, req, 301);
    EXPECT_EQ(got.expvals, whole.expvals) << parts << " parts";
    EXPECT_EQ(got.expval_errors, whole.expval_errors);
    EXPECT_EQ(got.probabilities, whole.probabilities);
    EXPECT_EQ(got.counts, whole.counts);
  }
}

// Trajectories that share their prefixes (the default) equal the same
// trajectories run alone (QMLSIM_SHARED_PREFIXES=0), each one: its values to
// rounding and its samples, for small states (a trajectory per thread) and
// large ones (threads inside), light noise (long shared prefixes, damping
// drawn by its lower bound) and heavy (trajectories leave at once).
TEST(Trajectories, SharedPrefixesEqualEachTrajectoryRunAlone) {
  std::mt19937_64 rng(53);
  for (const int n : {3, 14}) {
    for (const double p : {0.02, 0.4}) {
      Circuit c(n);
      const Circuit gates = testing::random_parametric_circuit(n, 3 * n, 2, rng);
      const ChannelId ids[] = {ChannelId::depolarizing, ChannelId::amplitude_damping,
                               ChannelId::phase_flip};
      int k = 0;
      for (const Operation& op : gates.ops()) {
        c.add(op);
        Operation ch;
        ch.channel = ids[k++ % 3];
        ch.wires = {op.wires[0]};
        ch.params = {ParamExpr::literal(p)};
        c.add(std::move(ch));
      }
      const std::vector<double> theta = random_theta(2, rng);
      SimulateRequest req;
      req.observables = {testing::random_observable(n, rng)};
      req.shots = 101;
      req.probabilities = n < 10;
      const EngineOptions o = trajectories(70, 2);  // a full group and part of one
      const TrajectoryShare shared = trajectory_share<double>(c, theta, req, o, 0, 70);
      ASSERT_EQ(setenv("QMLSIM_SHARED_PREFIXES", "0", 1), 0);
      const TrajectoryShare alone = trajectory_share<double>(c, theta, req, o, 0, 70);
      unsetenv("QMLSIM_SHARED_PREFIXES");
      ASSERT_EQ(shared.expvals.size(), alone.expvals.size());
      for (std::size_t t = 0; t < alone.expvals.size(); ++t)
        EXPECT_NEAR(shared.expvals[t], alone.expvals[t], 1e-12) << n << " qubits, trajectory " << t;
      ASSERT_EQ(shared.probabilities.size(), alone.probabilities.size());
      for (std::size_t i = 0; i < alone.probabilities.size(); ++i)
        EXPECT_NEAR(shared.probabilities[i], alone.probabilities[i], 1e-12);
      EXPECT_EQ(shared.counts, alone.counts) << n << " qubits, p " << p;
    }
  }
}

TEST(Trajectories, MixtureGradientsEqualFiniteDifferencesOfTheSameTrajectories) {
  std::mt19937_64 rng(52);
  for (int n : {2, 3}) {
    const Circuit c = mixture_circuit(n, rng);
    const std::vector<double> theta = random_theta(3, rng);
    const std::vector<PauliSum> h = {testing::random_observable(n, rng)};
    const std::vector<double> w = {1.0};
    const EngineOptions o = trajectories(64);
    const AdjointResult g = adjoint_vjp<double>(c, theta, h, w, o);
    SimulateRequest req;
    req.observables = h;
    EXPECT_NEAR(g.expvals[0], simulate<double>(c, theta, req, o).expvals[0], 1e-12);
    for (std::size_t s = 0; s < theta.size(); ++s) {
      std::vector<double> up = theta, down = theta;
      up[s] += 1e-6;
      down[s] -= 1e-6;
      const double fd = (simulate<double>(c, up, req, o).expvals[0] -
                         simulate<double>(c, down, req, o).expvals[0]) /
                        2e-6;
      EXPECT_NEAR(g.gradient[s], fd, 1e-6) << "n " << n << " slot " << s;
    }
    // ... and, statistically, the density matrix's exact gradient.
    EngineOptions dm;
    dm.method = Method::density_matrix;
    const AdjointResult exact = adjoint_vjp<double>(c, theta, h, w, dm);
    const AdjointResult many = adjoint_vjp<double>(c, theta, h, w, trajectories(4000));
    for (std::size_t s = 0; s < theta.size(); ++s)
      EXPECT_NEAR(many.gradient[s], exact.gradient[s], 0.08) << "n " << n << " slot " << s;
  }
}

TEST(Trajectories, RefuseWhatTheyCannotGive) {
  Circuit c(2);
  c.add(GateId::H, {0});
  Operation damp;
  damp.channel = ChannelId::amplitude_damping;
  damp.wires = {0};
  damp.params = {ParamExpr::literal(0.3)};
  c.add(damp);
  const std::vector<double> theta;
  const std::vector<PauliSum> h = {parse_pauli_sum("Z0", "test")};
  const std::vector<double> w = {1.0};
  EXPECT_THROW(adjoint_vjp<double>(c, theta, h, w, trajectories(10)), Error);
  SimulateRequest state;
  state.state = true;
  EXPECT_THROW(simulate<double>(c, theta, state, trajectories(10)), Error);
  EXPECT_THROW(simulate<double>(c, theta, {}, trajectories(0)), Error);
}

// Trajectories on the GPU against the CPU's: the same seeded draws (Pauli
// mixtures: every branch decided by its lower bound, none by the state), so
// the same trajectories; their means, probabilities, samples and gradients
// agree to rounding, with prefixes shared and without. Skipped without a GPU.
TEST(Trajectories, CudaBackendEqualsCpu) {
  const cuda::DeviceStatus gpu = cuda::device_status();
  if (gpu.count == 0)
    GTEST_SKIP() << "no GPU here (" << gpu.error << "): CUDA trajectories skipped";
  cuda::select_device(0);
  std::mt19937_64 rng(71);
  for (int trial = 0; trial < 6; ++trial) {
    const int n = 2 + trial;
    const Circuit c = mixture_circuit(n, rng);
    const std::vector<double> theta = random_theta(3, rng);
    const std::vector<PauliSum> obs = {testing::random_observable(n, rng)};
    EngineOptions cpu = trajectories(64), gpu = trajectories(64);
    gpu.backend = Backend::cuda;
    SimulateRequest req;
    req.observables = obs;
    req.probabilities = true;
    req.shots = 100;
    const SimulateResult a = simulate<double>(c, theta, req, cpu);
    const SimulateResult b = simulate<double>(c, theta, req, gpu);
    EXPECT_NEAR(b.expvals[0], a.expvals[0], 1e-10) << "trial " << trial;
    for (std::size_t i = 0; i < a.probabilities.size(); ++i)
      EXPECT_NEAR(b.probabilities[i], a.probabilities[i], 1e-10);
    std::int64_t total = 0, apart = 0;  // samples: the same to rounding at bin edges
    for (const auto& [k, hits] : b.counts) total += hits;
    for (std::uint64_t k = 0; k < (std::uint64_t{1} << n); ++k) {
      const auto x = a.counts.find(k), y = b.counts.find(k);
      apart +=
          std::abs((x == a.counts.end() ? 0 : x->second) - (y == b.counts.end() ? 0 : y->second));
    }
    EXPECT_EQ(total, req.shots);
    EXPECT_LE(apart, 4) << "trial " << trial;
    const double w[] = {1.0};
    const AdjointResult x = adjoint_vjp<double>(c, theta, obs, w, cpu);
    const AdjointResult y = adjoint_vjp<double>(c, theta, obs, w, gpu);
    for (std::size_t s = 0; s < theta.size(); ++s)
      EXPECT_NEAR(y.gradient[s], x.gradient[s], 1e-10) << "trial " << trial << " slot " << s;
  }
}

}  // namespace
}  // namespace qmlsim
