// Test oracle: gates as full 2^n x 2^n matrices built straight from the gate
// table's definitions (first wire most significant), applied by dense
// matrix-vector products. Shares no code with fusion or the kernels.
#pragma once

#include <random>
#include <span>
#include <vector>

#include "circuit/bound.h"
#include "circuit/circuit.h"
#include "circuit/observable.h"

namespace qmlsim::testing {

using State = std::vector<cplx>;

// Full operator of `op` on n qubits (bit q of an index = qubit q).
Matrix full_operator(const Operation& op, int n, std::span<const double> theta);

State apply_dense(const Matrix& m, const State& psi);
State run_dense(const Circuit& c, std::span<const double> theta, State psi);

// Dense matrix of a Pauli sum on n qubits, built from 2x2 Pauli matrices.
Matrix pauli_matrix(const PauliSum& h, int n);
double expval_dense(const PauliSum& h, const State& psi);

State random_state(int n, std::mt19937_64& rng);
Matrix random_unitary(int k, std::mt19937_64& rng);  // Gram-Schmidt of a Gaussian matrix
double max_abs_diff(const State& a, const State& b);

// The adjoint method's cross matrix of bound gate g, summed plainly:
// M_ab = sum conj(bra_a) ket_b over g's groups (target bits 0, control bits 1).
Matrix cross_matrix_sum(const BoundGate& g, const State& bra, const State& ket);

// An adjoint sweep's sums for a gate of dimension dim as a dense dim x dim
// matrix: the CPU sweep holds a diagonal gate's as its dim diagonal entries.
Matrix dense_sums(const Matrix& m, std::size_t dim);

// A random circuit of `num_gates` gates drawn from the whole gate table
// (extra controls sometimes added), angles as literals.
Circuit random_circuit(int n, int num_gates, std::mt19937_64& rng, bool with_extra_controls);

}  // namespace qmlsim::testing
