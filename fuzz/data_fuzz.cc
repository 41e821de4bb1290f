// Fuzz target: the data readers (the Sonar table, CSV tables, edge and
// adjacency lists).
// Contract checked on every input: a result that keeps the readers' promises
// (60 finite features and a label of +-1 per row; edges u < v, distinct, ids
// within the node count), or an Error located at a line of the source
// ("fuzz.data:line: ...") or naming it, free of control bytes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "core/error.h"
#include "ml/datasets.h"

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "data_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

void check_error(const qmlsim::Error& e) {
  const std::string msg = e.what();
  if (msg.rfind("fuzz.data:", 0) != 0) finding("error without the source", msg);
  if (qmlsim::printable(msg) != msg) finding("control byte in an error", msg);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    std::istringstream in(text);
    const qmlsim::ml::Dataset d = qmlsim::ml::parse_sonar(in, "fuzz.data");
    for (std::size_t i = 0; i < d.size(); ++i) {
      if (d.x[i].size() != 60) finding("row without 60 features", std::to_string(i));
      for (double v : d.x[i])
        if (!std::isfinite(v)) finding("non-finite feature", std::to_string(v));
      if (d.y[i] != 1.0 && d.y[i] != -1.0) finding("label not +-1", std::to_string(d.y[i]));
    }
  } catch (const qmlsim::Error& e) {
    check_error(e);
  }
  using Kind = qmlsim::ml::LabelRule::Kind;
  for (const Kind kind : {Kind::kBinary, Kind::kRegression, Kind::kClasses}) {
    for (const bool npy : {false, true}) {
      try {
        qmlsim::ml::LabelRule rule;
        rule.kind = kind;
        std::istringstream in(text);
        const qmlsim::ml::Dataset d =
            npy ? qmlsim::ml::label_table(qmlsim::ml::parse_npy_table(text, "fuzz.data", -1), rule)
                : qmlsim::ml::parse_table(in, "fuzz.data", -1, rule);
        double classes = 0;
        for (std::size_t i = 0; i < d.size(); ++i) classes = std::max(classes, d.y[i] + 1);
        for (std::size_t i = 0; i < d.size(); ++i) {
          if (d.x[i].size() != d.x[0].size()) finding("ragged rows accepted", std::to_string(i));
          for (double v : d.x[i])
            if (!std::isfinite(v)) finding("non-finite feature", std::to_string(v));
          const double y = d.y[i];
          const bool ok = kind == Kind::kRegression ? std::isfinite(y)
                          : kind == Kind::kBinary   ? y == 1.0 || y == -1.0
                                                    : y >= 0 && y == std::floor(y) && classes >= 2;
          if (!ok) finding("bad label", std::to_string(y));
        }
      } catch (const qmlsim::Error& e) {
        check_error(e);
      }
    }
  }
  for (int nodes : {0, 18}) {
    try {
      std::istringstream in(text);
      const qmlsim::ml::Graph g = qmlsim::ml::parse_graph(in, "fuzz.data", nodes);
      std::set<std::pair<int, int>> seen;
      if (g.nodes <= 0 || (nodes > 0 && g.nodes != nodes))
        finding("node count", std::to_string(g.nodes));
      for (const auto& [u, v] : g.edges) {
        if (!(0 <= u && u < v && v < g.nodes))
          finding("bad edge", std::to_string(u) + "-" + std::to_string(v));
        if (!seen.insert({u, v}).second) finding("repeated edge", std::to_string(u));
      }
    } catch (const qmlsim::Error& e) {
      check_error(e);
    }
  }
  return 0;
}
