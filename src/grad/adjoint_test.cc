// Adjoint gradients against parameter shift and finite differences on random
// circuits that use every parametric gate, shared parameters, scales and shifts.
#include "grad/adjoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numbers>
#include <random>

#include "backends/cpu/statevector.h"
#include "backends/cuda/statevector.h"
#include "core/error.h"
#include "grad/adjoint_parts.h"
#include "grad/shift.h"
#include "grad/simulate.h"
#include "grad/tape.h"
#include "testing/dense_oracle.h"

namespace qmlsim {
namespace {

using testing::random_observable;
using testing::random_parametric_circuit;

TEST(Adjoint, EqualsParameterShiftOnRandomCircuits) {
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> u(-3, 3);
  int checked = 0;
  for (int trial = 0; trial < 100; ++trial) {
    const int n = 1 + trial % 12;
    const int slots = 3 + static_cast<int>(rng() % 6);
    const Circuit c = random_parametric_circuit(n, 4 + static_cast<int>(rng() % 12), slots, rng);
    std::vector<double> theta(slots);
    for (double& t : theta) t = u(rng);
    const PauliSum h = random_observable(n, rng);
    const double w[] = {1.0};
    const std::vector<double> want = parameter_shift_gradient<double>(c, theta, h);
    const AdjointResult d = adjoint_vjp<double>(c, theta, {h}, w, {1, 3});
    const AdjointResult f = adjoint_vjp<float>(c, theta, {h}, w, {1, 3});
    for (int s = 0; s < slots; ++s) {
      ASSERT_NEAR(d.gradient[s], want[s], 1e-9) << "trial " << trial << " slot " << s;
      ASSERT_NEAR(f.gradient[s], want[s], 1e-4) << "trial " << trial << " slot " << s;
    }
    EXPECT_NEAR(d.expvals[0], shifted_expval<double>(c, theta, h, -1, 0, 0), 1e-12);
    ++checked;
  }
  EXPECT_EQ(checked, 100);
}

// Pauli rotations on up to every qubit (UCCSD's excitations, Trotter steps):
// MultiRZ between basis changes, with widths past the fused step's 256
// diagonal entries, in blocked and unblocked sweeps, against parameter shift.
TEST(Adjoint, WideMultiRZEqualsParameterShift) {
  std::mt19937_64 rng(77);
  std::uniform_real_distribution<double> u(-3, 3);
  const int n = 11;
  Circuit c(n);
  for (int q = 0; q < n; ++q) c.add(GateId::RY, {q}, {ParamExpr::literal(u(rng))});
  for (int width : {2, 5, 9, 11, 10}) {
    std::vector<int> wires(n);
    for (int q = 0; q < n; ++q) wires[q] = q;
    std::shuffle(wires.begin(), wires.end(), rng);
    wires.resize(width);
    c.add(GateId::H, {wires[0]});
    c.add(GateId::RX, {wires[1]}, {ParamExpr::literal(std::numbers::pi / 2)});
    c.add(GateId::MultiRZ, wires, {ParamExpr::ref(width % 3, width == 10 ? -0.5 : 1.0, 0.1)});
    c.add(GateId::H, {wires[0]});
    c.add(GateId::RX, {wires[1]}, {ParamExpr::literal(-std::numbers::pi / 2)});
    c.add(GateId::CNOT, {wires[width - 1], wires[0]});
  }
  const std::vector<double> theta = {0.3, -1.2, 0.8};
  PauliSum h;
  h.add(0.7, 0b101, 0b100);
  h.add(-0.4, 0, (index_t{1} << 10) | 1);
  const std::vector<double> want = parameter_shift_gradient<double>(c, theta, h);
  const double w[] = {1.0};
  for (int chunk : {-1, 0, 8}) {
    EngineOptions o{2, 3};
    o.chunk_qubits = chunk;
    const AdjointResult d = adjoint_vjp<double>(c, theta, {h}, w, o);
    const AdjointResult f = adjoint_vjp<float>(c, theta, {h}, w, o);
    for (std::size_t s = 0; s < theta.size(); ++s) {
      EXPECT_NEAR(d.gradient[s], want[s], 1e-10) << "chunk " << chunk << " slot " << s;
      EXPECT_NEAR(f.gradient[s], want[s], 1e-4) << "chunk " << chunk << " slot " << s;
    }
  }
}

TEST(Adjoint, StartsFromAGivenInitialState) {
  // The circuit after a prepared state: values against the dense oracle from
  // that state, gradients against central differences of the oracle.
  std::mt19937_64 rng(31);
  const int n = 7;
  const Circuit c = random_parametric_circuit(n, 30, 5, rng);
  const std::vector<double> theta = {0.4, -0.9, 1.7, 0.2, -2.1};
  const PauliSum h = random_observable(n, rng);
  const testing::State psi0 = testing::random_state(n, rng);
  auto oracle = [&](const std::vector<double>& t) {
    return testing::expval_dense(h, testing::run_dense(c, t, psi0));
  };
  for (int blocking : {-1, 4}) {  // the default chunk, and chunks smaller than the state
    EngineOptions o{2, 3};
    o.chunk_qubits = blocking;
    o.initial_state = psi0;
    const double w[] = {1.0};
    const AdjointResult r = adjoint_vjp<double>(c, theta, {h}, w, o);
    EXPECT_NEAR(r.expvals[0], oracle(theta), 1e-12);
    SimulateRequest req;
    req.observables = {h};
    EXPECT_NEAR(simulate<double>(c, theta, req, o).expvals[0], oracle(theta), 1e-12);
    std::vector<double> values;
    const std::vector<std::vector<double>> jac =
        adjoint_jacobian<double>(c, theta, {h, h}, o, &values);
    ASSERT_EQ(values.size(), 2u);
    EXPECT_NEAR(values[1], oracle(theta), 1e-12);
    for (std::size_t s = 0; s < theta.size(); ++s) {
      std::vector<double> up = theta, down = theta;
      up[s] += 1e-6;
      down[s] -= 1e-6;
      const double fd = (oracle(up) - oracle(down)) / 2e-6;
      EXPECT_NEAR(r.gradient[s], fd, 1e-8) << s;
      EXPECT_NEAR(jac[1][s], fd, 1e-8) << s;
    }
  }
  EngineOptions wrong;
  const std::vector<cplx> short_state(4, 0.5);
  wrong.initial_state = short_state;
  SimulateRequest req;
  req.observables = {h};
  EXPECT_THROW(simulate<double>(c, theta, req, wrong), Error);
}

TEST(Adjoint, FusionOffAndOnAgreeAndMatchFiniteDifferences) {
  std::mt19937_64 rng(5);
  const int n = 6;
  const Circuit c = random_parametric_circuit(n, 40, 5, rng);
  const std::vector<double> theta = {0.3, -1.2, 2.2, 0.7, -0.4};
  const PauliSum h = random_observable(n, rng);
  const double w[] = {1.0};
  const AdjointResult a = adjoint_vjp<double>(c, theta, {h}, w, {1, 0});
  const AdjointResult b = adjoint_vjp<double>(c, theta, {h}, w, {2, 4});
  const std::vector<double> fd = finite_difference_gradient<double>(c, theta, h, 1e-5);
  for (std::size_t s = 0; s < theta.size(); ++s) {
    EXPECT_NEAR(a.gradient[s], b.gradient[s], 1e-11);
    EXPECT_NEAR(a.gradient[s], fd[s], 1e-7);
  }
}

TEST(Adjoint, CacheBlockedSweepEqualsPlainAndParameterShift) {
  std::mt19937_64 rng(11);
  const int n = 12;  // with 10-qubit chunks the sweep gathers strided chunks
  const Circuit c = random_parametric_circuit(n, 80, 6, rng);
  std::vector<double> theta = {0.4, -0.9, 1.3, 2.1, -2.5, 0.05};
  const PauliSum h = random_observable(n, rng);
  const double w[] = {1.0};
  const AdjointResult plain = adjoint_vjp<double>(c, theta, {h}, w, {2, 3, 0});
  const AdjointResult blocked = adjoint_vjp<double>(c, theta, {h}, w, {2, 3, 10});
  const AdjointResult one_thread = adjoint_vjp<double>(c, theta, {h}, w, {1, 3, 10});
  const std::vector<double> ps = parameter_shift_gradient<double>(c, theta, h);
  for (std::size_t s = 0; s < theta.size(); ++s) {
    EXPECT_NEAR(blocked.gradient[s], plain.gradient[s], 1e-11);
    EXPECT_NEAR(blocked.gradient[s], ps[s], 1e-9);
    EXPECT_EQ(blocked.gradient[s], one_thread.gradient[s]);  // fixed-order reductions
  }
  // complex64: the SIMD cross-matrix path sums in float within 256 groups.
  const AdjointResult f = adjoint_vjp<float>(c, theta, {h}, w, {2, 3, 10});
  for (std::size_t s = 0; s < theta.size(); ++s) EXPECT_NEAR(f.gradient[s], ps[s], 1e-4);
}

TEST(Adjoint, RotLayersWithCnotRingsBlockedEqualPlainAndParameterShift) {
  // The gradient benchmark's shape: in the blocked sweep the CNOT rings run as
  // composed permutations and the Rot gates as fused steps (lane and hi targets).
  const int n = 12;
  Circuit c(n);
  int slot = 0;
  for (int layer = 0; layer < 2; ++layer) {
    for (int q = 0; q < n; ++q, slot += 3)
      c.add(GateId::Rot, {q},
            std::vector<ParamExpr>{ParamExpr::ref(slot), ParamExpr::ref(slot + 1),
                                   ParamExpr::ref(slot + 2)});
    for (int q = 0; q < n; ++q) c.add(GateId::CNOT, {q, (q + 1) % n});
  }
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> u(-3, 3);
  std::vector<double> theta(static_cast<std::size_t>(slot));
  for (double& t : theta) t = u(rng);
  const PauliSum h = parse_pauli_sum("Z0 Z1 + 0.5*X2 - 0.25*Y11", "test");
  const double w[] = {1.0};
  const std::vector<double> ps = parameter_shift_gradient<double>(c, theta, h);
  for (int chunk : {0, 9, 10}) {
    const AdjointResult d = adjoint_vjp<double>(c, theta, {h}, w, {1, 3, chunk});
    const AdjointResult f = adjoint_vjp<float>(c, theta, {h}, w, {2, 3, chunk});
    for (std::size_t s = 0; s < theta.size(); ++s) {
      ASSERT_NEAR(d.gradient[s], ps[s], 1e-9) << "chunk " << chunk << " slot " << s;
      ASSERT_NEAR(f.gradient[s], ps[s], 1e-4) << "chunk " << chunk << " slot " << s;
    }
  }
}

TEST(Adjoint, TwoQubitTrainableBlocksEqualParameterShift) {
  // A QCNN's shape: trainable two-qubit unitaries with one-qubit rotations on
  // the same pair, then the next pair. The sweep cuts each pair's steps into one
  // two-qubit block (one measurement, every step's cross matrix derived from
  // it); fixed CNOTs and one-qubit steps on other qubits stay out of it.
  const int n = 6;
  Circuit c(n);
  int slot = 0;
  auto ref = [&] { return std::vector<ParamExpr>{ParamExpr::ref(slot++)}; };
  for (int layer = 0; layer < 2; ++layer)
    for (int a = layer; a + 1 < n; a += 2) {
      c.add(GateId::RY, {a}, ref());
      c.add(GateId::IsingXX, {a, a + 1}, ref());
      c.add(GateId::RZ, {a + 1}, ref());
      c.add(GateId::IsingYY, {a, a + 1}, ref());
      c.add(GateId::CRX, {a + 1, a}, ref());
      c.add(GateId::CNOT, {a + 1, (a + 2) % n});
    }
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<double> u(-3, 3);
  std::vector<double> theta(static_cast<std::size_t>(slot));
  for (double& t : theta) t = u(rng);
  const std::vector<TapeStep> tape = make_tape(c, theta);  // seg's steps point into it
  const Segmented seg = segment(tape, 3);
  int pair_blocks = 0;
  for (std::size_t i = 0; i < seg.gates.size(); ++i) {
    const auto trainable =
        std::count_if(seg.steps[i].begin(), seg.steps[i].end(),
                      [](const BlockStep& b) { return !b.step->derivatives.empty(); });
    if (seg.gates[i].targets.size() == 2 && trainable >= 4) ++pair_blocks;
  }
  EXPECT_GE(pair_blocks, 4);
  const PauliSum h = parse_pauli_sum("Z0 Z1 + 0.5*X2 - 0.25*Y5", "test");
  const double w[] = {1.0};
  const std::vector<double> ps = parameter_shift_gradient<double>(c, theta, h);
  for (int chunk : {0, 4}) {
    const AdjointResult d = adjoint_vjp<double>(c, theta, {h}, w, {1, 3, chunk});
    for (std::size_t s = 0; s < theta.size(); ++s)
      ASSERT_NEAR(d.gradient[s], ps[s], 1e-9) << "chunk " << chunk << " slot " << s;
  }
}

TEST(Adjoint, EncodingLayerJoinsTheRotLayerAfterIt) {
  // RX on every wire, then Rot on every wire and a CRot ring (the dressed
  // classifier's shape): each RX moves back to meet its wire's Rot, one block of
  // two steps per wire; the blocked sweep measures consecutive one-qubit blocks
  // in pairs. Gradients against parameter shift, blocked and plain.
  const int n = 9;
  Circuit c(n);
  int slot = 0;
  auto ref = [&](int k) {
    std::vector<ParamExpr> p;
    for (int j = 0; j < k; ++j) p.push_back(ParamExpr::ref(slot++));
    return p;
  };
  for (int q = 0; q < n; ++q) c.add(GateId::RX, {q}, ref(1));
  for (int q = 0; q < n; ++q) c.add(GateId::Rot, {q}, ref(3));
  for (int q = 0; q < n; ++q) c.add(GateId::CRot, {q, (q + n - 1) % n}, ref(3));
  for (int q = 0; q < n; ++q) c.add(GateId::Rot, {q}, ref(3));
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> u(-3, 3);
  std::vector<double> theta(static_cast<std::size_t>(slot));
  for (double& t : theta) t = u(rng);
  const std::vector<TapeStep> tape = make_tape(c, theta);  // seg's steps point into it
  const Segmented seg = segment(tape, 3);
  int joined = 0;  // blocks holding an RX step (one angle) and more
  for (const std::vector<BlockStep>& steps : seg.steps)
    for (const BlockStep& b : steps)
      if (b.step->derivatives.size() == 1 && steps.size() >= 2) ++joined;
  EXPECT_EQ(joined, n);
  const PauliSum h = parse_pauli_sum("Z0 + 0.5*Z1 Z4 - 0.25*X8", "test");
  const double w[] = {1.0};
  const std::vector<double> ps = parameter_shift_gradient<double>(c, theta, h);
  for (int chunk : {0, 6}) {
    const AdjointResult d = adjoint_vjp<double>(c, theta, {h}, w, {1, 3, chunk});
    for (std::size_t s = 0; s < theta.size(); ++s)
      ASSERT_NEAR(d.gradient[s], ps[s], 1e-9) << "chunk " << chunk << " slot " << s;
    const AdjointResult f = adjoint_vjp<float>(c, theta, {h}, w, {2, 3, chunk});
    for (std::size_t s = 0; s < theta.size(); ++s)
      ASSERT_NEAR(f.gradient[s], ps[s], 1e-4) << "c64 chunk " << chunk << " slot " << s;
  }
}

TEST(Adjoint, PhaseStepsGatherAwayFromRealBlocks) {
  // Hardware-efficient layers (RY RZ on every wire, then a CZ row), a
  // PhaseShift layer after RY, and one wire with RX RZ: with gathering (the
  // CPU's cut), every RY and the RY before each PhaseShift is a block alone
  // (real), every gathered RZ or PhaseShift a diagonal block alone, and the RX
  // RZ wire keeps its RZ (its block is complex anyway). Without gathering each
  // wire's RY RZ is one block. Gradients against parameter shift: blocked
  // (diagonal runs with gates inside and outside the chunk), the whole state
  // as one chunk (c128 at the default chunk), and plain (no gathering).
  const int n = 13, rx_wire = 4;
  Circuit c(n);
  int slot = 0;
  auto p = [&] { return std::vector<ParamExpr>{ParamExpr::ref(slot++)}; };
  for (int l = 0; l < 3; ++l) {
    for (int q = 0; q < n; ++q) {
      c.add(q == rx_wire ? GateId::RX : GateId::RY, {q}, p());
      c.add(GateId::RZ, {q}, p());
    }
    for (int q = l % 2; q + 1 < n; q += 2) c.add(GateId::CZ, {q, q + 1});
  }
  for (int q = 0; q < n; ++q) {
    c.add(GateId::RY, {q}, p());
    c.add(GateId::PhaseShift, {q}, p());
  }
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<double> u(-3, 3);
  std::vector<double> theta(static_cast<std::size_t>(slot));
  for (double& t : theta) t = u(rng);
  const std::vector<TapeStep> tape = make_tape(c, theta);  // seg's steps point into it
  auto count_blocks = [&](const Segmented& seg, GateId kind, bool alone) {
    int found = 0;
    for (std::size_t i = 0; i < seg.gates.size(); ++i)
      for (const BlockStep& b : seg.steps[i])
        if (b.step->gate.targets.size() == 1 && seg.gates[i].targets.size() == 1 &&
            (seg.steps[i].size() == 1) == alone &&
            std::any_of(c.ops().begin(), c.ops().end(), [&](const Operation& op) {
              return op.gate == kind && op.params[0].slot == b.step->derivatives[0].slot;
            }))
          ++found;
    return found;
  };
  const Segmented gathered = segment(tape, 3, 6, true);
  EXPECT_EQ(count_blocks(gathered, GateId::RY, true), 4 * n - 3);  // every RY
  EXPECT_EQ(count_blocks(gathered, GateId::RZ, true), 3 * (n - 1));
  EXPECT_EQ(count_blocks(gathered, GateId::RZ, false), 3);  // after RX
  EXPECT_EQ(count_blocks(gathered, GateId::PhaseShift, true), n);
  const Segmented plain = segment(tape, 3, 6, false);
  EXPECT_EQ(count_blocks(plain, GateId::RZ, true), 0);
  const PauliSum h = parse_pauli_sum("Z0 Z1 + 0.5*X2 - 0.25*Y7", "test");
  const double w[] = {1.0};
  const std::vector<double> ps = parameter_shift_gradient<double>(c, theta, h);
  ASSERT_TRUE(qmlsim::cpu::StateVector<double>::sweep_in_segments(n, 10, true));
  ASSERT_TRUE(qmlsim::cpu::StateVector<double>::sweep_in_segments(n, -1, true));
  ASSERT_FALSE(qmlsim::cpu::StateVector<double>::sweep_in_segments(n, 0, true));
  for (int chunk : {0, 10, -1}) {
    const AdjointResult d = adjoint_vjp<double>(c, theta, {h}, w, {1, 3, chunk});
    const AdjointResult f = adjoint_vjp<float>(c, theta, {h}, w, {1, 3, chunk});
    for (std::size_t s = 0; s < theta.size(); ++s) {
      ASSERT_NEAR(d.gradient[s], ps[s], 1e-9) << "chunk " << chunk << " slot " << s;
      ASSERT_NEAR(f.gradient[s], ps[s], 1e-4) << "chunk " << chunk << " slot " << s;
    }
  }
}

TEST(Adjoint, CudaBackendEqualsCpu) {
  // Vector-Jacobian products and Jacobians on the GPU against the CPU's on random
  // circuits with every parametric gate; skipped where there is no GPU.
  const cuda::DeviceStatus gpu = cuda::device_status();
  if (gpu.count == 0) GTEST_SKIP() << "no GPU here (" << gpu.error << "): CUDA gradients skipped";
  cuda::select_device(0);
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<double> u(-3, 3);
  for (int trial = 0; trial < 40; ++trial) {
    const int n = 2 + trial % 14;
    const int slots = 4;
    const Circuit c = random_parametric_circuit(n, 20, slots, rng);
    std::vector<double> theta(slots);
    for (double& t : theta) t = u(rng);
    const std::vector<PauliSum> obs = {random_observable(n, rng), random_observable(n, rng)};
    const double w[] = {0.7, -1.3};
    EngineOptions gpu_options;
    gpu_options.backend = Backend::cuda;
    const AdjointResult cd = adjoint_vjp<double>(c, theta, obs, w, {});
    const AdjointResult gd = adjoint_vjp<double>(c, theta, obs, w, gpu_options);
    const AdjointResult gf = adjoint_vjp<float>(c, theta, obs, w, gpu_options);
    for (std::size_t k = 0; k < obs.size(); ++k) EXPECT_NEAR(gd.expvals[k], cd.expvals[k], 1e-12);
    for (int s = 0; s < slots; ++s) {
      ASSERT_NEAR(gd.gradient[s], cd.gradient[s], 1e-10) << "trial " << trial << " slot " << s;
      ASSERT_NEAR(gf.gradient[s], cd.gradient[s], 1e-4) << "trial " << trial << " slot " << s;
    }
    const auto jc = adjoint_jacobian<double>(c, theta, obs, {});
    const auto jg = adjoint_jacobian<double>(c, theta, obs, gpu_options);
    for (std::size_t k = 0; k < obs.size(); ++k)
      for (int s = 0; s < slots; ++s) EXPECT_NEAR(jg[k][s], jc[k][s], 1e-10);
  }
}

// The state's VJP, Re sum g_i dpsi_i/dtheta, against central differences of
// the final state, with fusion off and on, blocked and not (chunks of 3
// qubits), in both precisions; and on the GPU where there is one.
TEST(Adjoint, StateVjpEqualsFiniteDifferencesOfTheState) {
  std::mt19937_64 rng(33);
  std::uniform_real_distribution<double> u(-3, 3);
  const cuda::DeviceStatus gpu = cuda::device_status();
  for (int trial = 0; trial < 12; ++trial) {
    const int n = 1 + trial % 7;
    const int slots = 5;
    const Circuit c = random_parametric_circuit(n, 24, slots, rng);
    std::vector<double> theta(slots);
    for (double& t : theta) t = u(rng);
    std::vector<cplx> g(std::size_t{1} << n);
    for (cplx& x : g) x = {u(rng), u(rng)};
    SimulateRequest req;
    req.state = true;
    auto value = [&](const std::vector<double>& t) {
      const std::vector<cplx> psi = simulate<double>(c, t, req, {}).state;
      double sum = 0;
      for (std::size_t i = 0; i < psi.size(); ++i) sum += (g[i] * psi[i]).real();
      return sum;
    };
    std::vector<double> want(slots);
    for (int s = 0; s < slots; ++s) {
      std::vector<double> up = theta, down = theta;
      up[s] += 1e-6;
      down[s] -= 1e-6;
      want[s] = (value(up) - value(down)) / 2e-6;
    }
    for (int fusion : {0, 3}) {
      EngineOptions o;
      o.fusion = fusion;
      o.chunk_qubits = trial % 2 ? 3 : -1;
      const std::vector<double> got = state_vjp<double>(c, theta, g, o);
      const std::vector<double> single = state_vjp<float>(c, theta, g, o);
      for (int s = 0; s < slots; ++s) {
        ASSERT_NEAR(got[s], want[s], 1e-7) << "trial " << trial << " slot " << s;
        ASSERT_NEAR(single[s], want[s], 1e-3) << "trial " << trial << " slot " << s;
      }
      if (gpu.count > 0) {
        o.backend = Backend::cuda;
        const std::vector<double> on_gpu = state_vjp<double>(c, theta, g, o);
        for (int s = 0; s < slots; ++s) EXPECT_NEAR(on_gpu[s], got[s], 1e-10);
      }
    }
  }
  const Circuit c = random_parametric_circuit(2, 5, 1, rng);
  const double theta[] = {0.3};
  const std::vector<cplx> wrong(3);
  EXPECT_THROW(state_vjp<double>(c, theta, wrong, {}), Error);
}

// adjoint_vjp_many and expvals_many against adjoint_vjp item by item, on
// circuits that differ per item, with weights computed from each item's readouts.
void check_many(Backend backend, double tol) {
  std::mt19937_64 rng(77);
  std::uniform_real_distribution<double> u(-3, 3);
  for (int n : {3, 9}) {
    std::vector<Circuit> circuits;
    std::vector<std::vector<double>> thetas;
    for (int i = 0; i < 9; ++i) {
      circuits.push_back(random_parametric_circuit(n, 18, 5, rng));
      thetas.emplace_back(5);
      for (double& t : thetas.back()) t = u(rng);
    }
    const std::vector<PauliSum> obs = {random_observable(n, rng), random_observable(n, rng)};
    std::vector<const Circuit*> ptrs;
    std::vector<WeightsFn> weights;
    for (const Circuit& c : circuits) {
      ptrs.push_back(&c);
      weights.push_back([](std::span<const double> e) {
        return std::vector<double>{2 * e[0], e[1] - 0.5};
      });
    }
    EngineOptions o;
    o.threads = 2;
    o.backend = backend;
    const std::vector<AdjointResult> many = adjoint_vjp_many<double>(ptrs, thetas, obs, weights, o);
    const auto e = expvals_many<double>(ptrs, thetas, obs, o);
    for (std::size_t i = 0; i < circuits.size(); ++i) {
      const AdjointResult one = adjoint_vjp<double>(circuits[i], thetas[i], obs, weights[i], {});
      for (std::size_t k = 0; k < obs.size(); ++k) {
        EXPECT_NEAR(many[i].expvals[k], one.expvals[k], tol);
        EXPECT_NEAR(e[i][k], one.expvals[k], tol);
      }
      for (std::size_t s = 0; s < one.gradient.size(); ++s)
        ASSERT_NEAR(many[i].gradient[s], one.gradient[s], tol) << "item " << i << " slot " << s;
    }
  }
}

TEST(Adjoint, ManyCircuitsEqualOneByOne) { check_many(Backend::cpu, 1e-13); }

TEST(Adjoint, ManyCircuitsOnTheGpuInOneBatchEqualTheCpu) {
  const cuda::DeviceStatus gpu = cuda::device_status();
  if (gpu.count == 0) GTEST_SKIP() << "no GPU here (" << gpu.error << "): CUDA batches skipped";
  cuda::select_device(0);
  check_many(Backend::cuda, 1e-10);
}

TEST(Adjoint, VectorJacobianProductIsTheWeightedJacobian) {
  std::mt19937_64 rng(6);
  const int n = 5;
  const Circuit c = random_parametric_circuit(n, 30, 4, rng);
  const std::vector<double> theta = {0.1, 0.2, -0.3, 1.4};
  const std::vector<PauliSum> obs = {random_observable(n, rng), random_observable(n, rng),
                                     parse_pauli_sum("Z0 Z1 + 0.5*X2", "test")};
  const std::vector<std::vector<double>> jac =
      adjoint_jacobian<double>(c, theta, obs, {2, 3});  // rows on two threads
  const double w[] = {0.7, -1.3, 2.0};
  const AdjointResult v = adjoint_vjp<double>(c, theta, obs, w, {1, 3});
  for (std::size_t s = 0; s < theta.size(); ++s) {
    double want = 0;
    for (std::size_t k = 0; k < obs.size(); ++k) want += w[k] * jac[k][s];
    EXPECT_NEAR(v.gradient[s], want, 1e-12);
  }
  for (std::size_t k = 0; k < obs.size(); ++k) {
    const std::vector<double> ps = parameter_shift_gradient<double>(c, theta, obs[k]);
    for (std::size_t s = 0; s < theta.size(); ++s) EXPECT_NEAR(jac[k][s], ps[s], 1e-9);
  }
}

TEST(Adjoint, BatchEqualsOneByOne) {
  std::mt19937_64 rng(7);
  const int n = 6;
  const Circuit c = random_parametric_circuit(n, 25, 4, rng);
  const std::vector<PauliSum> obs = {random_observable(n, rng)};
  std::vector<std::vector<double>> thetas, weights;
  std::uniform_real_distribution<double> u(-3, 3);
  for (int i = 0; i < 9; ++i) {
    thetas.push_back({u(rng), u(rng), u(rng), u(rng)});
    weights.push_back({u(rng)});
  }
  const std::vector<AdjointResult> batch =
      adjoint_vjp_batch<double>(c, thetas, obs, weights, {2, 3});
  for (std::size_t i = 0; i < thetas.size(); ++i) {
    const AdjointResult one = adjoint_vjp<double>(c, thetas[i], obs, weights[i], {1, 3});
    EXPECT_EQ(batch[i].gradient, one.gradient);
    EXPECT_EQ(batch[i].expvals, one.expvals);
  }
}

TEST(Adjoint, FourTermRuleIsUsedWhereNeeded) {
  Circuit c(2);
  c.add(GateId::CRX, {0, 1}, std::vector<ParamExpr>{ParamExpr::ref(0)});
  c.add(GateId::RX, {0}, std::vector<ParamExpr>{ParamExpr::ref(0)});
  EXPECT_TRUE(needs_four_term_rule(c.ops()[0]));
  EXPECT_FALSE(needs_four_term_rule(c.ops()[1]));
}

}  // namespace
}  // namespace qmlsim
