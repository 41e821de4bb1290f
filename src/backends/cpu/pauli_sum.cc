// Pauli sums on the CPU state vector: <H>, <bra|H|ket>, the norm, and H psi,
// term group by term group over fixed blocks (deterministic sums).
#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <vector>

#include "backends/cpu/chunks.h"
#include "backends/cpu/statevector.h"
#include "core/bits.h"
#include "core/parallel.h"

namespace qmlsim::cpu {

namespace {

// Terms of one flip pattern x: weight(i) = sum_t w_t (-1)^popcount(i & z_t).
struct TermGroup {
  index_t x = 0;
  std::vector<cplx> w;
  std::vector<index_t> z;
};

std::vector<TermGroup> group_terms(const PauliSum& h, double& constant) {
  std::vector<TermGroup> groups;
  constant = 0;
  for (const PauliTerm& t : h.terms) {
    if (t.xmask == 0 && t.zmask == 0) {
      constant += t.coeff;
      continue;
    }
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const TermGroup& g) { return g.x == t.xmask; });
    if (it == groups.end()) {
      groups.push_back({t.xmask, {}, {}});
      it = groups.end() - 1;
    }
    const int ny = std::popcount(t.xmask & t.zmask);
    static const cplx kPowI[4] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
    it->w.push_back(t.coeff * kPowI[ny % 4]);
    it->z.push_back(t.zmask);
  }
  return groups;
}

// Loops of the Pauli-sum passes, compiled for AVX-512, AVX2 and the baseline,
// the best chosen at load time. (This file is otherwise built for the
// baseline, where the conversions and one chain of dependent adds made an
// expectation value's pass 3-5x slower than reading the state.)
#if defined(__x86_64__)
#define QMLSIM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define QMLSIM_CLONES
#endif

// Each loop is written once, for R = float or double, and inlined into one
// cloned function per precision (the clones are what gets the target).
#define QMLSIM_INLINE [[gnu::always_inline]] inline

// sum_j a[j] b[j] w[j], in double.
template <class R>
QMLSIM_INLINE double weighted_dot_of(const R* a, const R* b, const double* w, index_t len) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (index_t j = 0; j < len; ++j) s += static_cast<double>(a[j]) * b[j] * w[j];
  return s;
}
// acc[j] += c w[j] x[j].
template <class R>
QMLSIM_INLINE void add_weighted_of(double* acc, double c, const double* w, const R* x,
                                   index_t len) {
#pragma omp simd
  for (index_t j = 0; j < len; ++j) acc[j] += c * w[j] * x[j];
}
// out[j] = acc[j] rounded to the state's precision; returns sum_j own[j] acc[j].
template <class R>
QMLSIM_INLINE double store_dot_of(const double* acc, const R* own, R* out, index_t len) {
  double e = 0;
#pragma omp simd reduction(+ : e)
  for (index_t j = 0; j < len; ++j) {
    e += static_cast<double>(own[j]) * acc[j];
    out[j] = static_cast<R>(acc[j]);
  }
  return e;
}
// Adds sum_i conj(b_i) k_i w_i over count amplitudes (interleaved b and k,
// complex weights w_i = wr[i] + i wi[i]) to (ar, ai).
template <class R>
QMLSIM_INLINE void add_weighted_products_of(const R* b, const R* k, const double* wr,
                                            const double* wi, index_t count, double& ar,
                                            double& ai) {
  double sr = 0, si = 0;
#pragma omp simd reduction(+ : sr, si)
  for (index_t i = 0; i < count; ++i) {
    const double kr = k[2 * i], ki = k[2 * i + 1];
    const double br = b[2 * i], bi = -static_cast<double>(b[2 * i + 1]);
    const double pr = br * kr - bi * ki, pi = br * ki + bi * kr;
    sr += pr * wr[i] - pi * wi[i];
    si += pr * wi[i] + pi * wr[i];
  }
  ar += sr;
  ai += si;
}
#undef QMLSIM_INLINE

#define QMLSIM_CLONE_BOTH(R)                                                                \
  QMLSIM_CLONES double weighted_dot(const R* a, const R* b, const double* w, index_t len) { \
    return weighted_dot_of(a, b, w, len);                                                   \
  }                                                                                         \
  QMLSIM_CLONES void add_weighted(double* acc, double c, const double* w, const R* x,       \
                                  index_t len) {                                            \
    add_weighted_of(acc, c, w, x, len);                                                     \
  }                                                                                         \
  QMLSIM_CLONES double store_dot(const double* acc, const R* own, R* out, index_t len) {    \
    return store_dot_of(acc, own, out, len);                                                \
  }                                                                                         \
  QMLSIM_CLONES void add_weighted_products(const R* b, const R* k, const double* wr,        \
                                           const double* wi, index_t count, double& ar,     \
                                           double& ai) {                                    \
    add_weighted_products_of(b, k, wr, wi, count, ar, ai);                                  \
  }
QMLSIM_CLONE_BOTH(float)
QMLSIM_CLONE_BOTH(double)
#undef QMLSIM_CLONE_BOTH

// acc[j] += c x[j].
QMLSIM_CLONES void add_scaled(double* acc, double c, const double* x, index_t len) {
#pragma omp simd
  for (index_t j = 0; j < len; ++j) acc[j] += c * x[j];
}
#undef QMLSIM_CLONES

// The partner block in the order of the block it pairs with, for the
// contiguous loops above: amplitude i of dst = amplitude i ^ x of src (count
// amplitudes, interleaved), x's bits all at or above those of `run`, its
// lowest set bit (so runs of `run` amplitudes stay together). Long runs are
// moved with memcpy; short ones amplitude by amplitude (a fixed-size copy the
// compiler inlines: a call per run of 2-4 amplitudes cost more than the sum).
template <class R>
void gather_partner_runs(R* dst, const R* src, index_t count, index_t run, index_t x) {
  if (run >= 8) {
    for (index_t r = 0; r < count; r += run)
      std::memcpy(dst + 2 * r, src + 2 * (r ^ x), 2 * run * sizeof(R));
    return;
  }
  for (index_t i = 0; i < count; ++i) std::memcpy(dst + 2 * i, src + 2 * (i ^ x), 2 * sizeof(R));
}

// weight(i) of a term group, block by block: terms are grouped by the high part
// of their z mask (above the block's low bits), with one table per group over
// the low bits; the table of block b is sum_k sign_k(b) table_k, built with
// one vectorized add per group and amplitude (instead of a parity per term).
class BlockWeights {
 public:
  BlockWeights(const TermGroup& g, int n) : lb_(std::min(n, kBlockBits)) {
    const index_t bsize = index_t{1} << lb_, low_mask = bsize - 1;
    for (std::size_t t = 0; t < g.w.size(); ++t) {
      const index_t hm = g.z[t] >> lb_;
      auto it = std::find(high_.begin(), high_.end(), hm);
      const std::size_t k = static_cast<std::size_t>(it - high_.begin());
      if (it == high_.end()) {
        high_.push_back(hm);
        tr_.emplace_back(bsize, 0.0);
        ti_.emplace_back(bsize, 0.0);
      }
      if (g.w[t].imag() != 0) complex_ = true;
      for (index_t i = 0; i < bsize; ++i) {
        const double sgn = parity(i & g.z[t] & low_mask) ? -1.0 : 1.0;
        tr_[k][i] += sgn * g.w[t].real();
        ti_[k][i] += sgn * g.w[t].imag();
      }
    }
    for (const std::vector<double>& tr : tr_) {
      tr2_.emplace_back(2 * bsize);
      for (index_t i = 0; i < bsize; ++i) tr2_.back()[2 * i] = tr2_.back()[2 * i + 1] = tr[i];
    }
  }
  int low_bits() const { return lb_; }
  bool complex() const { return complex_; }
  // Real weights with both slots of each amplitude (w2[2i] = w2[2i+1] = wr[i]),
  // for sums over interleaved amplitudes. REQUIRES !complex().
  // Block b's real weights with both slots of each amplitude (w[2i] = w[2i+1]),
  // times `sign`, for sums over interleaved amplitudes. REQUIRES !complex().
  // With a single table (every z mask has the same high part) that table is
  // returned as it is; otherwise the weights are summed into `scratch`.
  const double* interleaved(index_t b, std::vector<double>& scratch, double& sign) const {
    sign = 1;
    if (high_.size() == 1) {
      sign = parity(b & high_[0]) ? -1.0 : 1.0;
      return tr2_[0].data();
    }
    const index_t bsize = index_t{1} << lb_;
    scratch.assign(2 * bsize, 0.0);
    double* w2 = scratch.data();
    for (std::size_t k = 0; k < high_.size(); ++k)
      add_scaled(w2, parity(b & high_[k]) ? -1.0 : 1.0, tr2_[k].data(), 2 * bsize);
    return w2;
  }
  // wr, wi (2^low_bits entries each) = the weights of block b.
  void fill(index_t b, double* wr, double* wi) const {
    const index_t bsize = index_t{1} << lb_;
    std::fill(wr, wr + bsize, 0.0);
    if (complex_) std::fill(wi, wi + bsize, 0.0);
    for (std::size_t k = 0; k < high_.size(); ++k) {
      const double sgn = parity(b & high_[k]) ? -1.0 : 1.0;
      add_scaled(wr, sgn, tr_[k].data(), bsize);
      if (complex_) add_scaled(wi, sgn, ti_[k].data(), bsize);
    }
    if (!complex_) std::fill(wi, wi + bsize, 0.0);
  }

 private:
  int lb_;
  bool complex_ = false;
  std::vector<index_t> high_;
  std::vector<std::vector<double>> tr_, ti_, tr2_;
};

// Re sum_i conj(a[i ^ x]) a[i] weight(i) for real weights, in fixed blocks:
// within a block, runs of 2^p amplitudes (p = the lowest set bit of x's low
// part; the whole block when there is none, as for x = 0, where the sum is of
// |a_i|^2 weight(i)) meet contiguous partner runs, so Re(conj(b) k) = b_re k_re
// + b_im k_im is one contiguous multiply-add per real.
template <class R>
double real_weight_pass(const TermGroup& g, const BlockWeights& weights, const R* a, int n,
                        int threads) {
  const int lb = weights.low_bits();
  const index_t bsize = index_t{1} << lb, low_mask = bsize - 1;
  const index_t xlo = g.x & low_mask, xhi = g.x & ~low_mask;
  const int p = xlo == 0 ? lb : std::countr_zero(xlo);
  const index_t run = index_t{1} << p;
  const std::int64_t nblocks = std::int64_t{1} << (n - lb);
  std::vector<double> partial(static_cast<std::size_t>(nblocks));
  parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t b) {
    thread_local std::vector<double> scratch;
    thread_local std::vector<R> partner;  // the partner block in the order of this one
    double sign = 1;
    const double* w = weights.interleaved(static_cast<index_t>(b), scratch, sign);
    const index_t base = static_cast<index_t>(b) << lb;
    const R* q = a + 2 * (base ^ xhi);
    if (xlo != 0) {
      partner.resize(2 * bsize);
      gather_partner_runs(partner.data(), q, bsize, run, xlo);
      q = partner.data();
    }
    partial[static_cast<std::size_t>(b)] = sign * weighted_dot(q, a + 2 * base, w, 2 * bsize);
  });
  double sum = 0;
  for (double v : partial) sum += v;
  return sum;
}

// sum_i conj(bra[i ^ x]) ket[i] weight(i), in fixed blocks.
template <class R>
cplx group_pass(const TermGroup& g, const R* bra, const R* ket, int n, int threads) {
  const BlockWeights weights(g, n);
  const int lb = weights.low_bits();
  const index_t bsize = index_t{1} << lb, low_mask = bsize - 1;
  const index_t xlo = g.x & low_mask, xhi = g.x & ~low_mask;
  const std::int64_t nblocks = std::int64_t{1} << (n - lb);
  std::vector<cplx> partial(nblocks);
  parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t b) {
    thread_local std::vector<double> wr, wi;
    thread_local std::vector<R> partner;  // the bra's block in the order of the ket's
    wr.resize(bsize);
    wi.resize(bsize);
    weights.fill(static_cast<index_t>(b), wr.data(), wi.data());
    const index_t base = static_cast<index_t>(b) << lb;
    const R* b0 = bra + 2 * (base ^ xhi);
    if (xlo != 0) {
      partner.resize(2 * bsize);
      const index_t run = index_t{1} << std::countr_zero(xlo);
      gather_partner_runs(partner.data(), b0, bsize, run, xlo);
      b0 = partner.data();
    }
    // Vectorized sums: a fixed order for a given build and CPU, so results
    // still do not depend on the thread count.
    double ar = 0, ai = 0;
    add_weighted_products(b0, ket + 2 * base, wr.data(), wi.data(), bsize, ar, ai);
    partial[b] = cplx{ar, ai};
  });
  cplx sum = 0;
  for (cplx p : partial) sum += p;
  return sum;
}

// Re <psi|group|psi>: the real-weight cases without complex products.
template <class R>
double real_group_pass(const TermGroup& g, const R* a, int n, int threads) {
  const BlockWeights weights(g, n);
  if (weights.complex()) return group_pass(g, a, a, n, threads).real();
  return real_weight_pass(g, weights, a, n, threads);
}
}  // namespace

template <class R>
double StateVector<R>::norm_squared() const {
  return real_group_pass(TermGroup{0, {1.0}, {0}}, amps_.data(), n_, threads_);
}

template <class R>
double StateVector<R>::expval(const PauliSum& h) const {
  double constant = 0;
  double sum = 0;
  for (const TermGroup& g : group_terms(h, constant))
    sum += real_group_pass(g, amps_.data(), n_, threads_);
  return constant != 0 ? sum + constant * norm_squared() : sum;
}

template <class R>
double StateVector<R>::expval_between(const PauliSum& h, const StateVector& other) const {
  return matrix_element(h, other).real();
}

template <class R>
cplx StateVector<R>::matrix_element(const PauliSum& h, const StateVector& ket) const {
  assert(ket.n_ == n_);
  double constant = 0;
  const std::vector<TermGroup> groups = group_terms(h, constant);
  cplx sum = 0;
  for (const TermGroup& g : groups)
    sum += group_pass(g, amps_.data(), ket.amps_.data(), n_, threads_);
  if (constant != 0) {
    sum += constant *
           group_pass(TermGroup{0, {1.0}, {0}}, amps_.data(), ket.amps_.data(), n_, threads_);
  }
  return sum;
}

template <class R>
double apply_pauli_sum(const PauliSum& h, const R* in, R* out, int n, int threads) {
  double constant = 0;
  const std::vector<TermGroup> groups = group_terms(h, constant);
  std::vector<BlockWeights> weights;
  for (const TermGroup& g : groups) weights.emplace_back(g, n);
  const int lb = std::min(n, kBlockBits);
  const index_t bsize = index_t{1} << lb, low_mask = bsize - 1;
  // (P psi)_j = ph(j ^ x) psi_{j ^ x}, with P|i> = ph(i)|i ^ x>: block b of the
  // output reads block b ^ (x >> lb) of the input, whose weights are filled.
  // Real weights (no odd number of Y factors): runs of 2^p amplitudes (p = the
  // lowest set bit of x's low part) read contiguous partner runs, one
  // multiply-add per real, as in real_weight_pass.
  const std::int64_t nblocks = std::int64_t{1} << (n - lb);
  std::vector<double> partial(static_cast<std::size_t>(nblocks));  // of <src|H|src>
  parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t b) {
    thread_local std::vector<double> acc, wr, wi, w2, wp;
    thread_local std::vector<R> sp;
    acc.resize(2 * bsize);
    wr.resize(bsize);
    wi.resize(bsize);
    const index_t base = static_cast<index_t>(b) << lb;
    double* a = acc.data();
    for (index_t j = 0; j < 2 * bsize; ++j) a[j] = constant * in[2 * base + j];
    for (std::size_t k = 0; k < groups.size(); ++k) {
      const index_t x = groups[k].x, xlo = x & low_mask;
      const index_t ibase = base ^ (x & ~low_mask);
      const R* src_block = in + 2 * ibase;
      if (!weights[k].complex()) {
        double sign = 1;
        const double* w = weights[k].interleaved(ibase >> lb, w2, sign);
        const R* s = src_block;
        if (xlo != 0) {  // the source and its weights in the order of the output
          const index_t run = index_t{1} << std::countr_zero(xlo);
          sp.resize(2 * bsize);
          wp.resize(2 * bsize);
          gather_partner_runs(sp.data(), src_block, bsize, run, xlo);
          gather_partner_runs(wp.data(), w, bsize, run, xlo);
          s = sp.data();
          w = wp.data();
        }
        add_weighted(a, sign, w, s, 2 * bsize);
        continue;
      }
      weights[k].fill(ibase >> lb, wr.data(), wi.data());
      for (index_t j = 0; j < bsize; ++j) {
        const index_t i = j ^ xlo;
        const double xr = src_block[2 * i], xi = src_block[2 * i + 1];
        a[2 * j] += wr[i] * xr - wi[i] * xi;
        a[2 * j + 1] += wr[i] * xi + wi[i] * xr;
      }
    }
    // A SIMD reduction (fixed order for a given build and CPU): one chain of
    // adds bounded this pass by FP latency once it ran inside a cache chunk.
    partial[static_cast<std::size_t>(b)] = store_dot(a, in + 2 * base, out + 2 * base, 2 * bsize);
  });
  double sum = 0;
  for (double v : partial) sum += v;
  return sum;
}

template <class R>
double StateVector<R>::assign_applied(const PauliSum& h, const StateVector& src) {
  assert(src.n_ == n_ && &src != this);
  return apply_pauli_sum(h, src.amps_.data(), amps_.data(), n_, threads_);
}

template double apply_pauli_sum<float>(const PauliSum&, const float*, float*, int, int);
template double apply_pauli_sum<double>(const PauliSum&, const double*, double*, int, int);
#define QMLSIM_INSTANTIATE(R)                                                                \
  template double StateVector<R>::norm_squared() const;                                      \
  template double StateVector<R>::expval(const PauliSum&) const;                             \
  template double StateVector<R>::expval_between(const PauliSum&, const StateVector&) const; \
  template cplx StateVector<R>::matrix_element(const PauliSum&, const StateVector&) const;   \
  template double StateVector<R>::assign_applied(const PauliSum&, const StateVector&);
QMLSIM_INSTANTIATE(float)
QMLSIM_INSTANTIATE(double)
#undef QMLSIM_INSTANTIATE

}  // namespace qmlsim::cpu
