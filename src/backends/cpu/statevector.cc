#include "backends/cpu/statevector.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <memory>
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
  // Group terms by the high part of their z mask; one weight table per group
  // over the low bits. Block b then contributes sum_k sign_k(b) * dot_k(b).
  std::vector<index_t> high_masks;
  std::vector<std::vector<double>> tr, ti;  // real and imaginary weight tables
  for (std::size_t t = 0; t < g.w.size(); ++t) {
    const index_t hm = g.z[t] >> lb;
    auto it = std::find(high_masks.begin(), high_masks.end(), hm);
    const std::size_t k = static_cast<std::size_t>(it - high_masks.begin());
    if (it == high_masks.end()) {
      high_masks.push_back(hm);
      tr.emplace_back(bsize, 0.0);
      ti.emplace_back(bsize, 0.0);
    }
    for (index_t i = 0; i < bsize; ++i) {
      const double s = parity(i & g.z[t] & low_mask) ? -1.0 : 1.0;
      tr[k][i] += s * g.w[t].real();
      ti[k][i] += s * g.w[t].imag();
    }
  }
  const index_t xlo = g.x & low_mask, xhi = g.x & ~low_mask;
  const std::int64_t nblocks = std::int64_t{1} << (n - lb);
  std::vector<cplx> partial(nblocks);
  parallel_for(nblocks, threads, std::int64_t{1} << n, [&](std::int64_t b) {
    const index_t base = static_cast<index_t>(b) << lb;
    const R* k0 = ket + 2 * base;
    const R* b0 = bra + 2 * (base ^ xhi);
    cplx total = 0;
    for (std::size_t k = 0; k < high_masks.size(); ++k) {
      const double* wr = tr[k].data();
      const double* wi = ti[k].data();
      // `omp simd` lets the compiler vectorize the sums (a fixed order for a given
      // build, so results still do not depend on the thread count).
      double ar = 0, ai = 0;
#pragma omp simd reduction(+ : ar, ai)
      for (index_t i = 0; i < bsize; ++i) {
        const index_t bi_ = i ^ xlo;
        const double kr = k0[2 * i], ki = k0[2 * i + 1];
        const double br = b0[2 * bi_], bi = -b0[2 * bi_ + 1];
        const double pr = br * kr - bi * ki, pi = br * ki + bi * kr;  // conj(bra) * ket
        ar += pr * wr[i] - pi * wi[i];
        ai += pr * wi[i] + pi * wr[i];
      }
      const double sign = parity(static_cast<index_t>(b) & high_masks[k]) ? -1.0 : 1.0;
      total += sign * cplx{ar, ai};
    }
    partial[b] = total;
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
  parallel_for(std::int64_t{1} << std::max(0, n_ - kBlockBits), threads_, std::int64_t{1} << n_,
               [&](std::int64_t b) {
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

// How a chunk (the 2^|W| amplitudes sharing the bits outside W) lies in memory:
// runs of 2^p contiguous amplitudes, p = the length of W's prefix 0, 1, ..., p-1.
struct ChunkLayout {
  std::vector<int> w;
  int b = 0, p = 0;
  index_t run_len = 0, nruns = 0;
  std::vector<index_t> run_off;

  explicit ChunkLayout(const std::vector<int>& qubits)
      : w(qubits), b(static_cast<int>(qubits.size())) {
    while (p < b && w[p] == p) ++p;
    run_len = index_t{1} << p;
    nruns = index_t{1} << (b - p);
    run_off.assign(nruns, 0);
    for (index_t r = 0; r < nruns; ++r)
      for (int j = p; j < b; ++j)
        if (r >> (j - p) & 1) run_off[r] |= bit(w[j]);
  }
  bool contiguous() const { return p == b; }
  index_t base(std::int64_t chunk) const {
    return insert_zero_bits(static_cast<index_t>(chunk), w.data(), b);
  }
  int to_local(int q) const {
    return static_cast<int>(std::lower_bound(w.begin(), w.end(), q) - w.begin());
  }
  template <class R>
  void gather(R* buf, const R* amps, index_t base) const {
    for (index_t r = 0; r < nruns; ++r)
      std::memcpy(buf + 2 * r * run_len, amps + 2 * (base | run_off[r]), 2 * run_len * sizeof(R));
  }
  template <class R>
  void scatter(const R* buf, R* amps, index_t base) const {
    for (index_t r = 0; r < nruns; ++r)
      std::memcpy(amps + 2 * (base | run_off[r]), buf + 2 * r * run_len, 2 * run_len * sizeof(R));
  }
  KernelGate local_gate(const BoundGate& g, BoundGate& storage) const {
    storage = g;  // W ascending keeps the canonical order
    for (int& q : storage.targets) q = to_local(q);
    for (int& q : storage.controls) q = to_local(q);
    return to_kernel_gate(storage);
  }
  PauliSum local_sum(const PauliSum& h) const {
    PauliSum out;
    for (const PauliTerm& t : h.terms) {
      index_t x = 0, z = 0;
      for (int j = 0; j < b; ++j) {
        x |= ((t.xmask >> w[j]) & 1) << j;
        z |= ((t.zmask >> w[j]) & 1) << j;
      }
      out.add(t.coeff, x, z);
    }
    return out;
  }
};

template <class R>
void StateVector<R>::apply_segment(const std::vector<BoundGate>& gates, int begin, int end,
                                   const std::vector<int>& w) {
  const ChunkLayout layout(w);
  const int b = layout.b;
  std::vector<BoundGate> storage(static_cast<std::size_t>(end - begin));
  std::vector<KernelGate> kg;
  for (int i = begin; i < end; ++i) kg.push_back(layout.local_gate(gates[i], storage[i - begin]));
  const PreparedGates<R> prepared(*kernels_, kg.data(), static_cast<int>(kg.size()), b);
  const std::int64_t nchunks = std::int64_t{1} << (n_ - b);
  R* amps = amps_.data();
  const int threads = nchunks >= 2 ? threads_ : 1;
#pragma omp parallel num_threads(threads)
  {
    AlignedBuffer<R> buf(layout.contiguous() ? 0 : std::size_t{2} << b);
#pragma omp for schedule(static)
    for (std::int64_t c = 0; c < nchunks; ++c) {
      const index_t base = layout.base(c);
      if (layout.contiguous()) {  // work in place
        prepared.run(amps + 2 * base, 1);
        continue;
      }
      layout.gather(buf.data(), amps, base);
      prepared.run(buf.data(), 1);
      layout.scatter(buf.data(), amps, base);
    }
  }
}

template <class R>
void StateVector<R>::adjoint_sweep(StateVector& lambda, const std::vector<BoundGate>& inverse,
                                   const std::vector<const PauliSum*>& generators,
                                   std::vector<cplx>& out) {
  assert(lambda.n_ == n_ && inverse.size() == generators.size());
  const int count = static_cast<int>(inverse.size());
  out.assign(inverse.size(), 0.0);
  // Process in reverse: rev[j] is inverse[count - 1 - j].
  std::vector<BoundGate> rev(inverse.rbegin(), inverse.rend());
  auto orig = [&](int j) { return count - 1 - j; };
  auto direct = [&](int begin, int end) {
    for (int j = begin; j < end; ++j) {
      if (const PauliSum* g = generators[orig(j)]) out[orig(j)] = lambda.matrix_element(*g, *this);
      apply(rev[j]);
      lambda.apply(rev[j]);
    }
  };
  if (chunk_qubits_ <= kRunQubits || n_ <= chunk_qubits_ || count < 2) {
    direct(0, count);
    return;
  }
  for (const Segment& s : plan_segments(rev, n_, chunk_qubits_, kRunQubits)) {
    if (s.qubits.empty()) {
      direct(s.begin, s.end);
      continue;
    }
    const ChunkLayout layout(s.qubits);
    const int b = layout.b;
    const int len = s.end - s.begin;
    std::vector<BoundGate> storage(static_cast<std::size_t>(len));
    std::vector<std::unique_ptr<PreparedGates<R>>> prepared;
    std::vector<std::vector<TermGroup>> gens(static_cast<std::size_t>(len));
    std::vector<double> consts(static_cast<std::size_t>(len), 0.0);
    std::vector<int> slot(static_cast<std::size_t>(len), -1);  // index into partial sums
    int nparam = 0;
    for (int j = 0; j < len; ++j) {
      const KernelGate kg = layout.local_gate(rev[s.begin + j], storage[j]);
      prepared.push_back(std::make_unique<PreparedGates<R>>(*kernels_, &kg, 1, b));
      if (const PauliSum* g = generators[orig(s.begin + j)]) {
        gens[j] = group_terms(layout.local_sum(*g), consts[j]);
        slot[j] = nparam++;
      }
    }
    const std::int64_t nchunks = std::int64_t{1} << (n_ - b);
    std::vector<cplx> partial(static_cast<std::size_t>(nchunks * nparam));
    R* phi_amps = amps_.data();
    R* lam_amps = lambda.amps_.data();
    const int threads = nchunks >= 2 ? threads_ : 1;
#pragma omp parallel num_threads(threads)
    {
      const bool copy = !layout.contiguous();
      AlignedBuffer<R> pb(copy ? std::size_t{2} << b : 0), lb(copy ? std::size_t{2} << b : 0);
#pragma omp for schedule(static)
      for (std::int64_t c = 0; c < nchunks; ++c) {
        const index_t base = layout.base(c);
        R* ph = copy ? pb.data() : phi_amps + 2 * base;
        R* la = copy ? lb.data() : lam_amps + 2 * base;
        if (copy) {
          layout.gather(ph, phi_amps, base);
          layout.gather(la, lam_amps, base);
        }
        for (int j = 0; j < len; ++j) {
          if (slot[j] >= 0) {
            cplx m = 0;
            for (const TermGroup& g : gens[j]) m += group_pass(g, la, ph, b, 1);
            if (consts[j] != 0) m += consts[j] * group_pass(TermGroup{0, {1.0}, {0}}, la, ph, b, 1);
            partial[static_cast<std::size_t>(c * nparam + slot[j])] = m;
          }
          prepared[j]->run(ph, 1);
          prepared[j]->run(la, 1);
        }
        if (copy) {
          layout.scatter(ph, phi_amps, base);
          layout.scatter(la, lam_amps, base);
        }
      }
    }
    for (int j = 0; j < len; ++j) {  // fixed-order sums over chunks
      if (slot[j] < 0) continue;
      cplx sum = 0;
      for (std::int64_t c = 0; c < nchunks; ++c)
        sum += partial[static_cast<std::size_t>(c * nparam + slot[j])];
      out[orig(s.begin + j)] = sum;
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
  for (const TermGroup& g : groups)
    sum += group_pass(g, amps_.data(), ket.amps_.data(), n_, threads_);
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
