#include "backends/cuda/small_batch_pack.h"

#include <algorithm>
#include <string>

#include "backends/cuda/small_batch.h"
#include "core/error.h"

namespace qmlsim::cuda {

int small_batch_max_qubits(Precision p) { return p == Precision::c64 ? 13 : 12; }

bool small_batch_fits(int n, Precision p, std::size_t observables) {
  return n <= small_batch_max_qubits(p) &&
         observables <= static_cast<std::size_t>(kSmallBatchMaxObservables);
}

int cross_entries(const BoundGate& g) {
  if (g.diagonal) return g.num_targets() <= 5 ? static_cast<int>(g.dim()) : 0;
  return g.num_targets() <= 2 ? static_cast<int>(g.dim() * g.dim()) : 0;
}

Matrix cross_matrix_of(const PackedGate& g, const BoundGate& inverse, const double* v) {
  const std::size_t dim = inverse.dim();
  Matrix m(dim * dim, 0.0);
  for (int e = 0; e < g.measured_entries; ++e) {
    const std::size_t idx = g.diagonal ? e * dim + e : static_cast<std::size_t>(e);
    m[idx] = {v[2 * e], v[2 * e + 1]};
  }
  if (g.diagonal) {  // the CPU's form: the dim diagonal entries, i Im (M U^T)_aa
    Matrix diagonal(dim);
    for (std::size_t a = 0; a < dim; ++a)
      diagonal[a] = cplx{0, (m[a * dim + a] * std::conj(inverse.matrix[a])).imag()};
    return diagonal;
  }
  Matrix before(dim * dim, 0.0);  // M U^T, U_bc = conj(inverse_cb)
  for (std::size_t a = 0; a < dim; ++a)
    for (std::size_t b = 0; b < dim; ++b)
      for (std::size_t c = 0; c < dim; ++c)
        before[a * dim + b] += m[a * dim + c] * std::conj(inverse.at(c, b));
  return antihermitian_part(before);
}

PackedItems pack_items(int n, const std::vector<std::vector<BoundGate>>& items,
                       const std::vector<std::vector<Measure>>* measure) {
  PackedItems p;
  for (std::size_t i = 0; i < items.size(); ++i) {
    p.first.push_back(static_cast<std::uint32_t>(p.gates.size()));
    for (std::size_t j = 0; j < items[i].size(); ++j) {
      const BoundGate& b = items[i][j];
      PackedGate g;
      g.k = b.num_targets();
      g.diagonal = b.diagonal ? 1 : 0;
      const int wires = g.k + static_cast<int>(b.controls.size());
      if (wires > kPackMaxWires || wires > n)
        throw Error("cuda: a gate on " + std::to_string(wires) + " wires of " + std::to_string(n));
      if (!b.diagonal && g.k > kPackMaxDense)
        throw Error("cuda: dense gates of " + std::to_string(g.k) + " targets exceed the " +
                    std::to_string(kPackMaxDense) + " the kernels take");
      std::vector<int> pos = b.targets;
      pos.insert(pos.end(), b.controls.begin(), b.controls.end());
      std::sort(pos.begin(), pos.end());
      g.npos = static_cast<int>(pos.size());
      for (int w = 0; w < g.k; ++w) g.targets[w] = b.targets[w];
      for (int w = 0; w < g.npos; ++w) g.pos[w] = pos[w];
      for (int c : b.controls) g.ctrl |= u64{1} << c;
      g.matrix = p.matrices.size();
      for (const cplx& e : b.matrix) {
        p.matrices.push_back(e.real());
        p.matrices.push_back(e.imag());
      }
      if (measure && (*measure)[i][j] != Measure::none) {
        if (cross_entries(b) == 0)
          throw Error("cuda: the adjoint gradient of a " +
                      std::string(b.diagonal ? "diagonal" : "dense") + " gate on " +
                      std::to_string(g.k) +
                      " targets is not implemented on the GPU (at most 2 dense, 5 diagonal); use "
                      "--backend cpu");
        g.measured_entries = cross_entries(b);
        g.cross = static_cast<std::int64_t>(p.cross_doubles);
        p.cross_doubles += 2 * static_cast<std::size_t>(g.measured_entries);
      }
      p.gates.push_back(g);
    }
  }
  p.first.push_back(static_cast<std::uint32_t>(p.gates.size()));
  return p;
}

PackedSums pack_sums(const std::vector<PauliSum>& sums) {
  PackedSums p;
  const cplx phase[4] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};  // i^popc(x & z): the Y factors
  for (const PauliSum& h : sums) {
    p.first.push_back(static_cast<std::uint32_t>(p.x.size()));
    for (const PauliTerm& t : h.terms) {
      p.x.push_back(t.xmask);
      p.z.push_back(t.zmask);
      const cplx c = t.coeff * phase[__builtin_popcountll(t.xmask & t.zmask) % 4];
      p.c.push_back(c.real());
      p.c.push_back(c.imag());
    }
  }
  p.first.push_back(static_cast<std::uint32_t>(p.x.size()));
  return p;
}

}  // namespace qmlsim::cuda
