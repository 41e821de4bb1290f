// A state vector in an HDF5 file, as `qmlsim run --state-out` writes it:
// dataset "state" of 2^n rows x 2 columns (real, imaginary part), float32 for
// complex64 and float64 for complex128, row i = amplitude i (bit q of i is
// qubit q); attributes "num_qubits" and "precision". h5py reads it as
// `f["state"][:, 0] + 1j * f["state"][:, 1]`. A distributed state is written
// slice by slice, in process order, into one file.
//
// A density matrix (a noisy circuit's final state) is the same with dataset
// "density_matrix" of 4^n rows, row r 2^n + c = rho[r][c]; h5py:
// `(d[:, 0] + 1j * d[:, 1]).reshape(2**n, 2**n)` with d = f["density_matrix"].
#pragma once

#include <cstdint>
#include <string>

namespace qmlsim::io {

// Creates (truncates) the file with an unwritten dataset of 2^n rows ("state")
// or, with `density`, 4^n rows ("density_matrix").
void create_state_file(const std::string& path, int n, bool single, bool density = false);
// Writes entries [offset, offset + count) from interleaved (re, im) values
// into the file's dataset ("state" or "density_matrix", as created).
void write_state_rows(const std::string& path, std::uint64_t offset, std::uint64_t count,
                      const float* data);
void write_state_rows(const std::string& path, std::uint64_t offset, std::uint64_t count,
                      const double* data);

}  // namespace qmlsim::io
