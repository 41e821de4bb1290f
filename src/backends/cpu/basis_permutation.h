// Products of gates that permute basis states affinely over GF(2): index
// i -> A i ^ c (X, CNOT, SWAP, controlled X with one control; not Toffoli).
// A run of such gates, a CNOT ring say, is composed once and applied in one
// pass over a cache chunk instead of one pass per gate.
#pragma once

#include <vector>

#include "circuit/bound.h"
#include "circuit/observable.h"
#include "core/types.h"

namespace qmlsim::cpu {

class AffinePermutation {
 public:
  explicit AffinePermutation(int b);  // the identity on b qubits

  // Composes g after the gates so far and returns true if g is an affine
  // permutation of basis states (on wires < b); else returns false, unchanged.
  bool append(const BoundGate& g);
  int gates() const { return gates_; }

  // P T P^dagger for the permutation P|i> = |F(i)> and a Pauli term T on
  // wires < b: X^x -> X^(Ax), Z^z -> (-1)^(z'.c) Z^z' with A^T z' = z, and the
  // Y phases (T = coeff i^|x&z| X^x Z^z) carried into the coefficient.
  PauliTerm conjugate(const PauliTerm& t) const;

  // out[F(i)] = in[i] for every i < 2^b (2^b interleaved amplitudes each; no overlap).
  template <class R>
  void apply(const R* in, R* out) const {
    apply_to<R, 1>(&in, &out);
  }
  // The same on two pairs of arrays in one loop (one index per amplitude for both).
  template <class R>
  void apply(const R* in0, R* out0, const R* in1, R* out1) const {
    const R* in[2] = {in0, in1};
    R* out[2] = {out0, out1};
    apply_to<R, 2>(in, out);
  }

 private:
  template <class R, int N>
  void apply_to(const R* const* in, R* const* out) const;

  int b_;
  int gates_ = 0;
  std::vector<index_t> col_;  // F(e_j) ^ F(0)
  index_t shift_ = 0;         // F(0)
};

extern template void AffinePermutation::apply_to<float, 1>(const float* const*,
                                                           float* const*) const;
extern template void AffinePermutation::apply_to<float, 2>(const float* const*,
                                                           float* const*) const;
extern template void AffinePermutation::apply_to<double, 1>(const double* const*,
                                                            double* const*) const;
extern template void AffinePermutation::apply_to<double, 2>(const double* const*,
                                                            double* const*) const;

}  // namespace qmlsim::cpu
