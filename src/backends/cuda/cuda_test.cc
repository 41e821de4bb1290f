// The CUDA backend against the CPU backend (itself tested against the dense
// oracle): gates and fused blocks, expectation values, H|psi>, the adjoint
// sweep, sampling. Skipped, with the reason, on machines without a GPU; the
// error paths run everywhere.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "backends/cpu/statevector.h"
#include "backends/cuda/small_batch.h"
#include "backends/cuda/statevector.h"
#include "passes/fusion.h"
#include "testing/dense_oracle.h"

namespace qmlsim::cuda {
namespace {

using testing::State;

template <class R>
constexpr double tol() {
  return sizeof(R) == 4 ? 2e-5 : 1e-12;
}

class CudaVsCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const DeviceStatus s = device_status();
    if (s.count == 0) GTEST_SKIP() << "no GPU here (" << s.error << "): CUDA tests skipped";
    select_device(0);
  }
};

template <class R>
State run_cpu(int n, const std::vector<BoundGate>& gates, const State& in) {
  cpu::StateVector<R> sv(n);
  sv.set_amplitudes(in);
  sv.apply(gates);
  return sv.to_vector();
}

template <class R>
State run_gpu(int n, const std::vector<BoundGate>& gates, const State& in) {
  StateVector<R> sv(n);
  sv.set_amplitudes(in);
  sv.apply(gates);
  return sv.to_vector();
}

template <class R>
void check_gates() {
  std::mt19937_64 rng(21);
  for (int n : {1, 2, 3, 5, 8, 12, 20}) {
    const Circuit c = testing::random_circuit(n, n >= 20 ? 60 : 40, rng, true);
    const State in = testing::random_state(n, rng);
    const std::vector<BoundGate> gates = bind_params(c, {});
    const State want = run_cpu<R>(n, gates, in);
    ASSERT_LT(testing::max_abs_diff(want, run_gpu<R>(n, gates, in)), 10 * tol<R>()) << "n=" << n;
    for (int k = 2; k <= kMaxDenseTargets; ++k) {
      const std::vector<BoundGate> fused = fuse(gates, {k, 10});
      ASSERT_LT(testing::max_abs_diff(want, run_gpu<R>(n, fused, in)), 10 * tol<R>())
          << "n=" << n << " fusion=" << k;
    }
  }
}

TEST_F(CudaVsCpu, GatesAndFusedBlocksC64) { check_gates<float>(); }
TEST_F(CudaVsCpu, GatesAndFusedBlocksC128) { check_gates<double>(); }

PauliSum random_observable(int n, std::mt19937_64& rng) {
  PauliSum h;
  std::uniform_real_distribution<double> u(-1, 1);
  for (int t = 0; t < 6; ++t) {
    index_t x = 0, z = 0;
    for (int q = 0; q < n; ++q) {
      const int p = static_cast<int>(rng() % 4);  // I, X, Y, Z
      if (p == 1 || p == 2) x |= index_t{1} << q;
      if (p == 2 || p == 3) z |= index_t{1} << q;
    }
    h.add(u(rng), x, z);
  }
  h.add(0.25, 0, 0);
  return h;
}

template <class R>
void check_observables() {
  std::mt19937_64 rng(5);
  for (int n : {1, 4, 9, 16}) {
    const State in = testing::random_state(n, rng);
    const PauliSum h = random_observable(n, rng);
    cpu::StateVector<R> c(n), hc(n);
    StateVector<R> g(n), hg(n);
    c.set_amplitudes(in);
    g.set_amplitudes(in);
    EXPECT_NEAR(g.expval(h), c.expval(h), 100 * tol<R>()) << "n=" << n;
    EXPECT_NEAR(g.norm_squared(), 1.0, 100 * tol<R>());
    hc.assign_applied(h, c);
    hg.assign_applied(h, g);
    EXPECT_LT(testing::max_abs_diff(hc.to_vector(), hg.to_vector()), 100 * tol<R>());
  }
}

TEST_F(CudaVsCpu, ExpectationValuesAndPauliProductsC64) { check_observables<float>(); }
TEST_F(CudaVsCpu, ExpectationValuesAndPauliProductsC128) { check_observables<double>(); }

template <class R>
void check_adjoint_sweep() {
  std::mt19937_64 rng(8);
  for (int n : {3, 7, 14}) {
    const Circuit c = testing::random_circuit(n, 30, rng, true);
    std::vector<BoundGate> inverse;
    std::vector<Measure> measure;
    for (const BoundGate& g : bind_params(c, {})) {
      inverse.push_back(adjoint(g));
      const bool measured = (g.diagonal && g.num_targets() <= 5) || g.num_targets() <= 2;
      measure.push_back(measured ? Measure::whole : Measure::none);
    }
    const State phi0 = testing::random_state(n, rng), lam0 = testing::random_state(n, rng);
    cpu::StateVector<R> cp(n), cl(n);
    StateVector<R> gp(n), gl(n);
    cp.set_amplitudes(phi0);
    cl.set_amplitudes(lam0);
    gp.set_amplitudes(phi0);
    gl.set_amplitudes(lam0);
    std::vector<Matrix> want, got;
    cp.adjoint_sweep(cl, inverse, measure, want);
    gp.adjoint_sweep(gl, inverse, measure, got);
    // The GPU undoes every gate; the CPU sweep skips those outside the measured
    // gates' light cone, so the states are checked against a full undo.
    cpu::StateVector<R> phi_full(n), lam_full(n);
    phi_full.set_amplitudes(phi0);
    lam_full.set_amplitudes(lam0);
    for (std::size_t j = inverse.size(); j-- > 0;) {
      phi_full.apply(inverse[j]);
      lam_full.apply(inverse[j]);
    }
    EXPECT_LT(testing::max_abs_diff(phi_full.to_vector(), gp.to_vector()), 100 * tol<R>());
    EXPECT_LT(testing::max_abs_diff(lam_full.to_vector(), gl.to_vector()), 100 * tol<R>());
    for (std::size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(want[i].size(), got[i].size()) << i;  // the same form (diagonals: entries)
      for (std::size_t e = 0; e < want[i].size(); ++e)
        EXPECT_LT(std::abs(want[i][e] - got[i][e]), 100 * tol<R>()) << "gate " << i;
    }
  }
}

TEST_F(CudaVsCpu, AdjointSweepC64) { check_adjoint_sweep<float>(); }
TEST_F(CudaVsCpu, AdjointSweepC128) { check_adjoint_sweep<double>(); }

TEST_F(CudaVsCpu, SamplesEqualTheCpuBackendsForTheSameSeed) {
  std::mt19937_64 rng(2);
  const int n = 10;
  const std::vector<BoundGate> gates = bind_params(testing::random_circuit(n, 30, rng, false), {});
  cpu::StateVector<double> c(n);
  StateVector<double> g(n);
  c.apply(gates);
  g.apply(gates);
  EXPECT_EQ(c.sample(1000, 7), g.sample(1000, 7));
}

template <class R>
void check_small_batch() {
  // Items with different gates, forward and backward in one launch each,
  // against the CPU backend item by item.
  std::mt19937_64 rng(12);
  for (int n : {3, 8, small_batch_max_qubits(kPrecisionOf<R>)}) {
    std::vector<std::vector<BoundGate>> forward, inverse;
    std::vector<std::vector<Measure>> measure;
    std::vector<PauliSum> h;
    for (int i = 0; i < 37; ++i) {
      forward.push_back(bind_params(testing::random_circuit(n, 20, rng, true), {}));
      inverse.emplace_back();
      measure.emplace_back();
      for (const BoundGate& g : forward.back()) {
        inverse.back().push_back(adjoint(g));
        const bool measured = (g.diagonal && g.num_targets() <= 5) || g.num_targets() <= 2;
        measure.back().push_back(measured ? Measure::whole : Measure::none);
      }
      h.push_back(random_observable(n, rng));
    }
    const std::vector<PauliSum> obs = {h[0], h[1]};
    SmallBatch<R> batch(n, forward);
    const std::vector<std::vector<double>> e = batch.run(obs);
    std::vector<std::vector<Matrix>> got;
    batch.adjoint_sweep(h, inverse, measure, got);
    for (std::size_t i = 0; i < forward.size(); ++i) {
      cpu::StateVector<R> phi(n), lam(n);
      phi.apply(forward[i]);
      for (std::size_t k = 0; k < obs.size(); ++k)
        EXPECT_NEAR(e[i][k], phi.expval(obs[k]), 100 * tol<R>()) << "item " << i;
      lam.assign_applied(h[i], phi);
      std::vector<Matrix> want;
      phi.adjoint_sweep(lam, inverse[i], measure[i], want);
      for (std::size_t j = 0; j < want.size(); ++j) {
        const Matrix& w = want[j];  // the same form (diagonals: entries)
        ASSERT_EQ(w.size(), got[i][j].size()) << "item " << i << " gate " << j;
        for (std::size_t x = 0; x < w.size(); ++x)
          EXPECT_LT(std::abs(w[x] - got[i][j][x]), 100 * tol<R>()) << "item " << i;
      }
    }
  }
}

TEST_F(CudaVsCpu, SmallBatchC64) { check_small_batch<float>(); }
TEST_F(CudaVsCpu, SmallBatchC128) { check_small_batch<double>(); }

TEST(Cuda, LocalRankComesFromTheLauncher) {
  const char* vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID",
                        "PMI_LOCAL_RANK"};
  for (const char* v : vars) unsetenv(v);
  EXPECT_EQ(local_rank_from_env(), 0);
  setenv("SLURM_LOCALID", "3", 1);
  EXPECT_EQ(local_rank_from_env(), 3);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "5", 1);  // OpenMPI's wins: it is looked at first
  EXPECT_EQ(local_rank_from_env(), 5);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "x", 1);  // not a number: the next one
  EXPECT_EQ(local_rank_from_env(), 3);
  for (const char* v : vars) unsetenv(v);
}

TEST(Cuda, NoDeviceOrImpossibleSizeIsAClearError) {
  // Without a GPU (or without CUDA in the build) every state is refused with the
  // reason; with one, a 40-qubit state is refused with its size.
  try {
    StateVector<double> sv(40);
    FAIL() << "a 40-qubit complex128 state was allocated";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_TRUE(m.find("--backend cuda") != std::string::npos ||
                m.find("16384.00 GiB") != std::string::npos)
        << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  if (device_status().count == 0) {
    EXPECT_THROW(select_device(0), Error);
    EXPECT_FALSE(device_status().error.empty());
  }
}

}  // namespace
}  // namespace qmlsim::cuda
