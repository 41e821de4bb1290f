#include "distributed/state.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <random>

#include "core/bits.h"
#include "core/error.h"
#include "grad/adjoint_parts.h"
#include "passes/fusion.h"

namespace qmlsim::distributed {

int slice_bits(int processes, int n, const std::string& what) {
  if (processes < 1 || !std::has_single_bit(static_cast<unsigned>(processes))) {
    throw Error(what + ": " + std::to_string(processes) +
                " processes; a distributed state needs a power of two (1, 2, 4, 8, ...)");
  }
  const int g = std::countr_zero(static_cast<unsigned>(processes));
  if (n - g < kMinSliceQubits) {
    throw Error(what + ": " + std::to_string(n) + " qubits over " + std::to_string(processes) +
                " processes leaves slices of 2^" + std::to_string(n - g) +
                " amplitudes; each needs at least 2^" + std::to_string(kMinSliceQubits) +
                " (use fewer processes)");
  }
  return g;
}

namespace {

constexpr int kBlockBits = 10;  // as cpu::StateVector's sampling blocks

// Calls fn(position, count) for the contiguous runs of amplitude positions x(c)
// = insert_zero_bits(c, l) | pattern, c in [begin, end): the bits below the
// lowest l stay contiguous.
template <class Fn>
void for_runs(index_t begin, index_t end, const std::vector<int>& l, index_t pattern, Fn&& fn) {
  const index_t run = index_t{1} << l[0];
  for (index_t c = begin; c < end;) {
    const index_t len = std::min(end - c, run - (c & (run - 1)));
    fn(insert_zero_bits(c, l.data(), static_cast<int>(l.size())) | pattern, c - begin, len);
    c += len;
  }
}

}  // namespace

template <class R>
DistState<R>::DistState(int n, const comm::Comm& comm, const Options& options)
    : n_(n),
      g_(slice_bits(comm.size(), n)),
      m_(n - g_),
      comm_(&comm),
      options_(options),
      local_(n - g_, options.threads),
      map_(QubitMap::identity(n)) {
  for (int p = 0; p < comm.size(); ++p) {
    slice_of_.push_back(static_cast<std::uint64_t>(p));
    process_of_.push_back(p);
  }
  if (comm.rank() != 0) std::fill_n(local_.data(), 2 * local_.size(), R{0});
}

template <class R>
void DistState<R>::copy_from(const DistState& other) {
  local_.copy_from(other.local_);
  map_ = other.map_;
  slice_of_ = other.slice_of_;
  process_of_ = other.process_of_;
}

template <class R>
index_t DistState<R>::exchange_piece() {
  if (send_.empty()) {  // half the buffer each way, at most a slice, at the first use
    const std::size_t piece = std::max<std::size_t>(
        1, std::min<std::size_t>(options_.buffer_bytes / 2 / (2 * sizeof(R)), local_.size()));
    send_.resize(2 * piece);
    recv_.resize(2 * piece);
  }
  return send_.size() / 2;
}

template <class R>
void DistState<R>::exchange(const std::vector<std::pair<int, int>>& pairs_in,
                            const std::vector<cpu::StateVector<R>*>& states) {
  if (pairs_in.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::pair<int, int>> pairs = pairs_in;
  std::sort(pairs.begin(), pairs.end());
  const int k = static_cast<int>(pairs.size());
  std::vector<int> l;
  for (const auto& [a, b] : pairs) l.push_back(a);
  const std::uint64_t v = slice();
  std::uint64_t own = 0;  // this slice's bits at the incoming slice qubits
  for (int t = 0; t < k; ++t) own |= ((v >> (pairs[t].second - m_)) & 1) << t;
  const index_t per_partner = index_t{1} << (m_ - k);
  const index_t piece = exchange_piece();
  for (std::uint64_t d = 1; d < (std::uint64_t{1} << k); ++d) {
    const std::uint64_t s = own ^ d;  // the partner's bits; we send positions with l-bits = s
    std::uint64_t w = v;
    index_t pattern = 0;
    for (int t = 0; t < k; ++t) {
      const std::uint64_t b = (s >> t) & 1;
      const int j = pairs[t].second - m_;
      w = (w & ~(std::uint64_t{1} << j)) | (b << j);
      pattern |= static_cast<index_t>(b) << l[t];
    }
    const int partner = process_of_[static_cast<std::size_t>(w)];
    for (cpu::StateVector<R>* st : states) {
      R* a = st->data();
      for (index_t begin = 0; begin < per_partner; begin += piece) {
        const index_t end = std::min(per_partner, begin + piece);
        for_runs(begin, end, l, pattern, [&](index_t x, index_t at, index_t len) {
          std::memcpy(&send_[2 * at], a + 2 * x, 2 * len * sizeof(R));
        });
        comm_->sendrecv(send_.data(), recv_.data(), 2 * (end - begin) * sizeof(R), partner,
                        partner);
        stats_.bytes_sent += static_cast<double>(2 * (end - begin) * sizeof(R));
        for_runs(begin, end, l, pattern, [&](index_t x, index_t at, index_t len) {
          std::memcpy(a + 2 * x, &recv_[2 * at], 2 * len * sizeof(R));
        });
      }
    }
  }
  for (const auto& [a, b] : pairs) map_.swap_physical(a, b);
  ++stats_.exchanges;
  stats_.slices_moved += 1.0 - 1.0 / static_cast<double>(std::uint64_t{1} << k);
  stats_.exchange_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class R>
void DistState<R>::relabel(int control, int target) {
  for (std::size_t p = 0; p < slice_of_.size(); ++p) {
    std::uint64_t& v = slice_of_[p];
    if (control < 0 || ((v >> control) & 1)) v ^= std::uint64_t{1} << target;
    process_of_[static_cast<std::size_t>(v)] = static_cast<int>(p);
  }
}

template <class R>
template <class Fn>
void DistState<R>::run_steps(const DistPlan& p, const std::vector<cpu::StateVector<R>*>& states,
                             Fn&& on_gates) {
  for (const Step& s : p.steps) {
    switch (s.kind) {
      case Step::Kind::kExchange:
        exchange(s.pairs, states);
        break;
      case Step::Kind::kRelabel:
        relabel(s.control, s.target);
        break;
      case Step::Kind::kGates: {
        const auto t0 = std::chrono::steady_clock::now();
        on_gates(s);
        stats_.compute_s +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        break;
      }
    }
  }
  // SWAP relabels are in the plan's final map only.
  map_ = p.final_map;
  stats_.per_gate_exchanges += p.stats.naive_exchanges;
  stats_.per_gate_slices_moved += p.stats.naive_slices_moved;
  stats_.relabels += p.stats.relabels;
}

template <class R>
void DistState<R>::run(const DistPlan& p) {
  run_steps(p, {&local_}, [&](const Step& s) {
    std::vector<BoundGate> gates;
    for (const BoundGate& g : s.gates) {
      Specialized sp = specialize(g, m_, slice());
      if (!sp.skip) gates.push_back(std::move(sp.gate));
    }
    gates = fuse_up_to(gates, options_.fusion);
    local_.apply(gates);
  });
}

template <class R>
void DistState<R>::apply(const std::vector<BoundGate>& gates) {
  run(plan(gates, n_, g_, map_));
}

namespace {

index_t to_physical_mask(index_t logical, const QubitMap& map) {
  index_t out = 0;
  for (; logical; logical &= logical - 1)
    out |= index_t{1} << map.phys[static_cast<std::size_t>(std::countr_zero(logical))];
  return out;
}

}  // namespace

template <class R>
std::vector<std::pair<index_t, std::vector<PauliTerm>>> DistState<R>::group_by_slice_flips(
    const PauliSum& h) const {
  const index_t slice_bits_mask = ~((index_t{1} << m_) - 1);
  std::vector<std::pair<index_t, std::vector<PauliTerm>>> groups;
  for (const PauliTerm& t : h.terms) {
    const index_t key = to_physical_mask(t.xmask, map_) & slice_bits_mask;
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) {
      groups.push_back({key, {}});
      it = groups.end() - 1;
    }
    it->second.push_back(t);
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return groups;
}

template <class R>
void DistState<R>::bring_in(index_t slice_flips, const std::vector<cpu::StateVector<R>*>& states) {
  if (slice_flips == 0) return;
  // Local qubits the group does not flip go out, the highest first.
  std::vector<std::pair<int, int>> pairs;
  int victim = m_ - 1;
  for (index_t f = slice_flips; f; f &= f - 1) {
    const int p = std::countr_zero(f);
    while (victim >= 0 && ((slice_flips >> victim) & 1)) --victim;
    if (victim < 0) throw Error("a Pauli term flips more qubits than a slice holds");
    pairs.push_back({victim--, p});
  }
  exchange(pairs, states);
}

template <class R>
PauliSum DistState<R>::local_terms(const std::vector<PauliTerm>& terms) const {
  PauliSum h;
  const index_t low = (index_t{1} << m_) - 1;
  const index_t here = static_cast<index_t>(slice()) << m_;
  for (const PauliTerm& t : terms) {
    const index_t x = to_physical_mask(t.xmask, map_), z = to_physical_mask(t.zmask, map_);
    if (x & ~low) throw Error("internal: a term flips a slice qubit");
    const double sign = parity(z & ~low & here) ? -1.0 : 1.0;
    h.add(sign * t.coeff, x, z & low);
  }
  return h;
}

template <class R>
std::vector<double> DistState<R>::expvals(const std::vector<PauliSum>& observables) {
  // One group per set of slice qubits flipped, over all observables.
  PauliSum all;
  std::vector<std::size_t> owner;
  for (std::size_t k = 0; k < observables.size(); ++k)
    for (const PauliTerm& t : observables[k].terms) {
      all.terms.push_back(t);
      owner.push_back(k);
    }
  // Group keys are logical flip sets on the slice qubits of the current map.
  const index_t slice_logical = [&] {
    index_t s = 0;
    for (int p = m_; p < n_; ++p) s |= index_t{1} << map_.logical[static_cast<std::size_t>(p)];
    return s;
  }();
  std::vector<index_t> keys;
  for (const PauliTerm& t : all.terms) keys.push_back(t.xmask & slice_logical);
  std::vector<index_t> distinct = keys;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  std::vector<double> partial(observables.size(), 0.0);
  for (index_t key : distinct) {
    std::vector<std::vector<PauliTerm>> terms(observables.size());
    index_t flips = 0;  // physical slice qubits the group flips now
    for (std::size_t i = 0; i < all.terms.size(); ++i) {
      if (keys[i] != key) continue;
      terms[owner[i]].push_back(all.terms[i]);
      flips |= to_physical_mask(all.terms[i].xmask, map_);
    }
    bring_in(flips & ~((index_t{1} << m_) - 1), {&local_});
    for (std::size_t k = 0; k < observables.size(); ++k)
      if (!terms[k].empty()) partial[k] += local_.expval(local_terms(terms[k]));
  }
  const std::vector<double> all_partials = comm_->allgather(partial);
  std::vector<double> out(observables.size(), 0.0);
  for (std::size_t p = 0; p < all_partials.size(); ++p) out[p % out.size()] += all_partials[p];
  return out;
}

template <class R>
void DistState<R>::canonicalize() {
  // 1. Every slice qubit's own logical qubit onto it: those now local in one exchange,
  // those on another slice qubit through a local one.
  std::vector<std::pair<int, int>> pairs;
  for (int p = m_; p < n_; ++p) {
    const int l = map_.phys[static_cast<std::size_t>(p)];
    if (l < m_) pairs.push_back({l, p});
  }
  exchange(pairs, {&local_});
  for (int p = m_; p < n_; ++p) {
    const int l = map_.phys[static_cast<std::size_t>(p)];
    if (l == p) continue;
    exchange({{0, l}}, {&local_});  // logical p onto local qubit 0
    exchange({{0, p}}, {&local_});
  }
  // 2. Process r holds slice r.
  const int me = comm_->rank();
  if (std::any_of(slice_of_.begin(), slice_of_.end(), [&, p = 0](std::uint64_t v) mutable {
        return v != static_cast<std::uint64_t>(p++);
      })) {
    const int dest = static_cast<int>(slice());
    const int source = process_of_[static_cast<std::size_t>(me)];
    const index_t piece = exchange_piece();
    R* a = local_.data();
    for (index_t begin = 0; begin < local_.size(); begin += piece) {
      const index_t len = std::min(piece, local_.size() - begin);
      std::memcpy(send_.data(), a + 2 * begin, 2 * len * sizeof(R));
      comm_->sendrecv(send_.data(), a + 2 * begin, 2 * len * sizeof(R), dest, source);
    }
    for (std::size_t p = 0; p < slice_of_.size(); ++p) {
      slice_of_[p] = p;
      process_of_[p] = static_cast<int>(p);
    }
  }
  // 3. Local qubits in order, by SWAP gates inside the slice.
  for (int p = 0; p < m_; ++p) {
    const int l = map_.phys[static_cast<std::size_t>(p)];
    if (l == p) continue;
    BoundGate swap;
    swap.targets = {std::min(p, l), std::max(p, l)};
    swap.matrix.assign(16, cplx{0});
    for (int i : {0, 6, 9, 15}) swap.matrix[static_cast<std::size_t>(i)] = 1;
    local_.apply(swap);
    map_.swap_physical(p, l);
  }
}

template <class R>
std::map<index_t, std::int64_t> DistState<R>::sample(std::int64_t shots, std::uint64_t seed) {
  std::map<index_t, std::int64_t> counts;
  if (shots <= 0) return counts;
  canonicalize();
  // The single-process algorithm (cpu::StateVector::sample) over the global
  // index: the same block sums in the same order, the same uniforms, the scan
  // handed from process to process.
  const R* a = local_.data();
  auto prob = [&](index_t i) {
    return static_cast<double>(a[2 * i]) * a[2 * i] +
           static_cast<double>(a[2 * i + 1]) * a[2 * i + 1];
  };
  const index_t bsize = index_t{1} << kBlockBits;
  const std::int64_t mine = std::int64_t{1} << (m_ - kBlockBits);
  std::vector<double> my_blocks(static_cast<std::size_t>(mine));
  for (std::int64_t b = 0; b < mine; ++b) {
    double s = 0;
    for (index_t i = 0; i < bsize; ++i) s += prob((static_cast<index_t>(b) << kBlockBits) + i);
    my_blocks[static_cast<std::size_t>(b)] = s;
  }
  const std::vector<double> block = comm_->allgather(my_blocks);
  double total = 0;
  for (double s : block) total += s;
  const int me = comm_->rank(), procs = comm_->size();
  const std::int64_t first = mine * me;
  std::mt19937_64 rng(seed);
  std::vector<double> u;
  for (std::int64_t done = 0; done < shots; done += cpu::StateVector<R>::kSampleChunk) {
    u.resize(static_cast<std::size_t>(std::min(cpu::StateVector<R>::kSampleChunk, shots - done)));
    for (double& x : u) x = static_cast<double>(rng() >> 11) * 0x1.0p-53 * total;
    std::sort(u.begin(), u.end());
    double token[2] = {0, 0};  // k, before
    if (me > 0) comm_->recv(token, sizeof token, me - 1);
    auto k = static_cast<std::size_t>(token[0]);
    double before = token[1];
    cpu::sample_scan(block, first, mine, kBlockBits, u, k, before, prob,
                     static_cast<index_t>(me) << m_, counts);
    token[0] = static_cast<double>(k);
    token[1] = before;
    if (me + 1 < procs) comm_->send(token, sizeof token, me + 1);
  }
  // Every process gets every count.
  std::vector<double> flat;
  for (const auto& [i, c] : counts) {
    flat.push_back(static_cast<double>(i));
    flat.push_back(static_cast<double>(c));
  }
  const std::vector<double> all = comm_->allgather(flat);
  std::map<index_t, std::int64_t> merged;
  for (std::size_t i = 0; i + 1 < all.size(); i += 2)
    merged[static_cast<index_t>(all[i])] += static_cast<std::int64_t>(all[i + 1]);
  return merged;
}

template <class R>
index_t DistState<R>::most_probable() {
  canonicalize();
  const R* a = local_.data();
  index_t best = 0;
  double best_p = -1;
  for (index_t i = 0; i < local_.size(); ++i) {
    const double p =
        static_cast<double>(a[2 * i]) * a[2 * i] + static_cast<double>(a[2 * i + 1]) * a[2 * i + 1];
    if (p > best_p) {
      best_p = p;
      best = i;
    }
  }
  const std::vector<double> all = comm_->allgather(std::vector<double>{
      best_p, static_cast<double>((static_cast<index_t>(comm_->rank()) << m_) + best)});
  std::size_t pick = 0;
  for (std::size_t p = 2; p < all.size(); p += 2)
    if (all[p] > all[pick]) pick = p;
  return static_cast<index_t>(all[pick + 1]);
}

template <class R>
std::vector<cplx> DistState<R>::gather() {
  canonicalize();
  std::vector<double> mine(2 * local_.size());
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = local_.data()[i];
  const std::vector<double> all = comm_->allgather(mine);
  std::vector<cplx> out(all.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = {all[2 * i], all[2 * i + 1]};
  return out;
}

template <class R>
std::vector<double> DistState<R>::gradient(const Circuit& c, std::span<const double> theta,
                                           const PauliSum& h, double* value) {
  const std::vector<TapeStep> tape = make_tape(c, theta);
  const Segmented seg = segment(tape, options_.fusion);
  // lambda = H phi, group by group of slice flips (both vectors exchanged alike).
  cpu::StateVector<R> lambda(m_, options_.threads);
  std::vector<cpu::StateVector<R>*> both = {&local_, &lambda};
  double partial = 0;
  const auto groups = group_by_slice_flips(h);
  if (groups.size() == 1) {
    bring_in(groups[0].first, both);
    partial = lambda.assign_applied(local_terms(groups[0].second), local_);
  } else {
    std::fill_n(lambda.data(), 2 * lambda.size(), R{0});
    cpu::StateVector<R> part(m_, options_.threads);
    // Group keys are logical flips; physical ones are recomputed after each exchange.
    std::vector<std::vector<PauliTerm>> logical_groups;
    for (const auto& g : groups) logical_groups.push_back(g.second);
    for (const std::vector<PauliTerm>& terms : logical_groups) {
      index_t flips = 0;
      for (const PauliTerm& t : terms) flips |= to_physical_mask(t.xmask, map_);
      bring_in(flips & ~((index_t{1} << m_) - 1), both);
      partial += part.assign_applied(local_terms(terms), local_);
      R* l = lambda.data();
      const R* q = part.data();
      for (index_t i = 0; i < 2 * lambda.size(); ++i) l[i] += q[i];
    }
  }
  const std::vector<double> values = comm_->allgather(std::vector<double>{partial});
  *value = 0;
  for (double v : values) *value += v;

  // The sweep: the inverse gates from last to first, planned from the current map.
  std::vector<BoundGate> inverse;
  std::vector<Measure> measure;
  inverse_gates(seg, inverse, measure);
  const std::size_t count = inverse.size();
  std::vector<BoundGate> backward(inverse.rbegin(), inverse.rend());
  const DistPlan p = plan(backward, n_, g_, map_);
  std::vector<Matrix> cross(count);
  for (std::size_t i = 0; i < count; ++i)
    if (measure[i] != Measure::none)
      cross[i].assign(seg.gates[i].dim() * seg.gates[i].dim(), cplx{0});
  run_steps(p, both, [&](const Step& s) {
    // This step's gates in forward order (adjoint_sweep undoes from last to first).
    std::vector<BoundGate> gates;
    std::vector<Measure> meas;
    std::vector<std::size_t> which;  // index into s.gates
    std::vector<Specialized> specs;
    for (std::size_t j = s.gates.size(); j-- > 0;) {
      Specialized sp = specialize(s.gates[j], m_, slice());
      if (sp.skip) continue;
      const std::size_t i = count - 1 - static_cast<std::size_t>(s.source[j]);
      gates.push_back(sp.gate);
      meas.push_back(measure[i]);
      which.push_back(j);
      specs.push_back(std::move(sp));
    }
    std::vector<Matrix> out;
    local_.adjoint_sweep(lambda, gates, meas, out, /*undo_all=*/true);
    for (std::size_t e = 0; e < gates.size(); ++e) {
      if (meas[e] == Measure::none) continue;
      const std::size_t j = which[e];
      const std::size_t i = count - 1 - static_cast<std::size_t>(s.source[j]);
      const Specialized& sp = specs[e];
      const std::size_t dim = s.gates[j].dim(), sdim = sp.gate.dim();
      auto entry = [&](std::size_t r, std::size_t col) {
        // a diagonal gate's sums are its diagonal entries (StateVector::adjoint_sweep)
        return sp.gate.diagonal ? (r == col ? out[e][r] : cplx{0}) : out[e][r * sdim + col];
      };
      // The physical gate's cross matrix (dim x dim), from the specialized one.
      Matrix phys(dim * dim, cplx{0});
      switch (sp.map) {
        case Specialized::Map::kSame:
          for (std::size_t r = 0; r < dim; ++r)
            for (std::size_t col = 0; col < dim; ++col) phys[r * dim + col] = entry(r, col);
          break;
        case Specialized::Map::kDiagonalFixed:
          for (std::size_t a = 0; a < sdim; ++a)
            phys[sp.index[a] * dim + sp.index[a]] = entry(a, a);
          break;
        case Specialized::Map::kPhaseOnControls:
          phys[sp.index[0] * dim + sp.index[0]] = entry(sdim - 1, sdim - 1);
          break;
        case Specialized::Map::kPhaseOnSlice:
          phys[sp.index[0] * dim + sp.index[0]] = entry(0, 0) + entry(1, 1);
          break;
      }
      // Physical target order -> the planned (logical, canonical) gate's order.
      const std::vector<int>& order = s.order[j];
      auto logical_index = [&](std::size_t a) {
        std::size_t out_index = 0;
        for (std::size_t t = 0; t < order.size(); ++t) out_index |= ((a >> order[t]) & 1) << t;
        return out_index;
      };
      for (std::size_t r = 0; r < dim; ++r)
        for (std::size_t col = 0; col < dim; ++col)
          cross[i][logical_index(r) * dim + logical_index(col)] += phys[r * dim + col];
    }
  });
  // Sum the cross matrices over the processes, in process order.
  std::vector<double> flat;
  for (const Matrix& mtx : cross)
    for (const cplx& z : mtx) {
      flat.push_back(z.real());
      flat.push_back(z.imag());
    }
  if (!flat.empty()) {
    const std::vector<double> all = comm_->allgather(flat);
    std::vector<double> sum(flat.size(), 0.0);
    for (std::size_t p = 0; p < all.size() / flat.size(); ++p)
      for (std::size_t i = 0; i < flat.size(); ++i) sum[i] += all[p * flat.size() + i];
    std::size_t at = 0;
    for (Matrix& mtx : cross)
      for (cplx& z : mtx) {
        z = {sum[at], sum[at + 1]};
        at += 2;
      }
  }
  for (std::size_t i = 0; i < cross.size(); ++i) {  // a diagonal gate's: its entries (accumulate)
    const std::size_t dim = seg.gates[i].dim();
    if (!seg.gates[i].diagonal || cross[i].size() != dim * dim) continue;
    Matrix entries(dim);
    for (std::size_t a = 0; a < dim; ++a) entries[a] = cross[i][a * dim + a];
    cross[i] = std::move(entries);
  }
  std::vector<double> grad(theta.size(), 0.0);
  accumulate(seg, cross, grad);
  return grad;
}

template class DistState<float>;
template class DistState<double>;

}  // namespace qmlsim::distributed
