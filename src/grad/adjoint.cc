#include "grad/adjoint.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <string>
#include <type_traits>

#include "backends/cpu/statevector.h"
#include "backends/cuda/small_batch.h"
#include "backends/cuda/statevector.h"
#include "core/error.h"
#include "grad/adjoint_parts.h"
#include "grad/density_matrix.h"
#include "grad/engine.h"
#include "grad/tape.h"
#include "grad/trajectories.h"
#include "passes/fusion.h"

namespace qmlsim {

namespace {

// Positions of `wires` (ascending) among the sorted `qubits`.
std::vector<int> positions(const std::vector<int>& wires, const std::vector<int>& qubits) {
  std::vector<int> out;
  for (int w : wires)
    out.push_back(
        static_cast<int>(std::lower_bound(qubits.begin(), qubits.end(), w) - qubits.begin()));
  return out;
}

bool one_qubit(const BoundGate& g) { return g.targets.size() == 1 && g.controls.empty(); }

bool real_matrix(const BoundGate& g) {
  return std::all_of(g.matrix.begin(), g.matrix.end(), [](const cplx& x) { return x.imag() == 0; });
}

// A trainable one-qubit diagonal step (RZ, PhaseShift): gather_diagonal_steps moves these.
bool phase_step(const TapeStep& t) {
  return one_qubit(t.gate) && t.gate.diagonal && !t.derivatives.empty();
}

// The tape's steps in an equivalent order: each one-qubit step moves back past
// the steps on other qubits (they commute) to meet the step before it on its
// qubit, when that one is a one-qubit step too, so the two join one block (one
// measurement and one undo for both): an encoding layer and the Rot layer after
// it, say. Other steps keep their places. The search looks back `window` steps.
// keep_phases_apart: a step with a real matrix (RY) does not move to meet a
// trainable one-qubit diagonal step (RZ), which gather_diagonal_steps may take
// away with the rest of its layer.
std::vector<const TapeStep*> meet_one_qubit_steps(const std::vector<TapeStep>& tape,
                                                  bool keep_phases_apart) {
  constexpr std::size_t window = 256;
  std::vector<const TapeStep*> out;
  out.reserve(tape.size());
  for (const TapeStep& t : tape) {
    std::size_t at = out.size();
    if (one_qubit(t.gate)) {
      const index_t m = t.gate.wire_mask();
      std::size_t j = out.size();
      while (j > 0 && out.size() - j < window && (out[j - 1]->gate.wire_mask() & m) == 0) --j;
      const bool apart =
          keep_phases_apart && j > 0 && phase_step(*out[j - 1]) && real_matrix(t.gate);
      if (j > 0 && (out[j - 1]->gate.wire_mask() & m) != 0 && one_qubit(out[j - 1]->gate) && !apart)
        at = j;
    }
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(at), &t);
  }
  return out;
}

// The fewest diagonal steps a gathering point takes (gather_diagonal_steps).
constexpr std::size_t kMinGathered = 3;

// The steps in an equivalent order where trainable one-qubit diagonal steps
// (RZ, PhaseShift) leave the dense one-qubit blocks they would join for a
// gathering of their own: an RY RZ layer becomes the RYs alone, whose blocks
// are real (half the products of a complex one in the sweep's undo), and the
// RZs together, which the CPU sweep's diagonal run kernel measures and undoes
// in one pass, a few products per amplitude for the whole layer. A diagonal
// step may sit anywhere between the non-diagonal steps on its qubit before and
// after it (it commutes with everything else there); points that take at
// least kMinGathered such windows are picked greedily (the earliest window
// end first), and those steps move there. A step stays where its block of
// one-qubit steps keeps another complex step (RX RZ): there its phase is free.
// gathered[i]: out[i] is a moved step (each then measured alone: one-qubit
// phases cost the run kernel least; wider blocks of them would span chunk and
// outside qubits).
std::vector<const TapeStep*> gather_diagonal_steps(const std::vector<const TapeStep*>& order,
                                                   std::vector<char>& gathered) {
  const int size = static_cast<int>(order.size());
  auto step = [&](int i) -> const TapeStep& { return *order[static_cast<std::size_t>(i)]; };
  auto candidate = [&](int i) { return phase_step(step(i)); };
  int qubits = 0;
  for (const TapeStep* t : order)
    qubits = std::max(qubits, static_cast<int>(std::bit_width(t->gate.wire_mask())));
  // Runs of one-qubit steps on a qubit between the steps on more qubits: the
  // blocks segment() would form; complex[r]: run r keeps a complex step.
  std::vector<int> run_of(static_cast<std::size_t>(size), -1);
  std::vector<char> complex;
  std::vector<int> current(static_cast<std::size_t>(qubits), -1);
  for (int i = 0; i < size; ++i) {
    const BoundGate& g = step(i).gate;
    if (!one_qubit(g)) {
      for (int w : g.targets) current[static_cast<std::size_t>(w)] = -1;
      for (int w : g.controls) current[static_cast<std::size_t>(w)] = -1;
      continue;
    }
    int& r = current[static_cast<std::size_t>(g.targets[0])];
    if (r < 0) {
      r = static_cast<int>(complex.size());
      complex.push_back(0);
    }
    run_of[static_cast<std::size_t>(i)] = r;
    if (!candidate(i) && !real_matrix(g)) complex[static_cast<std::size_t>(r)] = 1;
  }
  struct Window {
    int step, lo, hi;  // may be placed before any element p, lo <= p <= hi
  };
  std::vector<Window> windows;
  std::vector<int> last(static_cast<std::size_t>(qubits), -1);  // last non-diagonal step on q
  std::vector<std::vector<int>> waiting(static_cast<std::size_t>(qubits));  // windows not closed
  auto close = [&](int q, int hi) {
    for (int i : waiting[static_cast<std::size_t>(q)])
      windows.push_back({i, last[static_cast<std::size_t>(q)] + 1, hi});
    waiting[static_cast<std::size_t>(q)].clear();
  };
  for (int i = 0; i < size; ++i) {
    const BoundGate& g = step(i).gate;
    if (candidate(i)) {
      if (!complex[static_cast<std::size_t>(run_of[static_cast<std::size_t>(i)])])
        waiting[static_cast<std::size_t>(g.targets[0])].push_back(i);
      continue;
    }
    if (g.diagonal) continue;  // commutes with the diagonal steps waiting
    for (const std::vector<int>* wires : {&g.targets, &g.controls})
      for (int w : *wires) {
        close(w, i);
        last[static_cast<std::size_t>(w)] = i;
      }
  }
  for (int q = 0; q < qubits; ++q) close(q, size);
  // Greedy stabbing: windows by end; a window opens when the point reaches its
  // start. At the earliest end among the open ones, every open window holds
  // the point (an open one ending earlier would have been taken first).
  std::vector<int> by_hi(windows.size()), by_lo(windows.size());
  for (std::size_t w = 0; w < windows.size(); ++w) by_hi[w] = by_lo[w] = static_cast<int>(w);
  std::sort(by_hi.begin(), by_hi.end(), [&](int a, int b) {
    return windows[a].hi != windows[b].hi ? windows[a].hi < windows[b].hi : a < b;
  });
  std::sort(by_lo.begin(), by_lo.end(),
            [&](int a, int b) { return windows[a].lo < windows[b].lo; });
  std::vector<int> point(static_cast<std::size_t>(size), -1);  // a moved step's new place
  std::vector<char> done(windows.size(), 0);
  std::vector<int> opened;  // open windows, done ones among them skipped
  std::size_t next_lo = 0, open_count = 0;
  for (int a : by_hi) {
    if (done[static_cast<std::size_t>(a)]) continue;
    const int p = windows[static_cast<std::size_t>(a)].hi;
    for (; next_lo < by_lo.size() && windows[static_cast<std::size_t>(by_lo[next_lo])].lo <= p;
         ++next_lo) {
      opened.push_back(by_lo[next_lo]);
      ++open_count;
    }
    if (open_count < kMinGathered) {
      done[static_cast<std::size_t>(a)] = 1;  // stays where it is
      --open_count;
      continue;
    }
    for (int w : opened)
      if (!done[static_cast<std::size_t>(w)]) {
        done[static_cast<std::size_t>(w)] = 1;
        point[static_cast<std::size_t>(windows[static_cast<std::size_t>(w)].step)] = p;
      }
    opened.clear();
    open_count = 0;
  }
  std::vector<std::vector<const TapeStep*>> at(static_cast<std::size_t>(size) + 1);
  for (int i = 0; i < size; ++i)
    if (point[static_cast<std::size_t>(i)] >= 0)
      at[static_cast<std::size_t>(point[static_cast<std::size_t>(i)])].push_back(
          order[static_cast<std::size_t>(i)]);
  std::vector<const TapeStep*> out;
  out.reserve(order.size());
  gathered.clear();
  for (int p = 0; p <= size; ++p) {
    for (const TapeStep* t : at[static_cast<std::size_t>(p)]) {
      out.push_back(t);
      gathered.push_back(1);
    }
    if (p < size && point[static_cast<std::size_t>(p)] < 0) {
      out.push_back(order[static_cast<std::size_t>(p)]);
      gathered.push_back(0);
    }
  }
  return out;
}

}  // namespace

Segmented segment(const std::vector<TapeStep>& tape, int fusion, int diagonal_qubits,
                  bool gather_diagonals) {
  Segmented s;
  // Blocks of consecutive steps on one qubit, diagonal ones on up to
  // `diagonal_qubits` qubits, or dense ones on the pair of a trainable dense
  // two-qubit step: one cross matrix and one undo per vector serve all their
  // trainable steps. Measured
  // (`qmlsim bench --gradient`, 20 qubits, 2 threads): pair blocks make the
  // QCNN-like family 1.6x faster (9.1 -> 5.7 forwards); built around any
  // two-qubit gate or from one-qubit steps on two qubits they made the others
  // 1.2-2.8x slower (the one-qubit blocks' fused measure-and-undo kernel is
  // lost). Diagonal blocks grow to `diagonal_qubits`: the CPU's measures one of
  // up to 8 qubits in one pass and places it in any chunk (QAOA-like, 24
  // qubits: 2.48 forwards with 4, 2.35 with 6, against 3.09 with 2).
  // Blocks without trainable steps join the run of fixed gates, fused cost-aware
  // as in the forward pass. fusion 0: every step alone.
  std::vector<BoundGate> fixed;
  auto flush_fixed = [&] {
    if (!fixed.empty()) fixed = fuse_up_to(fixed, fusion);
    for (BoundGate& g : fixed) {
      s.gates.push_back(std::move(g));
      s.steps.emplace_back();
    }
    fixed.clear();
  };
  std::vector<const TapeStep*> block;
  std::vector<int> qubits;
  bool all_diagonal = true;
  bool pair_block = false;  // the block holds a two-qubit step on its two qubits
  auto flush = [&] {
    if (block.empty()) return;
    const bool trainable = std::any_of(block.begin(), block.end(),
                                       [](const TapeStep* t) { return !t->derivatives.empty(); });
    if (!trainable) {
      for (const TapeStep* t : block) fixed.push_back(t->gate);
    } else if (block.size() == 1) {
      flush_fixed();
      s.gates.push_back(block[0]->gate);
      s.steps.push_back({{block[0], {}, {}}});
    } else {
      flush_fixed();
      const int k = static_cast<int>(qubits.size());
      const std::size_t dim = std::size_t{1} << k;
      // The block's matrix G_{m-1} ... G_0, last gate first: acc <- acc G_i,
      // G_i^T on a dense acc's column bits (apply_local). Every step is kept
      // with its positions in the block: accumulate walks them back.
      std::vector<std::vector<int>> targets(block.size()), controls(block.size());
      Matrix acc(all_diagonal ? dim : dim * dim, cplx{0});  // the identity
      for (std::size_t r = 0; r < dim; ++r) acc[all_diagonal ? r : r * dim + r] = 1;
      for (std::size_t i = block.size(); i-- > 0;) {
        const BoundGate& gi = block[i]->gate;
        targets[i] = positions(gi.targets, qubits);
        controls[i] = positions(gi.controls, qubits);
        index_t control_bits = 0;
        for (int c : controls[i]) control_bits |= index_t{1} << c;
        apply_local(gi, targets[i].data(), control_bits, acc.data(), all_diagonal ? k : 2 * k,
                    /*transpose=*/true);
      }
      BoundGate g;
      g.targets = qubits;
      g.diagonal = all_diagonal;
      g.matrix = std::move(acc);
      std::vector<BlockStep> steps;
      for (std::size_t i = 0; i < block.size(); ++i)
        steps.push_back({block[i], std::move(targets[i]), std::move(controls[i])});
      s.gates.push_back(std::move(g));
      s.steps.push_back(std::move(steps));
    }
    block.clear();
    qubits.clear();
    all_diagonal = true;
    pair_block = false;
  };
  std::vector<const TapeStep*> order;
  if (fusion > 0) order = meet_one_qubit_steps(tape, gather_diagonals);
  std::vector<char> gathered(tape.size(), 0);
  if (fusion > 0 && gather_diagonals) order = gather_diagonal_steps(order, gathered);
  for (std::size_t i = 0; i < tape.size(); ++i) {
    const TapeStep& t = fusion > 0 ? *order[i] : tape[i];
    std::vector<int> wires = t.gate.targets;
    wires.insert(wires.end(), t.gate.controls.begin(), t.gate.controls.end());
    std::sort(wires.begin(), wires.end());
    std::vector<int> joined = qubits;
    joined.insert(joined.end(), wires.begin(), wires.end());
    std::sort(joined.begin(), joined.end());
    joined.erase(std::unique(joined.begin(), joined.end()), joined.end());
    const bool diagonal = all_diagonal && t.gate.diagonal;
    // A dense block grows to two qubits only around a trainable dense two-qubit
    // step (a QCNN's two-qubit unitaries): never by joining one-qubit steps on
    // different qubits, nor around a fixed CNOT or a diagonal ZZ, where the
    // one-qubit blocks keep their fused measure-and-undo kernel (measured
    // slower otherwise: `qmlsim bench --gradient`, docs/performance.md).
    const bool pair_step = wires.size() == 2 && !t.gate.diagonal && !t.derivatives.empty();
    const bool pair = fusion >= 2 && ((pair_block && joined == qubits) || pair_step);
    const int limit = fusion <= 0 ? 0 : diagonal ? diagonal_qubits : pair ? 2 : 1;
    if (!block.empty() && (static_cast<int>(joined.size()) > limit || gathered[i])) {
      flush();
      joined = wires;
    }
    block.push_back(&t);
    pair_block = (pair_block && joined == qubits) || pair_step;
    qubits = std::move(joined);
    all_diagonal = all_diagonal && t.gate.diagonal;
    if (gathered[i]) flush();  // a gathered step is a block of its own
  }
  flush();
  flush_fixed();
  return s;
}

std::vector<BoundGate> forward_gates(const std::vector<TapeStep>& tape, int fusion) {
  std::vector<BoundGate> gates;
  gates.reserve(tape.size());
  for (const TapeStep& t : tape) gates.push_back(t.gate);
  return fuse_up_to(gates, fusion);
}

PauliSum weighted_sum(const std::vector<PauliSum>& obs, std::span<const double> w) {
  PauliSum h;
  for (std::size_t k = 0; k < obs.size(); ++k)
    for (const PauliTerm& t : obs[k].terms)
      if (w[k] != 0) h.add(w[k] * t.coeff, t.xmask, t.zmask);
  return h;
}

namespace {

// Whether every derivative of a dense step has dU U^dagger real (RY's; then
// its gradient reads only Re of the sweep's sums: add_step_gradient).
bool real_derivatives(const TapeStep& t) {
  const BoundGate& u = t.gate;
  if (u.diagonal) return false;
  const std::size_t dim = u.dim();
  for (const TapeDerivative& d : t.derivatives)
    for (std::size_t a = 0; a < dim; ++a)
      for (std::size_t b = 0; b < dim; ++b) {
        cplx g = 0;
        for (std::size_t c = 0; c < dim; ++c)
          g += d.d[a * dim + c] * std::conj(u.matrix[b * dim + c]);
        if (g.imag() != 0) return false;
      }
  return true;
}

}  // namespace

void inverse_gates(const Segmented& s, std::vector<BoundGate>& inverse,
                   std::vector<char>& measure) {
  for (std::size_t i = 0; i < s.gates.size(); ++i) {
    inverse.push_back(adjoint(s.gates[i]));
    const std::vector<BlockStep>& steps = s.steps[i];
    const bool alone = steps.size() == 1 && steps[0].targets.empty();
    measure.push_back(steps.empty()                               ? 0
                      : alone && real_derivatives(*steps[0].step) ? kMeasureRealPart
                                                                  : 1);
  }
}

namespace {

// cur <- G^T cur conj(G) for the step's gate G (at its positions in a dense
// block of k qubits; cur is dim x dim, row-major, so a vector over 2k bits with
// the row in the high k): G^T on the row bits, then conj(conj(cur) G), G^T on
// the column bits of the conjugate.
void conjugate_by(const BlockStep& t, Matrix& cur, int k) {
  const BoundGate& g = t.step->gate;
  std::array<int, 64> rows;
  index_t row_controls = 0, col_controls = 0;
  for (std::size_t j = 0; j < t.targets.size(); ++j) rows[j] = t.targets[j] + k;
  for (int c : t.controls) {
    row_controls |= index_t{1} << (c + k);
    col_controls |= index_t{1} << c;
  }
  apply_local(g, rows.data(), row_controls, cur.data(), 2 * k, /*transpose=*/true);
  for (cplx& x : cur) x = std::conj(x);
  apply_local(g, t.targets.data(), col_controls, cur.data(), 2 * k, /*transpose=*/true);
  for (cplx& x : cur) x = std::conj(x);
}

// The step's cross matrix over its own targets (controls 1) from its block's at
// the step (`cur`), summed over the block's other qubits; a diagonal block's
// diagonal only, which its gates leave as it is (|G_aa| = 1).
Matrix restrict_to_step(const BlockStep& t, const Matrix& cur, std::size_t dim, bool diag) {
  const std::size_t sdim = std::size_t{1} << t.targets.size();
  std::size_t control_bits = 0, fixed = 0;
  for (int c : t.controls) control_bits |= std::size_t{1} << c;
  for (int q : t.targets) fixed |= std::size_t{1} << q;
  const std::size_t free_bits = (dim - 1) & ~control_bits & ~fixed;
  Matrix out(sdim * sdim, cplx{0});
  auto spread = [&](std::size_t a) {  // step index a -> block bits
    std::size_t x = control_bits;
    for (std::size_t j = 0; j < t.targets.size(); ++j)
      if (a >> j & 1) x |= std::size_t{1} << t.targets[j];
    return x;
  };
  for (std::size_t r = free_bits;; r = (r - 1) & free_bits) {  // every subset of the free bits
    for (std::size_t a = 0; a < sdim; ++a) {
      const std::size_t x = spread(a) | r;
      if (diag) {
        out[a * sdim + a] += cur[x * dim + x];
        continue;
      }
      for (std::size_t b = 0; b < sdim; ++b) out[a * sdim + b] += cur[x * dim + (spread(b) | r)];
    }
    if (r == 0) break;
  }
  return out;
}

// dL/da += 2 Re sum_ab (dU/da U^dagger)_ab m_ab for each angle of step t, m its
// cross matrix over its own targets (for a diagonal gate its diagonal entries
// alone, as the CPU sweep forms them, or dense).
void add_step_gradient(const TapeStep& t, const Matrix& mi, std::vector<double>& grad) {
  const BoundGate& u = t.gate;
  const std::size_t dim = u.dim();
  for (const TapeDerivative& d : t.derivatives) {
    cplx acc = 0;
    if (u.diagonal) {  // dU is diagonal too, held as its diagonal (MultiRZ can be wide: O(dim))
      const std::size_t stride = mi.size() == dim ? 1 : dim + 1;
      for (std::size_t a = 0; a < dim; ++a) acc += d.d[a] * std::conj(u.matrix[a]) * mi[a * stride];
    } else {
      const cplx* du = d.d.data();
      for (std::size_t a = 0; a < dim; ++a, du += dim) {
        const cplx* ub = u.matrix.data();
        for (std::size_t b = 0; b < dim; ++b, ub += dim) {
          cplx g = 0;  // (dU U^dagger)_ab
          for (std::size_t c = 0; c < dim; ++c) g += du[c] * std::conj(ub[c]);
          acc += g * mi[a * dim + b];
        }
      }
    }
    grad[static_cast<std::size_t>(d.slot)] += 2.0 * acc.real() * d.scale;
  }
}

}  // namespace

// A block's steps read its cross matrix m (after the block) from the last step
// back: at step j the states are W^dagger times those after the block, W the
// product of the gates after j, so m becomes W^T m conj(W), one gate at a time.
void accumulate(const Segmented& s, const std::vector<Matrix>& m, std::vector<double>& grad) {
  Matrix cur;  // a block's cross matrix at the step being read
  for (std::size_t i = 0; i < s.gates.size(); ++i) {
    const std::vector<BlockStep>& steps = s.steps[i];
    if (steps.empty()) continue;
    if (steps.size() == 1 && steps[0].targets.empty()) {  // a step alone: the sweep's own
      add_step_gradient(*steps[0].step, m[i], grad);
      continue;
    }
    const BoundGate& block = s.gates[i];
    cur = m[i];
    if (block.diagonal && cur.size() == block.dim() && block.dim() > 1) {  // diagonal alone
      cur.assign(block.dim() * block.dim(), cplx{0});
      for (std::size_t a = 0; a < block.dim(); ++a) cur[a * block.dim() + a] = m[i][a];
    }
    for (std::size_t j = steps.size(); j-- > 0;) {
      if (j + 1 < steps.size() && !block.diagonal)
        conjugate_by(steps[j + 1], cur, block.num_targets());
      if (!steps[j].step->derivatives.empty())
        add_step_gradient(*steps[j].step,
                          restrict_to_step(steps[j], cur, block.dim(), block.diagonal), grad);
    }
  }
}

namespace {

template <class SV>
using Traits = detail::BackendTraits<SV>;

// The sweep from phi (consumed) and lambda (at the end of the circuit). Adds
// to grad. With h (backends with kSweepFromObservable), lambda = H phi is formed
// inside the sweep's first pass (adjoint_sweep_from) and <phi|H|phi> returned.
template <class SV>
double sweep(const Segmented& s, SV& phi, SV& lambda, std::vector<double>& grad,
             const PauliSum* h = nullptr) {
  std::vector<BoundGate> inverse;
  std::vector<char> measure;
  inverse_gates(s, inverse, measure);
  std::vector<Matrix> m;
  double e = 0;
  if constexpr (Traits<SV>::kSweepFromObservable) {
    if (h)
      e = phi.adjoint_sweep_from(*h, lambda, inverse, measure, m);
    else
      phi.adjoint_sweep(lambda, inverse, measure, m);
  } else {
    assert(!h);
    phi.adjoint_sweep(lambda, inverse, measure, m);
  }
  accumulate(s, m, grad);
  return e;
}

// One backward pass from the final state phi (consumed): lambda = H phi, then
// the sweep (inside its first pass where the backend can). Adds to grad.
template <class SV>
void backward(const Segmented& s, SV& phi, SV& lambda, const PauliSum& h,
              std::vector<double>& grad) {
  if constexpr (Traits<SV>::kSweepFromObservable) {
    sweep(s, phi, lambda, grad, &h);
  } else {
    lambda.assign_applied(h, phi);
    sweep(s, phi, lambda, grad);
  }
}

void check_weights(const std::vector<double>& w, std::size_t observables) {
  if (w.size() != observables)
    throw Error("adjoint_vjp: " + std::to_string(w.size()) + " weights for " +
                std::to_string(observables) + " observables");
}

// The options for one backward pass over n qubits: one thread where a second
// would slow the sweep down (detail::serial_sweep).
template <class SV>
EngineOptions sweep_options(int n, EngineOptions o) {
  if (Traits<SV>::serial_sweep(n, o)) o.threads = 1;
  return o;
}

// fixed_weights: the weights when they do not depend on the expectation
// values (the caller gave numbers, not a function of <H>), else null.
template <class SV>
AdjointResult vjp_on(const Circuit& c, std::span<const double> theta,
                     const std::vector<PauliSum>& observables, const WeightsFn& weights,
                     const EngineOptions& given,
                     const std::vector<double>* fixed_weights = nullptr) {
  const EngineOptions options = sweep_options<SV>(c.num_qubits(), given);
  const std::vector<TapeStep> tape = make_tape(c, theta);
  const Segmented s = segment(tape, options.fusion, Traits<SV>::kDiagonalBlockQubits,
                              Traits<SV>::gather_phases(c.num_qubits(), options));
  SV phi = detail::forward_state<SV>(c.num_qubits(), options, forward_gates(tape, options.fusion));
  AdjointResult out;
  out.gradient.assign(theta.size(), 0.0);
  SV lambda = detail::make_state<SV>(c.num_qubits(), options);
  if constexpr (Traits<SV>::kSweepFromObservable) {
    if (observables.size() == 1) {
      // One observable: the gradient is linear in lambda, so lambda = H phi
      // and the weight scales it afterwards. With the weight known up front
      // (and not 0), lambda and <H> come from the sweep's first pass;
      // otherwise from a pass of their own, so that a weight of 0 (known only
      // after <H>: a margin loss on a row ranked with margin) skips the sweep.
      double w0 = 0;
      if (fixed_weights && (*fixed_weights)[0] != 0) {
        out.expvals = {sweep(s, phi, lambda, out.gradient, &observables[0])};
        w0 = (*fixed_weights)[0];
      } else {
        out.expvals = {lambda.assign_applied(observables[0], phi)};
        const std::vector<double> w = weights(out.expvals);
        check_weights(w, 1);
        if (w[0] == 0) return out;
        sweep(s, phi, lambda, out.gradient);
        w0 = w[0];
      }
      for (double& g : out.gradient) g *= w0;
      return out;
    }
  }
  for (const PauliSum& h : observables) out.expvals.push_back(phi.expval(h));
  const std::vector<double> w = weights(out.expvals);
  check_weights(w, observables.size());
  backward(s, phi, lambda, weighted_sum(observables, w), out.gradient);
  return out;
}

template <class SV>
std::vector<double> state_vjp_on(const Circuit& c, std::span<const double> theta,
                                 std::span<const cplx> cotangent, const EngineOptions& given) {
  const EngineOptions options = sweep_options<SV>(c.num_qubits(), given);
  const std::vector<TapeStep> tape = make_tape(c, theta);
  const Segmented s = segment(tape, options.fusion, Traits<SV>::kDiagonalBlockQubits,
                              Traits<SV>::gather_phases(c.num_qubits(), options));
  SV phi = detail::forward_state<SV>(c.num_qubits(), options, forward_gates(tape, options.fusion));
  SV lambda = detail::make_state<SV>(c.num_qubits(), options);
  std::vector<cplx> start(cotangent.size());
  for (std::size_t i = 0; i < start.size(); ++i) start[i] = 0.5 * std::conj(cotangent[i]);
  lambda.set_amplitudes(start);
  std::vector<double> grad(theta.size(), 0.0);
  sweep(s, phi, lambda, grad);  // 2 Re <lambda| dpsi/dtheta>
  return grad;
}

template <class SV>
std::vector<std::vector<double>> jacobian_on(const Circuit& c, std::span<const double> theta,
                                             const std::vector<PauliSum>& observables,
                                             const EngineOptions& options,
                                             std::vector<double>* expvals) {
  const std::vector<TapeStep> tape = make_tape(c, theta);
  // Small states on the CPU (detail::sweeps_one_per_thread): one observable's
  // backward pass per thread (each with its own two states), as batch items
  // run; the rows are the same.
  const bool one_per_thread =
      observables.size() > 1 &&
      Traits<SV>::sweeps_one_per_thread(observables.size(), c.num_qubits(), options);
  EngineOptions one = sweep_options<SV>(c.num_qubits(), options);  // as the sweeps run
  if (one_per_thread) one.threads = 1;
  const Segmented s = segment(tape, options.fusion, Traits<SV>::kDiagonalBlockQubits,
                              Traits<SV>::gather_phases(c.num_qubits(), one));
  SV final_state =
      detail::forward_state<SV>(c.num_qubits(), options, forward_gates(tape, options.fusion));
  if (expvals) {
    expvals->clear();
    for (const PauliSum& h : observables) expvals->push_back(final_state.expval(h));
  }
  std::vector<std::vector<double>> jac;
  if (one_per_thread) {
    jac.assign(observables.size(), std::vector<double>(theta.size(), 0.0));
    detail::run_items(observables.size(), true, options,
                      [&](std::size_t k, const EngineOptions& inner) {
                        SV phi = detail::make_state<SV>(c.num_qubits(), inner);
                        SV lambda = detail::make_state<SV>(c.num_qubits(), inner);
                        phi.copy_from(final_state);
                        backward(s, phi, lambda, observables[k], jac[k]);
                      });
    return jac;
  }
  SV phi = detail::make_state<SV>(c.num_qubits(), one);
  SV lambda = detail::make_state<SV>(c.num_qubits(), one);
  for (const PauliSum& h : observables) {
    phi.copy_from(final_state);
    std::vector<double> row(theta.size(), 0.0);
    backward(s, phi, lambda, h, row);
    jac.push_back(std::move(row));
  }
  return jac;
}

}  // namespace

bool adjoint_sweeps_one_per_thread(std::size_t count, int n, Precision precision,
                                   const EngineOptions& options) {
  return precision == Precision::c64 ? detail::sweeps_one_per_thread<float>(count, n, options)
                                     : detail::sweeps_one_per_thread<double>(count, n, options);
}

namespace {

// Whether c runs noisy (a density matrix or trajectories), and its VJP then.
bool runs_noisy(const Circuit& c, const EngineOptions& options) {
  return choose_method(c, options).method != Method::statevector;
}

template <class R>
AdjointResult noisy_vjp(const Circuit& c, std::span<const double> theta,
                        const std::vector<PauliSum>& observables, std::span<const double> weights,
                        const EngineOptions& options) {
  return choose_method(c, options).trajectories()
             ? trajectories_vjp<R>(c, theta, observables, weights, options)
             : density_matrix_vjp<R>(c, theta, observables, weights, options);
}

}  // namespace

template <class R>
AdjointResult adjoint_vjp(const Circuit& c, std::span<const double> theta,
                          const std::vector<PauliSum>& observables, std::span<const double> weights,
                          const EngineOptions& options) {
  assert(weights.size() == observables.size());
  if (runs_noisy(c, options)) return noisy_vjp<R>(c, theta, observables, weights, options);
  const std::vector<double> w(weights.begin(), weights.end());
  const WeightsFn fn = [&w](std::span<const double>) { return w; };
  if (options.backend == Backend::cuda)
    return vjp_on<cuda::StateVector<R>>(c, theta, observables, fn, detail::for_backend(options));
  return vjp_on<cpu::StateVector<R>>(c, theta, observables, fn, options, &w);
}

template <class R>
AdjointResult adjoint_vjp(const Circuit& c, std::span<const double> theta,
                          const std::vector<PauliSum>& observables, const WeightsFn& weights,
                          const EngineOptions& options) {
  const MethodChoice method = choose_method(c, options);
  if (method.density_matrix())  // the weights from its own forward pass
    return density_matrix_vjp<R>(c, theta, observables, weights, options);
  if (method.trajectories()) {  // the readouts first: a forward pass more
    SimulateRequest req;
    req.observables = observables;
    const std::vector<double> w = weights(simulate<R>(c, theta, req, options).expvals);
    if (w.size() != observables.size())
      throw Error("adjoint_vjp: " + std::to_string(w.size()) + " weights for " +
                  std::to_string(observables.size()) + " observables");
    return trajectories_vjp<R>(c, theta, observables, w, options);
  }
  if (options.backend == Backend::cuda)
    return vjp_on<cuda::StateVector<R>>(c, theta, observables, weights,
                                        detail::for_backend(options));
  return vjp_on<cpu::StateVector<R>>(c, theta, observables, weights, options);
}

template <class R>
std::vector<double> state_vjp(const Circuit& c, std::span<const double> theta,
                              std::span<const cplx> cotangent, const EngineOptions& options) {
  const MethodChoice method = choose_method(c, options);
  if (method.trajectories())
    throw Error(
        "the VJP of the final state: a noisy circuit run by trajectories has no single final "
        "state (the density-matrix method has)");
  if (method.density_matrix()) return density_matrix_state_vjp<R>(c, theta, cotangent, options);
  if (cotangent.size() != index_t{1} << c.num_qubits())
    throw Error("state VJP: a cotangent of " + std::to_string(cotangent.size()) + " entries for " +
                std::to_string(c.num_qubits()) + " qubit(s)");
  if (options.backend == Backend::cuda)
    return state_vjp_on<cuda::StateVector<R>>(c, theta, cotangent, detail::for_backend(options));
  return state_vjp_on<cpu::StateVector<R>>(c, theta, cotangent, options);
}

template <class R>
std::vector<std::vector<double>> adjoint_jacobian(const Circuit& c, std::span<const double> theta,
                                                  const std::vector<PauliSum>& observables,
                                                  const EngineOptions& options,
                                                  std::vector<double>* expvals) {
  if (runs_noisy(c, options)) {
    if (choose_method(c, options).density_matrix())  // one forward pass
      return density_matrix_jacobian<R>(c, theta, observables, options, expvals);
    // trajectories: a run per observable
    std::vector<std::vector<double>> rows;
    std::vector<double> w(observables.size(), 0.0);
    for (std::size_t k = 0; k < observables.size(); ++k) {
      w[k] = 1;
      AdjointResult r = noisy_vjp<R>(c, theta, observables, w, options);
      w[k] = 0;
      if (expvals) *expvals = r.expvals;
      rows.push_back(std::move(r.gradient));
    }
    return rows;
  }
  if (options.backend == Backend::cuda)
    return jacobian_on<cuda::StateVector<R>>(c, theta, observables, detail::for_backend(options),
                                             expvals);
  return jacobian_on<cpu::StateVector<R>>(c, theta, observables, options, expvals);
}

template <class R>
std::vector<AdjointResult> adjoint_vjp_batch(const Circuit& c,
                                             const std::vector<std::vector<double>>& thetas,
                                             const std::vector<PauliSum>& observables,
                                             const std::vector<std::vector<double>>& weights,
                                             const EngineOptions& options) {
  assert(thetas.size() == weights.size());
  std::vector<AdjointResult> out(thetas.size());
  detail::for_each_sweep<R>(thetas.size(), item_size(c, 2, kPrecisionOf<R>, options), options,
                            [&](std::size_t i, const EngineOptions& inner) {
                              out[i] = adjoint_vjp<R>(c, thetas[i], observables, weights[i], inner);
                            });
  return out;
}

namespace {

// Every item in one small batch on the GPU (cuda/small_batch.h).
template <class R>
std::vector<AdjointResult> vjp_small_batch(int n, const std::vector<const Circuit*>& circuits,
                                           const std::vector<std::vector<double>>& thetas,
                                           const std::vector<PauliSum>& observables,
                                           const std::vector<WeightsFn>& weights,
                                           const EngineOptions& options) {
  const std::size_t items = circuits.size();
  std::vector<std::vector<TapeStep>> tapes(items);  // segmented[i] points into tapes[i]
  std::vector<Segmented> segmented;
  std::vector<std::vector<BoundGate>> forward(items), inverse(items);
  std::vector<std::vector<char>> measure(items);
  for (std::size_t i = 0; i < items; ++i) {
    tapes[i] = make_tape(*circuits[i], thetas[i]);
    segmented.push_back(segment(tapes[i], options.fusion));
    forward[i] = forward_gates(tapes[i], options.fusion);
    inverse_gates(segmented.back(), inverse[i], measure[i]);
  }
  cuda::SmallBatch<R> batch(n, forward);
  std::vector<AdjointResult> out(items);
  const std::vector<std::vector<double>> e = batch.run(observables);
  std::vector<PauliSum> h;
  for (std::size_t i = 0; i < items; ++i) {
    out[i].expvals = e[i];
    const std::vector<double> w = weights[i](out[i].expvals);
    if (w.size() != observables.size())
      throw Error("adjoint_vjp_many: " + std::to_string(w.size()) + " weights for " +
                  std::to_string(observables.size()) + " observables");
    h.push_back(weighted_sum(observables, w));
  }
  std::vector<std::vector<Matrix>> m;
  batch.adjoint_sweep(h, inverse, measure, m);
  for (std::size_t i = 0; i < items; ++i) {
    out[i].gradient.assign(thetas[i].size(), 0.0);
    accumulate(segmented[i], m[i], out[i].gradient);
  }
  return out;
}

}  // namespace

template <class R>
std::vector<AdjointResult> adjoint_vjp_many(const std::vector<const Circuit*>& circuits,
                                            const std::vector<std::vector<double>>& thetas,
                                            const std::vector<PauliSum>& observables,
                                            const std::vector<WeightsFn>& weights,
                                            const EngineOptions& options) {
  assert(circuits.size() == thetas.size() && circuits.size() == weights.size());
  if (circuits.empty()) return {};
  const int n = detail::common_qubits(circuits, "adjoint_vjp_many");
  const Precision p = kPrecisionOf<R>;
  const bool noisy = std::any_of(circuits.begin(), circuits.end(),
                                 [&](const Circuit* c) { return runs_noisy(*c, options); });
  if (options.backend == Backend::cuda && options.initial_state.empty() && !noisy &&
      cuda::small_batch_fits(n, p, observables.size()))
    return vjp_small_batch<R>(n, circuits, thetas, observables, weights,
                              detail::for_backend(options));
  std::vector<AdjointResult> out(circuits.size());
  detail::for_each_sweep<R>(circuits.size(), largest_item(circuits, 2, p, options), options,
                            [&](std::size_t i, const EngineOptions& inner) {
                              out[i] = adjoint_vjp<R>(*circuits[i], thetas[i], observables,
                                                      weights[i], inner);
                            });
  return out;
}

#define QMLSIM_INSTANTIATE(R)                                                                      \
  template AdjointResult adjoint_vjp<R>(const Circuit&, std::span<const double>,                   \
                                        const std::vector<PauliSum>&, std::span<const double>,     \
                                        const EngineOptions&);                                     \
  template AdjointResult adjoint_vjp<R>(const Circuit&, std::span<const double>,                   \
                                        const std::vector<PauliSum>&, const WeightsFn&,            \
                                        const EngineOptions&);                                     \
  template std::vector<double> state_vjp<R>(const Circuit&, std::span<const double>,               \
                                            std::span<const cplx>, const EngineOptions&);          \
  template std::vector<std::vector<double>> adjoint_jacobian<R>(                                   \
      const Circuit&, std::span<const double>, const std::vector<PauliSum>&, const EngineOptions&, \
      std::vector<double>*);                                                                       \
  template std::vector<AdjointResult> adjoint_vjp_batch<R>(                                        \
      const Circuit&, const std::vector<std::vector<double>>&, const std::vector<PauliSum>&,       \
      const std::vector<std::vector<double>>&, const EngineOptions&);                              \
  template std::vector<AdjointResult> adjoint_vjp_many<R>(                                         \
      const std::vector<const Circuit*>&, const std::vector<std::vector<double>>&,                 \
      const std::vector<PauliSum>&, const std::vector<WeightsFn>&, const EngineOptions&);
QMLSIM_INSTANTIATE(float)
QMLSIM_INSTANTIATE(double)
#undef QMLSIM_INSTANTIATE

}  // namespace qmlsim
