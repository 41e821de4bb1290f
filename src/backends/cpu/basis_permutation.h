// Products of gates that permute basis states affinely over GF(2): index
// i -> A i ^ c (X, CNOT, SWAP, controlled X with one control; not Toffoli).
// A run of such gates, a CNOT ring say, is composed once and applied in one
// pass over a cache chunk instead of one pass per gate.
#pragma once

#include <vector>

#include "circuit/bound.h"
#include "core/types.h"

namespace qmlsim::cpu {

class AffinePermutation {
 public:
  explicit AffinePermutation(int b);  // the identity on b qubits

  // Composes g after the gates so far and returns true if g is an affine
  // permutation of basis states (on wires < b); else returns false, unchanged.
  bool append(const BoundGate& g);
  int gates() const { return gates_; }

  // out[F(i)] = in[i] for every i < 2^b (2^b interleaved amplitudes each; no overlap).
  template <class R>
  void apply(const R* in, R* out) const;

 private:
  int b_;
  int gates_ = 0;
  std::vector<index_t> col_;  // F(e_j) ^ F(0)
  index_t shift_ = 0;         // F(0)
};

extern template void AffinePermutation::apply<float>(const float*, float*) const;
extern template void AffinePermutation::apply<double>(const double*, double*) const;

}  // namespace qmlsim::cpu
