#include "passes/fusion.h"

#include <algorithm>
#include <bit>
#include <cassert>

#include "core/bits.h"

namespace qmlsim {

void apply_reference(const BoundGate& g, cplx* v, int n) {
  const int k = g.num_targets();
  const std::size_t dim = g.dim();
  index_t ctrl_mask = 0;
  for (int c : g.controls) ctrl_mask |= bit(c);
  std::vector<int> pos = g.targets;  // ascending
  std::vector<index_t> offs(dim, 0);
  for (std::size_t r = 0; r < dim; ++r)
    for (int j = 0; j < k; ++j)
      if (r >> j & 1) offs[r] |= bit(g.targets[j]);
  std::vector<cplx> in(dim);
  const index_t groups = index_t{1} << (n - k);
  for (index_t i = 0; i < groups; ++i) {
    const index_t base = insert_zero_bits(i, pos.data(), k);
    if ((base & ctrl_mask) != ctrl_mask) continue;
    if (g.diagonal) {
      for (std::size_t r = 0; r < dim; ++r) v[base | offs[r]] *= g.matrix[r];
      continue;
    }
    for (std::size_t r = 0; r < dim; ++r) in[r] = v[base | offs[r]];
    for (std::size_t r = 0; r < dim; ++r) {
      cplx acc = 0;
      for (std::size_t c = 0; c < dim; ++c) acc += g.matrix[r * dim + c] * in[c];
      v[base | offs[r]] = acc;
    }
  }
}

double gate_cost(const BoundGate& g) {
  const double body = g.diagonal ? 1.0 : static_cast<double>(g.dim());
  return body / static_cast<double>(index_t{1} << g.controls.size());
}

namespace {

struct Block {
  std::vector<int> gates;  // indices into the input, in program order
  index_t mask = 0;
  bool diagonal = true;
  double cost = 0;  // of applying the block as it will be emitted
};

double block_cost(index_t mask, bool diagonal) {
  return diagonal ? 1.0 : static_cast<double>(index_t{1} << std::popcount(mask));
}

// The block's gates as one gate on the block's qubits (ascending, no controls).
BoundGate build_block(const Block& b, const std::vector<BoundGate>& gates) {
  BoundGate out;
  for (int q = 0; q < 64; ++q)
    if (b.mask >> q & 1) out.targets.push_back(q);
  const int k = out.num_targets();
  const std::size_t dim = out.dim();
  auto local = [&](const BoundGate& g) {  // g with wires renumbered to block positions
    BoundGate l = g;
    auto to_local = [&](int q) { return std::popcount(b.mask & (bit(q) - 1)); };
    for (int& q : l.targets) q = to_local(q);
    for (int& q : l.controls) q = to_local(q);
    return l;
  };
  out.diagonal = b.diagonal;
  if (b.diagonal) {
    out.matrix.assign(dim, 1.0);
    for (int gi : b.gates) apply_reference(local(gates[gi]), out.matrix.data(), k);
    return out;
  }
  // Column c of the product is the block applied to basis vector c.
  out.matrix.assign(dim * dim, 0.0);
  std::vector<cplx> col(dim);
  std::vector<BoundGate> locals;
  for (int gi : b.gates) locals.push_back(local(gates[gi]));
  for (std::size_t c = 0; c < dim; ++c) {
    std::fill(col.begin(), col.end(), 0.0);
    col[c] = 1.0;
    for (const BoundGate& l : locals) apply_reference(l, col.data(), k);
    for (std::size_t r = 0; r < dim; ++r) out.matrix[r * dim + c] = col[r];
  }
  return out;
}

}  // namespace

std::vector<BoundGate> fuse(const std::vector<BoundGate>& gates, const FusionOptions& options) {
  const int max_dense = std::max(1, options.max_qubits);
  const int max_diag = std::max(max_dense, options.max_diagonal_qubits);
  std::vector<Block> blocks;
  std::vector<int> open(64, -1);  // qubit -> index of its open block
  std::vector<BoundGate> out;
  out.reserve(gates.size());

  auto emit = [&](int bi) {
    Block& b = blocks[bi];
    for (int q = 0; q < 64; ++q)
      if (b.mask >> q & 1) open[q] = -1;
    if (b.gates.size() == 1)
      out.push_back(gates[b.gates[0]]);  // keep controls and storage
    else
      out.push_back(build_block(b, gates));
    b.gates.clear();
  };

  for (int gi = 0; gi < static_cast<int>(gates.size()); ++gi) {
    const BoundGate& g = gates[gi];
    const index_t m = g.wire_mask();
    std::vector<int> touched;  // open blocks on g's wires
    for (int q = 0; q < 64; ++q) {
      if ((m >> q & 1) && open[q] >= 0 &&
          std::find(touched.begin(), touched.end(), open[q]) == touched.end()) {
        touched.push_back(open[q]);
      }
    }
    index_t u = m;
    bool diag = g.diagonal;
    double separate = gate_cost(g);
    for (int bi : touched) {
      u |= blocks[bi].mask;
      diag = diag && blocks[bi].diagonal;
      separate += blocks[bi].cost + options.sweep_cost;
    }
    const int limit = diag ? max_diag : max_dense;
    if (!touched.empty() && std::popcount(u) <= limit && block_cost(u, diag) <= separate) {
      Block merged;
      merged.mask = u;
      merged.diagonal = diag;
      merged.cost = block_cost(u, diag);
      for (int bi : touched) {
        merged.gates.insert(merged.gates.end(), blocks[bi].gates.begin(), blocks[bi].gates.end());
        blocks[bi].gates.clear();
      }
      std::sort(merged.gates.begin(), merged.gates.end());
      merged.gates.push_back(gi);
      blocks.push_back(std::move(merged));
      for (int q = 0; q < 64; ++q)
        if (u >> q & 1) open[q] = static_cast<int>(blocks.size()) - 1;
      continue;
    }
    std::sort(touched.begin(), touched.end());
    for (int bi : touched) emit(bi);
    Block fresh;
    fresh.mask = m;
    fresh.diagonal = g.diagonal;
    fresh.cost = gate_cost(g);
    fresh.gates.push_back(gi);
    if (std::popcount(m) > (g.diagonal ? max_diag : max_dense)) {
      out.push_back(g);  // too wide to fuse: pass through
      continue;
    }
    blocks.push_back(std::move(fresh));
    for (int q = 0; q < 64; ++q)
      if (m >> q & 1) open[q] = static_cast<int>(blocks.size()) - 1;
  }
  // Flush the open blocks in order of their first gate.
  std::vector<int> rest;
  for (int bi = 0; bi < static_cast<int>(blocks.size()); ++bi)
    if (!blocks[bi].gates.empty()) rest.push_back(bi);
  std::sort(rest.begin(), rest.end(),
            [&](int a, int b) { return blocks[a].gates[0] < blocks[b].gates[0]; });
  for (int bi : rest) emit(bi);
  return out;
}

}  // namespace qmlsim
