// The adjoint sweep on the CPU state vector: gates undone on phi and lambda in
// cache-blocked segments, each measured gate's cross matrix formed on the way
// (fused steps, pairs, diagonal and sign runs, composed permutations).
#include <algorithm>
#include <bit>
#include <cassert>
#include <memory>
#include <optional>
#include <vector>

#include "backends/cpu/chunks.h"
#include "backends/cpu/statevector.h"
#include "core/bits.h"
#include "core/parallel.h"
#include "passes/light_cone.h"

namespace qmlsim::cpu {

namespace {
// n interleaved complex numbers as a Matrix.
void to_matrix(const double* v, std::size_t n, Matrix& m) {
  m.resize(n);
  for (std::size_t e = 0; e < n; ++e) m[e] = cplx{v[2 * e], v[2 * e + 1]};
}

// The anti-Hermitian part of a diagonal held as its entries: i Im m_aa.
Matrix antihermitian_diagonal(Matrix m) {
  for (cplx& x : m) x = cplx{0, x.imag()};
  return m;
}

// The anti-Hermitian part of gate g's cross matrix m (cross_matrix's form).
Matrix antihermitian(const BoundGate& g, Matrix m) {
  return g.diagonal ? antihermitian_diagonal(std::move(m)) : antihermitian_part(m);
}

constexpr std::size_t kMaxAdjointDiagonalDim = 256;  // KernelSet::adjoint_step
}  // namespace

// The kernel set's fused adjoint step (kernels.h) into m: for a diagonal gate
// its dim diagonal entries, else dim x dim; false if it does not apply.
// real_part: Re m is all that is read (Measure::real_part).
template <class R>
bool fused_step(const PreparedGates<R>& gate, R* bra, R* ket, const BoundGate& g, Matrix& m,
                bool write_back, bool real_part) {
  const std::size_t dim = g.dim();
  const std::size_t entries = g.diagonal ? dim : dim * dim;
  if (dim > (g.diagonal ? kMaxAdjointDiagonalDim : static_cast<std::size_t>(kMaxAdjointDim)))
    return false;
  double v[2 * kMaxAdjointDim * kMaxAdjointDim];
  static_assert(kMaxAdjointDim * kMaxAdjointDim >= kMaxAdjointDiagonalDim);
  if (!gate.adjoint_step(bra, ket, v, write_back, real_part)) return false;
  to_matrix(v, entries, m);
  return true;
}

// The kernel set's two adjoint steps in one pass (kernels.h) into ma and mb;
// false if it does not apply. real_part: for both (fused_step).
template <class R>
bool fused_pair(const PreparedGates<R>& a, const PreparedGates<R>& b, R* bra, R* ket, Matrix& ma,
                Matrix& mb, bool write_back, bool real_part) {
  double va[8], vb[8];
  if (!a.adjoint_pair(b, bra, ket, va, vb, write_back, real_part)) return false;
  to_matrix(va, 4, ma);
  to_matrix(vb, 4, mb);
  return true;
}

// A measured gate's step on a chunk of 2^b amplitudes: its sums into m (a
// diagonal gate's diagonal alone), then, with write_back, both states
// multiplied by it. The fused kernel where it applies; else (wider gates, a
// parametric gate that is exactly a permutation at its angles) separate passes.
template <class R>
void measured_step(const PreparedGates<R>& p, const BoundGate& local, int b, R* bra, R* ket,
                   Matrix& m, bool write_back, bool real_part = false) {
  if (fused_step(p, bra, ket, local, m, write_back, real_part)) return;
  m = antihermitian(local, cross_matrix(bra, ket, b, local, 1));
  if (!write_back) return;
  p.run(ket, 1);
  p.run(bra, 1);
}

// The adjoint step of a gate with wires outside the chunk (OutsideDiagonal) on
// the chunk at `base`: with m, its variant's diagonal sums are added to the
// gate's entries in m (dim of them, zeroed first when empty); then, with
// write_back, both states are multiplied by the variant.
template <class R>
void outside_step(const OutsideDiagonal<R>& g, index_t base, int b, R* bra, R* ket, Matrix* m,
                  std::size_t dim, bool write_back) {
  const std::size_t v = g.variant(base);
  const PreparedGates<R>& p = *g.prepared[v];
  if (m) {
    Matrix part;
    measured_step(p, g.local[v], b, bra, ket, part, write_back);
    if (m->empty()) m->assign(dim, cplx{0});
    for (std::size_t i = 0; i < part.size(); ++i)
      if (g.entry[v][i] >= 0) (*m)[static_cast<std::size_t>(g.entry[v][i])] += part[i];
    return;
  }
  if (!write_back) return;
  p.run(ket, 1);
  p.run(bra, 1);
}

// One measured diagonal step of a run (diagonal_run): the gate alone in the
// chunk (`outside` null), or one whose wires leave the chunk.
template <class R>
struct DiagonalStep {
  const PreparedGates<R>* local = nullptr;  // the chunk's gate when `outside` is null
  const OutsideDiagonal<R>* outside = nullptr;
  int slot = 0;         // the gate's partial sums among a chunk's
  std::size_t dim = 0;  // the gate's diagonal entries
};

// A run of measured diagonal steps on the chunk at `base` in one pass
// (KernelSet::adjoint_diagonal_run): each step's sums into partial[slot] as
// measured_step and outside_step form them, then, with write_back, both states
// multiplied by every gate. false, with nothing done, where the kernels do not
// take the run. `sums`: scratch, reused across calls.
template <class R>
bool diagonal_run(const std::vector<DiagonalStep<R>>& run, index_t base, R* bra, R* ket,
                  Matrix* partial, bool write_back, std::vector<double>& sums) {
  const int count = static_cast<int>(run.size());
  if (count < 1 || count > kMaxDiagonalRun) return false;
  const PreparedGates<R>* gates[kMaxDiagonalRun] = {};
  std::size_t variant[kMaxDiagonalRun], first[kMaxDiagonalRun + 1] = {0};
  for (int g = 0; g < count; ++g) {
    const DiagonalStep<R>& d = run[static_cast<std::size_t>(g)];
    variant[g] = d.outside ? d.outside->variant(base) : 0;
    gates[g] = d.outside ? d.outside->prepared[variant[g]].get() : d.local;
    const std::size_t dim = d.outside ? d.outside->local[variant[g]].dim() : d.dim;
    if (dim > kMaxAdjointDiagonalDim) return false;
    first[g + 1] = first[g] + 2 * dim;
  }
  sums.resize(first[count]);
  double* out[kMaxDiagonalRun];
  for (int g = 0; g < count; ++g) out[g] = sums.data() + first[g];
  if (!PreparedGates<R>::adjoint_diagonal_run(gates, count, bra, ket, out, write_back))
    return false;
  for (int g = 0; g < count; ++g) {
    const DiagonalStep<R>& d = run[static_cast<std::size_t>(g)];
    Matrix& m = partial[d.slot];
    const std::size_t entries = (first[g + 1] - first[g]) / 2;
    if (!d.outside) {
      to_matrix(out[g], entries, m);
      continue;
    }
    if (m.empty()) m.assign(d.dim, cplx{0});
    const std::vector<int>& entry = d.outside->entry[variant[g]];
    for (std::size_t i = 0; i < entries; ++i)
      if (entry[i] >= 0)
        m[static_cast<std::size_t>(entry[i])] += cplx{out[g][2 * i], out[g][2 * i + 1]};
  }
  return true;
}

namespace {

// A diagonal gate's cross matrix as its dim diagonal entries: the form the
// sweep returns (a fused pair forms a one-qubit diagonal gate's as 2 x 2).
void keep_diagonals(const std::vector<BoundGate>& inverse, std::vector<Matrix>& out) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t dim = inverse[i].dim();
    if (!inverse[i].diagonal || dim < 2 || out[i].size() != dim * dim) continue;
    Matrix entries(dim);
    for (std::size_t a = 0; a < dim; ++a) entries[a] = out[i][a * dim + a];
    out[i] = std::move(entries);
  }
}

}  // namespace

template <class R>
void StateVector<R>::adjoint_sweep(StateVector& lambda, const std::vector<BoundGate>& inverse,
                                   const std::vector<Measure>& measure, std::vector<Matrix>& out,
                                   bool undo_all, const std::vector<Side>& sides) {
  sweep(lambda, inverse, measure, out, undo_all, nullptr, sides);
  keep_diagonals(inverse, out);
}

template <class R>
double StateVector<R>::adjoint_sweep_from(const PauliSum& h, StateVector& lambda,
                                          const std::vector<BoundGate>& inverse,
                                          const std::vector<Measure>& measure,
                                          std::vector<Matrix>& out) {
  const double value = sweep(lambda, inverse, measure, out, false, &h);
  keep_diagonals(inverse, out);
  return value;
}

namespace {
// A Pauli sum as the chunks of a segment see it (REQUIRES every flipped qubit
// in W): per term its masks on the chunk's qubits, and the Z factors outside W,
// whose sign each chunk's base fixes. conjugate(P) makes it P H P^dagger, the
// observable after a permutation P of the chunk's basis states.
class ChunkObservable {
 public:
  ChunkObservable(const PauliSum& h, const ChunkLayout& layout) {
    for (const PauliTerm& t : h.terms)
      terms_.push_back({{t.coeff, layout.local_mask(t.xmask), layout.local_mask(t.zmask)},
                        t.zmask & ~layout.global_mask()});
  }
  void conjugate(const AffinePermutation& p) {
    for (Term& t : terms_) t.local = p.conjugate(t.local);
  }
  PauliSum at(index_t base) const {  // base: the chunk's bits outside W
    PauliSum h;
    for (const Term& t : terms_)
      h.add(parity(base & t.outside_z) ? -t.local.coeff : t.local.coeff, t.local.xmask,
            t.local.zmask);
    return h;
  }

 private:
  struct Term {
    PauliTerm local;
    index_t outside_z;
  };
  std::vector<Term> terms_;
};

// The sweep's plan for one cache-blocked segment (steps [s.begin, s.end) of
// the reversed gates): each step's prepared gate in the chunk's frame, its
// place in the partial sums, whether it writes back, and the runs that take
// several steps in one pass. Built once; run_segment executes it per chunk.
template <class R>
struct SegmentSchedule {
  const std::vector<BoundGate>& rev;  // the reversed gates (global)
  int begin, len;
  ChunkLayout layout;
  int b;
  std::vector<BoundGate> local;
  std::vector<KernelGate> kg;
  std::vector<std::unique_ptr<OutsideDiagonal<R>>> outside;
  std::vector<std::unique_ptr<PreparedGates<R>>> prepared;
  std::vector<int> orig;    // step j's index in the caller's gate list
  std::vector<int> slot;    // index into the partial sums, -1: not measured
  std::vector<char> write;  // undone (on the states its side names)
  std::vector<Side> side;
  std::vector<char> real_part;
  int nmeasure = 0;
  // false: the chunks need not go back (only peeks; or the sweep's last
  // segment, after which nothing reads either state unless undo_all).
  bool writes = false;
  bool forms = false;        // lambda = H phi formed in this segment's chunks
  bool lambda_back = false;  // lambda goes back to memory
  // Whether some step acts on phi (this) and on lambda; a segment of steps on
  // one state alone neither gathers nor scatters the other's chunks.
  bool uses_this = false, uses_lambda = false;
  std::optional<ChunkObservable> observable;
  // Runs of two or more measured diagonal steps without controls, alike in
  // writing back, from step j: one pass each (diagonal_run).
  std::vector<std::vector<DiagonalStep<R>>> diagonal_runs;
  std::optional<PermutationRuns> runs;
  std::optional<SignRuns> signs;
  int first = 0;  // steps before it: a permutation acting on phi alone

  SegmentSchedule(const std::vector<BoundGate>& reversed, const std::vector<int>& orig_index,
                  const std::vector<Measure>& measure, const std::vector<char>& needed,
                  const std::vector<Side>& sides, const Segment& s, const KernelSet& kernels,
                  bool last, bool undo_all, const PauliSum* form_h)
      : rev(reversed), begin(s.begin), len(s.end - s.begin), layout(s.qubits), b(layout.b) {
    outside = localize<R>(rev, s.begin, s.end, layout, kernels, local, kg);
    slot.assign(static_cast<std::size_t>(len), -1);
    write.assign(static_cast<std::size_t>(len), 0);
    side.assign(static_cast<std::size_t>(len), Side::both);
    real_part.assign(static_cast<std::size_t>(len), 0);
    for (int j = 0; j < len; ++j) {
      const int i = orig_index[static_cast<std::size_t>(begin + j)];
      orig.push_back(i);
      prepared.push_back(outside[j] ? nullptr
                                    : std::make_unique<PreparedGates<R>>(kernels, &kg[j], 1, b));
      if (measure[i] != Measure::none) slot[j] = nmeasure++;
      write[j] = needed[i];
      if (!sides.empty()) side[j] = sides[i];
      real_part[j] = measure[i] == Measure::real_part;
      writes = writes || write[j];
      uses_this = uses_this || side[j] != Side::lambda_only;
      uses_lambda = uses_lambda || side[j] != Side::this_only;
    }
    if (last && !undo_all) writes = false;
    forms = form_h != nullptr;
    uses_lambda = uses_lambda || forms;
    lambda_back = writes || (forms && !last);
    if (forms) observable.emplace(*form_h, layout);
    diagonal_runs.resize(static_cast<std::size_t>(len));
    auto in_run = [&](int j) {
      return slot[j] >= 0 && rev[begin + j].diagonal && (outside[j] || local[j].controls.empty());
    };
    for (int j = 0; j < len; ++j) {
      if (!in_run(j)) continue;
      int e = j + 1;
      while (e < len && e - j < kMaxDiagonalRun && in_run(e) && write[e] == write[j]) ++e;
      for (int i = j; e > j + 1 && i < e; ++i)
        diagonal_runs[static_cast<std::size_t>(j)].push_back(
            {prepared[i].get(), outside[i].get(), slot[i], rev[begin + i].dim()});
    }
    runs.emplace(local, b, [&](int j) {  // unmeasured, the same in every chunk, on both states
      return slot[j] < 0 && !outside[j] && side[j] == Side::both;
    });
    signs.emplace(rev, begin, len,
                  [&](int j) { return slot[j] < 0 && write[j] && side[j] == Side::both; });
    // A permutation P opening the segment that forms lambda acts on phi alone:
    // lambda after it is (P H P^dagger)(P phi), one permutation pass fewer.
    first = forms && runs->end[0] > 0 && (writes || last) ? runs->end[0] : 0;
    if (first > 0) observable->conjugate(*runs->start[0]);
  }
};

// The schedule's steps on the chunk at `base` (phi and lambda in pc, lc);
// partial: this chunk's sums. Returns the chunk's part of <phi|H|phi> when the
// segment forms lambda.
template <class R>
double run_chunk(const SegmentSchedule<R>& sc, const KernelSet& kernels, index_t base,
                 ChunkBuffers<R>& pc, ChunkBuffers<R>& lc, Matrix* partial,
                 std::vector<double>& sums) {
  double expval = 0;
  if (sc.first > 0) pc.permute(*sc.runs->start[0]);
  if (sc.forms)  // <phi|H|phi> = <P phi|P H P^dagger|P phi>: the same sum either way.
    expval = apply_pauli_sum(sc.observable->at(base), pc.cur, lc.cur, sc.b, 1);
  const int b = sc.b;
  for (int j = sc.first; j < sc.len; ++j) {
    if (sc.runs->end[j] > j) {
      ChunkBuffers<R>::permute_both(pc, lc, *sc.runs->start[j]);
      j = sc.runs->end[j] - 1;
      continue;
    }
    R* const ph = pc.cur;
    R* const la = lc.cur;
    if (sc.signs->end[j] > j) {
      apply_signs(kernels, sc.signs->local(j, sc.layout, base), ph, la, b);
      j = sc.signs->end[j] - 1;
      continue;
    }
    const std::vector<DiagonalStep<R>>& run = sc.diagonal_runs[static_cast<std::size_t>(j)];
    if (!run.empty() && diagonal_run(run, base, la, ph, partial, sc.write[j], sums)) {
      j += static_cast<int>(run.size()) - 1;
      continue;
    }
    const int slot = sc.slot[j];
    const Side side = sc.side[j];
    if (side != Side::both) {  // never measured
      if (!sc.write[j]) continue;
      const PreparedGates<R>& p =
          sc.outside[j] ? *sc.outside[j]->prepared[sc.outside[j]->variant(base)] : *sc.prepared[j];
      p.run(side == Side::this_only ? ph : la, 1);
      continue;
    }
    if (sc.outside[j]) {
      outside_step(*sc.outside[j], base, b, la, ph, slot < 0 ? nullptr : &partial[slot],
                   sc.rev[sc.begin + j].dim(), sc.write[j]);
      continue;
    }
    // Two measured one-qubit gates in a row on different qubits: one pass.
    if (slot >= 0 && j + 1 < sc.len && sc.slot[j + 1] >= 0 && !sc.outside[j + 1] &&
        fused_pair(*sc.prepared[j], *sc.prepared[j + 1], la, ph, partial[slot],
                   partial[sc.slot[j + 1]], sc.write[j] || sc.write[j + 1],
                   sc.real_part[j] && sc.real_part[j + 1])) {
      ++j;
      continue;
    }
    if (slot >= 0) {
      measured_step(*sc.prepared[j], sc.local[j], b, la, ph, partial[slot], sc.write[j],
                    sc.real_part[j] != 0);
      continue;
    }
    if (!sc.write[j]) continue;
    sc.prepared[j]->run(ph, 1);
    sc.prepared[j]->run(la, 1);
  }
  return expval;
}

// The schedule over every chunk of phi and lambda (chunks split over the
// threads), then each measured step's sums over the chunks in a fixed order
// into out. Returns <phi|H|phi> when the segment forms lambda, else 0.
template <class R>
double run_segment(const SegmentSchedule<R>& sc, const KernelSet& kernels, R* phi_amps, R* lam_amps,
                   int n, int threads_given, bool streaming, std::vector<Matrix>& out) {
  const int b = sc.b;
  const std::int64_t nchunks = std::int64_t{1} << (n - b);
  const std::size_t nmeasure = static_cast<std::size_t>(sc.nmeasure);
  std::vector<Matrix> partial(static_cast<std::size_t>(nchunks) * nmeasure);
  std::vector<double> chunk_expval(sc.forms ? static_cast<std::size_t>(nchunks) : 0);
  const int threads = nchunks >= 2 ? threads_given : 1;
#pragma omp parallel num_threads(threads)
  {
    const bool copy = !sc.layout.contiguous();
    AlignedBuffer<R> pb(copy ? std::size_t{2} << b : 0), lb(copy ? std::size_t{2} << b : 0);
    // Composed permutations write out of place, into each vector's spare buffer.
    const std::size_t spare = sc.runs->count ? std::size_t{2} << b : 0;
    AlignedBuffer<R> ps(spare), ls(spare);
    std::vector<double> sums;  // diagonal_run's scratch
#pragma omp for schedule(static)
    for (std::int64_t c = 0; c < nchunks; ++c) {
      const index_t base = sc.layout.base(c);
      ChunkBuffers<R> pc{copy ? pb.data() : phi_amps + 2 * base, ps.data(), nullptr};
      ChunkBuffers<R> lc{copy ? lb.data() : lam_amps + 2 * base, ls.data(), nullptr};
      pc.cur = pc.home;
      lc.cur = lc.home;
      if (copy && sc.uses_this) sc.layout.gather(pc.cur, phi_amps, base);
      if (copy && sc.uses_lambda && !sc.forms) sc.layout.gather(lc.cur, lam_amps, base);
      const double e = run_chunk(sc, kernels, base, pc, lc,
                                 partial.data() + static_cast<std::size_t>(c) * nmeasure, sums);
      if (sc.forms) chunk_expval[static_cast<std::size_t>(c)] = e;
      if (copy) {
        if (sc.writes && sc.uses_this) sc.layout.scatter(pc.cur, phi_amps, base, streaming);
        if (sc.lambda_back && sc.uses_lambda) sc.layout.scatter(lc.cur, lam_amps, base, streaming);
      } else if (sc.writes) {  // in place (lambda too when formed; untouched if !writes)
        pc.settle(b);
        lc.settle(b);
      }
    }
  }
  double expval = 0;
  for (double e : chunk_expval) expval += e;  // in chunk order
  for (int j = 0; j < sc.len; ++j) {          // fixed-order sums over chunks
    if (sc.slot[j] < 0) continue;
    const BoundGate& g = sc.rev[sc.begin + j];
    const std::size_t dim = g.dim();
    Matrix sum(g.diagonal ? dim : dim * dim, 0.0);  // partials: a diagonal's diagonal
    for (std::int64_t c = 0; c < nchunks; ++c) {
      const Matrix& m =
          partial[static_cast<std::size_t>(c) * nmeasure + static_cast<std::size_t>(sc.slot[j])];
      for (std::size_t e = 0; e < sum.size(); ++e) sum[e] += m[e];
    }
    out[static_cast<std::size_t>(sc.orig[static_cast<std::size_t>(j)])] = std::move(sum);
  }
  return expval;
}

}  // namespace

template <class R>
double StateVector<R>::sweep(StateVector& lambda, const std::vector<BoundGate>& inverse,
                             const std::vector<Measure>& measure, std::vector<Matrix>& out,
                             bool undo_all, const PauliSum* h, const std::vector<Side>& sides) {
  assert(lambda.n_ == n_ && inverse.size() == measure.size() && &lambda != this);
  assert(sides.empty() || sides.size() == inverse.size());
  const int count = static_cast<int>(inverse.size());
  out.assign(inverse.size(), Matrix{});
  const bool one_sided =
      std::any_of(sides.begin(), sides.end(), [](Side c) { return c != Side::both; });
  auto side = [&](int i) { return sides.empty() ? Side::both : sides[i]; };
  // Gates outside every measured gate's light cone (passes/light_cone.h) are not
  // undone: unmeasured ones are dropped, measured ones only have their sums formed.
  const std::vector<char> needed =
      undo_all ? std::vector<char>(inverse.size(), 1) : undo_needed(inverse, measure, one_sided);
  // Process in reverse: rev[j] is inverse[orig(j)]. With blocking, the plan may
  // move a gate past gates on other qubits; a cross matrix over a gate's targets
  // does not change under unitaries on other qubits applied to both vectors.
  std::vector<BoundGate> rev;
  std::vector<int> orig_index;
  for (int i = count - 1; i >= 0; --i) {
    if (!needed[i] && measure[i] == Measure::none) continue;
    rev.push_back(inverse[i]);
    orig_index.push_back(i);
  }
  const int active = static_cast<int>(rev.size());
  auto orig = [&](int j) { return orig_index[j]; };
  // The fused kernel is serial: use it where the kernels would run on one thread.
  const bool serial = threads_ == 1 || (std::int64_t{1} << n_) < kMinParallelWork;
  auto direct = [&](int begin, int end) {
    for (int j = begin; j < end; ++j) {
      const KernelGate k = to_kernel_gate(rev[j]);
      const PreparedGates<R> gate(*kernels_, &k, 1, n_);  // once for both states
      const int i = orig(j);
      if (side(i) != Side::both) {  // never measured
        if (needed[i])
          gate.run(side(i) == Side::this_only ? amps_.data() : lambda.amps_.data(), threads_);
        continue;
      }
      if (measure[i] != Measure::none && serial &&
          fused_step(gate, lambda.amps_.data(), amps_.data(), rev[j], out[i], needed[i],
                     measure[i] == Measure::real_part))
        continue;
      if (measure[i] != Measure::none)
        out[i] = antihermitian(
            rev[j], cross_matrix(lambda.amps_.data(), amps_.data(), n_, rev[j], threads_));
      if (!needed[i]) continue;
      gate.run(amps_.data(), threads_);
      gate.run(lambda.amps_.data(), threads_);
    }
  };
  std::vector<char> order;  // one-sided steps and measured gates keep their order
  if (one_sided)
    for (int j = 0; j < active; ++j)
      order.push_back(side(orig(j)) != Side::both ? 1 : measure[orig(j)] != Measure::none ? 2 : 0);
  SegmentPlan plan = blocking_pays(active, chunk_qubits_)
                         ? plan_blocks(rev, n_, chunk_qubits_, order)
                         : SegmentPlan{};
  // A serial sweep that is not blocked (the state fits one chunk) takes the
  // whole state as its one chunk where that pays (sweep_in_segments): the
  // segment's fused pairs, diagonal runs, sign and permutation runs then
  // apply there too, where gate by gate each step takes a pass of its own.
  if (plan.segments.empty() && active >= 2 && sweep_in_segments(n_, chunk_qubits_, serial)) {
    Segment whole;
    whole.begin = 0;
    whole.end = active;
    for (int q = 0; q < n_; ++q) whole.qubits.push_back(q);
    plan.segments.push_back(std::move(whole));
    for (int j = 0; j < active; ++j) plan.order.push_back(j);
  }
  // lambda = H this inside the first segment's chunks, when it is blocked and
  // holds every qubit H flips; otherwise in a pass of its own first.
  index_t flips = 0;
  if (h)
    for (const PauliTerm& t : h->terms) flips |= t.xmask;
  const bool form = h && !plan.segments.empty() && !plan.segments.front().qubits.empty() &&
                    std::popcount(ChunkLayout(plan.segments.front().qubits).local_mask(flips)) ==
                        std::popcount(flips);
  double expval = 0;
  if (h && !form) expval = lambda.assign_applied(*h, *this);
  if (plan.segments.empty()) {
    direct(0, active);
    return expval;
  }
  {
    std::vector<BoundGate> ordered;
    std::vector<int> ordered_orig;
    for (int j : plan.order) {
      ordered.push_back(std::move(rev[j]));
      ordered_orig.push_back(orig_index[j]);
    }
    rev = std::move(ordered);
    orig_index = std::move(ordered_orig);
  }
  for (const Segment& s : plan.segments) {
    if (s.qubits.empty()) {
      direct(s.begin, s.end);
      continue;
    }
    const bool last = &s == &plan.segments.back();
    const bool forms = form && &s == &plan.segments.front();
    const SegmentSchedule<R> schedule(rev, orig_index, measure, needed, sides, s, *kernels_, last,
                                      undo_all, forms ? h : nullptr);
    expval +=
        run_segment(schedule, *kernels_, amps_.data(), lambda.amps_.data(), n_, threads_,
                    streaming_stores_pay(streaming_, (std::size_t{4} << n_) * sizeof(R)), out);
  }
  return expval;
}

#define QMLSIM_INSTANTIATE(R)                                                                    \
  template void StateVector<R>::adjoint_sweep(StateVector&, const std::vector<BoundGate>&,       \
                                              const std::vector<Measure>&, std::vector<Matrix>&, \
                                              bool, const std::vector<Side>&);                   \
  template double StateVector<R>::adjoint_sweep_from(                                            \
      const PauliSum&, StateVector&, const std::vector<BoundGate>&, const std::vector<Measure>&, \
      std::vector<Matrix>&);                                                                     \
  template double StateVector<R>::sweep(StateVector&, const std::vector<BoundGate>&,             \
                                        const std::vector<Measure>&, std::vector<Matrix>&, bool, \
                                        const PauliSum*, const std::vector<Side>&);
QMLSIM_INSTANTIATE(float)
QMLSIM_INSTANTIATE(double)
#undef QMLSIM_INSTANTIATE

}  // namespace qmlsim::cpu
