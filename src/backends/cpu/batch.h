// Batches of small circuits (the QCNN case: thousands of 8- to 16-qubit
// circuits): one state per thread when states are small, instead of threads
// inside a tiny state; large states run one after another with threads inside.
#pragma once

#include <vector>

#include "circuit/bound.h"
#include "circuit/observable.h"

namespace qmlsim::cpu {

// result[i][k] = <H_k> after circuits[i] on |0...0> of n qubits. Results are
// identical (bitwise) for any thread count.
template <class R>
std::vector<std::vector<double>> expvals_batch(int n,
                                               const std::vector<std::vector<BoundGate>>& circuits,
                                               const std::vector<PauliSum>& observables,
                                               int threads);

}  // namespace qmlsim::cpu
