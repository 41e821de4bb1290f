#include "ml/datasets.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <numbers>
#include <numeric>
#include <set>
#include <sstream>

#include "core/error.h"

namespace qmlsim::ml {
namespace {

[[noreturn]] void fail(const std::string& path, int line, const std::string& message) {
  throw Error(path + ":" + std::to_string(line) + ": " + message);
}

std::ifstream open_or_throw(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open file");
  return in;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// The comma-separated fields of a CSV line, each trimmed.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream ss(line);
  for (std::string f; std::getline(ss, f, ',');) fields.push_back(trim(f));
  return fields;
}

}  // namespace

Dataset Dataset::subset(const std::vector<std::size_t>& index) const {
  Dataset d;
  for (std::size_t i : index) d.add(x[i], y[i]);
  return d;
}

std::pair<Dataset, Dataset> Dataset::split(std::size_t count) const {
  std::vector<std::size_t> a(std::min(count, size())), b(size() - a.size());
  std::iota(a.begin(), a.end(), std::size_t{0});
  std::iota(b.begin(), b.end(), a.size());
  return {subset(a), subset(b)};
}

Dataset read_sonar(const std::string& path) {
  std::ifstream in = open_or_throw(path);
  return parse_sonar(in, path);
}

Dataset parse_sonar(std::istream& in, const std::string& path) {
  Dataset d;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    line = trim(line);
    if (line.empty()) continue;
    const std::vector<std::string> fields = csv_fields(line);
    if (fields.size() != 61)
      fail(path, lineno,
           "expected 60 features and a label, found " + std::to_string(fields.size()) + " fields");
    std::vector<double> x(60);
    for (int i = 0; i < 60; ++i) {
      const std::string& f = fields[static_cast<std::size_t>(i)];
      const auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), x[i]);
      if (ec != std::errc() || p != f.data() + f.size() || !std::isfinite(x[i]))
        fail(path, lineno, "field " + std::to_string(i + 1) + ": '" + f + "' is not a number");
    }
    const std::string& label = fields[60];
    if (label != "R" && label != "M")
      fail(path, lineno, "label '" + label + "' is neither R (rock) nor M (mine)");
    d.add(std::move(x), label == "M" ? 1.0 : -1.0);
  }
  if (d.size() == 0) throw Error(path + ": no data rows");
  return d;
}

Dataset read_table(const std::string& path, int label, const std::string& positive,
                   bool regression) {
  std::ifstream in = open_or_throw(path);
  return parse_table(in, path, label, positive, regression);
}

namespace {

bool parse_number(const std::string& f, double& v) {
  const auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  return ec == std::errc() && p == f.data() + f.size() && !f.empty();
}

}  // namespace

Dataset parse_table(std::istream& in, const std::string& path, int label,
                    const std::string& positive, bool regression) {
  struct Row {
    std::vector<double> x;
    std::string label;
    int line;
  };
  std::vector<Row> rows;
  std::size_t width = 0;
  std::string line;
  int lineno = 0;
  bool first = true;  // the first row may be a header
  while (std::getline(in, line)) {
    ++lineno;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const bool may_be_header = first;
    first = false;
    const std::vector<std::string> fields = csv_fields(line);
    if (fields.size() < 2) fail(path, lineno, "needs at least one feature and a label");
    if (width == 0) width = fields.size();
    if (fields.size() != width) {
      fail(
          path, lineno,
          std::to_string(fields.size()) + " fields, the rows before have " + std::to_string(width));
    }
    const int n = static_cast<int>(width);
    if (label >= n || label < -n) {
      fail(path, lineno,
           "label column " + std::to_string(label) + " does not exist (" + std::to_string(n) +
               " columns)");
    }
    const std::size_t lc = static_cast<std::size_t>(label < 0 ? n + label : label);
    Row r{{}, fields[lc], lineno};
    bool numeric = true;
    for (std::size_t i = 0; i < width; ++i) {
      if (i == lc) continue;
      double v = 0;
      if (!parse_number(fields[i], v)) {
        if (!may_be_header) {
          fail(path, lineno,
               "field " + std::to_string(i + 1) + ": '" + fields[i] + "' is not a number");
        }
        numeric = false;
        break;
      }
      if (!std::isfinite(v)) {
        fail(path, lineno,
             "field " + std::to_string(i + 1) + ": '" + fields[i] + "' is not a finite number");
      }
      r.x.push_back(v);
    }
    if (!numeric) continue;  // the header
    rows.push_back(std::move(r));
  }
  if (rows.empty()) throw Error(path + ": no data rows");
  Dataset d;
  if (regression) {
    for (Row& r : rows) {
      double y = 0;
      if (!parse_number(r.label, y) || !std::isfinite(y))
        fail(path, r.line, "label '" + r.label + "' is not a finite number");
      d.add(std::move(r.x), y);
    }
    return d;
  }
  std::set<std::string> classes;
  for (const Row& r : rows) classes.insert(r.label);
  std::string plus = positive;
  if (plus.empty()) {
    if (classes.size() != 2) {
      throw Error(path + ": " + std::to_string(classes.size()) +
                  " classes in the label column; a binary classifier needs two");
    }
    const std::string a = *classes.begin(), b = *classes.rbegin();
    double va = 0, vb = 0;
    plus = parse_number(a, va) && parse_number(b, vb) ? (va > vb ? a : b) : b;
  } else if (!classes.count(plus)) {
    throw Error(path + ": no row has the positive label '" + plus + "'");
  }
  for (Row& r : rows) {
    if (r.label != plus && classes.size() > 2 && positive.empty())
      fail(path, r.line, "a third class '" + r.label + "'");
    d.add(std::move(r.x), r.label == plus ? 1.0 : -1.0);
  }
  return d;
}

void Scaling::apply(std::vector<double>& x) const {
  for (std::size_t j = 0; j < x.size() && j < mean.size(); ++j) x[j] = (x[j] - mean[j]) * scale[j];
}

Scaling fit_scaling(const Dataset& d) {
  Scaling s;
  if (d.size() == 0) return s;
  const std::size_t f = d.x[0].size();
  for (std::size_t j = 0; j < f; ++j) {
    double mean = 0, sq = 0;
    for (const auto& x : d.x) mean += x[j];
    mean /= static_cast<double>(d.size());
    for (const auto& x : d.x) sq += (x[j] - mean) * (x[j] - mean);
    const double sd = std::sqrt(sq / static_cast<double>(d.size()));
    s.mean.push_back(mean);
    s.scale.push_back(sd > 0 ? 1 / sd : 1);
  }
  return s;
}

Scaling standardize(Dataset& fit, Dataset& other) {
  const Scaling s = fit_scaling(fit);
  for (auto* set : {&fit, &other})
    for (auto& x : set->x) s.apply(x);
  return s;
}

std::vector<std::vector<double>> read_features(const std::string& path, int features, int label) {
  std::ifstream in = open_or_throw(path);
  std::vector<std::vector<double>> out;
  std::string line;
  int lineno = 0;
  bool first = true;
  while (std::getline(in, line)) {
    ++lineno;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> fields = csv_fields(line);
    const auto n = static_cast<int>(fields.size());
    if (n != features && n != features + 1) {
      fail(path, lineno,
           std::to_string(n) + " fields; the model takes " + std::to_string(features) +
               " features (and an optional label)");
    }
    const int skip = n == features ? -1 : (label < 0 ? n + label : label);
    std::vector<double> x;
    bool numeric = true;
    for (int i = 0; i < n && numeric; ++i) {
      if (i == skip) continue;
      double v = 0;
      if (!parse_number(fields[static_cast<std::size_t>(i)], v)) {
        if (!first) {
          fail(path, lineno,
               "field " + std::to_string(i + 1) + ": '" + fields[static_cast<std::size_t>(i)] +
                   "' is not a number");
        }
        numeric = false;
      } else if (!std::isfinite(v)) {
        fail(path, lineno, "field " + std::to_string(i + 1) + " is not a finite number");
      }
      x.push_back(v);
    }
    first = false;
    if (numeric) out.push_back(std::move(x));
  }
  if (out.empty()) throw Error(path + ": no data rows");
  return out;
}

Graph read_graph(const std::string& path, int nodes) {
  std::ifstream in = open_or_throw(path);
  return parse_graph(in, path, nodes);
}

Graph parse_graph(std::istream& in, const std::string& path, int nodes) {
  Graph g;
  std::set<std::pair<int, int>> seen;
  int largest = -1;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    std::stringstream ss(line);
    std::vector<int> ids;
    for (std::string tok; ss >> tok;) {
      int v = 0;
      const auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
      if (ec != std::errc() || p != tok.data() + tok.size() || v < 0)
        fail(path, lineno, "node '" + tok + "' is not a non-negative integer");
      if (v > kMaxNodeId) {
        fail(path, lineno,
             "node " + tok + " is too large (ids go up to " + std::to_string(kMaxNodeId) + ")");
      }
      if (nodes > 0 && v >= nodes)
        fail(path, lineno,
             "node " + tok + " is out of range for " + std::to_string(nodes) + " nodes");
      largest = std::max(largest, v);
      ids.push_back(v);
    }
    for (std::size_t k = 1; k < ids.size(); ++k) {
      const int u = std::min(ids[0], ids[k]), v = std::max(ids[0], ids[k]);
      if (u == v) fail(path, lineno, "self-loop on node " + std::to_string(u));
      if (!seen.insert({u, v}).second)
        fail(path, lineno,
             "edge " + std::to_string(u) + "-" + std::to_string(v) + " appears twice");
      g.edges.push_back({u, v});
    }
  }
  if (g.edges.empty()) throw Error(path + ": no edges");
  g.nodes = nodes > 0 ? nodes : largest + 1;
  return g;
}

Dataset qcnn_excitations(int qubits, int rounds, Rng& rng) {
  Dataset d;
  for (int r = 0; r < rounds; ++r)
    for (int q = 0; q < qubits; ++q) {
      const double theta = rng.uniform(-std::numbers::pi, std::numbers::pi);
      d.add({static_cast<double>(q), theta}, std::abs(theta) <= std::numbers::pi / 2 ? 1.0 : -1.0);
    }
  return d;
}

std::vector<std::size_t> epoch_order(std::size_t n, std::uint64_t seed, int epoch, bool shuffle) {
  if (!shuffle) {
    std::vector<std::size_t> p(n);
    std::iota(p.begin(), p.end(), std::size_t{0});
    return p;
  }
  Rng rng(seed + static_cast<std::uint64_t>(epoch));
  return rng.permutation(n);
}

}  // namespace qmlsim::ml
