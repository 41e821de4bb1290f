// The small-batch programs (small_batch_ops.h), run here by one CPU worker, and
// by several taking turns, against the CPU backend: the same code the GPU's
// thread blocks run, so its arithmetic and packing are tested without a GPU.
#include <gtest/gtest.h>

#include <random>

#include "backends/cpu/statevector.h"
#include "backends/cuda/small_batch_pack.h"
#include "passes/fusion.h"
#include "testing/dense_oracle.h"

namespace qmlsim::cuda {
namespace {

auto no_sync = [] {};
auto one_worker = [](double v) { return v; };

template <class R>
constexpr double tol() {
  return sizeof(R) == 4 ? 2e-5 : 1e-12;
}

template <class R>
void check_forward() {
  std::mt19937_64 rng(3);
  for (int n : {1, 2, 4, 7, 10}) {
    std::vector<std::vector<BoundGate>> items;
    for (int k = 1; k <= kPackMaxDense; ++k)  // items with different gates
      items.push_back(fuse(bind_params(testing::random_circuit(n, 30, rng, true), {}), {k, 10}));
    const std::vector<PauliSum> obs = {parse_pauli_sum("Z0", "t"),
                                       parse_pauli_sum(n > 1 ? "0.5*X0*Y1 - 0.25" : "Y0", "t")};
    const PackedItems p = pack_items(n, items);
    const PackedSums s = pack_sums(obs);
    std::vector<PackedTerms> terms;
    for (std::size_t k = 0; k < obs.size(); ++k)
      terms.push_back(s.terms(k, s.x.data(), s.z.data(), s.c.data()));
    for (std::size_t i = 0; i < items.size(); ++i) {
      std::vector<R> a(std::size_t{2} << n);
      double e[2];
      forward_item(a.data(), n, &p.gates[p.first[i]], static_cast<int>(p.first[i + 1] - p.first[i]),
                   p.matrices.data(), terms.data(), 2, e, 0, 1, no_sync, one_worker);
      cpu::StateVector<R> want(n);
      want.apply(items[i]);
      for (index_t j = 0; j < want.size(); ++j)
        ASSERT_LT(std::abs(cplx{a[2 * j], a[2 * j + 1]} - want.amplitude(j)), 10 * tol<R>())
            << "n=" << n << " item " << i;
      EXPECT_NEAR(e[0], want.expval(obs[0]), 10 * tol<R>());
      EXPECT_NEAR(e[1], want.expval(obs[1]), 10 * tol<R>());
      // Three workers taking turns gate by gate give the same state.
      std::vector<R> b(std::size_t{2} << n, 0);
      b[0] = 1;
      for (std::uint32_t j = p.first[i]; j < p.first[i + 1]; ++j)
        for (int tid = 0; tid < 3; ++tid)
          apply_packed(b.data(), n, p.gates[j], p.matrices.data(), tid, 3);
      EXPECT_EQ(a, b);
    }
  }
}

TEST(SmallBatchOps, ForwardEqualsCpuBackendC64) { check_forward<float>(); }
TEST(SmallBatchOps, ForwardEqualsCpuBackendC128) { check_forward<double>(); }

template <class R>
void check_backward() {
  std::mt19937_64 rng(9);
  for (int n : {2, 5, 9}) {
    const std::vector<BoundGate> gates = bind_params(testing::random_circuit(n, 25, rng, true), {});
    std::vector<BoundGate> inverse;
    std::vector<Measure> measure;
    for (const BoundGate& g : gates) {
      inverse.push_back(adjoint(g));
      const bool measured = (g.diagonal && g.num_targets() <= 5) || g.num_targets() <= 2;
      measure.push_back(measured ? Measure::whole : Measure::none);
    }
    const PauliSum h = parse_pauli_sum("0.3*Z0 - X1*Z0 + 0.4*Y0 + 0.7", "t");
    const std::vector<std::vector<Measure>> measured = {measure};
    const PackedItems p = pack_items(n, {inverse}, &measured);
    const PackedSums s = pack_sums({h});
    const PackedTerms t = s.terms(0, s.x.data(), s.z.data(), s.c.data());
    const testing::State phi0 = testing::random_state(n, rng);
    std::vector<R> phi(std::size_t{2} << n), lam(std::size_t{2} << n);
    for (std::size_t j = 0; j < phi0.size(); ++j) {
      phi[2 * j] = static_cast<R>(phi0[j].real());
      phi[2 * j + 1] = static_cast<R>(phi0[j].imag());
    }
    std::vector<double> cross(p.cross_doubles);
    backward_item(phi.data(), lam.data(), n, p.gates.data(), static_cast<int>(p.gates.size()),
                  p.matrices.data(), t, cross.data(), 0, 1, no_sync, one_worker);
    cpu::StateVector<R> cp(n), cl(n);
    cp.set_amplitudes(phi0);
    cl.assign_applied(h, cp);
    std::vector<Matrix> want;
    cp.adjoint_sweep(cl, inverse, measure, want);
    for (std::size_t j = 0; j < inverse.size(); ++j) {
      if (measure[j] == Measure::none) continue;
      const PackedGate& g = p.gates[j];
      const std::size_t dim = inverse[j].dim();
      const Matrix got = testing::dense_sums(cross_matrix_of(g, inverse[j], &cross[g.cross]), dim);
      const Matrix w = testing::dense_sums(want[j], dim);
      for (std::size_t e = 0; e < dim * dim; ++e)
        ASSERT_LT(std::abs(got[e] - w[e]), 100 * tol<R>()) << "n=" << n << " gate " << j;
    }
    // The block program undoes every gate; the CPU sweep skips those outside the
    // measured gates' light cone, so lambda is checked against a full undo.
    cpu::StateVector<R> full(n), lam_full(n);
    full.set_amplitudes(phi0);
    lam_full.assign_applied(h, full);
    for (std::size_t j = inverse.size(); j-- > 0;) lam_full.apply(inverse[j]);
    for (index_t j = 0; j < cp.size(); ++j)
      ASSERT_LT(std::abs(cplx{lam[2 * j], lam[2 * j + 1]} - lam_full.amplitude(j)), 100 * tol<R>());
  }
}

TEST(SmallBatchOps, BackwardEqualsCpuAdjointSweepC64) { check_backward<float>(); }
TEST(SmallBatchOps, BackwardEqualsCpuAdjointSweepC128) { check_backward<double>(); }

TEST(SmallBatchOps, PackingRefusesWhatTheKernelsCannotTake) {
  std::mt19937_64 rng(1);
  BoundGate wide;
  wide.targets = {0, 1, 2, 3, 4, 5};
  wide.matrix = testing::random_unitary(6, rng);
  EXPECT_THROW(pack_items(8, {{wide}}), Error);
  BoundGate three;
  three.targets = {0, 1, 2};
  three.matrix = testing::random_unitary(3, rng);
  EXPECT_NO_THROW(pack_items(8, {{three}}));
  const std::vector<std::vector<Measure>> measured = {{Measure::whole}};
  EXPECT_THROW(pack_items(8, {{three}}, &measured), Error);
}

}  // namespace
}  // namespace qmlsim::cuda
