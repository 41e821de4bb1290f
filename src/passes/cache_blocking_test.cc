#include "passes/cache_blocking.h"

#include <gtest/gtest.h>

#include "testing/dense_oracle.h"

namespace qmlsim {
namespace {

TEST(CacheBlocking, SegmentsCoverAllGatesAndFitTheirChunk) {
  std::mt19937_64 rng(4);
  const int n = 12;
  const std::vector<BoundGate> gates = bind(testing::random_circuit(n, 300, rng, true), {});
  const std::vector<Segment> segs = plan_segments(gates, n, 7, 2);
  int next = 0;
  for (const Segment& s : segs) {
    EXPECT_EQ(s.begin, next);
    EXPECT_GT(s.end, s.begin);
    next = s.end;
    if (s.qubits.empty()) continue;
    EXPECT_EQ(s.qubits.size(), 7u);
    EXPECT_EQ(s.qubits[0], 0);
    EXPECT_EQ(s.qubits[1], 1);
    for (int i = s.begin; i < s.end; ++i) {
      for (int q : gates[i].targets) EXPECT_TRUE(std::count(s.qubits.begin(), s.qubits.end(), q));
      for (int q : gates[i].controls) EXPECT_TRUE(std::count(s.qubits.begin(), s.qubits.end(), q));
    }
  }
  EXPECT_EQ(next, static_cast<int>(gates.size()));
  EXPECT_LT(segs.size(), gates.size() / 2);  // blocking actually groups gates
}

TEST(CacheBlocking, WideGateIsAppliedDirectly) {
  Circuit c(6);
  c.add(GateId::H, {0});
  c.add(GateId::MultiRZ, {0, 1, 2, 3, 4}, std::vector<double>{0.3});
  c.add(GateId::H, {1});
  const std::vector<Segment> segs = plan_segments(bind(c, {}), 6, 4, 1);
  ASSERT_EQ(segs.size(), 3u);
  for (const Segment& s : segs) EXPECT_TRUE(s.qubits.empty());
}

}  // namespace
}  // namespace qmlsim
