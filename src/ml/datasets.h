// Data for the reference jobs: readers for the Sonar table and for graphs, the
// QCNN excitation generator, and seeded shuffles and splits. Malformed files
// throw Error "file:line: message".
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <utility>
#include <vector>

#include "core/rng.h"

namespace qmlsim::ml {

// Examples with one label each in {-1, +1}.
struct Dataset {
  std::vector<std::vector<double>> x;
  std::vector<double> y;

  std::size_t size() const { return y.size(); }
  void add(std::vector<double> features, double label) {
    x.push_back(std::move(features));
    y.push_back(label);
  }
  // The examples at `index`, in that order.
  Dataset subset(const std::vector<std::size_t>& index) const;
  // The first `count` examples and the rest.
  std::pair<Dataset, Dataset> split(std::size_t count) const;
};

// UCI Sonar: 60 comma-separated features then R (rock, -1) or M (mine, +1).
Dataset read_sonar(const std::string& path);
// The same from a stream; `path` names it in messages.
Dataset parse_sonar(std::istream& in, const std::string& path);

// A CSV table: one example per row, numeric features, the label in column
// `label` (0-based; negative counts from the end: -1 is the last). A first row
// whose features are not all numbers is a header and skipped. `regression`:
// labels are the column's numbers. Otherwise two classes, as text, map to
// {-1, +1}: `positive` names the +1 class, or when empty the larger of the two
// (numerically if both are numbers, else as text). NaN or infinite values, rows
// of another width, a third class or a single one are errors "file:line: ...".
Dataset read_table(const std::string& path, int label, const std::string& positive,
                   bool regression);
Dataset parse_table(std::istream& in, const std::string& path, int label,
                    const std::string& positive, bool regression);

// Feature scaling to zero mean and unit standard deviation (a feature with
// none is only centred), fitted on one set and applied to others.
struct Scaling {
  std::vector<double> mean, scale;
  void apply(std::vector<double>& x) const;
};
Scaling fit_scaling(const Dataset& d);
// Scales both sets with the first set's statistics; returns them.
Scaling standardize(Dataset& fit, Dataset& other);

// New examples for a trained model: CSV rows of `features` numbers, or of
// features + 1 with the label in column `label` (ignored); a header row is
// skipped. Errors as read_table's.
std::vector<std::vector<double>> read_features(const std::string& path, int features, int label);

// An undirected simple graph on nodes 0..nodes-1.
struct Graph {
  int nodes = 0;
  std::vector<std::pair<int, int>> edges;  // u < v, in file order
};

// Reads an edge list ("u v" per line) or a networkx adjacency list ("node nbr
// nbr ...", as nx.write_adjlist writes it); '#' starts a comment. Every line
// "a b c ..." adds the edges a-b, a-c, ...; a lone node declares it. `nodes` > 0
// fixes the node count (ids must be below it); 0 takes 1 + the largest id.
// Self-loops, repeated edges, non-integer ids and ids above kMaxNodeId are errors.
inline constexpr int kMaxNodeId = 1'000'000;
Graph read_graph(const std::string& path, int nodes);
// The same from a stream; `path` names it in messages.
Graph parse_graph(std::istream& in, const std::string& path, int nodes);

// The QCNN task (TensorFlow Quantum's cluster-state excitations): for each of
// `rounds` rounds and each qubit q in order, theta ~ U(-pi, pi); the example is
// x = {q, theta}, labelled +1 when |theta| <= pi/2, else -1.
Dataset qcnn_excitations(int qubits, int rounds, Rng& rng);

// The order of `n` examples in epoch `epoch`: a permutation drawn from seed and
// epoch alone (PyTorch's DistributedSampler: seed + epoch), so it can be
// recomputed on resume and on every rank; the identity when !shuffle.
std::vector<std::size_t> epoch_order(std::size_t n, std::uint64_t seed, int epoch, bool shuffle);

}  // namespace qmlsim::ml
