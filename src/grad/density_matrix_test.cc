// The density-matrix engine against the dense oracle (rho -> U rho U^dagger,
// rho -> sum K rho K^dagger) on random noisy circuits, against the state
// vector on noiseless ones, and its gradients against finite differences.
#include "grad/density_matrix.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/cuda/statevector.h"
#include "core/error.h"
#include "grad/simulate.h"
#include "testing/dense_oracle.h"

namespace qmlsim {
namespace {

using testing::noisy_circuit;
using testing::random_channel;
using testing::random_observable;
using testing::random_parametric_circuit;

std::vector<double> random_theta(int slots, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-3, 3);
  std::vector<double> t(static_cast<std::size_t>(slots));
  for (double& x : t) x = u(rng);
  return t;
}

TEST(DensityMatrix, EqualsTheDenseOracleOnRandomNoisyCircuits) {
  std::mt19937_64 rng(48);
  for (int trial = 0; trial < 30; ++trial) {
    const int n = 1 + trial % 5;
    const Circuit c = noisy_circuit(n, 12, 3, rng);
    const std::vector<double> theta = random_theta(3, rng);
    const Matrix want = testing::run_dense_density(c, theta);
    SimulateRequest req;
    req.observables = {random_observable(n, rng), random_observable(n, rng)};
    req.state = true;
    req.probabilities = true;
    for (int fusion : {0, 3}) {
      EngineOptions o;
      o.fusion = fusion;
      o.threads = 1 + trial % 2;
      const SimulateResult got = simulate<double>(c, theta, req, o);
      ASSERT_EQ(got.state.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i)
        ASSERT_LT(std::abs(got.state[i] - want[i]), 1e-12) << "trial " << trial << " entry " << i;
      for (std::size_t k = 0; k < req.observables.size(); ++k)
        EXPECT_NEAR(got.expvals[k], testing::expval_dense_density(req.observables[k], want, n),
                    1e-12);
      const std::size_t d = std::size_t{1} << n;
      for (std::size_t i = 0; i < d; ++i)
        EXPECT_NEAR(got.probabilities[i], want[i * d + i].real(), 1e-12);
      const SimulateResult single = simulate<float>(c, theta, req, o);
      for (std::size_t k = 0; k < req.observables.size(); ++k)
        EXPECT_NEAR(single.expvals[k], got.expvals[k], 1e-5);
    }
  }
}

TEST(DensityMatrix, NoiselessCircuitsEqualTheStateVector) {
  std::mt19937_64 rng(49);
  for (int n : {1, 3, 6}) {
    const Circuit c = random_parametric_circuit(n, 25, 4, rng);
    const std::vector<double> theta = random_theta(4, rng);
    SimulateRequest req;
    req.observables = {random_observable(n, rng)};
    req.probabilities = true;
    req.shots = 2000;
    req.most_probable = true;
    EngineOptions dm;
    dm.method = Method::density_matrix;
    const SimulateResult sv = simulate<double>(c, theta, req, {});
    const SimulateResult rho = simulate<double>(c, theta, req, dm);
    EXPECT_NEAR(rho.expvals[0], sv.expvals[0], 1e-12);
    for (std::size_t i = 0; i < sv.probabilities.size(); ++i)
      EXPECT_NEAR(rho.probabilities[i], sv.probabilities[i], 1e-12);
    EXPECT_EQ(rho.counts, sv.counts);  // the same sampler on the same probabilities
    EXPECT_EQ(rho.most_probable, sv.most_probable);
    // From a given pure state, too.
    const std::vector<cplx> psi = testing::random_state(n, rng);
    dm.initial_state = psi;
    EngineOptions from;
    from.initial_state = psi;
    EXPECT_NEAR(simulate<double>(c, theta, req, dm).expvals[0],
                simulate<double>(c, theta, req, from).expvals[0], 1e-12);
  }
}

// A mixed starting state (initial_state holding rho, row-major): by linearity
// the mixture of the pure starts' results, for values, the final matrix and
// gradients; Method::automatic takes the density matrix for it even without
// channels, and the state-vector method refuses it.
TEST(DensityMatrix, StartsFromAGivenDensityMatrix) {
  std::mt19937_64 rng(53);
  for (int n : {1, 3}) {
    for (bool noisy : {false, true}) {
      const Circuit c =
          noisy ? noisy_circuit(n, 10, 3, rng) : random_parametric_circuit(n, 10, 3, rng);
      const std::vector<double> theta = random_theta(3, rng);
      const std::size_t dim = std::size_t{1} << n;
      const std::vector<cplx> a = testing::random_state(n, rng), b = testing::random_state(n, rng);
      const double pa = 0.3, pb = 0.7;
      std::vector<cplx> rho(dim * dim);
      for (std::size_t r = 0; r < dim; ++r)
        for (std::size_t k = 0; k < dim; ++k)
          rho[r * dim + k] = pa * a[r] * std::conj(a[k]) + pb * b[r] * std::conj(b[k]);
      SimulateRequest req;
      req.observables = {random_observable(n, rng)};
      req.state = true;
      const std::vector<PauliSum> obs = req.observables;
      const double w[] = {1.0};
      EngineOptions from_rho, from_a, from_b;
      from_rho.initial_state = rho;
      from_a.method = from_b.method = Method::density_matrix;
      from_a.initial_state = a;
      from_b.initial_state = b;
      const SimulateResult got = simulate<double>(c, theta, req, from_rho);
      const SimulateResult ra = simulate<double>(c, theta, req, from_a);
      const SimulateResult rb = simulate<double>(c, theta, req, from_b);
      ASSERT_EQ(got.state.size(), dim * dim);  // automatic chose the density matrix
      EXPECT_NEAR(got.expvals[0], pa * ra.expvals[0] + pb * rb.expvals[0], 1e-12);
      for (std::size_t i = 0; i < got.state.size(); ++i)
        EXPECT_LT(std::abs(got.state[i] - (pa * ra.state[i] + pb * rb.state[i])), 1e-12);
      const AdjointResult g = adjoint_vjp<double>(c, theta, obs, w, from_rho);
      const AdjointResult ga = adjoint_vjp<double>(c, theta, obs, w, from_a);
      const AdjointResult gb = adjoint_vjp<double>(c, theta, obs, w, from_b);
      for (std::size_t s = 0; s < theta.size(); ++s)
        EXPECT_NEAR(g.gradient[s], pa * ga.gradient[s] + pb * gb.gradient[s], 1e-12);
      if (!noisy) {
        EngineOptions sv = from_rho;
        sv.method = Method::statevector;
        EXPECT_THROW(simulate<double>(c, theta, req, sv), Error);
      }
    }
  }
}

// Central finite differences of L = sum_k w_k Tr(H_k rho) in complex128.
std::vector<double> finite_differences(const Circuit& c, std::vector<double> theta,
                                       const std::vector<PauliSum>& obs, const double* w) {
  SimulateRequest req;
  req.observables = obs;
  auto loss = [&](const std::vector<double>& t) {
    const std::vector<double> e = simulate<double>(c, t, req, {}).expvals;
    double l = 0;
    for (std::size_t k = 0; k < e.size(); ++k) l += w[k] * e[k];
    return l;
  };
  std::vector<double> g(theta.size());
  const double h = 1e-5;
  for (std::size_t s = 0; s < theta.size(); ++s) {
    const double t0 = theta[s];
    theta[s] = t0 + h;
    const double up = loss(theta);
    theta[s] = t0 - h;
    g[s] = (up - loss(theta)) / (2 * h);
    theta[s] = t0;
  }
  return g;
}

// adjoint_jacobian's rows and expectation values against a VJP per
// observable, under a checkpoint budget.
void expect_jacobian_rows_are_vjps(const Circuit& c, const std::vector<double>& theta,
                                   const std::vector<PauliSum>& obs, std::uint64_t budget) {
  EngineOptions o;
  o.checkpoint_bytes = budget;
  std::vector<double> expvals;
  const auto jac = adjoint_jacobian<double>(c, theta, obs, o, &expvals);
  ASSERT_EQ(jac.size(), obs.size());
  ASSERT_EQ(expvals.size(), obs.size());
  for (std::size_t k = 0; k < obs.size(); ++k) {
    std::vector<double> w(obs.size(), 0.0);
    w[k] = 1;
    const AdjointResult row = adjoint_vjp<double>(c, theta, obs, w, o);
    EXPECT_NEAR(expvals[k], row.expvals[k], 1e-12);
    for (std::size_t s = 0; s < theta.size(); ++s)
      EXPECT_NEAR(jac[k][s], row.gradient[s], 1e-12) << "budget " << budget << " row " << k;
  }
}

TEST(DensityMatrix, GradientsEqualFiniteDifferences) {
  std::mt19937_64 rng(50);
  for (int trial = 0; trial < 16; ++trial) {
    const int n = 2 + trial % 4;
    const Circuit c = noisy_circuit(n, 16, 4, rng);
    const std::vector<double> theta = random_theta(4, rng);
    const std::vector<PauliSum> obs = {random_observable(n, rng), random_observable(n, rng)};
    const double w[] = {0.8, -1.1};
    const std::vector<double> want = finite_differences(c, theta, obs, w);
    for (int fusion : {0, 3}) {
      EngineOptions o;
      o.fusion = fusion;
      o.threads = 1 + trial % 2;
      const AdjointResult g = adjoint_vjp<double>(c, theta, obs, w, o);
      for (std::size_t s = 0; s < theta.size(); ++s)
        ASSERT_NEAR(g.gradient[s], want[s], 1e-7) << "trial " << trial << " slot " << s;
      // Checkpoints beyond the budget: every k-th kept, the rest recomputed.
      o.checkpoint_bytes = 1;
      const AdjointResult r = adjoint_vjp<double>(c, theta, obs, w, o);
      for (std::size_t s = 0; s < theta.size(); ++s)
        EXPECT_NEAR(r.gradient[s], g.gradient[s], 1e-12);
      const AdjointResult f = adjoint_vjp<float>(c, theta, obs, w, o);
      for (std::size_t s = 0; s < theta.size(); ++s) EXPECT_NEAR(f.gradient[s], want[s], 2e-3);
    }
    // The Jacobian's rows are the observables' gradients (one forward pass,
    // a backward pass per row from copies), with states kept or channels undone.
    for (std::uint64_t budget : {std::uint64_t{1}, EngineOptions{}.checkpoint_bytes})
      expect_jacobian_rows_are_vjps(c, theta, obs, budget);
  }
}

// A loss whose weights depend on the readouts (a training loss): the weights
// are asked once, of the final <H_k> the gradient's own forward pass reads,
// and the gradient is the fixed-weight one at those weights.
TEST(DensityMatrix, ReadoutDependentWeightsComeFromTheGradientsForwardPass) {
  std::mt19937_64 rng(53);
  for (int trial = 0; trial < 8; ++trial) {
    const int n = 2 + trial % 3;
    const Circuit c = noisy_circuit(n, 14, 3, rng);
    const std::vector<double> theta = random_theta(3, rng);
    const std::vector<PauliSum> obs = {random_observable(n, rng), random_observable(n, rng)};
    EngineOptions o;
    o.threads = 1 + trial % 2;
    SimulateRequest req;
    req.observables = obs;
    const std::vector<double> e = simulate<double>(c, theta, req, o).expvals;
    int calls = 0;
    const WeightsFn loss = [&](std::span<const double> readouts) {
      ++calls;
      EXPECT_EQ(readouts.size(), obs.size());
      for (std::size_t k = 0; k < readouts.size(); ++k) EXPECT_NEAR(readouts[k], e[k], 1e-12);
      return std::vector<double>{2 * readouts[0], -readouts[1]};
    };
    const AdjointResult got = adjoint_vjp<double>(c, theta, obs, loss, o);
    EXPECT_EQ(calls, 1);
    const double w[] = {2 * e[0], -e[1]};
    const AdjointResult want = adjoint_vjp<double>(c, theta, obs, w, o);
    ASSERT_EQ(got.gradient.size(), want.gradient.size());
    for (std::size_t s = 0; s < want.gradient.size(); ++s)
      EXPECT_NEAR(got.gradient[s], want.gradient[s], 1e-12) << "trial " << trial << " slot " << s;
    const WeightsFn short_loss = [](std::span<const double>) { return std::vector<double>{1}; };
    EXPECT_THROW(adjoint_vjp<double>(c, theta, obs, short_loss, o), Error);
  }
}

// States before channels beyond the checkpoint budget: invertible channels
// are undone by their inverses (no states kept); a singular one (amplitude
// damping with gamma = 1: a reset) makes the pass keep every k-th state and
// recompute the rest. Within the budget every state the backward pass reads
// is kept: not the one before the dephasing group that follows a stretch of
// CNOTs (nothing trainable), whose leg runs on into the next. All against
// finite differences, in both precisions.
TEST(DensityMatrix, GradientsUndoInvertibleChannelsAndKeepStatesForOthers) {
  std::mt19937_64 rng(51);
  for (double gamma : {0.02, 1.0}) {
    const int n = 3;
    Circuit c(n);
    const Circuit layer = random_parametric_circuit(n, 6, 3, rng);
    for (int rep = 0; rep < 3; ++rep) {
      for (const Operation& op : layer.ops()) c.add(op);
      for (int q = 0; q < n; ++q) {
        Operation noise;
        noise.channel = q == rep ? ChannelId::amplitude_damping : ChannelId::depolarizing;
        noise.wires = {q};
        noise.params = {ParamExpr::literal(q == rep ? gamma : 0.01)};
        c.add(noise);
      }
      for (int q = 0; q + 1 < n; ++q) c.add(GateId::CNOT, {q, q + 1});
      for (int q = 0; q < n; ++q) {
        Operation noise;
        noise.channel = ChannelId::phase_flip;
        noise.wires = {q};
        noise.params = {ParamExpr::literal(0.03)};
        c.add(noise);
      }
    }
    const std::vector<double> theta = random_theta(3, rng);
    const std::vector<PauliSum> obs = {random_observable(n, rng)};
    const double w[] = {1.0};
    const std::vector<double> want = finite_differences(c, theta, obs, w);
    for (std::uint64_t budget : {std::uint64_t{1}, EngineOptions{}.checkpoint_bytes}) {
      EngineOptions o;
      o.checkpoint_bytes = budget;
      const AdjointResult d = adjoint_vjp<double>(c, theta, obs, w, o);
      const AdjointResult f = adjoint_vjp<float>(c, theta, obs, w, o);
      for (std::size_t s = 0; s < theta.size(); ++s) {
        EXPECT_NEAR(d.gradient[s], want[s], 1e-7) << "gamma " << gamma << " slot " << s;
        EXPECT_NEAR(f.gradient[s], want[s], 2e-4) << "gamma " << gamma << " slot " << s;
      }
      // Three rows: the kept (or recomputed) states serve every backward pass.
      expect_jacobian_rows_are_vjps(
          c, theta, {obs[0], random_observable(n, rng), random_observable(n, rng)}, budget);
    }
  }
}

// Channel parameters as trainable slots (value = 0.5 theta[slot] + shift):
// every table channel's parameters, in noise layers where trainable channels
// sit between literal ones, against finite differences; with the channels
// undone (where all are invertible), and with a reset after them the states
// kept or recomputed.
// A random noisy circuit on n qubits with a noise layer (channels back to
// back) in the middle, most channel parameters trainable slots after the
// gates' three; theta gets every slot's value.
Circuit with_trainable_noise(int n, std::vector<double>& theta, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  const int gate_slots = 3;
  Circuit noisy = noisy_circuit(n, 12, gate_slots, rng);
  for (int q = 0; q < n; ++q) {  // a noise layer: channels back to back
    Operation op = random_channel(n, rng);
    op.wires.resize(1);
    op.wires[0] = q;
    if (channel_info(op.channel).num_wires == 2) op.wires.push_back((q + 1) % n);
    noisy.add(op);
  }
  const Circuit tail = noisy_circuit(n, 6, gate_slots, rng);
  for (const Operation& op : tail.ops()) noisy.add(op);
  theta = random_theta(gate_slots, rng);
  Circuit c(n);
  for (Operation op : noisy.ops()) {
    for (ParamExpr& p : op.params)
      if (op.is_channel() && u(rng) < 0.7) {  // trainable, same value
        const double t = 2 * p.shift * u(rng);
        p = ParamExpr::ref(static_cast<int>(theta.size()), 0.5, p.shift - 0.5 * t);
        theta.push_back(t);
      }
    c.add(op);
  }
  return c;
}

TEST(DensityMatrix, ChannelParameterGradientsEqualFiniteDifferences) {
  std::mt19937_64 rng(52);
  for (int trial = 0; trial < 12; ++trial) {
    const int n = 2 + trial % 3;
    std::vector<double> theta;
    Circuit c = with_trainable_noise(n, theta, rng);
    const std::vector<PauliSum> obs = {random_observable(n, rng)};
    const double w[] = {1.3};
    // A reset at the end (damping with gamma = 1: singular) keeps the pass
    // from undoing channels: the states are then kept or recomputed.
    for (bool singular : {false, true}) {
      if (singular) {
        Operation reset;
        reset.channel = ChannelId::amplitude_damping;
        reset.wires = {0};
        reset.params = {ParamExpr::literal(1.0)};
        c.add(reset);
      }
      const std::vector<double> want = finite_differences(c, theta, obs, w);
      for (std::uint64_t budget : {std::uint64_t{1} << 40, std::uint64_t{1}}) {
        EngineOptions o;
        o.fusion = trial % 2 ? 3 : 0;
        o.threads = 1 + trial % 2;
        o.checkpoint_bytes = budget;
        const AdjointResult g = adjoint_vjp<double>(c, theta, obs, w, o);
        for (std::size_t s = 0; s < theta.size(); ++s)
          ASSERT_NEAR(g.gradient[s], want[s], 1e-7) << "trial " << trial << " slot " << s;
        const AdjointResult f = adjoint_vjp<float>(c, theta, obs, w, o);
        for (std::size_t s = 0; s < theta.size(); ++s) EXPECT_NEAR(f.gradient[s], want[s], 2e-3);
      }
    }
  }
  // Only invertible channels (depolarizing) and states beyond the budget: the
  // pass undoes them instead of keeping states.
  const int n = 3;
  Circuit c = random_parametric_circuit(n, 10, 2, rng);
  std::vector<double> theta = random_theta(2, rng);
  for (int q = 0; q < n; ++q) {
    Operation op;
    op.channel = q == 1 ? ChannelId::bit_flip : ChannelId::depolarizing;
    op.wires = {q};
    op.params = {ParamExpr::ref(static_cast<int>(theta.size()))};
    theta.push_back(0.05 + 0.1 * q);
    c.add(op);
  }
  const Circuit tail = random_parametric_circuit(n, 10, 2, rng);
  for (const Operation& op : tail.ops()) c.add(op);
  const std::vector<PauliSum> obs = {random_observable(n, rng)};
  const double w[] = {1.0};
  const std::vector<double> want = finite_differences(c, theta, obs, w);
  EngineOptions beyond;
  beyond.checkpoint_bytes = 1;
  const AdjointResult g = adjoint_vjp<double>(c, theta, obs, w, beyond);
  for (std::size_t s = 0; s < theta.size(); ++s) EXPECT_NEAR(g.gradient[s], want[s], 1e-7);
}

// The VJP of the final density matrix with a complex (not Hermitian)
// cotangent G: d/dtheta Re sum G rho against central differences, through
// state_vjp (which takes it for circuits that run on the density matrix).
TEST(DensityMatrix, StateVjpEqualsFiniteDifferencesOfRho) {
  std::mt19937_64 rng(54);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int trial = 0; trial < 6; ++trial) {
    const int n = 1 + trial % 3;
    const Circuit c = noisy_circuit(n, 12, 3, rng);
    const std::vector<double> theta = random_theta(3, rng);
    const std::size_t dim = std::size_t{1} << n;
    std::vector<cplx> g(dim * dim);
    for (cplx& x : g) x = {u(rng), u(rng)};
    SimulateRequest req;
    req.state = true;
    auto value = [&](const std::vector<double>& t) {
      const std::vector<cplx> rho = simulate<double>(c, t, req, {}).state;
      double sum = 0;
      for (std::size_t i = 0; i < rho.size(); ++i) sum += (g[i] * rho[i]).real();
      return sum;
    };
    const std::vector<double> got = state_vjp<double>(c, theta, g, {});
    for (std::size_t s = 0; s < theta.size(); ++s) {
      std::vector<double> up = theta, down = theta;
      up[s] += 1e-6;
      down[s] -= 1e-6;
      EXPECT_NEAR(got[s], (value(up) - value(down)) / 2e-6, 1e-7) << trial << " " << s;
    }
  }
}

TEST(DensityMatrix, RefusesWhatItCannotDo) {
  Circuit c(1);
  Operation op;
  op.channel = ChannelId::amplitude_damping;
  op.wires = {0};
  op.params = {ParamExpr::ref(0)};
  c.add(op);
  const double theta[] = {1.0}, w[] = {1.0};
  const PauliSum z = parse_pauli_sum("Z0", "test");
  EXPECT_THROW(adjoint_vjp<double>(c, theta, {z}, w, {}), Error);  // d/dgamma at 1: infinite
  c = Circuit(1);
  op.channel = ChannelId::bit_flip;
  c.add(op);
  const double p[] = {0.1};
  EngineOptions trajectories;  // trajectories do not differentiate channels
  trajectories.method = Method::trajectories;
  EXPECT_THROW(adjoint_vjp<double>(c, p, {z}, w, trajectories), Error);
  SimulateRequest req;
  req.observables = {z};
  EXPECT_NEAR(simulate<double>(c, p, req, {}).expvals[0], 0.8, 1e-15);
  EXPECT_NEAR(adjoint_vjp<double>(c, p, {z}, w, {}).gradient[0], -2, 1e-15);
  EngineOptions sv;
  sv.method = Method::statevector;
  EXPECT_THROW(simulate<double>(c, p, req, sv), Error);
}

// The density matrix on the GPU (its kernels, two-sided sweep and readouts)
// against the CPU's on random noisy circuits with trainable channels: values,
// probabilities, the matrix, VJPs with states kept and channels undone,
// Jacobians and the state VJP, c128 and c64; skipped where there is no GPU.
template <class R>
void expect_gpu_density_matrix_equals_cpu(double tol) {
  std::mt19937_64 rng(61);
  for (int trial = 0; trial < 10; ++trial) {
    const int n = 2 + trial % 5;
    std::vector<double> theta;
    const Circuit c = with_trainable_noise(n, theta, rng);
    const std::vector<PauliSum> obs = {random_observable(n, rng), random_observable(n, rng)};
    EngineOptions cpu, gpu;
    gpu.backend = Backend::cuda;
    SimulateRequest req;
    req.observables = obs;
    req.probabilities = req.state = true;
    const SimulateResult a = simulate<R>(c, theta, req, cpu), b = simulate<R>(c, theta, req, gpu);
    for (std::size_t k = 0; k < obs.size(); ++k) EXPECT_NEAR(b.expvals[k], a.expvals[k], tol);
    for (std::size_t i = 0; i < a.probabilities.size(); ++i)
      EXPECT_NEAR(b.probabilities[i], a.probabilities[i], tol);
    for (std::size_t i = 0; i < a.state.size(); ++i)
      EXPECT_NEAR(std::abs(b.state[i] - a.state[i]), 0, tol);
    const double w[] = {0.9, -0.4};
    for (std::uint64_t budget : {std::uint64_t{1} << 40, std::uint64_t{1}}) {
      cpu.checkpoint_bytes = gpu.checkpoint_bytes = budget;
      const AdjointResult x = adjoint_vjp<R>(c, theta, obs, w, cpu);
      const AdjointResult y = adjoint_vjp<R>(c, theta, obs, w, gpu);
      for (std::size_t s = 0; s < theta.size(); ++s)
        ASSERT_NEAR(y.gradient[s], x.gradient[s], tol) << "trial " << trial << " slot " << s;
      const auto jx = adjoint_jacobian<R>(c, theta, obs, cpu);
      const auto jy = adjoint_jacobian<R>(c, theta, obs, gpu);
      for (std::size_t k = 0; k < obs.size(); ++k)
        for (std::size_t s = 0; s < theta.size(); ++s) EXPECT_NEAR(jy[k][s], jx[k][s], tol);
    }
    std::vector<cplx> g(a.state.size());
    for (cplx& e : g) e = {std::uniform_real_distribution<double>(-1, 1)(rng), 0.3};
    const std::vector<double> sx = state_vjp<R>(c, theta, g, cpu),
                              sy = state_vjp<R>(c, theta, g, gpu);
    for (std::size_t s = 0; s < theta.size(); ++s) EXPECT_NEAR(sy[s], sx[s], tol);
  }
}

TEST(DensityMatrix, CudaBackendEqualsCpu) {
  const cuda::DeviceStatus gpu = cuda::device_status();
  if (gpu.count == 0)
    GTEST_SKIP() << "no GPU here (" << gpu.error << "): CUDA density matrix skipped";
  cuda::select_device(0);
  expect_gpu_density_matrix_equals_cpu<double>(1e-10);
  expect_gpu_density_matrix_equals_cpu<float>(2e-4);
}

}  // namespace
}  // namespace qmlsim
