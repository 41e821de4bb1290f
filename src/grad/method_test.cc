#include "grad/method.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace qmlsim {
namespace {

EngineOptions with(Method m) {
  EngineOptions o;
  o.method = m;
  return o;
}

Circuit noisy(int n) {
  Circuit c(n);
  c.add(GateId::H, {0});
  Operation damp;
  damp.channel = ChannelId::amplitude_damping;
  damp.wires = {0};
  damp.params = {ParamExpr::literal(0.3)};
  c.add(damp);
  return c;
}

// Every method on pure, noisy, mixed-start and dynamic circuits, with the
// state each occupies.
TEST(ChooseMethod, ResolvesEveryMethodForEveryKindOfCircuit) {
  const CircuitNeeds pure, channels{.channels = true}, mixed{.mixed_start = true},
      dynamic{.dynamic = true}, noisy_dynamic{.channels = true, .dynamic = true};
  const EngineOptions automatic;
  EXPECT_EQ(choose_method(4, pure, automatic).method, Method::statevector);
  EXPECT_EQ(choose_method(4, pure, automatic).state_qubits, 4);
  EXPECT_EQ(choose_method(4, channels, automatic).method, Method::density_matrix);
  EXPECT_EQ(choose_method(4, channels, automatic).state_qubits, 8);
  EXPECT_EQ(choose_method(4, mixed, automatic).method, Method::density_matrix);
  EXPECT_EQ(choose_method(4, dynamic, automatic).method, Method::statevector);
  EXPECT_TRUE(choose_method(4, dynamic, automatic).branch_walk);
  EXPECT_FALSE(choose_method(4, channels, automatic).branch_walk);
  EXPECT_EQ(choose_method(4, noisy_dynamic, automatic).method, Method::density_matrix);

  const EngineOptions dm = with(Method::density_matrix);
  for (const CircuitNeeds& k : {pure, channels, mixed, dynamic})
    EXPECT_EQ(choose_method(3, k, dm).method, Method::density_matrix);

  const EngineOptions traj = with(Method::trajectories);
  EXPECT_EQ(choose_method(3, pure, traj).method, Method::statevector);  // nothing to draw
  EXPECT_EQ(choose_method(3, channels, traj).method, Method::trajectories);
  EXPECT_EQ(choose_method(3, dynamic, traj).method, Method::trajectories);

  const EngineOptions sv = with(Method::statevector);
  EXPECT_EQ(choose_method(3, pure, sv).method, Method::statevector);
  EXPECT_THROW(choose_method(3, channels, sv), Error);
  EXPECT_EQ(choose_method(3, noisy_dynamic, sv).method, Method::statevector);  // Kraus branches
}

// Beyond memory a noisy circuit runs by trajectories (a dynamic one walks
// the state vector); with trajectory_estimate, wherever they cost less.
TEST(ChooseMethod, TrajectoriesBeyondMemoryOrWhereAnEstimateCostsLess) {
  const EngineOptions automatic;
  EXPECT_EQ(choose_method(31, {.channels = true}, automatic).method, Method::trajectories);
  EXPECT_EQ(choose_method(31, {.channels = true, .dynamic = true}, automatic).method,
            Method::statevector);
  EngineOptions estimate;
  estimate.trajectory_estimate = true;
  estimate.trajectories = 100;
  EXPECT_EQ(choose_method(8, {.channels = true}, estimate).method, Method::density_matrix);
  EXPECT_EQ(choose_method(10, {.channels = true}, estimate).method, Method::trajectories);
  EXPECT_EQ(choose_method(10, {}, estimate).method, Method::statevector);
}

TEST(ChooseMethod, ReadsTheCircuitAndItsStartingState) {
  EXPECT_EQ(choose_method(noisy(2), EngineOptions{}).name(), "density_matrix");
  EXPECT_EQ(choose_method(Circuit(2), EngineOptions{}).name(), "statevector");
  const std::vector<cplx> rho(16, 0.25);
  EngineOptions mixed;
  mixed.initial_state = rho;
  EXPECT_EQ(choose_method(Circuit(2), mixed).method, Method::density_matrix);
  EXPECT_EQ(choose_method(noisy(2), with(Method::trajectories)).name(), "trajectories");
}

}  // namespace
}  // namespace qmlsim
