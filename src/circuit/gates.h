// The gate table: the one place a gate is defined. Adding a gate means adding
// one enum value and one row in gates.cc; everything else (QASM names, fusion,
// kernels, gradients) reads the row.
//
// Conventions are PennyLane's: RX(t) = exp(-i t X / 2); Rot(a,b,c) = RZ(c) RY(b) RZ(a);
// a gate's matrix is written with its FIRST wire as the MOST significant bit of
// the matrix index (CNOT(c, t) = [[1,0,0,0],[0,1,0,0],[0,0,0,1],[0,0,1,0]]).
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace qmlsim {

enum class GateId : std::uint8_t {
  I,
  X,
  Y,
  Z,
  H,
  S,
  Sdg,
  T,
  Tdg,
  SX,
  RX,
  RY,
  RZ,
  PhaseShift,
  Rot,
  U1,
  U2,
  U3,
  CNOT,
  CY,
  CZ,
  CH,
  SWAP,
  ISWAP,
  CRX,
  CRY,
  CRZ,
  CRot,
  ControlledPhaseShift,
  IsingXX,
  IsingYY,
  IsingZZ,
  IsingXY,
  MultiRZ,
  Toffoli,
  CSWAP,
  SingleExcitation,
  SingleExcitationPlus,
  SingleExcitationMinus,
  DoubleExcitation,
  DoubleExcitationPlus,
  DoubleExcitationMinus,
  PSWAP,
  ECR,
  SISWAP,
  QubitUnitary,
  kCount
};

inline constexpr int kMaxGateParams = 3;

// A gate's inverse as a table gate: U(p)^-1 = e^{i phase} G(q), where
// q[j] = -p[negate_from[j]], or the constant constant[j] where negate_from[j]
// is -1, for the `gate` G's parameters. QubitUnitary's rule names itself: its
// inverse is its matrix's conjugate transpose.
struct InverseRule {
  GateId gate;
  std::int8_t negate_from[kMaxGateParams];
  double constant[kMaxGateParams];
  double phase;
};

struct GateInfo {
  GateId id;
  std::string_view name;
  int num_wires;     // -1: any number >= 1 (MultiRZ, QubitUnitary)
  int num_params;    // angles; QubitUnitary carries its matrix instead
  int num_controls;  // intrinsic control wires: the first `num_controls` wires
  GateId base;       // the gate on the remaining (target) wires; == id if no controls
  bool diagonal;     // the target matrix is diagonal for every parameter value
  // Frequency w of each parameter: every matrix entry is a trigonometric polynomial
  // of w*theta of degree 1. Rotation angles have w = 1/2, phases w = 1. Then
  // dM/dtheta = w * (M(theta + s) - M(theta - s)) / 2 exactly, with s = pi / (2w).
  double frequency[kMaxGateParams];
  InverseRule inverse;
  // Terms of the exact parameter-shift rule of each parameter when the gate
  // has no extra controls: 2 where its generator has two eigenvalues, 4 where
  // three (intrinsic controls, IsingXY). Extra controls make any rule 4 terms.
  int shift_terms;
};

const GateInfo& gate_info(GateId id);
std::optional<GateId> gate_by_name(std::string_view name);  // case-sensitive table name

// The parameters of gate_info(id).inverse.gate for the inverse of `id` at `params`.
std::vector<double> inverse_params(GateId id, std::span<const double> params);

// Matrix of the gate's TARGET part (controls excluded), first target wire most
// significant. REQUIRES params.size() == num_params; num_targets for variable-size gates.
Matrix target_matrix(GateId id, std::span<const double> params, int num_targets);

// The diagonal of a diagonal gate's target matrix (GateInfo::diagonal), and of
// its derivative by parameter p, formed without the dense matrix (a MultiRZ on
// k targets: 2^k entries, not 4^k).
Matrix target_diagonal(GateId id, std::span<const double> params, int num_targets);
Matrix target_diagonal_derivative(GateId id, std::span<const double> params, int num_targets,
                                  int p);

// Full matrix over all wires, controls included (for tests and small QubitUnitary use).
Matrix full_matrix(GateId id, std::span<const double> params, int num_wires);

// dM/dtheta_p of the target matrix, exact (see GateInfo::frequency).
Matrix target_matrix_derivative(GateId id, std::span<const double> params, int num_targets, int p);

// True if m (dimension 2^k) is unitary within `tol` (max-abs of M^dagger M - I).
bool is_unitary(const Matrix& m, double tol = 1e-8);

}  // namespace qmlsim
