#include "passes/cache_blocking.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "testing/dense_oracle.h"

namespace qmlsim {
namespace {

index_t wires(const BoundGate& g) {
  index_t m = 0;
  for (int q : g.targets) m |= index_t{1} << q;
  for (int q : g.controls) m |= index_t{1} << q;
  return m;
}

TEST(CacheBlocking, PlanIsAValidReorderingAndSegmentsFitTheirChunk) {
  std::mt19937_64 rng(4);
  const int n = 12;
  const std::vector<BoundGate> gates = bind_params(testing::random_circuit(n, 300, rng, true), {});
  const SegmentPlan plan = plan_segments(gates, n, 7, 2);
  // A permutation of the gates...
  std::vector<int> sorted = plan.order;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < static_cast<int>(gates.size()); ++i) ASSERT_EQ(sorted[i], i);
  // ...that keeps the order of every pair of gates sharing a qubit.
  std::vector<int> position(gates.size());
  for (std::size_t p = 0; p < plan.order.size(); ++p) position[plan.order[p]] = static_cast<int>(p);
  for (std::size_t a = 0; a < gates.size(); ++a)
    for (std::size_t b = a + 1; b < gates.size(); ++b)
      if (wires(gates[a]) & wires(gates[b])) {
        ASSERT_LT(position[a], position[b]) << a << " " << b;
      }
  int next = 0;
  for (const Segment& s : plan.segments) {
    EXPECT_EQ(s.begin, next);
    EXPECT_GT(s.end, s.begin);
    next = s.end;
    if (s.qubits.empty()) continue;
    EXPECT_EQ(s.qubits.size(), 7u);
    EXPECT_EQ(s.qubits[0], 0);
    EXPECT_EQ(s.qubits[1], 1);
    index_t w = 0;
    for (int q : s.qubits) w |= index_t{1} << q;
    for (int p = s.begin; p < s.end; ++p) EXPECT_EQ(wires(gates[plan.order[p]]) & ~w, 0u);
  }
  EXPECT_EQ(next, static_cast<int>(gates.size()));
  EXPECT_LT(plan.segments.size(), gates.size() / 3);  // blocking actually groups gates
}

TEST(CacheBlocking, LookaheadTakesGatesPastOnesOnOtherQubits) {
  Circuit c(8);
  c.add(GateId::H, {0});
  c.add(GateId::Toffoli, {4, 5, 6});  // does not fit a 3-qubit chunk that holds qubit 0
  c.add(GateId::H, {2});              // commutes with the Toffoli: joins the first segment
  c.add(GateId::H, {6});              // behind the Toffoli on qubit 6: must wait
  const SegmentPlan plan = plan_segments(bind_params(c, {}), 8, 3, 1);
  ASSERT_GE(plan.segments.size(), 2u);
  EXPECT_EQ(plan.segments[0].end - plan.segments[0].begin, 2);
  EXPECT_EQ(plan.order[0], 0);
  EXPECT_EQ(plan.order[1], 2);
  EXPECT_LT(std::find(plan.order.begin(), plan.order.end(), 1) - plan.order.begin(),
            std::find(plan.order.begin(), plan.order.end(), 3) - plan.order.begin());
}

TEST(CacheBlocking, DiagonalGatesFitAnyChunk) {
  // QAOA-like layers: ZZ on a ring and on chords, then RX on every qubit. The
  // RX layers need every qubit in some chunk; the ZZ gates, with
  // diagonal_wires, need none, so they add no segment of their own.
  const int n = 12;
  Circuit c(n);
  for (int layer = 0; layer < 3; ++layer) {
    for (int q = 0; q < n; ++q) {
      c.add(GateId::IsingZZ, {q, (q + 1) % n}, std::vector<double>{0.3});
      if (q % 3 == 0) c.add(GateId::IsingZZ, {q, (q + n / 2) % n}, std::vector<double>{0.2});
    }
    for (int q = 0; q < n; ++q) c.add(GateId::RX, {q}, std::vector<double>{0.4});
  }
  const std::vector<BoundGate> gates = bind_params(c, {});
  const SegmentPlan plain = plan_segments(gates, n, 8, 2);
  const SegmentPlan anywhere = plan_segments(gates, n, 8, 2, 2);
  EXPECT_LT(anywhere.segments.size(), plain.segments.size());
  EXPECT_LE(anywhere.segments.size(), 4u);  // two chunks' worth of RX per layer, shared
  std::vector<int> position(gates.size());
  for (std::size_t p = 0; p < anywhere.order.size(); ++p)
    position[anywhere.order[p]] = static_cast<int>(p);
  for (std::size_t a = 0; a < gates.size(); ++a)  // gates on a common qubit keep their order
    for (std::size_t b = a + 1; b < gates.size(); ++b)
      if (wires(gates[a]) & wires(gates[b])) {
        ASSERT_LT(position[a], position[b]) << a << " " << b;
      }
  bool outside = false;
  for (const Segment& s : anywhere.segments) {
    index_t w = 0;
    for (int q : s.qubits) w |= index_t{1} << q;
    for (int p = s.begin; p < s.end; ++p) {
      const BoundGate& g = gates[anywhere.order[p]];
      if (s.qubits.empty() || (wires(g) & ~w) == 0) continue;
      EXPECT_TRUE(g.diagonal) << p;  // only diagonal gates may leave the chunk
      outside = true;
    }
  }
  EXPECT_TRUE(outside);
}

TEST(CacheBlocking, WideGateIsAppliedDirectly) {
  Circuit c(6);
  c.add(GateId::H, {0});
  c.add(GateId::MultiRZ, {0, 1, 2, 3, 4}, std::vector<double>{0.3});
  c.add(GateId::H, {1});
  const SegmentPlan plan = plan_segments(bind_params(c, {}), 6, 4, 1);
  ASSERT_EQ(plan.segments.size(), 3u);
  for (const Segment& s : plan.segments) EXPECT_TRUE(s.qubits.empty());
  EXPECT_EQ(plan.order, (std::vector<int>{0, 1, 2}));
}

}  // namespace
}  // namespace qmlsim
