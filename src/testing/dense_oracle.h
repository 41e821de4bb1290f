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

// The density matrix (row-major 2^n x 2^n) of c from rho0 (|0><0| when
// empty): rho -> U rho U^dagger per gate, rho -> sum K rho K^dagger per
// channel, with full operators and plain matrix products.
Matrix run_dense_density(const Circuit& c, std::span<const double> theta, Matrix rho0 = {});
// Tr(H rho) of a row-major density matrix.
double expval_dense_density(const PauliSum& h, const Matrix& rho, int n);

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

// A random circuit over `slots` shared trainable parameters (every parametric
// gate, some fixed ones, extra controls, scales and shifts).
Circuit random_parametric_circuit(int n, int gates, int slots, std::mt19937_64& rng);
// Three random Pauli words on n qubits with random coefficients.
PauliSum random_observable(int n, std::mt19937_64& rng);
// A random channel of the table (or a Kraus set) on random wires of n, its
// parameters literals.
Operation random_channel(int n, std::mt19937_64& rng);
// random_parametric_circuit with a random channel after about every third
// gate and one at the end.
Circuit noisy_circuit(int n, int gates, int slots, std::mt19937_64& rng);

}  // namespace qmlsim::testing
