// Bound gates: a circuit with every parameter replaced by its value, in the
// canonical form that fusion and the backends consume.
#pragma once

#include <span>
#include <vector>

#include "circuit/circuit.h"

namespace qmlsim {

// Canonical form: `targets` ascending; bit j of a local matrix index is the
// value of targets[j] (so targets[0] is the LEAST significant bit, unlike the
// gate table). The matrix acts where every control wire is |1>.
struct BoundGate {
  std::vector<int> targets;
  std::vector<int> controls;  // ascending, disjoint from targets
  bool diagonal = false;      // then `matrix` holds the 2^k diagonal entries only
  Matrix matrix;              // dense: row-major 2^k x 2^k

  int num_targets() const { return static_cast<int>(targets.size()); }
  std::size_t dim() const { return std::size_t{1} << targets.size(); }
  // Bit q set for every target and control wire q.
  index_t wire_mask() const {
    index_t m = 0;
    for (int q : targets) m |= index_t{1} << q;
    for (int q : controls) m |= index_t{1} << q;
    return m;
  }
  cplx at(std::size_t r, std::size_t c) const {  // entry of the (dense view of the) matrix
    if (diagonal) return r == c ? matrix[r] : cplx{0};
    return matrix[r * dim() + c];
  }
};

// Reorders a matrix given on `wires` (first wire most significant, table order)
// into canonical form; `diagonal`: m holds only the diagonal. Sorts `wires`.
Matrix to_canonical(Matrix m, bool diagonal, std::vector<int>& wires);

// The inverse (conjugate transpose) of a unitary bound gate.
BoundGate adjoint(const BoundGate& g);

// (M - M^dagger) / 2 of a square row-major matrix.
Matrix antihermitian_part(const Matrix& m);

// Binds one operation with parameter values theta (indexed by slot).
BoundGate bind_params(const Operation& op, std::span<const double> theta);

// Binds every operation of the circuit. A noise channel is an Error: only the
// density-matrix form below runs those.
std::vector<BoundGate> bind_params(const Circuit& c, std::span<const double> theta);

// The density-matrix form: rho on n qubits is the 2n-qubit vector
// vec(rho)[r + 2^n c] = rho[r][c], a gate U acts as U on the row qubits and
// conj(U) on the column qubits (q + n), and a channel as its superoperator on
// both (channels.h). column_half(g, n) is conj(g) on the column qubits.
BoundGate column_half(const BoundGate& g, int n);
// A channel operation's superoperator at theta on its wires and wires + n;
// dual: the dual map's (the adjoint, for pulling observables back). Throws
// Error for trainable parameters whose values are out of range.
BoundGate bind_channel(const Operation& op, std::span<const double> theta, int n,
                       bool dual = false);
// A channel operation's Kraus operators at theta, each a (non-unitary) bound
// gate on the channel's wires. Throws as bind_channel.
std::vector<BoundGate> bind_kraus(const Operation& op, std::span<const double> theta);
// The derivative of a table channel's superoperator (bind_channel's, not
// dual) by its parameter op.params[param] (not by theta: the caller applies
// the chain rule). Throws as bind_channel, and where the derivative is
// infinite (kraus_terms). REQUIRES op is a table channel (not kraus).
BoundGate bind_channel_derivative(const Operation& op, std::span<const double> theta, int n,
                                  int param);

}  // namespace qmlsim
