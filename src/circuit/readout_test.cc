// Readout error against a dense oracle: the rewritten observable's value on
// random states equals the mean read product of eigenvalues computed from
// the state's distribution in each word's measurement basis, confused by the
// Kronecker product of the qubits' confusion matrices; the confused
// distribution likewise; sampled counts within their error.
#include "circuit/readout.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "core/error.h"
#include "testing/dense_oracle.h"

namespace qmlsim {
namespace {

// P(read j | true i) over n qubits: the Kronecker product of the qubits' 2x2s.
std::vector<double> confusion(const ReadoutError& e, int n) {
  const std::size_t d = std::size_t{1} << n;
  std::vector<double> m(d * d, 1.0);
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = 0; j < d; ++j)
      for (int q = 0; q < n; ++q) {
        const ReadoutFlip* f = e.of(q);
        const bool ti = i >> q & 1, rj = j >> q & 1;
        const double flip = f ? (ti ? f->p10 : f->p01) : 0.0;
        m[i * d + j] *= ti == rj ? 1 - flip : flip;
      }
  return m;
}

std::vector<double> confused(const std::vector<double>& p, const ReadoutError& e, int n) {
  const std::vector<double> m = confusion(e, n);
  std::vector<double> out(p.size(), 0.0);
  for (std::size_t i = 0; i < p.size(); ++i)
    for (std::size_t j = 0; j < p.size(); ++j) out[j] += p[i] * m[i * p.size() + j];
  return out;
}

// The distribution of psi measured in the basis of the word (x, z): H on X
// qubits, H S^dagger on Y qubits first.
std::vector<double> measured(std::vector<cplx> psi, index_t x, index_t z, int n) {
  const double r = 1 / std::sqrt(2.0);
  for (int q = 0; q < n; ++q) {
    if (!(x >> q & 1)) continue;
    const index_t bit = index_t{1} << q;
    for (index_t i = 0; i < psi.size(); ++i) {
      if (i & bit) continue;
      cplx a = psi[i], b = psi[i | bit];
      if (z >> q & 1) b *= cplx(0, -1);  // S^dagger
      psi[i] = r * (a + b);
      psi[i | bit] = r * (a - b);
    }
  }
  std::vector<double> p(psi.size());
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = std::norm(psi[i]);
  return p;
}

TEST(Readout, RewrittenObservablesEqualTheConfusedOracle) {
  std::mt19937_64 rng(61);
  std::uniform_real_distribution<double> u(0, 0.3);
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 1 + trial % 4;
    ReadoutError e;
    e.qubits.resize(static_cast<std::size_t>(n));
    for (auto& f : e.qubits)
      if (rng() % 4) f = ReadoutFlip{u(rng), u(rng)};
    const std::vector<cplx> psi = testing::random_state(n, rng);
    const PauliSum h = testing::random_observable(n, rng);
    const PauliSum read = read_through(h, e);
    double want = 0, got = 0;
    for (const PauliTerm& t : h.terms) {
      const std::vector<double> p = confused(measured(psi, t.xmask, t.zmask, n), e, n);
      for (std::size_t i = 0; i < p.size(); ++i)
        want += t.coeff * p[i] * (std::popcount((i & (t.xmask | t.zmask))) % 2 ? -1 : 1);
    }
    for (const PauliTerm& t : read.terms) {
      const std::vector<double> p = measured(psi, t.xmask, t.zmask, n);
      for (std::size_t i = 0; i < p.size(); ++i)
        got += t.coeff * p[i] * (std::popcount((i & (t.xmask | t.zmask))) % 2 ? -1 : 1);
    }
    EXPECT_NEAR(got, want, 1e-12) << "trial " << trial;
    const std::vector<double> p = measured(psi, 0, 0, n);
    const std::vector<double> a = read_through(p, e), b = confused(p, e, n);
    for (std::size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-14);
  }
}

TEST(Readout, SamplesFollowTheConfusedDistribution) {
  ReadoutError e;
  e.qubits = {ReadoutFlip{0.1, 0.2}, std::nullopt, ReadoutFlip{0.3, 0.05}};
  const std::map<index_t, std::int64_t> counts = {{0b000, 30000}, {0b101, 50000}, {0b011, 20000}};
  std::vector<double> p(8, 0.0);
  for (const auto& [i, c] : counts) p[i] = c / 1e5;
  const std::vector<double> want = read_through(p, e);
  const auto got = read_through(counts, e, 7);
  std::int64_t total = 0;
  for (const auto& [i, c] : got) total += c;
  EXPECT_EQ(total, 100000);
  for (index_t i = 0; i < 8; ++i) {
    const double f = got.count(i) ? got.at(i) / 1e5 : 0.0;
    EXPECT_NEAR(f, want[i], 5 * std::sqrt(want[i] * (1 - want[i]) / 1e5) + 1e-9) << i;
  }
  EXPECT_EQ(read_through(counts, e, 7), got);  // seeded
}

TEST(Readout, BadInputIsAnError) {
  EXPECT_THROW(check_readout_flip({1.2, 0}, "q0"), Error);
  EXPECT_THROW(check_readout_flip({0, -0.1}, "q0"), Error);
  EXPECT_NO_THROW(check_readout_flip({0, 1}, "q0"));
  ReadoutError e;
  e.qubits.assign(20, ReadoutFlip{0.1, 0.1});
  PauliSum wide;
  wide.add(1, 0, (index_t{1} << 20) - 1);
  EXPECT_THROW(read_through(wide, e), Error);
}

}  // namespace
}  // namespace qmlsim
