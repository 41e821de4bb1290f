#include "passes/fusion.h"

#include <gtest/gtest.h>

#include <bit>

#include "testing/dense_oracle.h"

namespace qmlsim {
namespace {

using testing::State;

State apply_all(const std::vector<BoundGate>& gates, State psi, int n) {
  for (const BoundGate& g : gates) apply_reference(g, psi.data(), n);
  return psi;
}

TEST(Fusion, FusedCircuitsEqualTheOracleForEveryBlockSize) {
  std::mt19937_64 rng(12);
  for (int n : {2, 4, 7}) {
    for (int trial = 0; trial < 5; ++trial) {
      const Circuit c = testing::random_circuit(n, 60, rng, true);
      const State in = testing::random_state(n, rng);
      const State want = testing::run_dense(c, {}, in);
      for (int k = 1; k <= 6; ++k) {
        for (double sweep : {0.0, 2.0, 100.0}) {
          const std::vector<BoundGate> fused = fuse(bind_params(c, {}), {k, 8, sweep});
          for (const BoundGate& g : fused) {
            const int width = g.num_targets() + static_cast<int>(g.controls.size());
            // Blocks respect the limits; wider input gates (up to 4 wires) pass through.
            if (g.controls.empty() && !g.diagonal) {
              EXPECT_LE(g.num_targets(), std::max(k, 4));
            }
            EXPECT_LE(width, 8);
          }
          EXPECT_LT(testing::max_abs_diff(want, apply_all(fused, in, n)), 1e-11)
              << "n=" << n << " k=" << k << " sweep=" << sweep;
        }
      }
    }
  }
}

// apply_local (and so apply_reference) against the dense oracle: at a gate's own
// wires it is the gate; transposed, the gate of the transposed matrix (the
// full operator transposed: controls are real projectors).
TEST(Fusion, ApplyLocalEqualsTheOracleAndItsTranspose) {
  std::mt19937_64 rng(5);
  const int n = 5;
  const std::size_t dim = std::size_t{1} << n;
  for (int trial = 0; trial < 4; ++trial) {
    const Circuit circuit = testing::random_circuit(n, 40, rng, true);
    for (const Operation& op : circuit.ops()) {
      const BoundGate g = bind_params(op, {});
      index_t controls = 0;
      for (int c : g.controls) controls |= index_t{1} << c;
      const Matrix full = testing::full_operator(op, n, {});
      Matrix full_t(full.size());
      for (std::size_t r = 0; r < dim; ++r)
        for (std::size_t c = 0; c < dim; ++c) full_t[r * dim + c] = full[c * dim + r];
      for (bool transpose : {false, true}) {
        const State in = testing::random_state(n, rng);
        State got = in;
        apply_local(g, g.targets.data(), controls, got.data(), n, transpose);
        EXPECT_LT(testing::max_abs_diff(testing::apply_dense(transpose ? full_t : full, in), got),
                  1e-12)
            << gate_info(op.gate).name << " transpose=" << transpose;
      }
    }
  }
}

TEST(Fusion, DiagonalRunsStayDiagonalAndSingleGatesPassThrough) {
  Circuit c(4);
  for (int q = 0; q < 4; ++q) c.add(GateId::RZ, {q}, std::vector<double>{0.1 * q});
  c.add(GateId::CZ, {0, 3});
  c.add(GateId::MultiRZ, {0, 1, 2}, std::vector<double>{0.7});
  const std::vector<BoundGate> fused = fuse(bind_params(c, {}), {2, 10, 2.0});
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_TRUE(fused[0].diagonal);
  EXPECT_EQ(fused[0].num_targets(), 4);

  Circuit t(3);
  t.add(GateId::Toffoli, {0, 1, 2});
  const std::vector<BoundGate> alone = fuse(bind_params(t, {}), {4, 10, 2.0});
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].controls, (std::vector<int>{0, 1}));  // kept controlled: cheaper
}

TEST(Fusion, OneQubitRunsMergeIntoTheirTwoQubitGate) {
  Circuit c(2);
  c.add(GateId::H, {0});
  c.add(GateId::RX, {1}, std::vector<double>{0.3});
  c.add(GateId::ISWAP, {0, 1});
  c.add(GateId::RY, {0}, std::vector<double>{0.2});
  const std::vector<BoundGate> fused = fuse(bind_params(c, {}), {2, 10, 2.0});
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0].num_targets(), 2);
  EXPECT_DOUBLE_EQ(gate_cost(fused[0]), 4.0);
}

TEST(Fusion, ADecomposedTwoQubitGateBecomesOneBlock) {
  // Cirq's OpenQASM export of fSim(pi/2, pi/6) on a pair, in shape: CZ, then
  // one-qubit gates on both wires, CZ, more one-qubit gates. Each CZ alone is
  // cheaper than a dense pair, but the gates after it stay on the pair, so the
  // pair's block takes them all (one-step lookahead); with blocks of at most
  // two qubits, the gates on the other qubits stay apart.
  Circuit c(4);
  c.add(GateId::H, {2});
  c.add(GateId::CZ, {0, 1});
  c.add(GateId::RY, {0}, std::vector<double>{0.5});
  c.add(GateId::RY, {1}, std::vector<double>{0.5});
  c.add(GateId::S, {0});
  c.add(GateId::CZ, {0, 1});
  c.add(GateId::SX, {0});
  c.add(GateId::RX, {1}, std::vector<double>{0.3});
  c.add(GateId::CZ, {1, 2});
  c.add(GateId::H, {3});
  const std::vector<BoundGate> gates = bind_params(c, {});
  const std::vector<BoundGate> fused = fuse(gates, {2, 10, 1.0});
  int pair_blocks = 0;
  for (const BoundGate& g : fused)
    if (g.wire_mask() == 0b11) ++pair_blocks;
  EXPECT_EQ(pair_blocks, 1);
  std::mt19937_64 rng(3);
  const State in = testing::random_state(4, rng);
  EXPECT_LT(testing::max_abs_diff(apply_all(gates, in, 4), apply_all(fused, in, 4)), 1e-12);
}

TEST(Fusion, AGateJoinsTheLastBlockOnItsWiresWhenNothingSinceTouchedThem) {
  // RX(0) comes after the block {0, 1} was closed by CX(1, 2); nothing since
  // acts on qubit 0, so it joins that block at no cost instead of a pass alone.
  Circuit c(3);
  c.add(GateId::H, {0});
  c.add(GateId::CNOT, {0, 1});
  c.add(GateId::CNOT, {1, 2});
  c.add(GateId::RX, {0}, std::vector<double>{0.3});
  const std::vector<BoundGate> gates = bind_params(c, {});
  const std::vector<BoundGate> fused = fuse(gates, {2, 10, 1.0});
  ASSERT_EQ(fused.size(), 2u);
  EXPECT_EQ(fused[0].wire_mask(), 0b011u);
  EXPECT_EQ(fused[1].wire_mask(), 0b110u);
  std::mt19937_64 rng(4);
  const State in = testing::random_state(3, rng);
  EXPECT_LT(testing::max_abs_diff(apply_all(gates, in, 3), apply_all(fused, in, 3)), 1e-12);
}

TEST(Fusion, PairedOneQubitGatesEqualTheOracle) {
  std::mt19937_64 rng(31);
  for (int n : {2, 3, 6}) {
    for (int trial = 0; trial < 8; ++trial) {
      const Circuit c = testing::random_circuit(n, 50, rng, true);
      const State in = testing::random_state(n, rng);
      const State want = testing::run_dense(c, {}, in);
      std::vector<BoundGate> gates = bind_params(c, {});
      pair_single_qubit_gates(gates);
      EXPECT_LT(testing::max_abs_diff(want, apply_all(gates, in, n)), 1e-11) << "n=" << n;
    }
  }
}

TEST(Fusion, OneQubitGatesPairOnlyWhenTheLaterOneCanMoveBack) {
  Circuit c(3);
  c.add(GateId::RZ, {0}, std::vector<double>{0.1});
  c.add(GateId::RZ, {1}, std::vector<double>{0.2});  // pairs with RZ(0): diagonal
  c.add(GateId::H, {2});
  c.add(GateId::CNOT, {0, 1});
  c.add(GateId::RX, {1}, std::vector<double>{0.3});  // cannot move back past the CNOT
  c.add(GateId::RY, {0}, std::vector<double>{0.4});  // nor can this: pairs with RX(1)
  std::vector<BoundGate> gates = bind_params(c, {});
  pair_single_qubit_gates(gates);
  ASSERT_EQ(gates.size(), 4u);
  EXPECT_EQ(gates[0].targets, (std::vector<int>{0, 1}));
  EXPECT_TRUE(gates[0].diagonal);
  EXPECT_EQ(gates[1].targets, (std::vector<int>{2}));  // H(2) stays alone
  EXPECT_EQ(gates[2].controls, (std::vector<int>{0}));
  EXPECT_EQ(gates[3].targets, (std::vector<int>{0, 1}));  // RX(1) and RY(0)
  EXPECT_FALSE(gates[3].diagonal);
}

TEST(Fusion, LongRunsOnFewQubitsFuseInLinearTimeAndMemory) {
  // Blocks multiply their gates in as they arrive: 100,000 gates on 3 qubits
  // are one 8x8 matrix (issue 20: 20,000 took 19 s and 1.1 GB when every
  // merge copied the block's growing gate list and rebuilt its matrix).
  std::mt19937_64 rng(5);
  const Circuit c = testing::random_circuit(3, 100000, rng, true);
  const std::vector<BoundGate> gates = bind_params(c, {});
  const std::vector<BoundGate> fused = fuse(gates, {3, 10, 1.0});
  EXPECT_LE(fused.size(), 10u);  // a 3-qubit dense block, split only by diagonal runs
  const State in = testing::random_state(3, rng);
  // Rounding grows with the number of products; the oracle runs gate by gate.
  EXPECT_LT(testing::max_abs_diff(apply_all(gates, in, 3), apply_all(fused, in, 3)), 1e-9);

  Circuit xs(3);
  for (int i = 0; i < 100001; ++i) xs.add(GateId::X, {0});
  const std::vector<BoundGate> one = fuse(bind_params(xs, {}), {3, 10, 1.0});
  ASSERT_EQ(one.size(), 1u);
  State zero(8, 0.0);
  zero[0] = 1;
  EXPECT_NEAR(std::abs(apply_all(one, zero, 3)[1]), 1.0, 1e-12);  // an odd number of X
}

}  // namespace
}  // namespace qmlsim
