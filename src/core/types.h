// Scalar types shared by every layer.
#pragma once

#include <complex>
#include <cstdint>
#include <vector>

namespace qmlsim {

using cplx = std::complex<double>;
using index_t = std::uint64_t;  // amplitude index; bit q is qubit q (qubit 0 = least significant)

// A dense row-major square matrix of complex doubles, dimension 2^k.
using Matrix = std::vector<cplx>;

// Largest number of qubits a state may have (2^40 amplitudes is far past any one node).
inline constexpr int kMaxQubits = 40;

enum class Precision { c64, c128 };  // complex64 (float) or complex128 (double)

inline const char* precision_name(Precision p) { return p == Precision::c64 ? "c64" : "c128"; }

// The precision of amplitudes whose parts are R (float or double).
template <class R>
inline constexpr Precision kPrecisionOf = sizeof(R) == 4 ? Precision::c64 : Precision::c128;

// Where state vectors live: host memory (SIMD + threads) or an NVIDIA GPU.
enum class Backend { cpu, cuda };

inline const char* backend_name(Backend b) { return b == Backend::cpu ? "cpu" : "cuda"; }

// What an adjoint sweep forms at a step (the backends' StateVector::adjoint_sweep):
// nothing, the gate's cross matrix, or only its real part (a gate alone whose
// derivatives dU U^dagger are all real, RY's: a backend may leave the
// imaginary parts 0 and skip their work).
enum class Measure : char { none, whole, real_part };
// Which of an adjoint sweep's two states a step acts on (its `sides`).
enum class Side : char { both, this_only, lambda_only };

}  // namespace qmlsim
