// The planner and the per-slice specialization, checked in one process: a
// simulated set of slices runs each plan step by step (exchanges as bit swaps
// of the global index, relabels as slice renaming, gates specialized per
// slice), and the result, read through the final qubit map, must equal the
// dense oracle's state.
#include "distributed/plan.h"

#include <gtest/gtest.h>

#include <random>

#include "passes/fusion.h"
#include "testing/dense_oracle.h"

namespace qmlsim::distributed {
namespace {

struct Slices {
  int n, g, m;
  std::vector<std::vector<cplx>> data;  // by process
  std::vector<std::uint64_t> slice_of;  // by process

  Slices(int n_, int g_) : n(n_), g(g_), m(n_ - g_) {
    data.assign(std::size_t{1} << g, std::vector<cplx>(std::size_t{1} << m, cplx{0}));
    data[0][0] = 1;
    for (std::uint64_t p = 0; p < data.size(); ++p) slice_of.push_back(p);
  }
  std::vector<cplx> physical() const {  // by physical index
    std::vector<cplx> v(std::size_t{1} << n);
    for (std::size_t p = 0; p < data.size(); ++p)
      for (std::size_t x = 0; x < data[p].size(); ++x) v[(slice_of[p] << m) | x] = data[p][x];
    return v;
  }
  void set_physical(const std::vector<cplx>& v) {
    for (std::size_t p = 0; p < data.size(); ++p)
      for (std::size_t x = 0; x < data[p].size(); ++x) data[p][x] = v[(slice_of[p] << m) | x];
  }
  void run(const DistPlan& plan) {
    for (const Step& s : plan.steps) {
      if (s.kind == Step::Kind::kExchange) {
        std::vector<cplx> v = physical(), w(v.size());
        for (std::size_t i = 0; i < v.size(); ++i) {
          std::size_t j = i;
          for (const auto& [a, b] : s.pairs) {
            const std::size_t ba = (i >> a) & 1, bb = (i >> b) & 1;
            j = (j & ~((std::size_t{1} << a) | (std::size_t{1} << b))) | (bb << a) | (ba << b);
          }
          w[j] = v[i];
        }
        set_physical(w);
      } else if (s.kind == Step::Kind::kRelabel) {
        for (std::uint64_t& v : slice_of)
          if (s.control < 0 || ((v >> s.control) & 1)) v ^= std::uint64_t{1} << s.target;
      } else {
        for (std::size_t p = 0; p < data.size(); ++p)
          for (const BoundGate& gate : s.gates) {
            const Specialized sp = specialize(gate, m, slice_of[p]);
            if (!sp.skip) apply_reference(sp.gate, data[p].data(), m);
          }
      }
    }
  }
  // The state in the circuit's qubit order, through the map.
  std::vector<cplx> logical(const QubitMap& map) const {
    const std::vector<cplx> v = physical();
    std::vector<cplx> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::size_t l = 0;
      for (int q = 0; q < n; ++q) l |= ((i >> map.phys[static_cast<std::size_t>(q)]) & 1) << q;
      out[l] = v[i];
    }
    return out;
  }
};

TEST(DistPlan, RandomCircuitsOnEveryLayoutEqualTheOracle) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 6; ++trial) {
    const int n = 8;  // 16 slices keep 4 local qubits: a DoubleExcitation fits
    const Circuit c = testing::random_circuit(n, 120, rng, true);
    const std::vector<BoundGate> gates = bind_params(c, {});
    testing::State expect(std::size_t{1} << n, cplx{0});
    expect[0] = 1;
    expect = testing::run_dense(c, {}, expect);
    for (int g = 0; g <= 4; ++g) {
      const DistPlan p = plan(gates, n, g, QubitMap::identity(n));
      Slices s(n, g);
      s.run(p);
      EXPECT_LT(testing::max_abs_diff(s.logical(p.final_map), expect), 1e-12)
          << "trial " << trial << ", " << (1 << g) << " slices";
      // Every gate step's non-diagonal targets are local.
      for (const Step& st : p.steps) {
        for (const BoundGate& gate : st.gates) {
          if (gate.diagonal) continue;
          for (int t : gate.targets) EXPECT_LT(t, n - g);
        }
      }
      if (g > 0) {
        EXPECT_LE(p.stats.exchanges, p.stats.naive_exchanges);
      }
    }
  }
}

TEST(DistPlan, SwapsAndSliceXRelabelDiagonalsAndControlsStayPut) {
  // 6 qubits over 4 slices (qubits 4, 5 select the slice).
  const int n = 6, g = 2;
  Circuit c(n);
  c.add(GateId::H, {0});
  c.add(GateId::H, {1});
  c.add(GateId::X, {4});        // X on a slice qubit: slices trade places
  c.add(GateId::CNOT, {4, 5});  // both on slice qubits: relabel
  c.add(GateId::SWAP, {1, 5});  // relabel only: logical 1 now selects slices
  c.add(GateId::CZ, {1, 2});    // diagonal on a slice qubit: no exchange
  c.add(GateId::RZ, {1}, std::vector<double>{0.7});
  c.add(GateId::CRY, {1, 3}, std::vector<double>{0.4});  // slice control, local target
  c.add(GateId::CNOT, {0, 4});  // X on a slice qubit under a local control: exchange
  c.add(GateId::RY, {1}, std::vector<double>{0.3});  // ... and another, in the same exchange
  const std::vector<BoundGate> gates = bind_params(c, {});
  const DistPlan p = plan(gates, n, g, QubitMap::identity(n));
  EXPECT_EQ(p.stats.exchanges, 1);
  EXPECT_EQ(p.stats.relabels, 3);
  Slices s(n, g);
  s.run(p);
  testing::State expect(std::size_t{1} << n, cplx{0});
  expect[0] = 1;
  EXPECT_LT(testing::max_abs_diff(s.logical(p.final_map), testing::run_dense(c, {}, expect)),
            1e-12);
}

TEST(DistPlan, ExchangesBringSeveralQubitsInAtOnce) {
  // Hadamard layers over 12 qubits, 8 slices: exchanges bring 3 qubits in at once;
  // the per-gate scheme exchanges once per gate on a slice qubit.
  const int n = 12, g = 3;
  Circuit c(n);
  for (int layer = 0; layer < 4; ++layer)
    for (int q = 0; q < n; ++q) c.add(GateId::H, {q});
  const DistPlan p = plan(bind_params(c, {}), n, g, QubitMap::identity(n));
  // 48 gates, 9 local qubits: every exchange brings in the 3 qubits the next 9 gates need.
  EXPECT_EQ(p.stats.exchanges, 5);
  EXPECT_EQ(p.stats.naive_exchanges, 12);
  for (const Step& st : p.steps) {
    if (st.kind == Step::Kind::kExchange) {
      EXPECT_EQ(st.pairs.size(), 3u);
    }
  }
}

TEST(DistPlan, SpecializedDiagonalsKeepTheirEntries) {
  // A 2-qubit diagonal on local 1 and slice qubit 4 (m = 4): slice bit 1 picks entries 2, 3.
  BoundGate d;
  d.targets = {1, 4};
  d.diagonal = true;
  d.matrix = {1.0, 2.0, 3.0, 4.0};
  const Specialized on = specialize(d, 4, 1);
  ASSERT_FALSE(on.skip);
  EXPECT_EQ(on.gate.targets, std::vector<int>{1});
  EXPECT_EQ(on.gate.matrix, (Matrix{3.0, 4.0}));
  EXPECT_EQ(on.index, (std::vector<std::size_t>{2, 3}));
  // A controlled phase with its target on a slice qubit becomes a phase on the control.
  BoundGate cp;
  cp.targets = {5};
  cp.controls = {2};
  cp.diagonal = true;
  cp.matrix = {1.0, cplx{0, 1}};
  const Specialized ph = specialize(cp, 4, 2);  // slice 2: qubit 5 is 1
  EXPECT_EQ(ph.map, Specialized::Map::kPhaseOnControls);
  EXPECT_EQ(ph.gate.targets, std::vector<int>{2});
  EXPECT_EQ(ph.gate.matrix, (Matrix{1.0, cplx{0, 1}}));
  EXPECT_TRUE(specialize(BoundGate{{0}, {4}, false, {0.0, 1.0, 1.0, 0.0}}, 4, 0).skip);
}

}  // namespace
}  // namespace qmlsim::distributed
