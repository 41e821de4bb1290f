#include "passes/fusion.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>

#include "core/bits.h"

namespace qmlsim {

// Scratch reused per thread: a copy of g and three vectors per call were most
// of fusion's time (Cirq's 3,788-gate fSim grid export: 1.17 -> 0.30 ms, with
// the one-target path and fuse's loops over mask bits instead of 64 qubits).
void apply_local(const BoundGate& g, const int* targets, index_t controls, cplx* v, int n,
                 bool transpose) {
  const int k = g.num_targets();
  const std::size_t dim = g.dim();
  if (k == 1 && !g.diagonal) {  // the common case (fusion, the adjoint's blocks), unrolled
    const int t = targets[0];
    const index_t hi = bit(t);
    const cplx m00 = g.matrix[0], m11 = g.matrix[3];
    const cplx m01 = g.matrix[transpose ? 2 : 1], m10 = g.matrix[transpose ? 1 : 2];
    for (index_t i = 0; i < index_t{1} << (n - 1); ++i) {
      const index_t b0 = insert_zero_bit(i, t);
      if ((b0 & controls) != controls) continue;
      const cplx a0 = v[b0], a1 = v[b0 | hi];
      v[b0] = m00 * a0 + m01 * a1;
      v[b0 | hi] = m10 * a0 + m11 * a1;
    }
    return;
  }
  thread_local std::vector<index_t> offs;
  thread_local std::vector<cplx> in;
  offs.assign(dim, 0);
  for (std::size_t r = 0; r < dim; ++r)
    for (int j = 0; j < k; ++j)
      if (r >> j & 1) offs[r] |= bit(targets[j]);
  if (!g.diagonal) in.resize(dim);
  const std::size_t row_step = transpose ? 1 : dim, col_step = transpose ? dim : 1;
  const index_t groups = index_t{1} << (n - k);
  for (index_t i = 0; i < groups; ++i) {
    const index_t base = insert_zero_bits(i, targets, k);
    if ((base & controls) != controls) continue;
    if (g.diagonal) {
      for (std::size_t r = 0; r < dim; ++r) v[base | offs[r]] *= g.matrix[r];
      continue;
    }
    for (std::size_t r = 0; r < dim; ++r) in[r] = v[base | offs[r]];
    for (std::size_t r = 0; r < dim; ++r) {
      const cplx* e = g.matrix.data() + r * row_step;
      cplx s = 0;
      for (std::size_t c = 0; c < dim; ++c, e += col_step) s += *e * in[c];
      v[base | offs[r]] = s;
    }
  }
}

void apply_reference(const BoundGate& g, cplx* v, int n) {
  index_t controls = 0;
  for (int c : g.controls) controls |= bit(c);
  apply_local(g, g.targets.data(), controls, v, n);
}

double gate_cost(const BoundGate& g) {
  const double body = g.diagonal ? 1.0 : static_cast<double>(g.dim());
  return body / static_cast<double>(index_t{1} << g.controls.size());
}

namespace {

// An open block: its gates multiplied out as they arrive, so fusing is linear
// in the number of gates (a long run on few qubits is one small matrix, not a
// growing list).
struct Block {
  index_t mask = 0;
  bool diagonal = true;
  double cost = 0;    // of applying the block as it will be emitted
  int first = 0;      // its first gate's index: blocks are emitted in this order
  int single = -1;    // its only gate while it has one (emitted as it is)
  BoundGate product;  // otherwise: all its gates as one gate on `mask`, no controls
};

double block_cost(index_t mask, bool diagonal) {
  return diagonal ? 1.0 : static_cast<double>(index_t{1} << std::popcount(mask));
}

// The identity on the qubits of `mask` (ascending), dense or diagonal.
BoundGate identity_on(index_t mask, bool diagonal) {
  BoundGate out;
  for (index_t r = mask; r != 0; r &= r - 1) out.targets.push_back(std::countr_zero(r));
  out.diagonal = diagonal;
  const std::size_t dim = out.dim();
  out.matrix.assign(diagonal ? dim : dim * dim, 0.0);
  for (std::size_t r = 0; r < dim; ++r) out.matrix[diagonal ? r : r * dim + r] = 1.0;
  return out;
}

// acc <- g * acc, where g's wires are among acc's targets. A dense acc is a
// vector over 2k qubits whose high k bits are the row: g acts on those.
void fold(BoundGate& acc, const BoundGate& g) {
  const index_t mask = acc.wire_mask();
  const int k = acc.num_targets();
  const int shift = acc.diagonal ? 0 : k;
  auto to_local = [&](int q) { return std::popcount(mask & (bit(q) - 1)) + shift; };
  std::array<int, 64> pos;
  index_t ctrl = 0;
  for (int j = 0; j < g.num_targets(); ++j) pos[j] = to_local(g.targets[j]);
  for (int q : g.controls) ctrl |= bit(to_local(q));
  apply_local(g, pos.data(), ctrl, acc.matrix.data(), k + shift);
}

// next[gi]: the next gate on each of gi's wires, for fusion's one-step
// lookahead (-1: none; one entry when both wires' next gate is the same). Only
// gates of at most two wires use it (a block on a pair), so two entries suffice.
std::vector<std::array<int, 2>> next_gates(const std::vector<BoundGate>& gates) {
  std::vector<int> next_on(64, -1);
  std::vector<std::array<int, 2>> next(gates.size(), {-1, -1});
  for (int gi = static_cast<int>(gates.size()) - 1; gi >= 0; --gi) {
    const index_t m = gates[gi].wire_mask();
    int k = 0;
    for (index_t r = m; r != 0; r &= r - 1) {
      const int q = std::countr_zero(r);
      if (k < 2 && next_on[q] >= 0 && (k == 0 || next[gi][0] != next_on[q]))
        next[gi][k++] = next_on[q];
      next_on[q] = gi;
    }
  }
  return next;
}

}  // namespace

std::vector<BoundGate> fuse(const std::vector<BoundGate>& gates, const FusionOptions& options) {
  const int max_dense = std::max(1, options.max_qubits);
  const int max_diag = std::max(max_dense, options.max_diagonal_qubits);
  std::vector<Block> blocks;      // slots; at most one open block per qubit
  std::vector<int> free_slots;    // slots of emitted blocks, reused
  std::vector<int> open(64, -1);  // qubit -> slot of its open block
  std::vector<BoundGate> out;
  out.reserve(gates.size());

  auto product_of = [&](Block& b) -> BoundGate& {
    if (b.single >= 0) {
      b.product = identity_on(b.mask, b.diagonal);
      fold(b.product, gates[b.single]);
      b.single = -1;
    }
    return b.product;
  };
  auto release = [&](int slot) {
    Block& b = blocks[slot];
    for (index_t r = b.mask; r != 0; r &= r - 1) open[std::countr_zero(r)] = -1;
    b.product = BoundGate{};
    free_slots.push_back(slot);
  };
  std::vector<int> last_out(64, -1);  // qubit -> the last gate in `out` on it
  auto push_out = [&](BoundGate g) {
    const index_t m = g.wire_mask();
    for (index_t r = m; r != 0; r &= r - 1)
      last_out[std::countr_zero(r)] = static_cast<int>(out.size());
    out.push_back(std::move(g));
  };
  auto emit = [&](int slot) {
    Block& b = blocks[slot];
    if (b.single >= 0)
      push_out(gates[b.single]);  // keep controls and storage
    else
      push_out(std::move(b.product));
    release(slot);
  };
  // The gate in `out` that g can join at no cost, or -1: the last one on each
  // of g's wires, the same for all of them, with no open block on them (so g
  // commutes back past everything since), uncontrolled and covering g's wires,
  // dense or, for a diagonal g, diagonal. (The last one-qubit gates of a
  // circuit, say, join the block of the last two-qubit gate on their qubit.)
  auto joinable = [&](const BoundGate& g) {
    const index_t m = g.wire_mask();
    int idx = -1;
    for (index_t r = m; r != 0; r &= r - 1) {
      const int q = std::countr_zero(r);
      if (open[q] >= 0 || last_out[q] < 0 || (idx >= 0 && last_out[q] != idx)) return -1;
      idx = last_out[q];
    }
    const BoundGate& t = out[static_cast<std::size_t>(idx)];
    if (!t.controls.empty() || (t.wire_mask() & m) != m || (t.diagonal && !g.diagonal)) return -1;
    return idx;
  };
  auto open_block = [&](Block b) {
    int slot;
    if (free_slots.empty()) {
      slot = static_cast<int>(blocks.size());
      blocks.push_back(std::move(b));
    } else {
      slot = free_slots.back();
      free_slots.pop_back();
      blocks[slot] = std::move(b);
    }
    for (index_t r = blocks[slot].mask; r != 0; r &= r - 1) open[std::countr_zero(r)] = slot;
  };
  auto by_first = [&](int a, int b) { return blocks[a].first < blocks[b].first; };
  const std::vector<std::array<int, 2>> next2 = next_gates(gates);  // the lookahead

  std::vector<int> touched;  // per gate: the open blocks on its wires
  for (int gi = 0; gi < static_cast<int>(gates.size()); ++gi) {
    const BoundGate& g = gates[gi];
    const index_t m = g.wire_mask();
    touched.clear();
    for (index_t r = m; r != 0; r &= r - 1) {
      const int q = std::countr_zero(r);
      if (open[q] >= 0 && std::find(touched.begin(), touched.end(), open[q]) == touched.end()) {
        touched.push_back(open[q]);
      }
    }
    std::sort(touched.begin(), touched.end(), by_first);
    index_t u = m;
    bool diag = g.diagonal;
    double separate = gate_cost(g);
    for (int bi : touched) {
      u |= blocks[bi].mask;
      diag = diag && blocks[bi].diagonal;
      separate += blocks[bi].cost + options.sweep_cost;
    }
    // Lookahead for pairs: a merged block on two qubits takes the next gates on
    // its wires that act within the pair at no further sweep (a decomposed
    // two-qubit gate: CZ, then the one-qubit gates around it on the same pair);
    // count that sweep saved. (Not for wider blocks: measured, it made the
    // cache-blocking segments of random circuits worse.)
    if (std::popcount(u) == 2)
      for (int nx : next2[gi])
        if (nx >= 0 && (gates[nx].wire_mask() & ~u) == 0) separate += options.sweep_cost;
    const int limit = diag ? max_diag : max_dense;
    if (!touched.empty() && std::popcount(u) <= limit && block_cost(u, diag) <= separate) {
      Block& b0 = blocks[touched[0]];
      if (touched.size() == 1 && u == b0.mask && diag == b0.diagonal) {
        fold(product_of(b0), g);  // the common case: a run on the same qubits
        continue;
      }
      Block merged;
      merged.mask = u;
      merged.diagonal = diag;
      merged.cost = block_cost(u, diag);
      merged.first = b0.first;
      merged.product = identity_on(u, diag);
      for (int bi : touched) {  // disjoint qubits: they commute
        fold(merged.product, product_of(blocks[bi]));
        release(bi);
      }
      fold(merged.product, g);
      open_block(std::move(merged));
      continue;
    }
    for (int bi : touched) emit(bi);
    if (const int idx = joinable(g); idx >= 0) {
      fold(out[static_cast<std::size_t>(idx)], g);
      continue;
    }
    if (std::popcount(m) > (g.diagonal ? max_diag : max_dense)) {
      push_out(g);  // too wide to fuse: pass through
      continue;
    }
    Block fresh;
    fresh.mask = m;
    fresh.diagonal = g.diagonal;
    fresh.cost = gate_cost(g);
    fresh.first = gi;
    fresh.single = gi;
    open_block(std::move(fresh));
  }
  // Flush the open blocks in order of their first gate.
  std::vector<int> rest;
  for (int q = 0; q < 64; ++q)
    if (open[q] >= 0 && std::find(rest.begin(), rest.end(), open[q]) == rest.end())
      rest.push_back(open[q]);
  std::sort(rest.begin(), rest.end(), by_first);
  for (int bi : rest) emit(bi);
  return out;
}

namespace {

// The product of one-qubit gates a and b on different qubits, as one gate.
BoundGate tensor_pair(const BoundGate& a, const BoundGate& b) {
  const bool a_low = a.targets[0] < b.targets[0];
  const BoundGate& lo = a_low ? a : b;  // bit 0 of the pair's index
  const BoundGate& hi = a_low ? b : a;
  BoundGate out;
  out.targets = {lo.targets[0], hi.targets[0]};
  out.diagonal = lo.diagonal && hi.diagonal;
  if (out.diagonal) {
    out.matrix.resize(4);
    for (std::size_t r = 0; r < 4; ++r) out.matrix[r] = lo.matrix[r & 1] * hi.matrix[r >> 1];
    return out;
  }
  out.matrix.resize(16);
  for (std::size_t r = 0; r < 4; ++r)
    for (std::size_t c = 0; c < 4; ++c)
      out.matrix[r * 4 + c] = lo.at(r & 1, c & 1) * hi.at(r >> 1, c >> 1);
  return out;
}

}  // namespace

// Greedy, in order; the window bounds the search (64 gates ahead).
void pair_single_qubit_gates(std::vector<BoundGate>& out) {
  constexpr std::size_t kWindow = 64;  // gates searched ahead of each one
  auto single = [](const BoundGate& g) { return g.targets.size() == 1 && g.controls.empty(); };
  std::vector<char> moved(out.size(), 0);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (moved[i] || !single(out[i])) continue;
    index_t between = out[i].wire_mask();  // wires of the gates from i on
    for (std::size_t j = i + 1; j < out.size() && j <= i + kWindow; ++j) {
      if (moved[j]) continue;
      const index_t m = out[j].wire_mask();
      if (single(out[j]) && (between & m) == 0) {
        out[i] = tensor_pair(out[i], out[j]);
        moved[j] = 1;
        break;
      }
      between |= m;
    }
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (moved[i]) continue;
    if (kept != i) out[kept] = std::move(out[i]);
    ++kept;
  }
  out.resize(kept);
}

std::vector<BoundGate> fuse_up_to(const std::vector<BoundGate>& gates, int max_qubits) {
  if (max_qubits <= 0) return gates;
  return fuse(gates, {max_qubits, std::max(10, max_qubits)});
}

}  // namespace qmlsim
