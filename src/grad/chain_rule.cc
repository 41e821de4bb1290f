// The chain rule of the adjoint method (adjoint_parts.h): parameter gradients
// from the sweep's cross matrices, and weighted sums of observables.
#include <algorithm>

#include "grad/adjoint_parts.h"
#include "passes/fusion.h"

namespace qmlsim {

PauliSum weighted_sum(const std::vector<PauliSum>& obs, std::span<const double> w) {
  PauliSum h;
  for (std::size_t k = 0; k < obs.size(); ++k)
    for (const PauliTerm& t : obs[k].terms)
      if (w[k] != 0) h.add(w[k] * t.coeff, t.xmask, t.zmask);
  return h;
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
// diagonal only, which its gates leave as it is (|G_aa| = 1). A diagonal
// step's as its diagonal entries (add_step_gradient).
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
  if (!t.step->gate.diagonal) return out;
  Matrix entries(sdim);
  for (std::size_t a = 0; a < sdim; ++a) entries[a] = out[a * sdim + a];
  return entries;
}

// dL/da += 2 Re sum_ab (dU/da U^dagger)_ab m_ab for each angle of step t, m its
// cross matrix over its own targets (for a diagonal gate its diagonal entries
// alone, as every backend's sweep forms them).
void add_step_gradient(const TapeStep& t, const Matrix& mi, std::vector<double>& grad) {
  const BoundGate& u = t.gate;
  const std::size_t dim = u.dim();
  for (const TapeDerivative& d : t.derivatives) {
    cplx acc = 0;
    if (u.diagonal) {  // dU is diagonal too, held as its diagonal (MultiRZ can be wide: O(dim))
      for (std::size_t a = 0; a < dim; ++a) acc += d.d[a] * std::conj(u.matrix[a]) * mi[a];
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
    if (block.diagonal) {  // its diagonal entries: as a dim x dim matrix
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

}  // namespace qmlsim
