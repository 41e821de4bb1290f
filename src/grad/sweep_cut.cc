// The tape cut for the adjoint sweep (adjoint_parts.h): segment, the forward
// pass's gates, and the sweep's inverse gates with what each measures.
#include <algorithm>
#include <bit>

#include "core/types.h"
#include "grad/adjoint_parts.h"
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
                   std::vector<Measure>& measure) {
  for (std::size_t i = 0; i < s.gates.size(); ++i) {
    inverse.push_back(adjoint(s.gates[i]));
    const std::vector<BlockStep>& steps = s.steps[i];
    const bool alone = steps.size() == 1 && steps[0].targets.empty();
    measure.push_back(steps.empty()                               ? Measure::none
                      : alone && real_derivatives(*steps[0].step) ? Measure::real_part
                                                                  : Measure::whole);
  }
}

}  // namespace qmlsim
