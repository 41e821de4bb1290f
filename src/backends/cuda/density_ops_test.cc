// The GPU's density-matrix readouts (density_ops.h), run here by one CPU
// worker and by several taking turns, and the CPU state vector's
// (backends/cpu/density.h), against dense matrices: Tr(H rho), vec(H), the
// diagonal and the matrix, with H built from Kronecker products of Pauli
// matrices.
#include "backends/cuda/density_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <complex>
#include <random>
#include <vector>

#include "backends/cpu/statevector.h"
#include "backends/cuda/small_batch_pack.h"

namespace qmlsim::cuda {
namespace {

using Dense = std::vector<cplx>;  // row-major dim x dim

// The Pauli word of masks (x, z) as a dense matrix: qubit q (bit q of an
// index) carries X, Y or Z where x and z say.
Dense pauli_word(int m, u64 x, u64 z) {
  const cplx i1{0, 1};
  const cplx sx[4] = {0, 1, 1, 0}, sy[4] = {0, -i1, i1, 0}, sz[4] = {1, 0, 0, -1},
             id[4] = {1, 0, 0, 1};
  const u64 dim = u64{1} << m;
  Dense p(dim * dim);
  for (u64 r = 0; r < dim; ++r)
    for (u64 c = 0; c < dim; ++c) {
      cplx v = 1;
      for (int q = 0; q < m; ++q) {
        const bool bx = x >> q & 1, bz = z >> q & 1;
        const cplx* s = bx && bz ? sy : bx ? sx : bz ? sz : id;
        v *= s[2 * (r >> q & 1) + (c >> q & 1)];
      }
      p[r * dim + c] = v;
    }
  return p;
}

Dense dense_of(const PauliSum& h, int m) {
  const u64 dim = u64{1} << m;
  Dense out(dim * dim);
  for (const PauliTerm& t : h.terms) {
    const Dense p = pauli_word(m, t.xmask, t.zmask);
    for (u64 i = 0; i < dim * dim; ++i) out[i] += t.coeff * p[i];
  }
  return out;
}

PauliSum random_sum(int m, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> coeff(-1, 1);
  const u64 dim = u64{1} << m;
  PauliSum h;
  for (int t = 0; t < 6; ++t) h.add(coeff(rng), rng() % dim, rng() % dim);
  h.add(coeff(rng), rng() % dim, rng() % dim);
  h.terms.push_back(h.terms[0]);  // a repeated word: two terms on one entry
  return h;
}

template <class R>
void check_readouts() {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> g;
  for (int m : {1, 2, 3, 5}) {
    const u64 dim = u64{1} << m;
    // a random Hermitian rho, held as vec(rho)
    Dense rho(dim * dim);
    for (u64 r = 0; r < dim; ++r)
      for (u64 c = r; c < dim; ++c) {
        rho[r * dim + c] = r == c ? cplx(g(rng), 0) : cplx(g(rng), g(rng));
        rho[c * dim + r] = std::conj(rho[r * dim + c]);
      }
    std::vector<R> vec(2 * dim * dim);
    for (u64 r = 0; r < dim; ++r)
      for (u64 c = 0; c < dim; ++c) {
        vec[2 * (r + dim * c)] = static_cast<R>(rho[r * dim + c].real());
        vec[2 * (r + dim * c) + 1] = static_cast<R>(rho[r * dim + c].imag());
      }
    const PauliSum h = random_sum(m, rng);
    const Dense hd = dense_of(h, m);
    cplx want = 0;  // Tr(H rho) = sum H[r][c] rho[c][r], rho as held (rounded to R)
    for (u64 r = 0; r < dim; ++r)
      for (u64 c = 0; c < dim; ++c)
        want += hd[r * dim + c] * cplx(vec[2 * (c + dim * r)], vec[2 * (c + dim * r) + 1]);
    const PackedSums s = pack_sums({h});
    const PackedTerms t = s.terms(0, s.x.data(), s.z.data(), s.c.data());
    const double tol = sizeof(R) == 4 ? 1e-4 : 1e-11;
    // The CPU state vector's own readouts (backends/cpu/density.h) too.
    cpu::StateVector<R> held(2 * m);
    std::copy(vec.begin(), vec.end(), held.data());
    EXPECT_NEAR(held.density_trace(h), want.real(), tol) << "cpu, m=" << m;
    const std::vector<double> diagonal = held.density_diagonal();
    const std::vector<cplx> rows = held.density_rows();
    for (u64 r = 0; r < dim; ++r) {
      EXPECT_NEAR(diagonal[r], std::max(0.0, double(vec[2 * (r + dim * r)])), 0) << r;
      for (u64 c = 0; c < dim; ++c)
        EXPECT_EQ(rows[r * dim + c], cplx(vec[2 * (r + dim * c)], vec[2 * (r + dim * c) + 1]));
    }
    held.set_density_observable(h);
    for (u64 r = 0; r < dim; ++r)
      for (u64 c = 0; c < dim; ++c)
        EXPECT_NEAR(std::abs(held.amplitude(r + dim * c) - hd[r * dim + c]), 0, tol) << r << c;
    for (int nt : {1, 3}) {
      double got = 0;
      for (int tid = 0; tid < nt; ++tid) got += trace_partial_packed(vec.data(), m, t, tid, nt);
      EXPECT_NEAR(got, want.real(), tol) << "m=" << m << " workers=" << nt;
      std::vector<R> obs(2 * dim * dim, R(7));  // overwritten whole
      for (int tid = 0; tid < nt; ++tid) observable_packed(obs.data(), m, t, tid, nt);
      for (u64 r = 0; r < dim; ++r)
        for (u64 c = 0; c < dim; ++c) {
          const u64 i = r + dim * c;
          EXPECT_NEAR(obs[2 * i], hd[r * dim + c].real(), tol) << r << "," << c;
          EXPECT_NEAR(obs[2 * i + 1], hd[r * dim + c].imag(), tol) << r << "," << c;
        }
    }
  }
}

TEST(DensityOps, TraceAndObservableEqualDenseMatricesC64) { check_readouts<float>(); }
TEST(DensityOps, TraceAndObservableEqualDenseMatricesC128) { check_readouts<double>(); }

}  // namespace
}  // namespace qmlsim::cuda
