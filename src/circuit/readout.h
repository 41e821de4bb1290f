// Readout error: each measured qubit's bit read through a 2x2 confusion
// matrix, P(read 1 | 0) = p01 and P(read 0 | 1) = p10 (Aer's ReadoutError
// rows, Braket's and PennyLane's readout bit flip when p01 = p10). The one
// place it is defined: expectation values read through it are those of a
// rewritten observable (so gradients, every method and backend follow), and
// probabilities and samples are confused as a device would.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "circuit/observable.h"
#include "core/types.h"

namespace qmlsim {

struct ReadoutFlip {
  double p01 = 0;  // P(read 1 | 0)
  double p10 = 0;  // P(read 0 | 1)
};

// Per qubit (bit q of a basis index), its readout error or none.
struct ReadoutError {
  std::vector<std::optional<ReadoutFlip>> qubits;

  bool any() const;
  const ReadoutFlip* of(int q) const;
};

// Throws Error naming `what` unless both probabilities are in [0, 1].
void check_readout_flip(const ReadoutFlip& f, const std::string& what);

// Words with more qubits under readout error than this are refused: a word's
// rewrite has 2^k terms.
inline constexpr int kMaxReadoutSupport = 16;

// The observable whose expectation value is what h reads through the error:
// a measured Pauli eigenvalue s of a qubit with an error reads as a s + b
// (a = 1 - p01 - p10, b = p10 - p01), so each word P expands into
// sum over subsets T of its noisy qubits of prod_T a prod_rest b P_T.
// Throws Error for a word with more than kMaxReadoutSupport noisy qubits.
PauliSum read_through(const PauliSum& h, const ReadoutError& e);

// The distribution of read outcomes from the true one (2^n entries, bit q of
// an index = qubit q), each qubit's confusion applied in turn.
std::vector<double> read_through(std::vector<double> probabilities, const ReadoutError& e);

// Sampled outcomes (counts per basis index) read through the error: each
// shot's bits flipped with their qubit's probabilities, from a generator
// seeded with `seed` (the same counts for the same seed).
std::map<index_t, std::int64_t> read_through(const std::map<index_t, std::int64_t>& counts,
                                             const ReadoutError& e, std::uint64_t seed);

// The seed of a run's readout flips from the seed of its samples: a stream of
// their own, so the true samples stay those of the same seed without error.
inline std::uint64_t readout_seed(std::uint64_t sample_seed) {
  return sample_seed ^ 0x9e3779b97f4a7c15ULL;
}

}  // namespace qmlsim
