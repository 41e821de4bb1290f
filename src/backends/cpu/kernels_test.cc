// Every gate, every wire order, every kernel set and both precisions against the
// dense-matrix oracle; fused against unfused; norm over 10,000 random gates.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "backends/cpu/statevector.h"
#include "passes/fusion.h"
#include "testing/dense_oracle.h"

namespace qmlsim::cpu {
namespace {

using testing::State;

template <class R>
constexpr double tol() {
  return sizeof(R) == 4 ? 1e-5 : 1e-12;
}

template <class R>
State simulate(const KernelSet* ks, int n, const std::vector<BoundGate>& gates, const State& in,
               int threads = 1) {
  StateVector<R> sv(n, threads, ks);
  sv.set_amplitudes(in);
  sv.apply(gates);
  return sv.to_vector();
}

// All ordered selections of `k` distinct wires out of n.
std::vector<std::vector<int>> wire_orders(int n, int k) {
  std::vector<std::vector<int>> out;
  std::vector<int> pick(k);
  auto rec = [&](auto&& self, int depth, unsigned used) -> void {
    if (depth == k) {
      out.push_back(pick);
      return;
    }
    for (int q = 0; q < n; ++q) {
      if (used >> q & 1) continue;
      pick[depth] = q;
      self(self, depth + 1, used | 1u << q);
    }
  };
  rec(rec, 0, 0);
  return out;
}

template <class R>
void check_every_gate(const KernelSet* ks) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> angle(-3.2, 3.2);
  const int n = 5;  // lane bits are at most 3, so targets fall inside and above lanes
  for (int gi = 0; gi < static_cast<int>(GateId::kCount); ++gi) {
    const auto id = static_cast<GateId>(gi);
    const GateInfo& g = gate_info(id);
    std::vector<int> sizes = {g.num_wires};
    if (g.num_wires < 0) sizes = {1, 2, 3, 4};
    for (int k : sizes) {
      for (const std::vector<int>& wires : wire_orders(n, k)) {
        for (int extra = 0; extra <= (k < n ? 1 : 0); ++extra) {
          Operation op;
          op.gate = id;
          op.wires = wires;
          if (extra) {  // one extra control on a wire the gate does not use
            for (int q = 0; q < n; ++q)
              if (std::find(wires.begin(), wires.end(), q) == wires.end()) {
                op.controls = {static_cast<int>((q + rng() % n) % n)};
                if (std::find(wires.begin(), wires.end(), op.controls[0]) != wires.end())
                  op.controls = {q};
                break;
              }
          }
          for (int p = 0; p < g.num_params; ++p)
            op.params.push_back(ParamExpr::literal(angle(rng)));
          if (id == GateId::QubitUnitary)
            op.unitary = std::make_shared<Matrix>(testing::random_unitary(k, rng));
          Circuit c(n);
          c.add(op);
          const State in = testing::random_state(n, rng);
          const State want = testing::run_dense(c, {}, in);
          const State got = simulate<R>(ks, n, bind_params(c, {}), in);
          ASSERT_LT(testing::max_abs_diff(want, got), tol<R>())
              << ks->name << " " << describe(c.ops()[0]);
        }
      }
    }
  }
}

class KernelSets : public ::testing::TestWithParam<const KernelSet*> {};

TEST_P(KernelSets, EveryGateEveryWireOrderC64) { check_every_gate<float>(GetParam()); }
TEST_P(KernelSets, EveryGateEveryWireOrderC128) { check_every_gate<double>(GetParam()); }

template <class R>
void check_controls(const KernelSet* ks) {
  // Multi-controlled gates with controls below, between and above the targets.
  std::mt19937_64 rng(11);
  const int n = 7;
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<int> q(n);
    std::iota(q.begin(), q.end(), 0);
    std::shuffle(q.begin(), q.end(), rng);
    const int k = 1 + trial % 3, nc = 1 + (trial / 3) % 3;
    Operation op;
    op.gate = GateId::QubitUnitary;
    op.wires.assign(q.begin(), q.begin() + k);
    op.controls.assign(q.begin() + k, q.begin() + k + nc);
    op.unitary = std::make_shared<Matrix>(testing::random_unitary(k, rng));
    if (trial % 5 == 0) {  // a diagonal gate with controls
      op.gate = GateId::MultiRZ;
      op.unitary.reset();
      op.params = {ParamExpr::literal(0.3 + trial)};
    }
    Circuit c(n);
    c.add(op);
    const State in = testing::random_state(n, rng);
    const State want = testing::run_dense(c, {}, in);
    ASSERT_LT(testing::max_abs_diff(want, simulate<R>(ks, n, bind_params(c, {}), in)), tol<R>())
        << ks->name << " " << describe(op);
  }
}

TEST_P(KernelSets, ControlsAnywhereC64) { check_controls<float>(GetParam()); }
TEST_P(KernelSets, ControlsAnywhereC128) { check_controls<double>(GetParam()); }

template <class R>
void check_fused(const KernelSet* ks) {
  std::mt19937_64 rng(3);
  for (int n : {1, 2, 3, 6, 8}) {
    const Circuit c = testing::random_circuit(n, 40, rng, true);
    const State in = testing::random_state(n, rng);
    const State want = testing::run_dense(c, {}, in);
    const std::vector<BoundGate> gates = bind_params(c, {});
    const State unfused = simulate<R>(ks, n, gates, in);
    ASSERT_LT(testing::max_abs_diff(want, unfused), 10 * tol<R>()) << ks->name << " n=" << n;
    for (int k = 1; k <= 6; ++k) {
      const std::vector<BoundGate> fused = fuse(gates, {k, 10});
      const State got = simulate<R>(ks, n, fused, in);
      ASSERT_LT(testing::max_abs_diff(want, got), 10 * tol<R>())
          << ks->name << " n=" << n << " fusion=" << k;
      ASSERT_LT(testing::max_abs_diff(unfused, got), 10 * tol<R>());
    }
  }
}

TEST_P(KernelSets, FusedEqualsUnfusedAndOracleC64) { check_fused<float>(GetParam()); }
TEST_P(KernelSets, FusedEqualsUnfusedAndOracleC128) { check_fused<double>(GetParam()); }

INSTANTIATE_TEST_SUITE_P(AllSets, KernelSets, ::testing::ValuesIn(available_kernel_sets()),
                         [](const auto& info) {
                           std::string s = info.param->name;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

TEST(Kernels, NormPreservedOver10000RandomGates) {
  std::mt19937_64 rng(5);
  const int n = 10;
  const Circuit c = testing::random_circuit(n, 10000, rng, true);
  StateVector<double> d(n);
  StateVector<float> f(n);
  const std::vector<BoundGate> gates = bind_params(c, {});
  d.apply(gates);
  f.apply(gates);
  EXPECT_NEAR(d.norm_squared(), 1.0, 1e-10);
  EXPECT_NEAR(f.norm_squared(), 1.0, 1e-3);
}

TEST(Kernels, ThreadedEqualsSerialBitwise) {
  std::mt19937_64 rng(9);
  const int n = 16;  // above the parallel threshold
  const Circuit c = testing::random_circuit(n, 60, rng, true);
  const std::vector<BoundGate> gates = fuse(bind_params(c, {}), {4, 10});
  StateVector<double> a(n, 1), b(n, 2);
  a.apply(gates);
  b.apply(gates);
  for (index_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.amplitude(i), b.amplitude(i)) << i;
}

}  // namespace
}  // namespace qmlsim::cpu
