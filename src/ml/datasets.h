// Data for the reference jobs: readers for the Sonar table and for graphs, the
// QCNN excitation generator, and seeded shuffles and splits. Malformed files
// throw Error "file:line: message".
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/rng.h"

namespace qmlsim::ml {

// Examples with one label each: {-1, +1} for two classes, a class index for
// several, a number for regression.
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

// A table's examples before their labels are interpreted: numeric features,
// the label as text (a number's shortest form in binary formats), and where
// each row is, for messages.
struct RawTable {
  std::string path;
  bool numbered_by_line = true;  // rows[i] is a text line, else a 1-based row index
  std::vector<std::vector<double>> x;
  std::vector<std::string> labels;
  std::vector<int> rows;
  // "path:LINE" or "path: row N".
  std::string where(std::size_t i) const;
};

// How labels become y. kBinary: two classes map to {-1, +1}; `positive` names
// the +1 class, or when empty the larger of the two (numerically if both are
// numbers, else as text). kRegression: the labels' numbers. kClasses: class
// indices 0..K-1 in the order of `classes`, or when empty of the distinct labels
// sorted (numerically if all are numbers, else as text); at least two classes.
struct LabelRule {
  enum class Kind { kBinary, kRegression, kClasses };
  Kind kind = Kind::kBinary;
  std::string positive;
  std::vector<std::string> classes;
};
// Errors "where: message" for a label outside the classes, a third class, a
// single class, a regression label that is not a finite number. `classes`
// (optional) receives the class names by y: kBinary {-1 class, +1 class},
// kClasses in index order.
Dataset label_table(RawTable t, const LabelRule& rule, std::vector<std::string>* classes = nullptr);

// A CSV table: one example per row, numeric features, the label in column
// `label` (0-based; negative counts from the end: -1 is the last). A first row
// whose features are not all numbers is a header and skipped. NaN or infinite
// values, rows of another width and no rows at all are errors "file:line: ...".
RawTable parse_csv_table(std::istream& in, const std::string& path, int label);
// A NumPy .npy file holding one 2-D numeric array (float32/64, signed or
// unsigned integers of 1-8 bytes, little-endian, C or Fortran order): one
// example per row, the label in column `label` as for CSV; kNoLabel: every
// column is a feature (labels empty). Errors name the file and the row.
inline constexpr int kNoLabel = 1 << 30;
RawTable parse_npy_table(std::string_view bytes, const std::string& path, int label);
// CSV, or .npy when the name ends in ".npy".
RawTable read_raw_table(const std::string& path, int label);

Dataset read_table(const std::string& path, int label, const LabelRule& rule,
                   std::vector<std::string>* classes = nullptr);
Dataset parse_table(std::istream& in, const std::string& path, int label, const LabelRule& rule);

// Feature scaling to zero mean and unit standard deviation (a feature with
// none is only centred), fitted on one set and applied to others.
struct Scaling {
  std::vector<double> mean, scale;
  void apply(std::vector<double>& x) const;
};
Scaling fit_scaling(const Dataset& d);
// Scales both sets with the first set's statistics; returns them.
Scaling standardize(Dataset& fit, Dataset& other);

// New examples for a trained model: CSV or .npy rows of `features` numbers, or
// of features + 1 with the label in column `label` (ignored); a CSV header row
// is skipped. Errors as read_table's.
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
