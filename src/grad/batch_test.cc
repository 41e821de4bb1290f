// The batch entry points against the dense oracle (expectation values and
// probabilities from each item's own starting state) and against the
// single-item adjoint entry points (gradients), on items that differ in
// circuit, values, starting state and observables, on one and two threads.
#include "grad/batch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.h"
#include "core/memory.h"
#include "grad/engine.h"
#include "testing/dense_oracle.h"

namespace qmlsim {
namespace {

using testing::State;

struct Fixture {
  int n = 5;
  std::vector<Circuit> circuits;
  std::vector<std::vector<double>> thetas;
  std::vector<State> initial;  // empty for even items
  std::vector<PauliSum> observables;
  std::vector<BatchItem> items;

  explicit Fixture(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> angle(-3, 3);
    for (int i = 0; i < 6; ++i) {
      circuits.push_back(testing::random_parametric_circuit(n, 12, 4, rng));
      thetas.emplace_back();
      for (int s = 0; s < 4; ++s) thetas.back().push_back(angle(rng));
      initial.push_back(i % 2 ? testing::random_state(n, rng) : State{});
    }
    for (int k = 0; k < 2; ++k) observables.push_back(testing::random_observable(n, rng));
    for (std::size_t i = 0; i < circuits.size(); ++i)
      items.push_back({&circuits[i], thetas[i], initial[i]});
  }

  State dense_final(std::size_t i) const {
    State psi = initial[i];
    if (psi.empty()) {
      psi.assign(std::size_t{1} << n, 0);
      psi[0] = 1;
    }
    return testing::run_dense(circuits[i], thetas[i], psi);
  }
};

class BatchTest : public ::testing::TestWithParam<int> {
 protected:
  EngineOptions options() const {
    EngineOptions o;
    o.threads = GetParam();
    return o;
  }
};

TEST_P(BatchTest, ExpvalsAndProbabilitiesMatchTheDenseOracle) {
  const Fixture f(11);
  SimulateRequest req;
  req.observables = f.observables;
  req.probabilities = true;
  for (Precision p : {Precision::c64, Precision::c128}) {
    const double tol = p == Precision::c64 ? 1e-5 : 1e-12;
    const std::vector<SimulateResult> r = simulate_batch(f.items, req, p, options());
    ASSERT_EQ(r.size(), f.items.size());
    for (std::size_t i = 0; i < f.items.size(); ++i) {
      const State psi = f.dense_final(i);
      for (std::size_t k = 0; k < f.observables.size(); ++k)
        EXPECT_NEAR(r[i].expvals[k], testing::expval_dense(f.observables[k], psi), tol);
      for (std::size_t b = 0; b < psi.size(); ++b)
        EXPECT_NEAR(r[i].probabilities[b], std::norm(psi[b]), tol);
    }
  }
}

TEST_P(BatchTest, ExpvalsOnlyBatchesMatchTheDenseOracle) {  // the expvals_many path
  Fixture f(12);
  for (BatchItem& it : f.items) it.initial_state = {};
  f.initial.assign(f.initial.size(), State{});
  SimulateRequest req;
  req.observables = f.observables;
  const std::vector<SimulateResult> r = simulate_batch(f.items, req, Precision::c128, options());
  for (std::size_t i = 0; i < f.items.size(); ++i)
    for (std::size_t k = 0; k < f.observables.size(); ++k)
      EXPECT_NEAR(r[i].expvals[k], testing::expval_dense(f.observables[k], f.dense_final(i)),
                  1e-12);
}

TEST_P(BatchTest, VjpsAndJacobiansEqualTheSingleItemEntryPoints) {
  const Fixture f(13);
  std::vector<std::vector<double>> weights = {{1, 0}, {0.5, -2}, {0, 1}, {3, 1}, {1, 1}, {-1, 0}};
  const std::vector<AdjointResult> v =
      vjp_batch(f.items, f.observables, weights, Precision::c128, options());
  const std::vector<JacobianResult> j =
      jacobian_batch(f.items, f.observables, Precision::c128, options());
  for (std::size_t i = 0; i < f.items.size(); ++i) {
    EngineOptions one;
    one.initial_state = f.initial[i];
    const AdjointResult want =
        adjoint_vjp<double>(f.circuits[i], f.thetas[i], f.observables, weights[i], one);
    for (std::size_t s = 0; s < want.gradient.size(); ++s) {
      EXPECT_NEAR(v[i].gradient[s], want.gradient[s], 1e-12);
      EXPECT_NEAR(j[i].rows[0][s] * weights[i][0] + j[i].rows[1][s] * weights[i][1],
                  want.gradient[s], 1e-12);
    }
    for (std::size_t k = 0; k < 2; ++k) {
      EXPECT_NEAR(v[i].expvals[k], want.expvals[k], 1e-12);
      EXPECT_NEAR(j[i].expvals[k], want.expvals[k], 1e-12);
    }
  }
}

TEST_P(BatchTest, ItemsMayCarryTheirOwnObservables) {
  const Fixture f(14);
  std::vector<std::vector<PauliSum>> own;
  for (std::size_t i = 0; i < f.items.size(); ++i) own.push_back({f.observables[i % 2]});
  std::vector<BatchItem> items = f.items;
  for (std::size_t i = 0; i < items.size(); ++i) items[i].observables = &own[i];
  const std::vector<std::vector<double>> ones(items.size(), {1.0});
  const std::vector<AdjointResult> v = vjp_batch(items, {}, ones, Precision::c128, options());
  for (std::size_t i = 0; i < items.size(); ++i) {
    EngineOptions one;
    one.initial_state = f.initial[i];
    const std::vector<double> w = {1.0};
    const AdjointResult want = adjoint_vjp<double>(f.circuits[i], f.thetas[i], own[i], w, one);
    EXPECT_NEAR(v[i].expvals[0], want.expvals[0], 1e-12);
    for (std::size_t s = 0; s < want.gradient.size(); ++s)
      EXPECT_NEAR(v[i].gradient[s], want.gradient[s], 1e-12);
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, BatchTest, ::testing::Values(1, 2));

TEST(Batch, RefusesMismatchedWeightsAndStatesTooLargeForMemory) {
  const Fixture f(15);
  EXPECT_THROW(vjp_batch(f.items, f.observables, {{1, 0}}, Precision::c128, {}), Error);
  const std::vector<std::vector<double>> short_rows(f.items.size(), {1.0});
  EXPECT_THROW(vjp_batch(f.items, f.observables, short_rows, Precision::c128, {}), Error);
  const Circuit huge(kMaxQubits);
  try {
    check_states_fit(huge, 1, Precision::c128, {});
    FAIL() << "a 40-qubit state fits";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("1 40-qubit state(s): needs"), std::string::npos)
        << e.what();
  }
}

// A density matrix counts as the 2n-qubit state it is, with the states its
// gradient keeps; an oversized one is refused before anything is allocated.
TEST(Batch, ItemSizesCountTheStateActuallySimulated) {
  Circuit c(11);
  for (int q = 0; q < 11; ++q) {
    c.add(GateId::RY, {q}, {ParamExpr::literal(0.3)});
    Operation noise;
    noise.channel = ChannelId::depolarizing;
    noise.wires = {q};
    noise.params = {ParamExpr::literal(0.01)};
    c.add(noise);
  }
  const std::uint64_t dm = std::uint64_t{16} << 22;  // 2^22 complex128 amplitudes
  EXPECT_EQ(item_size(c, 1, Precision::c128, {}).state_qubits, 22);
  EXPECT_EQ(item_size(c, 1, Precision::c128, {}).bytes, dm);
  EXPECT_EQ(item_size(c, 1, Precision::c64, {}).bytes, dm / 2);
  EXPECT_EQ(item_size(c, 2, Precision::c128, {}).bytes, 13 * dm);  // and 11 kept
  EngineOptions small_budget;
  small_budget.checkpoint_bytes = dm;  // beyond it: 2 ceil(sqrt(11)) = 8 states at most
  EXPECT_EQ(item_size(c, 2, Precision::c128, small_budget).bytes, 10 * dm);
  EXPECT_EQ(item_size(Circuit(11), 2, Precision::c128, {}).bytes, 2 * (std::uint64_t{16} << 11));
  Circuit huge(18);
  huge.add(c.ops()[1]);
  EngineOptions dm_method;  // automatic would take trajectories
  dm_method.method = Method::density_matrix;
  try {
    check_states_fit(huge, 2, Precision::c128, dm_method);
    FAIL() << "an 18-qubit density matrix fits";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("2 18-qubit density matri(ces) and the states its "
                                         "gradient keeps: needs"),
              std::string::npos)
        << e.what();
  }
}

// Items run one per thread only where that many fit in memory together;
// otherwise in turn, with the threads inside each.
TEST(Batch, ItemsRunOnePerThreadOnlyWhereTheyFitTogether) {
  const std::uint64_t have = usable_memory().bytes;
  if (have == 0) GTEST_SKIP() << "this machine's memory is unknown";
  EngineOptions two;
  two.threads = 2;
  const ItemSize half{10, have / 10 * 9 / 2 + 1}, small{10, 1 << 20};
  EXPECT_TRUE(detail::in_flight_fits(1, half, two));
  EXPECT_FALSE(detail::in_flight_fits(2, half, two));
  EXPECT_TRUE(detail::in_flight_fits(8, small, two));
  for (const auto& [size, inside] : {std::pair{half, 2}, {small, 1}}) {
    std::vector<int> threads(4, 0);
    detail::for_each_item(threads.size(), size, two,
                          [&](std::size_t i, const EngineOptions& o) { threads[i] = o.threads; });
    EXPECT_EQ(threads, std::vector<int>(4, inside)) << size.bytes;
  }
}

TEST(Batch, AnErrorInOneItemIsRethrownOnAnyNumberOfThreads) {
  Fixture f(16);
  const State bad(8, cplx{0.5, 0});  // 8 amplitudes for 5 qubits
  f.items[3].initial_state = bad;
  for (int threads : {1, 2}) {
    EngineOptions o;
    o.threads = threads;
    SimulateRequest req;
    req.observables = f.observables;
    EXPECT_THROW(simulate_batch(f.items, req, Precision::c128, o), Error);
  }
}

}  // namespace
}  // namespace qmlsim
