// Cross matrices and matrix elements of the adjoint sweep: sums of conj(bra) ket over a
// gate's groups of amplitudes (chunks.h: cross_matrix, matrix_element), with SIMD loops
// per gate shape.
#include <algorithm>
#include <array>
#include <cassert>
#include <utility>
#include <vector>

#include "backends/cpu/chunks.h"
#include "core/bits.h"
#include "core/parallel.h"

namespace qmlsim::cpu {

namespace {

// cross_matrix for one target: runs of contiguous amplitudes below the lowest
// target or control bit, summed with `omp simd` (fixed order for a given build).
template <class R>
Matrix cross_matrix_1q(const R* bra, const R* ket, int n, const BoundGate& g, int threads) {
  // A low target without controls: the runs below it are too short to pay for a
  // reduction each, so walk blocks of contiguous amplitudes pair by pair instead.
  if (g.controls.empty() && g.targets[0] < 3 && n >= 3) {
    const int t = g.targets[0];
    const index_t half = index_t{1} << t;
    const int bb = std::min(n, kBlockBits + 1);
    const std::int64_t nblocks = std::int64_t{1} << (n - bb);
    std::vector<std::array<double, 8>> partial(static_cast<std::size_t>(nblocks));
    parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t blk) {
      double m[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      const index_t begin = static_cast<index_t>(blk) << bb, end = begin + (index_t{1} << bb);
      for (index_t x = begin; x < end; x += 2 * half)
        for (index_t j = 0; j < half; ++j) {
          const index_t i0 = x + j, i1 = i0 + half;
          const double x0r = bra[2 * i0], x0i = -bra[2 * i0 + 1];
          const double x1r = bra[2 * i1], x1i = -bra[2 * i1 + 1];
          const double y0r = ket[2 * i0], y0i = ket[2 * i0 + 1];
          const double y1r = ket[2 * i1], y1i = ket[2 * i1 + 1];
          m[0] += x0r * y0r - x0i * y0i;
          m[1] += x0r * y0i + x0i * y0r;
          m[2] += x0r * y1r - x0i * y1i;
          m[3] += x0r * y1i + x0i * y1r;
          m[4] += x1r * y0r - x1i * y0i;
          m[5] += x1r * y0i + x1i * y0r;
          m[6] += x1r * y1r - x1i * y1i;
          m[7] += x1r * y1i + x1i * y1r;
        }
      std::copy(m, m + 8, partial[static_cast<std::size_t>(blk)].begin());
    });
    Matrix sum(4, 0.0);
    for (const auto& p : partial)
      for (int e = 0; e < 4; ++e) sum[e] += cplx{p[2 * e], p[2 * e + 1]};
    return sum;
  }
  std::vector<int> pos = g.targets;
  pos.insert(pos.end(), g.controls.begin(), g.controls.end());
  std::sort(pos.begin(), pos.end());
  index_t ones = 0;
  for (int c : g.controls) ones |= bit(c);
  const int npos = static_cast<int>(pos.size());
  const int run_bits = pos[0];
  const index_t run = index_t{1} << run_bits, tbit = bit(g.targets[0]);
  const index_t outer = index_t{1} << (n - npos - run_bits);
  const int bb = std::min(n - npos - run_bits, kBlockBits);
  const std::int64_t nblocks = static_cast<std::int64_t>(outer >> bb);
  std::vector<std::array<double, 8>> partial(static_cast<std::size_t>(nblocks));
  parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t blk) {
    double m0r = 0, m0i = 0, m1r = 0, m1i = 0, m2r = 0, m2i = 0, m3r = 0, m3i = 0;
    for (index_t o = static_cast<index_t>(blk) << bb; o < (static_cast<index_t>(blk) + 1) << bb;
         ++o) {
      const index_t base = insert_zero_bits(o << run_bits, pos.data(), npos) | ones;
      const R* a0 = bra + 2 * base;
      const R* a1 = bra + 2 * (base | tbit);
      const R* k0 = ket + 2 * base;
      const R* k1 = ket + 2 * (base | tbit);
      // Within a run, sums in the state's precision (vectorizes twice as wide for
      // complex64); across runs, in double.
      R s0r = 0, s0i = 0, s1r = 0, s1i = 0, s2r = 0, s2i = 0, s3r = 0, s3i = 0;
#pragma omp simd reduction(+ : s0r, s0i, s1r, s1i, s2r, s2i, s3r, s3i)
      for (index_t r = 0; r < run; ++r) {
        const R x0r = a0[2 * r], x0i = -a0[2 * r + 1], x1r = a1[2 * r], x1i = -a1[2 * r + 1];
        const R y0r = k0[2 * r], y0i = k0[2 * r + 1], y1r = k1[2 * r], y1i = k1[2 * r + 1];
        s0r += x0r * y0r - x0i * y0i;
        s0i += x0r * y0i + x0i * y0r;
        s1r += x0r * y1r - x0i * y1i;
        s1i += x0r * y1i + x0i * y1r;
        s2r += x1r * y0r - x1i * y0i;
        s2i += x1r * y0i + x1i * y0r;
        s3r += x1r * y1r - x1i * y1i;
        s3i += x1r * y1i + x1i * y1r;
      }
      m0r += s0r, m0i += s0i, m1r += s1r, m1i += s1i;
      m2r += s2r, m2i += s2i, m3r += s3r, m3i += s3i;
    }
    partial[static_cast<std::size_t>(blk)] = {m0r, m0i, m1r, m1i, m2r, m2i, m3r, m3i};
  });
  Matrix sum(4, 0.0);
  for (const auto& p : partial)
    for (int e = 0; e < 4; ++e) sum[e] += cplx{p[2 * e], p[2 * e + 1]};
  return sum;
}

// Where a gate's groups of amplitudes lie: its target and control positions
// (ascending), the control bits that must be set, and the offset of each local
// index r (bit j of r <-> targets[j]) from a group's base.
struct GroupLayout {
  std::vector<int> pos;
  index_t ones = 0;
  std::vector<index_t> off;

  explicit GroupLayout(const BoundGate& g) : pos(g.targets), off(g.dim(), 0) {
    pos.insert(pos.end(), g.controls.begin(), g.controls.end());
    std::sort(pos.begin(), pos.end());
    for (int c : g.controls) ones |= bit(c);
    for (std::size_t r = 0; r < off.size(); ++r)
      for (int j = 0; j < g.num_targets(); ++j)
        if (r >> j & 1) off[r] |= bit(g.targets[j]);
  }
};

// Runs of contiguous amplitudes below a gate's lowest wire, on n qubits: each
// group's rows are runs of `run` amplitudes; the 2^outer_bits runs per row are
// split into `nblocks` blocks of 2^bb for the fixed-order partial sums.
struct RunLayout {
  int run_bits, outer_bits, bb;
  index_t run;
  std::int64_t nblocks;
  RunLayout(const GroupLayout& lay, int n)
      : run_bits(lay.pos[0]),
        outer_bits(n - static_cast<int>(lay.pos.size()) - run_bits),
        bb(std::min(outer_bits, kBlockBits)),
        run(index_t{1} << run_bits),
        nblocks(static_cast<std::int64_t>((index_t{1} << outer_bits) >> bb)) {}
};

// S_e = sum conj(bra[base|off_r]) ket[base|off_c] over gate g's groups, for
// each pair e = (r, c) of local indices: the runs of contiguous amplitudes
// below the lowest target or control summed in the state's precision (as in
// cross_matrix_1q), blocks of groups in order, in double.
template <class R>
Matrix pair_sums(const R* bra, const R* ket, int n, const BoundGate& g,
                 const std::vector<std::pair<std::size_t, std::size_t>>& pairs, int threads) {
  const GroupLayout lay(g);
  const std::vector<int>& pos = lay.pos;
  const std::vector<index_t>& off = lay.off;
  const index_t ones = lay.ones;
  const int npos = static_cast<int>(pos.size());
  const RunLayout rl(lay, n);
  const int run_bits = rl.run_bits, bb = rl.bb;
  const index_t run = rl.run;
  const std::int64_t nblocks = rl.nblocks;
  const std::size_t np = pairs.size();
  index_t holes = 0;  // the gate's wires: zero in a run's start before `ones`
  for (int p : pos) holes |= bit(p);
  std::vector<double> partial(static_cast<std::size_t>(nblocks) * 2 * np, 0.0);
  // RUN > 0: runs of RUN amplitudes, a trip count the compiler sees (short
  // runs, where a reduction loop's set-up costs more than its work); 0: `run`.
  auto sum_block = [&]<index_t RUN>(std::int64_t blk) {
    const index_t len = RUN > 0 ? RUN : run;
    double* acc = partial.data() + static_cast<std::size_t>(blk) * 2 * np;
    index_t start =
        insert_zero_bits((static_cast<index_t>(blk) << bb) << run_bits, pos.data(), npos);
    for (index_t k = 0; k < (index_t{1} << bb); ++k) {
      const index_t base = start | ones;
      for (std::size_t e = 0; e < np; ++e) {
        const R* x = bra + 2 * (base | off[pairs[e].first]);
        const R* y = ket + 2 * (base | off[pairs[e].second]);
        R sr = 0, si = 0;  // sum conj(x) y
#pragma omp simd reduction(+ : sr, si)
        for (index_t t = 0; t < len; ++t) {
          sr += x[2 * t] * y[2 * t] + x[2 * t + 1] * y[2 * t + 1];
          si += x[2 * t] * y[2 * t + 1] - x[2 * t + 1] * y[2 * t];
        }
        acc[2 * e] += sr;
        acc[2 * e + 1] += si;
      }
      start = ((start | holes) + len) & ~holes;  // the next run's start
    }
  };
  parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t blk) {
    switch (run) {
      case 1:
        return sum_block.template operator()<1>(blk);
      case 2:
        return sum_block.template operator()<2>(blk);
      case 4:
        return sum_block.template operator()<4>(blk);
      default:
        return sum_block.template operator()<0>(blk);
    }
  });
  Matrix sum(np, 0.0);
  for (std::int64_t blk = 0; blk < nblocks; ++blk) {
    const double* acc = partial.data() + static_cast<std::size_t>(blk) * 2 * np;
    for (std::size_t e = 0; e < np; ++e) sum[e] += cplx{acc[2 * e], acc[2 * e + 1]};
  }
  return sum;
}

// cross_matrix for a diagonal gate: the derivative of a diagonal gate is
// diagonal, so only M_aa = sum conj(bra_a) ket_a is needed (zeros elsewhere):
// the diagonal alone (a 10-qubit MultiRZ: 1,024 entries, not 2^20).
template <class R>
Matrix cross_matrix_diagonal(const R* bra, const R* ket, int n, const BoundGate& g, int threads) {
  std::vector<std::pair<std::size_t, std::size_t>> diagonal;
  for (std::size_t a = 0; a < g.dim(); ++a) diagonal.emplace_back(a, a);
  return pair_sums(bra, ket, n, g, diagonal, threads);
}

// The sum, block by block in order, of per-block partial sums laid out as
// `entries` real parts then `entries` imaginary parts.
Matrix sum_block_partials(const std::vector<double>& partial, std::int64_t nblocks,
                          std::size_t entries) {
  Matrix sum(entries, 0.0);
  for (std::int64_t blk = 0; blk < nblocks; ++blk) {
    const double* p = &partial[static_cast<std::size_t>(blk) * 2 * entries];
    for (std::size_t e = 0; e < entries; ++e) sum[e] += cplx{p[e], p[entries + e]};
  }
  return sum;
}

// The dense cross matrix group by group: real and imaginary sums in separate
// arrays, with kDim (the gate's dimension) known at compile time for 2 and 3
// targets so the inner loops vectorise; kDim 0: the dimension at run time.
// Blocks of groups are summed in order.
template <class R, std::size_t kDim>
Matrix cross_matrix_groups(const R* bra, const R* ket, int n, const BoundGate& g, int threads) {
  const std::size_t dim = kDim ? kDim : g.dim();
  const std::size_t entries = dim * dim;
  const GroupLayout lay(g);
  const std::vector<int>& pos = lay.pos;
  const std::vector<index_t>& off = lay.off;
  const index_t ones = lay.ones;
  const int npos = static_cast<int>(pos.size());
  const index_t groups = index_t{1} << (n - npos);
  const int bb = std::min(n - npos, kBlockBits);
  const std::int64_t nblocks = static_cast<std::int64_t>(groups >> bb);
  std::vector<double> partial(static_cast<std::size_t>(nblocks) * 2 * entries, 0.0);
  parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t blk) {
    double* mr = &partial[static_cast<std::size_t>(blk) * 2 * entries];
    double* mi = mr + entries;
    std::vector<double> amps(4 * dim);
    double* ar = amps.data();
    double* ai = ar + dim;
    double* kr = ai + dim;
    double* ki = kr + dim;
    for (index_t i = static_cast<index_t>(blk) << bb; i < (static_cast<index_t>(blk) + 1) << bb;
         ++i) {
      const index_t base = insert_zero_bits(i, pos.data(), npos) | ones;
      for (std::size_t r = 0; r < dim; ++r) {
        ar[r] = bra[2 * (base | off[r])];
        ai[r] = -bra[2 * (base | off[r]) + 1];
        kr[r] = ket[2 * (base | off[r])];
        ki[r] = ket[2 * (base | off[r]) + 1];
      }
      for (std::size_t r = 0; r < dim; ++r)
        for (std::size_t c = 0; c < dim; ++c) {
          mr[r * dim + c] += ar[r] * kr[c] - ai[r] * ki[c];
          mi[r * dim + c] += ar[r] * ki[c] + ai[r] * kr[c];
        }
    }
  });
  return sum_block_partials(partial, nblocks, entries);
}

// The dense cross matrix when the lowest target or control is at bit 3 or above:
// every row of a group is a run of contiguous amplitudes, so each entry is a dot
// product of two runs, vectorised and summed in the state's precision per tile
// of the run (as pair_sums sums its runs), tiles in order. The
// 2 x dim streams of a tile stay in the L1 cache while all dim^2 entries use them.
template <class R, std::size_t kDim>
Matrix cross_matrix_runs(const R* bra, const R* ket, int n, const BoundGate& g, int threads) {
  const GroupLayout lay(g);
  const std::vector<int>& pos = lay.pos;
  const std::vector<index_t>& off = lay.off;
  const index_t ones = lay.ones;
  const int npos = static_cast<int>(pos.size());
  const RunLayout rl(lay, n);
  const int run_bits = rl.run_bits, bb = rl.bb;
  const index_t run = rl.run;
  const std::int64_t nblocks = rl.nblocks;
  constexpr index_t kTile = 256;
  constexpr std::size_t kEntries = kDim * kDim;
  std::vector<double> partial(static_cast<std::size_t>(nblocks) * 2 * kEntries, 0.0);
  parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t blk) {
    double* acc = &partial[static_cast<std::size_t>(blk) * 2 * kEntries];
    for (index_t o = static_cast<index_t>(blk) << bb; o < (static_cast<index_t>(blk) + 1) << bb;
         ++o) {
      const index_t base = insert_zero_bits(o << run_bits, pos.data(), npos) | ones;
      for (index_t t0 = 0; t0 < run; t0 += kTile) {
        const index_t len = std::min(kTile, run - t0);
        for (std::size_t a = 0; a < kDim; ++a) {
          const R* x = bra + 2 * ((base | off[a]) + t0);
          for (std::size_t b = 0; b < kDim; ++b) {
            const R* y = ket + 2 * ((base | off[b]) + t0);
            R sr = 0, si = 0;  // sum conj(x) y
#pragma omp simd reduction(+ : sr, si)
            for (index_t t = 0; t < len; ++t) {
              sr += x[2 * t] * y[2 * t] + x[2 * t + 1] * y[2 * t + 1];
              si += x[2 * t] * y[2 * t + 1] - x[2 * t + 1] * y[2 * t];
            }
            acc[a * kDim + b] += sr;
            acc[kEntries + a * kDim + b] += si;
          }
        }
      }
    }
  });
  return sum_block_partials(partial, nblocks, kEntries);
}

}  // namespace

template <class R>
cplx matrix_element(const R* bra, const R* ket, int n, const BoundGate& g, int threads) {
  if (!g.diagonal) {  // from the nonzero entries alone where they are at most half
    const std::size_t dim = g.dim();
    std::vector<std::pair<std::size_t, std::size_t>> nonzero;
    Matrix values;
    for (std::size_t r = 0; r < dim; ++r)
      for (std::size_t c = 0; c < dim; ++c)
        if (g.matrix[r * dim + c] != cplx{0}) {
          nonzero.emplace_back(r, c);
          values.push_back(g.matrix[r * dim + c]);
        }
    // A channel's superoperator derivative has 4-6 of its 16 entries nonzero.
    if (2 * nonzero.size() <= dim * dim) {
      const Matrix sums = pair_sums(bra, ket, n, g, nonzero, threads);
      cplx sum = 0;
      for (std::size_t e = 0; e < sums.size(); ++e) sum += values[e] * sums[e];
      return sum;
    }
  }
  const Matrix m = cross_matrix(bra, ket, n, g, threads);
  cplx sum = 0;
  for (std::size_t i = 0; i < m.size(); ++i) sum += g.matrix[i] * m[i];
  return sum;
}

template cplx matrix_element<float>(const float*, const float*, int, const BoundGate&, int);
template cplx matrix_element<double>(const double*, const double*, int, const BoundGate&, int);

template <class R>
Matrix cross_matrix(const R* bra, const R* ket, int n, const BoundGate& g, int threads) {
  if (g.diagonal) return cross_matrix_diagonal(bra, ket, n, g, threads);
  if (g.num_targets() == 1) return cross_matrix_1q(bra, ket, n, g, threads);
  const GroupLayout lay(g);
  const bool runs = lay.pos[0] >= 3;  // runs of at least 8 amplitudes
  if (g.num_targets() == 2)
    return runs ? cross_matrix_runs<R, 4>(bra, ket, n, g, threads)
                : cross_matrix_groups<R, 4>(bra, ket, n, g, threads);
  if (g.num_targets() == 3)
    return runs ? cross_matrix_runs<R, 8>(bra, ket, n, g, threads)
                : cross_matrix_groups<R, 8>(bra, ket, n, g, threads);
  return cross_matrix_groups<R, 0>(bra, ket, n, g, threads);
}

template Matrix cross_matrix<float>(const float*, const float*, int, const BoundGate&, int);
template Matrix cross_matrix<double>(const double*, const double*, int, const BoundGate&, int);

}  // namespace qmlsim::cpu
