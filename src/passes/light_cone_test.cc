#include "passes/light_cone.h"

#include <gtest/gtest.h>

#include "testing/dense_oracle.h"

namespace qmlsim {
namespace {

// Measure::whole where a flag is set.
std::vector<Measure> measures(const std::vector<char>& flags) {
  std::vector<Measure> out;
  for (char f : flags) out.push_back(f ? Measure::whole : Measure::none);
  return out;
}

BoundGate on(std::vector<int> targets, std::vector<int> controls = {}) {
  BoundGate g;
  g.targets = std::move(targets);
  g.controls = std::move(controls);
  return g;
}

TEST(LightCone, FirstGatesOnEachWireAndUnmeasuredPrefixesNeedNoUndo) {
  // H0 H1 | RY0* RY1* | CNOT 0->1 | RZ1* | RX2 | CNOT 1->2   (* = measured)
  const std::vector<BoundGate> gates = {on({0}),      on({1}), on({0}), on({1}),
                                        on({1}, {0}), on({1}), on({2}), on({2}, {1})};
  const std::vector<Measure> measured = measures({0, 0, 1, 1, 0, 1, 0, 0});
  const std::vector<char> want = {0, 0, 0, 0, 1, 1, 0, 1};
  EXPECT_EQ(undo_needed(gates, measured), want);
  EXPECT_EQ(undo_needed(gates, std::vector<Measure>(gates.size(), Measure::none)),
            std::vector<char>(gates.size(), 0));
}

// Against the definition: i needs undoing iff some measured j < i reaches i
// through a chain j = k0 < k1 < ... < i of gates, consecutive ones sharing a wire.
TEST(LightCone, EqualsTheTransitiveClosureOnRandomCircuits) {
  std::mt19937_64 rng(21);
  for (int trial = 0; trial < 40; ++trial) {
    const int n = 3 + trial % 6;
    const std::vector<BoundGate> gates = bind_params(testing::random_circuit(n, 25, rng, true), {});
    std::vector<char> measured(gates.size());
    for (char& m : measured) m = rng() % 3 == 0;
    const std::size_t count = gates.size();
    std::vector<char> reach(count * count, 0);  // reach[j * count + i]: j reaches i
    for (std::size_t j = 0; j < count; ++j)
      for (std::size_t i = j + 1; i < count; ++i) {
        bool r = (gates[j].wire_mask() & gates[i].wire_mask()) != 0;
        for (std::size_t k = j + 1; k < i && !r; ++k)
          r = reach[j * count + k] && (gates[k].wire_mask() & gates[i].wire_mask()) != 0;
        reach[j * count + i] = r;
      }
    const std::vector<char> got = undo_needed(gates, measures(measured));
    for (std::size_t i = 0; i < count; ++i) {
      bool want = false;
      for (std::size_t j = 0; j < i; ++j) want = want || (measured[j] && reach[j * count + i]);
      ASSERT_EQ(got[i] != 0, want) << "trial " << trial << " gate " << i;
    }
  }
}

}  // namespace
}  // namespace qmlsim
