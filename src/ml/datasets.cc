#include "ml/datasets.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
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

std::string RawTable::where(std::size_t i) const {
  return numbered_by_line ? path + ":" + std::to_string(rows[i])
                          : path + ": row " + std::to_string(rows[i]);
}

namespace {

bool parse_number(const std::string& f, double& v) {
  const auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  return ec == std::errc() && p == f.data() + f.size() && !f.empty();
}

}  // namespace

RawTable parse_csv_table(std::istream& in, const std::string& path, int label) {
  RawTable t;
  t.path = path;
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
    std::vector<double> x;
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
      x.push_back(v);
    }
    if (!numeric) continue;  // the header
    t.x.push_back(std::move(x));
    t.labels.push_back(fields[lc]);
    t.rows.push_back(lineno);
  }
  if (t.x.empty()) throw Error(path + ": no data rows");
  return t;
}

namespace {

// The value of key `key` in a .npy header (a Python dict literal), as text up
// to the next top-level comma or closing brace.
std::string npy_field(const std::string& header, const std::string& key, const std::string& path) {
  std::size_t at = std::string::npos;
  for (const char q : {'\'', '"'}) {
    at = header.find(q + key + q);
    if (at != std::string::npos) break;
  }
  if (at == std::string::npos) throw Error(path + ": .npy header has no '" + key + "'");
  std::size_t i = header.find(':', at);
  if (i == std::string::npos) throw Error(path + ": malformed .npy header");
  ++i;
  int depth = 0;
  std::string v;
  for (; i < header.size(); ++i) {
    const char c = header[i];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
    v += c;
  }
  return trim(v);
}

}  // namespace

RawTable parse_npy_table(std::string_view bytes, const std::string& path, int label) {
  auto bad = [&](const std::string& what) -> Error { return Error(path + ": " + what); };
  if (bytes.size() < 10 || bytes.substr(0, 6) != "\x93NUMPY")
    throw bad("not a NumPy .npy file (no \\x93NUMPY magic)");
  const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(bytes[i]); };
  const int major = byte(6);
  if (major < 1 || major > 3) throw bad(".npy format version " + std::to_string(major));
  std::size_t header_len = 0, data_at = 0;
  if (major == 1) {
    header_len = byte(8) | std::size_t{byte(9)} << 8;
    data_at = 10 + header_len;
  } else {
    if (bytes.size() < 12) throw bad("truncated .npy header");
    header_len = byte(8) | std::size_t{byte(9)} << 8 | std::size_t{byte(10)} << 16 |
                 std::size_t{byte(11)} << 24;
    data_at = 12 + header_len;
  }
  if (data_at > bytes.size()) throw bad("truncated .npy header");
  const std::string header(bytes.substr(data_at - header_len, header_len));
  // descr: '<f8', '|u1', ...
  const std::string descr = npy_field(header, "descr", path);
  if (descr.size() < 5 || (descr.front() != '\'' && descr.front() != '"') ||
      descr.back() != descr.front())
    throw bad("unsupported .npy dtype " + descr);
  const char order = descr[1], kind = descr[2];
  int size = 0;
  const std::string size_text = descr.substr(3, descr.size() - 4);
  const auto [p, ec] = std::from_chars(size_text.data(), size_text.data() + size_text.size(), size);
  const bool sized = ec == std::errc() && p == size_text.data() + size_text.size();
  if (order == '>') throw bad("big-endian .npy arrays are not supported (dtype " + descr + ")");
  if (!sized || (order != '<' && order != '|' && order != '=') ||
      !((kind == 'f' && (size == 4 || size == 8)) ||
        ((kind == 'i' || kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8))))
    throw bad("unsupported .npy dtype " + descr + " (float32/64 or integers)");
  const std::string fortran = npy_field(header, "fortran_order", path);
  if (fortran != "True" && fortran != "False") throw bad("malformed .npy fortran_order");
  const std::string shape = npy_field(header, "shape", path);
  std::vector<std::uint64_t> dims;
  {
    std::string digits;
    for (const char c : shape + ",") {
      if (c >= '0' && c <= '9') {
        digits += c;
      } else if (c == ',' || c == ')') {
        if (!digits.empty()) {
          if (digits.size() > 12) throw bad(".npy shape " + shape + " is too large");
          dims.push_back(std::stoull(digits));
        }
        digits.clear();
      } else if (c != '(' && c != ' ' && c != 'L') {
        throw bad("malformed .npy shape " + shape);
      }
    }
  }
  if (dims.size() != 2)
    throw bad(".npy array of shape " + shape + "; expected 2-D (rows, columns)");
  const std::uint64_t rows = dims[0], cols = dims[1];
  if (rows == 0) throw bad("no data rows");
  if (cols < (label == kNoLabel ? 1u : 2u))
    throw bad(std::to_string(cols) + " columns; needs at least one feature and a label");
  const std::uint64_t data_bytes = bytes.size() - data_at;
  if (cols > data_bytes || rows > data_bytes / cols / static_cast<std::uint64_t>(size) ||
      rows * cols * static_cast<std::uint64_t>(size) != data_bytes)
    throw bad("shape " + shape + " of " + descr + " needs " +
              (cols > data_bytes || rows > data_bytes ? std::string("more")
                                                      : std::to_string(rows * cols * size)) +
              " data bytes, the file has " + std::to_string(data_bytes));
  const int n = static_cast<int>(cols);
  if (label != kNoLabel && (label >= n || label < -n))
    throw bad("label column " + std::to_string(label) + " does not exist (" + std::to_string(n) +
              " columns)");
  const std::size_t lc =
      label == kNoLabel ? SIZE_MAX : static_cast<std::size_t>(label < 0 ? n + label : label);
  const char* data = bytes.data() + data_at;
  const bool col_major = fortran == "True";
  auto value = [&](std::uint64_t r, std::uint64_t c) {
    const std::uint64_t i = col_major ? c * rows + r : r * cols + c;
    const char* at = data + i * static_cast<std::uint64_t>(size);
    std::uint64_t u = 0;  // little-endian bytes
    for (int b = size; b-- > 0;) u = u << 8 | static_cast<std::uint8_t>(at[b]);
    if (kind == 'f') {
      if (size == 8) return std::bit_cast<double>(u);
      return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(u)));
    }
    if (kind == 'u') return static_cast<double>(u);
    const int shift = 64 - 8 * size;  // sign-extend
    return static_cast<double>(static_cast<std::int64_t>(u << shift) >> shift);
  };
  RawTable t;
  t.path = path;
  t.numbered_by_line = false;
  for (std::uint64_t r = 0; r < rows; ++r) {
    std::vector<double> x;
    for (std::uint64_t c = 0; c < cols; ++c) {
      const double v = value(r, c);
      if (!std::isfinite(v))
        throw bad("row " + std::to_string(r + 1) + ", column " + std::to_string(c + 1) +
                  ": not a finite number");
      if (c == lc) {
        char text[32];
        const auto res = std::to_chars(text, text + sizeof text, v);
        t.labels.emplace_back(text, res.ptr);
      } else {
        x.push_back(v);
      }
    }
    t.x.push_back(std::move(x));
    t.rows.push_back(static_cast<int>(std::min<std::uint64_t>(r + 1, INT32_MAX)));
  }
  return t;
}

RawTable read_raw_table(const std::string& path, int label) {
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open file");
    std::ostringstream bytes;
    bytes << in.rdbuf();
    return parse_npy_table(bytes.str(), path, label);
  }
  std::ifstream in = open_or_throw(path);
  return parse_csv_table(in, path, label);
}

namespace {

// Distinct labels, sorted numerically when all are numbers, else as text.
std::vector<std::string> sorted_classes(const std::vector<std::string>& labels) {
  const std::set<std::string> distinct(labels.begin(), labels.end());
  std::vector<std::string> out(distinct.begin(), distinct.end());
  std::vector<std::pair<double, std::string>> numbers;
  for (const std::string& c : out) {
    double v = 0;
    if (!parse_number(c, v)) return out;
    numbers.push_back({v, c});
  }
  std::sort(numbers.begin(), numbers.end());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = numbers[i].second;
  return out;
}

}  // namespace

Dataset label_table(RawTable t, const LabelRule& rule, std::vector<std::string>* names) {
  Dataset d;
  if (rule.kind == LabelRule::Kind::kRegression) {
    for (std::size_t i = 0; i < t.x.size(); ++i) {
      double y = 0;
      if (!parse_number(t.labels[i], y) || !std::isfinite(y))
        throw Error(t.where(i) + ": label '" + t.labels[i] + "' is not a finite number");
      d.add(std::move(t.x[i]), y);
    }
    return d;
  }
  if (rule.kind == LabelRule::Kind::kClasses) {
    const std::vector<std::string> classes =
        rule.classes.empty() ? sorted_classes(t.labels) : rule.classes;
    if (classes.size() < 2) {
      throw Error(t.path + ": " + std::to_string(classes.size()) +
                  " class in the label column; a classifier needs at least two");
    }
    std::string list;
    for (const std::string& c : classes) list += (list.empty() ? "" : ", ") + c;
    for (std::size_t i = 0; i < t.x.size(); ++i) {
      const auto at = std::find(classes.begin(), classes.end(), t.labels[i]);
      if (at == classes.end())
        throw Error(t.where(i) + ": label '" + t.labels[i] + "' is not one of the classes (" +
                    list + ")");
      d.add(std::move(t.x[i]), static_cast<double>(at - classes.begin()));
    }
    if (names) *names = classes;
    return d;
  }
  const std::vector<std::string> classes = sorted_classes(t.labels);
  std::string plus = rule.positive;
  if (plus.empty()) {
    if (classes.size() < 2)
      throw Error(t.path + ": 1 class in the label column; a binary classifier needs two");
    if (classes.size() > 2) {  // located at the first row of a third label
      std::vector<std::string> seen;
      for (std::size_t i = 0; i < t.x.size(); ++i) {
        if (std::find(seen.begin(), seen.end(), t.labels[i]) != seen.end()) continue;
        if (seen.size() == 2)
          throw Error(t.where(i) + ": a third class '" + t.labels[i] + "' (" +
                      std::to_string(classes.size()) + " in the label column; a binary " +
                      "classifier takes two, loss = \"cce\" several)");
        seen.push_back(t.labels[i]);
      }
    }
    plus = classes[1];
  } else if (std::find(classes.begin(), classes.end(), plus) == classes.end()) {
    throw Error(t.path + ": no row has the positive label '" + plus + "'");
  }
  // Two classes: the positive one and the first other label met; any further
  // label is an error at its row (never silently negative).
  std::string minus;
  for (std::size_t i = 0; i < t.x.size(); ++i) {
    if (t.labels[i] != plus && minus.empty()) minus = t.labels[i];
    if (t.labels[i] != plus && t.labels[i] != minus)
      throw Error(t.where(i) + ": a third class '" + t.labels[i] + "' (a binary classifier " +
                  "takes two: '" + plus + "' and '" + minus + "')");
    d.add(std::move(t.x[i]), t.labels[i] == plus ? 1.0 : -1.0);
  }
  if (names) *names = {minus.empty() ? "not " + plus : minus, plus};
  return d;
}

Dataset read_table(const std::string& path, int label, const LabelRule& rule,
                   std::vector<std::string>* classes) {
  return label_table(read_raw_table(path, label), rule, classes);
}

Dataset parse_table(std::istream& in, const std::string& path, int label, const LabelRule& rule) {
  return label_table(parse_csv_table(in, path, label), rule);
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
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0) {
    RawTable t = read_raw_table(path, kNoLabel);
    const auto n = static_cast<int>(t.x[0].size());
    if (n != features && n != features + 1) {
      throw Error(path + ": " + std::to_string(n) + " columns; the model takes " +
                  std::to_string(features) + " features (and an optional label)");
    }
    if (n == features + 1) {
      const int skip = label < 0 ? n + label : label;
      if (skip < 0 || skip >= n) throw Error(path + ": no label column " + std::to_string(label));
      for (std::vector<double>& x : t.x) x.erase(x.begin() + skip);
    }
    return std::move(t.x);
  }
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
