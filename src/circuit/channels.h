// The channel table: the one place a noise channel is defined (its name, wires,
// parameters with their ranges, and Kraus operators), as gates.h is for gates.
//
// Parameter conventions are Braket's (PennyLane's and Cirq's p agree, but for
// generalized amplitude damping):
// depolarizing(p) = (1-p) rho + p/3 (X rho X + Y rho Y + Z rho Z), so p = 3/4 is
// the fully depolarizing channel (Qiskit Aer's depolarizing_error(lambda) is p =
// 3 lambda / 4); two_qubit_depolarizing(p) spreads p over the 15 non-identity
// Pauli words; generalized_amplitude_damping(gamma, p) takes the decay rate
// first and p, the weight of the decay towards |0>, second (Cirq's
// generalized_amplitude_damp(p, gamma) names them the other way round, and
// PennyLane's GeneralizedAmplitudeDamping(gamma, p) weighs excitation: 1 - p);
// thermal_relaxation(t1, t2, time, excited) follows Aer's
// thermal_relaxation_error(t1, t2, time, excited_state_population)
// (PennyLane's ThermalRelaxationError(pe, t1, t2, tq) puts the population first).
// Kraus operators are written with the first wire most significant.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace qmlsim {

enum class ChannelId : std::uint8_t {
  none,  // not a channel: the operation is a gate
  depolarizing,
  two_qubit_depolarizing,
  bit_flip,
  phase_flip,
  pauli_channel,
  two_qubit_dephasing,
  amplitude_damping,
  generalized_amplitude_damping,
  phase_damping,
  thermal_relaxation,
  kraus,  // any trace-preserving set of Kraus operators (the operation carries them)
  kCount
};

inline constexpr int kMaxChannelParams = 4;
inline constexpr int kMaxKrausQubits = 2;  // the superoperator acts on twice as many

struct ChannelInfo {
  ChannelId id;
  std::string_view name;  // Braket's OpenQASM 3 noise pragma name
  int num_wires;          // 0: as the Kraus matrices say (ChannelId::kraus)
  int num_params;
  std::string_view param_names[kMaxChannelParams];
};

const ChannelInfo& channel_info(ChannelId id);
std::optional<ChannelId> channel_by_name(std::string_view name);

// Throws Error naming the channel and the parameter when `params` are outside
// the channel's range (probabilities in [0, 1], and each channel's own limits).
void check_channel_params(ChannelId id, std::span<const double> params);

// The channel's Kraus operators at `params`, first wire most significant.
// REQUIRES id != none, id != kraus, check_channel_params passed.
std::vector<Matrix> kraus_operators(ChannelId id, std::span<const double> params);

// A Kraus operator sqrt(weight) m, with the derivatives of weight and m by
// one parameter. Probabilities live in the weights, so the superoperator's
// derivative is finite wherever the channel's is (also at a probability 0).
struct KrausTerm {
  double weight, dweight;
  Matrix m, dm;
};

// The channel's Kraus operators as terms, with derivatives by params[wrt]
// (none for wrt < 0: every dweight and dm zero). An Error where the
// derivative is infinite (the dampings' at gamma = 1). REQUIRES as
// kraus_operators.
std::vector<KrausTerm> kraus_terms(ChannelId id, std::span<const double> params, int wrt = -1);

// Throws Error unless `kraus` is a non-empty set of 2^k x 2^k matrices (k in
// 1..kMaxKrausQubits) with sum K^dagger K = I within tol.
void check_kraus_set(const std::vector<Matrix>& kraus, double tol = 1e-8);

// The superoperator sum_K K (x) conj(K) of a Kraus set on k wires, in the
// density matrix's vectorised form vec(rho)[r + 2^k c] = rho[r][c]: rows and
// columns of the result are indexed r + 2^k c. The matrices must already be
// in the order the caller indexes r in (canonical, bound.h).
Matrix superoperator(const std::vector<Matrix>& kraus);

// The derivative of the terms' superoperator, sum_t weight_t m_t (x) conj(m_t),
// by the parameter their derivatives are taken for; indexed as superoperator().
Matrix superoperator_derivative(const std::vector<KrausTerm>& terms);

}  // namespace qmlsim
