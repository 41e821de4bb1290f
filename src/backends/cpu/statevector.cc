#include "backends/cpu/statevector.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <random>
#include <string>

#include "core/bits.h"
#include "core/error.h"
#include "core/parallel.h"
#include "passes/cache_blocking.h"

namespace qmlsim::cpu {

std::uint64_t state_bytes(int n, Precision p) {
  return (std::uint64_t{1} << n) * (p == Precision::c64 ? 8 : 16);
}

KernelGate to_kernel_gate(const BoundGate& g) {
  KernelGate k;
  k.k = g.num_targets();
  for (int j = 0; j < k.k; ++j) k.targets[j] = g.targets[j];
  k.num_controls = static_cast<int>(g.controls.size());
  for (int j = 0; j < k.num_controls; ++j) k.controls[j] = g.controls[j];
  k.diagonal = g.diagonal;
  k.matrix = reinterpret_cast<const double*>(g.matrix.data());
  return k;
}

namespace {

template <class R>
AlignedBuffer<R> allocate_state(int n) {
  if (n < 0 || n > kMaxQubits) {
    throw Error("cannot make a state of " + std::to_string(n) + " qubits (supported: 0 to " +
                std::to_string(kMaxQubits) + ")");
  }
  try {
    return AlignedBuffer<R>(std::size_t{2} << n);
  } catch (const Error&) {
    const double gib = static_cast<double>(std::size_t{2} << n) * sizeof(R) / (1 << 30);
    throw Error("out of memory: a state of " + std::to_string(n) + " qubits needs " +
                std::to_string(gib) + " GiB");
  }
}

// Blocks of 2^kBlockBits amplitudes: the unit of parallel work and of the
// fixed-order reductions.
constexpr int kBlockBits = 10;

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

// sum_i conj(bra[i ^ x]) ket[i] weight(i), blocked: weight(i) for the low bits
// of a block comes from per-high-mask tables, combined once per block.
template <class R>
cplx group_pass(const TermGroup& g, const R* bra, const R* ket, int n, int threads) {
  const int lb = std::min(n, kBlockBits);
  const index_t bsize = index_t{1} << lb, low_mask = bsize - 1;
  // Group terms by the high part of their z mask.
  std::vector<index_t> high_masks;
  std::vector<std::vector<cplx>> tables;
  for (std::size_t t = 0; t < g.w.size(); ++t) {
    const index_t hm = g.z[t] >> lb;
    auto it = std::find(high_masks.begin(), high_masks.end(), hm);
    std::size_t gi = static_cast<std::size_t>(it - high_masks.begin());
    if (it == high_masks.end()) {
      high_masks.push_back(hm);
      tables.emplace_back(bsize, 0.0);
    }
    for (index_t i = 0; i < bsize; ++i) {
      tables[gi][i] += parity(i & g.z[t] & low_mask) ? -g.w[t] : g.w[t];
    }
  }
  const std::int64_t nblocks = std::int64_t{1} << (n - lb);
  std::vector<cplx> partial(nblocks);
  parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t b) {
    std::vector<double> vr(bsize, 0.0), vi(bsize, 0.0);
    for (std::size_t k = 0; k < high_masks.size(); ++k) {
      const double s = parity(static_cast<index_t>(b) & high_masks[k]) ? -1.0 : 1.0;
      const cplx* tab = tables[k].data();
      for (index_t i = 0; i < bsize; ++i) {
        vr[i] += s * tab[i].real();
        vi[i] += s * tab[i].imag();
      }
    }
    const index_t base = static_cast<index_t>(b) << lb;
    double acc_r = 0, acc_i = 0;
    for (index_t i = 0; i < bsize; ++i) {
      const index_t j = base + i;
      const double kr = ket[2 * j], ki = ket[2 * j + 1];
      const double br = bra[2 * (j ^ g.x)], bi = -bra[2 * (j ^ g.x) + 1];
      const double pr = br * kr - bi * ki, pi = br * ki + bi * kr;  // conj(bra) * ket
      acc_r += pr * vr[i] - pi * vi[i];
      acc_i += pr * vi[i] + pi * vr[i];
    }
    partial[b] = {acc_r, acc_i};
  });
  cplx sum = 0;
  for (cplx p : partial) sum += p;
  return sum;
}

}  // namespace

template <class R>
StateVector<R>::StateVector(int n, int threads, const KernelSet* kernels)
    : n_(n),
      threads_(threads < 1 ? 1 : threads),
      kernels_(kernels ? kernels : &best_kernels()),
      chunk_qubits_(default_chunk_qubits()),
      amps_(allocate_state<R>(n)) {
  set_basis_state(0);
}

template <class R>
void StateVector<R>::set_basis_state(index_t i) {
  assert(i < size());
  R* a = amps_.data();
  parallel_for(std::int64_t{1} << std::max(0, n_ - kBlockBits), threads_,
               std::int64_t{1} << n_, [&](std::int64_t b) {
                 const index_t lo = static_cast<index_t>(b) << std::min(n_, kBlockBits);
                 const index_t len = index_t{1} << std::min(n_, kBlockBits);
                 std::memset(static_cast<void*>(a + 2 * lo), 0, 2 * len * sizeof(R));
               });
  a[2 * i] = 1;
}

template <class R>
void StateVector<R>::set_amplitudes(std::span<const cplx> v) {
  assert(v.size() == size());
  for (index_t i = 0; i < size(); ++i) {
    amps_[2 * i] = static_cast<R>(v[i].real());
    amps_[2 * i + 1] = static_cast<R>(v[i].imag());
  }
}

template <class R>
std::vector<cplx> StateVector<R>::to_vector() const {
  std::vector<cplx> out(size());
  for (index_t i = 0; i < size(); ++i) out[i] = amplitude(i);
  return out;
}

template <class R>
void StateVector<R>::copy_from(const StateVector& other) {
  assert(other.n_ == n_);
  std::memcpy(static_cast<void*>(amps_.data()), other.amps_.data(), 2 * size() * sizeof(R));
}

template <class R>
void StateVector<R>::apply(const BoundGate& g) {
  const KernelGate k = to_kernel_gate(g);
  PreparedGates<R>(*kernels_, &k, 1, n_).run(amps_.data(), threads_);
}

template <class R>
int StateVector<R>::default_chunk_qubits() {
  return std::bit_width(kChunkBytes / (2 * sizeof(R))) - 1;
}

// Minimum contiguous run inside a chunk: 2^kRunQubits amplitudes.
constexpr int kRunQubits = 8;

template <class R>
void StateVector<R>::apply(const std::vector<BoundGate>& gates) {
  auto apply_direct = [&](int begin, int end) {
    std::vector<KernelGate> kg;
    for (int i = begin; i < end; ++i) kg.push_back(to_kernel_gate(gates[i]));
    PreparedGates<R>(*kernels_, kg.data(), end - begin, n_).run(amps_.data(), threads_);
  };
  const int count = static_cast<int>(gates.size());
  if (chunk_qubits_ <= kRunQubits || n_ <= chunk_qubits_ || count < 2) {
    apply_direct(0, count);
    return;
  }
  for (const Segment& s : plan_segments(gates, n_, chunk_qubits_, kRunQubits)) {
    if (s.qubits.empty()) {
      apply_direct(s.begin, s.end);
    } else {
      apply_segment(gates, s.begin, s.end, s.qubits);
    }
  }
}

template <class R>
void StateVector<R>::apply_segment(const std::vector<BoundGate>& gates, int begin, int end,
                                   const std::vector<int>& w) {
  const int b = static_cast<int>(w.size());
  // Gates renumbered to chunk positions (W ascending keeps the canonical order).
  std::vector<BoundGate> local(gates.begin() + begin, gates.begin() + end);
  auto to_local = [&](int q) {
    return static_cast<int>(std::lower_bound(w.begin(), w.end(), q) - w.begin());
  };
  std::vector<KernelGate> kg;
  for (BoundGate& g : local) {
    for (int& q : g.targets) q = to_local(q);
    for (int& q : g.controls) q = to_local(q);
    kg.push_back(to_kernel_gate(g));
  }
  const PreparedGates<R> prepared(*kernels_, kg.data(), static_cast<int>(kg.size()), b);
  int p = 0;  // W starts with qubits 0..p-1: runs of 2^p contiguous amplitudes
  while (p < b && w[p] == p) ++p;
  const index_t run_len = index_t{1} << p, nruns = index_t{1} << (b - p);
  std::vector<index_t> run_off(nruns, 0);
  for (index_t r = 0; r < nruns; ++r)
    for (int j = p; j < b; ++j)
      if (r >> (j - p) & 1) run_off[r] |= bit(w[j]);
  const std::int64_t nchunks = std::int64_t{1} << (n_ - b);
  R* amps = amps_.data();
  const int threads = nchunks >= 2 ? threads_ : 1;
#pragma omp parallel num_threads(threads)
  {
    AlignedBuffer<R> buf(p == b ? 0 : std::size_t{2} << b);
#pragma omp for schedule(static)
    for (std::int64_t c = 0; c < nchunks; ++c) {
      const index_t base = insert_zero_bits(static_cast<index_t>(c), w.data(), b);
      if (p == b) {  // the chunk is contiguous: work in place
        prepared.run(amps + 2 * base, 1);
        continue;
      }
      for (index_t r = 0; r < nruns; ++r) {
        std::memcpy(buf.data() + 2 * r * run_len, amps + 2 * (base | run_off[r]),
                    2 * run_len * sizeof(R));
      }
      prepared.run(buf.data(), 1);
      for (index_t r = 0; r < nruns; ++r) {
        std::memcpy(amps + 2 * (base | run_off[r]), buf.data() + 2 * r * run_len,
                    2 * run_len * sizeof(R));
      }
    }
  }
}

template <class R>
double StateVector<R>::norm_squared() const {
  return group_pass(TermGroup{0, {1.0}, {0}}, amps_.data(), amps_.data(), n_, threads_).real();
}

template <class R>
std::vector<double> StateVector<R>::probabilities() const {
  std::vector<double> p(size());
  const R* a = amps_.data();
  parallel_for(static_cast<std::int64_t>(size()), threads_, static_cast<std::int64_t>(size()),
               [&](std::int64_t i) {
                 p[i] = static_cast<double>(a[2 * i]) * a[2 * i] +
                        static_cast<double>(a[2 * i + 1]) * a[2 * i + 1];
               });
  return p;
}

template <class R>
double StateVector<R>::expval(const PauliSum& h) const {
  return expval_between(h, *this);
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
  for (const TermGroup& g : groups) sum += group_pass(g, amps_.data(), ket.amps_.data(), n_, threads_);
  if (constant != 0) {
    sum += constant *
           group_pass(TermGroup{0, {1.0}, {0}}, amps_.data(), ket.amps_.data(), n_, threads_);
  }
  return sum;
}

template <class R>
void StateVector<R>::assign_applied(const PauliSum& h, const StateVector& src) {
  assert(src.n_ == n_ && &src != this);
  double constant = 0;
  const std::vector<TermGroup> groups = group_terms(h, constant);
  R* out = amps_.data();
  const R* in = src.amps_.data();
  const std::int64_t size = static_cast<std::int64_t>(this->size());
  // (P psi)_j = ph(j ^ x) psi_{j ^ x}, with P|i> = ph(i)|i ^ x>.
  parallel_for(size, threads_, size, [&](std::int64_t jj) {
    const index_t j = static_cast<index_t>(jj);
    double re = constant * in[2 * j], im = constant * in[2 * j + 1];
    for (const TermGroup& g : groups) {
      const index_t i = j ^ g.x;
      cplx w = 0;
      for (std::size_t t = 0; t < g.w.size(); ++t) w += parity(i & g.z[t]) ? -g.w[t] : g.w[t];
      const double ar = in[2 * i], ai = in[2 * i + 1];
      re += w.real() * ar - w.imag() * ai;
      im += w.real() * ai + w.imag() * ar;
    }
    out[2 * j] = static_cast<R>(re);
    out[2 * j + 1] = static_cast<R>(im);
  });
}

template <class R>
std::map<index_t, std::int64_t> StateVector<R>::sample(std::int64_t shots,
                                                        std::uint64_t seed) const {
  std::map<index_t, std::int64_t> counts;
  if (shots <= 0) return counts;
  const int lb = std::min(n_, kBlockBits);
  const index_t bsize = index_t{1} << lb;
  const std::int64_t nblocks = std::int64_t{1} << (n_ - lb);
  const R* a = amps_.data();
  auto prob = [&](index_t i) {
    return static_cast<double>(a[2 * i]) * a[2 * i] +
           static_cast<double>(a[2 * i + 1]) * a[2 * i + 1];
  };
  std::vector<double> block(nblocks);
  parallel_for(nblocks, threads_, std::int64_t{1} << n_, [&](std::int64_t b) {
    double s = 0;
    for (index_t i = 0; i < bsize; ++i) s += prob((static_cast<index_t>(b) << lb) + i);
    block[b] = s;
  });
  double total = 0;
  for (double s : block) total += s;
  std::mt19937_64 rng(seed);
  std::vector<double> u(static_cast<std::size_t>(shots));
  for (double& x : u) x = static_cast<double>(rng() >> 11) * 0x1.0p-53 * total;
  std::sort(u.begin(), u.end());
  std::size_t k = 0;
  double before = 0;  // probability mass of all earlier amplitudes
  for (std::int64_t b = 0; b < nblocks && k < u.size(); ++b) {
    if (u[k] >= before + block[b] && b + 1 < nblocks) {
      before += block[b];
      continue;
    }
    for (index_t i = 0; i < bsize && k < u.size(); ++i) {
      const index_t j = (static_cast<index_t>(b) << lb) + i;
      before += prob(j);
      const bool last = b + 1 == nblocks && i + 1 == bsize;
      while (k < u.size() && (u[k] < before || last)) {
        ++counts[j];
        ++k;
      }
    }
  }
  return counts;
}

template class StateVector<float>;
template class StateVector<double>;

}  // namespace qmlsim::cpu
