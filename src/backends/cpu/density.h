// A density matrix's readouts on the CPU: rho on m qubits held as the
// 2m-qubit vector vec(rho), rho[r][c] at r + 2^m c (grad/density_matrix.h), or
// in pieces of whole columns (the distributed density matrix). The state
// vector's density_* methods read a whole one; the GPU's are
// backends/cuda/density_ops.h.
#pragma once

#include <vector>

#include "circuit/observable.h"
#include "core/types.h"

namespace qmlsim::cpu {

// Columns c0..c1-1 of rho held from column c0 on (rho[r][c] at
// r + 2^m (c - c0)): the terms of Tr(H rho) whose column is among them (the
// pieces' sums add up to Tr(H rho)), and rho[c][c] for c in c0..c1-1 (clamped at 0).
template <class R>
double density_trace_columns(const R* columns, int m, index_t c0, index_t c1, const PauliSum& h);
template <class R>
std::vector<double> density_diagonal_columns(const R* columns, int m, index_t c0, index_t c1);

// a = vec(H) over 4^m amplitudes: H[k ^ x][k] = coeff i^popc(x & z) (-1)^popc(k & z).
template <class R>
void set_density_observable(R* a, int m, const PauliSum& h);

}  // namespace qmlsim::cpu
