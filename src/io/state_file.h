// A state vector in an HDF5 file, as `qmlsim run --state-out` writes it:
// dataset "state" of 2^n rows x 2 columns (real, imaginary part), float32 for
// complex64 and float64 for complex128, row i = amplitude i (bit q of i is
// qubit q); attributes "num_qubits" and "precision". h5py reads it as
// `f["state"][:, 0] + 1j * f["state"][:, 1]`. A distributed state is written
// slice by slice, in process order, into one file.
#pragma once

#include <cstdint>
#include <string>

namespace qmlsim::io {

// Creates (truncates) the file with an unwritten dataset of 2^n rows.
void create_state_file(const std::string& path, int n, bool single);
// Writes amplitudes [offset, offset + count) from interleaved (re, im) values.
void write_state_rows(const std::string& path, std::uint64_t offset, std::uint64_t count,
                      const float* data);
void write_state_rows(const std::string& path, std::uint64_t offset, std::uint64_t count,
                      const double* data);

}  // namespace qmlsim::io
