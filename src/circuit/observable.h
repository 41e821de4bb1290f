// Observables: real linear combinations of Pauli words, e.g. "0.5*Z0*Z1 - X2 + 0.25".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/types.h"

namespace qmlsim {

// coeff * P, with P = tensor product of X on xmask-only bits, Z on zmask-only
// bits and Y where both masks are set. An identity term has both masks zero.
struct PauliTerm {
  double coeff = 0;
  index_t xmask = 0;
  index_t zmask = 0;

  bool diagonal() const { return xmask == 0; }
};

inline constexpr double kMaxObservableNorm = 1e30;

struct PauliSum {
  std::vector<PauliTerm> terms;
  int named_qubits = 0;  // 1 + the highest qubit the parsed text named (identities too)

  // Number of qubits the observable needs (1 + highest qubit index, an
  // identity's included; 0 if none).
  int min_qubits() const;
  void add(double coeff, index_t xmask, index_t zmask) { terms.push_back({coeff, xmask, zmask}); }
  std::string to_string() const;
};

// The one check of an observable against a circuit, used by every entry point
// (the engine's batch calls, the CLI, the doors): an Error
// "<what>: names qubit Q, beyond the N qubit(s) of <circuit>" when h acts on a
// qubit the circuit does not have.
void check_observable_fits(const PauliSum& h, int num_qubits, const std::string& what,
                           const std::string& circuit = "the circuit");

// Parses text such as "0.5*Z0*Z1 - X2 + 0.25", "Z0 Z1" or "-Y3". Grammar:
//   sum    := [+|-] term { (+|-) term }
//   term   := factor { [*] factor }
//   factor := number | [IXYZ] qubit-index
// Numbers are decimal (no hex, inf or nan), each term's coefficient finite, and
// the coefficients' absolute values sum to at most kMaxObservableNorm, which
// bounds every value derived from the observable (<H>, H|psi>, gradients).
// Errors name `source`, line 1, and the column: "source:1:col: message".
PauliSum parse_pauli_sum(std::string_view text, const std::string& source);

}  // namespace qmlsim
