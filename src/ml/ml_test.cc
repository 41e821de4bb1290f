#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "ml/datasets.h"
#include "ml/layers.h"
#include "ml/loss.h"
#include "ml/optimizer.h"

namespace qmlsim::ml {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

TEST(Dense, BackwardMatchesFiniteDifferences) {
  for (Activation act : {Activation::kNone, Activation::kSigmoid, Activation::kTanh}) {
    ParamLayout layout;
    Dense d(layout, "d", 3, 2, act);
    Rng rng(5);
    std::vector<double> p(layout.size());
    d.init_torch(p, rng);
    const std::vector<double> x = {0.3, -0.7, 1.1}, dy = {0.4, -1.3};
    // L = dy . y
    auto loss = [&](const std::vector<double>& pp, const std::vector<double>& xx) {
      std::vector<double> z(2), y(2);
      d.forward(pp, xx, z, y);
      return dy[0] * y[0] + dy[1] * y[1];
    };
    std::vector<double> z(2), y(2), grad(p.size(), 0.0), dx(3);
    d.forward(p, x, z, y);
    d.backward(p, x, z, dy, grad, dx);
    const double h = 1e-6;
    for (std::size_t i = 0; i < p.size(); ++i) {
      auto a = p, b = p;
      a[i] += h;
      b[i] -= h;
      EXPECT_NEAR(grad[i], (loss(a, x) - loss(b, x)) / (2 * h), 1e-7);
    }
    for (std::size_t i = 0; i < x.size(); ++i) {
      auto a = x, b = x;
      a[i] += h;
      b[i] -= h;
      EXPECT_NEAR(dx[i], (loss(p, a) - loss(p, b)) / (2 * h), 1e-7);
    }
  }
}

TEST(Dense, GlorotInitBoundsAndZeroBias) {
  ParamLayout layout;
  Dense d(layout, "d", 4, 8);
  Rng rng(1);
  std::vector<double> p(layout.size(), 9.0);
  d.init_glorot(p, rng);
  const double bound = std::sqrt(6.0 / 12.0);
  for (std::size_t i = 0; i < 32; ++i) EXPECT_LE(std::abs(p[i]), bound);
  for (std::size_t i = 32; i < 40; ++i) EXPECT_EQ(p[i], 0.0);
}

TEST(Loss, DerivativesMatchFiniteDifferences) {
  for (const char* name : {"mse", "margin_ranking", "hinge", "bce"}) {
    const Loss l = Loss::parse(name, 0.1, "loss");
    for (double p : {-1.7, -0.3, 0.45, 2.2})
      for (double y : {-1.0, 1.0}) {
        const double h = 1e-6;
        EXPECT_NEAR(l.derivative(p, y), (l.value(p + h, y) - l.value(p - h, y)) / (2 * h), 1e-6)
            << name << " p=" << p << " y=" << y;
      }
  }
  EXPECT_DOUBLE_EQ(Loss::parse("margin_ranking", 0.1, "l").value(0.5, 1.0), 0.0);
  EXPECT_DOUBLE_EQ(Loss::parse("margin_ranking", 0.1, "l").value(0.5, -1.0), 0.6);
  EXPECT_DOUBLE_EQ(Loss::parse("mse", 0, "l").value(0.5, -1.0), 2.25);
  EXPECT_THROW(Loss::parse("l1", 0, "train.loss"), Error);
  EXPECT_EQ(correct(0.2, 1.0), 1.0);
  EXPECT_EQ(correct(-0.2, 1.0), 0.0);
}

TEST(Optimizer, AdamFirstStepIsLearningRateTimesSign) {
  Optimizer opt({"adam", 0.9, 0.999, 1e-8}, 2, "opt");
  std::vector<double> p = {1.0, 1.0};
  const std::vector<double> g = {0.5, -2.0};
  opt.step(p, g, 0.1);
  EXPECT_NEAR(p[0], 0.9, 1e-7);
  EXPECT_NEAR(p[1], 1.1, 1e-7);
  // The state round-trips.
  Optimizer other({"adam", 0.9, 0.999, 1e-8}, 2, "opt");
  other.set_state(opt.state());
  std::vector<double> a = p, b = p;
  opt.step(a, g, 0.1);
  other.step(b, g, 0.1);
  EXPECT_EQ(a, b);
}

TEST(Optimizer, SgdAndSchedule) {
  Optimizer opt({"sgd"}, 1, "opt");
  std::vector<double> p = {1.0};
  opt.step(p, std::vector<double>{2.0}, 0.1);
  EXPECT_DOUBLE_EQ(p[0], 0.8);
  EXPECT_THROW(Optimizer({"rmsprop"}, 1, "train.optimizer"), Error);
  EXPECT_DOUBLE_EQ(step_learning_rate(0.1, 0.5, 2, 3), 0.05);
  EXPECT_DOUBLE_EQ(step_learning_rate(0.1, 0.99, 1, 0), 0.1);
}

TEST(Rng, PermutationIsSeededAndComplete) {
  Rng a(3), b(3);
  const auto p = a.permutation(100);
  EXPECT_EQ(p, b.permutation(100));
  EXPECT_EQ(std::set<std::size_t>(p.begin(), p.end()).size(), 100u);
  EXPECT_NE(epoch_order(50, 1, 0, true), epoch_order(50, 1, 1, true));
  EXPECT_EQ(epoch_order(50, 1, 4, true), epoch_order(50, 1, 4, true));
  Rng c(9);
  for (int i = 0; i < 1000; ++i) {
    const double u = c.uniform();
    ASSERT_TRUE(u >= 0 && u < 1);
  }
}

TEST(Sonar, ReadsTheShippedFile) {
  const Dataset d = read_sonar(QMLSIM_EXAMPLES "/data/sonar.all-data");
  ASSERT_EQ(d.size(), 208u);
  EXPECT_EQ(d.x[0].size(), 60u);
  int mines = 0;
  for (double y : d.y) mines += y > 0;
  EXPECT_EQ(mines, 111);
  EXPECT_DOUBLE_EQ(d.x[0][0], 0.02);
  EXPECT_EQ(d.y[0], -1.0);
}

TEST(Sonar, MalformedLinesNameFileAndLine) {
  std::string good;
  for (int i = 0; i < 60; ++i) good += "0.5,";
  const std::string path = write_temp("qmlsim_bad.sonar", good + "M\n" + good + "X\n");
  try {
    read_sonar(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2: label 'X'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_sonar(write_temp("qmlsim_bad2.sonar", "0.1,0.2,M\n")), Error);
  EXPECT_THROW(
      read_sonar(write_temp("qmlsim_bad3.sonar", good.substr(0, good.size() - 4) + "abc,M\n")),
      Error);
  EXPECT_THROW(read_sonar("/nonexistent/sonar"), Error);
}

TEST(Graph, EdgeListAndAdjacencyList) {
  const Graph g = read_graph(QMLSIM_EXAMPLES "/data/graphs/gnm_n18_m24_seed1967.edges", 18);
  EXPECT_EQ(g.nodes, 18);
  EXPECT_EQ(g.edges.size(), 24u);
  // nx.write_adjlist form: node then its later neighbours.
  const Graph a = read_graph(write_temp("qmlsim.adjlist", "# comment\n0 1 2\n1 2\n2\n3 0\n"), 0);
  EXPECT_EQ(a.nodes, 4);
  ASSERT_EQ(a.edges.size(), 4u);
  EXPECT_EQ(a.edges[3], (std::pair<int, int>{0, 3}));
}

TEST(Table, ReadsCsvWithHeaderLabelsAndClasses) {
  const std::string path =
      write_temp("qmlsim_table.csv", "# comment\na,b,label\n1,2,yes\n3.5,-4,no\n5,6e-1,yes\n");
  const Dataset d = read_table(path, -1, "", false);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d.x[1], (std::vector<double>{3.5, -4}));
  EXPECT_EQ(d.y, (std::vector<double>{1, -1, 1}));  // "yes" > "no"
  EXPECT_EQ(read_table(path, -1, "no", false).y, (std::vector<double>{-1, 1, -1}));
  const Dataset numeric =
      read_table(write_temp("qmlsim_t2.csv", "0,1.5,2\n1,2.5,10\n"), 0, "", false);
  EXPECT_EQ(numeric.y, (std::vector<double>{-1, 1}));  // 1 > 0 numerically
  EXPECT_EQ(numeric.x[1], (std::vector<double>{2.5, 10}));
  EXPECT_EQ(read_table(write_temp("qmlsim_t3.csv", "1,2,0.5\n3,4,-7\n"), -1, "", true).y,
            (std::vector<double>{0.5, -7}));
  Dataset train = read_table(write_temp("qmlsim_t4.csv", "1,0,a\n3,0,b\n"), -1, "", false);
  Dataset other = train;
  standardize(train, other);
  EXPECT_EQ(train.x[0], (std::vector<double>{-1, 0}));
  EXPECT_EQ(other.x[1], (std::vector<double>{1, 0}));
}

TEST(Table, ErrorsNameFileAndLine) {
  auto message = [](const std::string& text, bool regression = false) {
    const std::string path = write_temp("qmlsim_bad.csv", text);
    try {
      read_table(path, -1, "", regression);
    } catch (const Error& e) {
      return std::string(e.what()).substr(path.size());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("1,2,a\n3,b\n"), ":2: 2 fields, the rows before have 3");
  EXPECT_EQ(message("1,2,a\n3,x,b\n"), ":2: field 2: 'x' is not a number");
  EXPECT_EQ(message("1,2,a\n3,nan,b\n"), ":2: field 2: 'nan' is not a finite number");
  EXPECT_EQ(message("1,2,a\n3,4,b\n5,6,c\n"),
            ": 3 classes in the label column; a binary "
            "classifier needs two");
  EXPECT_EQ(message("1,2,a\n3,4,a\n"),
            ": 1 classes in the label column; a binary classifier "
            "needs two");
  EXPECT_EQ(message("# only a comment\n"), ": no data rows");
  EXPECT_EQ(message(""), ": no data rows");
  EXPECT_EQ(message("1,2,x\n", true), ":1: label 'x' is not a finite number");
}

TEST(Graph, ErrorsNameFileAndLine) {
  auto message = [](const std::string& text) {
    const std::string path = write_temp("qmlsim_bad.edges", text);
    try {
      read_graph(path, 0);
    } catch (const Error& e) {
      return std::string(e.what()).substr(path.size());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("0 1\n1 1\n"), ":2: self-loop on node 1");
  EXPECT_EQ(message("0 1\n\n1 0\n"), ":3: edge 0-1 appears twice");
  EXPECT_EQ(message("0 a\n"), ":1: node 'a' is not a non-negative integer");
  EXPECT_EQ(message("# nothing\n"), ": no edges");
  // The node count is 1 + the largest id: ids are capped (2147483647 overflowed it).
  EXPECT_EQ(message("0 2147483647\n"), ":1: node 2147483647 is too large (ids go up to 1000000)");
  EXPECT_EQ(message("0 1\x1b[2J\n"), ":1: node '1\\x1b[2J' is not a non-negative integer");
  EXPECT_THROW(read_graph(write_temp("qmlsim_range.edges", "0 5\n"), 4), Error);
}

TEST(Qcnn, ExcitationLabels) {
  Rng rng(7);
  const Dataset d = qcnn_excitations(4, 10, rng);
  ASSERT_EQ(d.size(), 40u);
  for (std::size_t i = 0; i < d.size(); ++i) {
    EXPECT_EQ(d.x[i][0], static_cast<double>(i % 4));
    EXPECT_EQ(d.y[i], std::abs(d.x[i][1]) <= M_PI / 2 ? 1.0 : -1.0);
  }
  const auto [train, test] = d.split(28);
  EXPECT_EQ(train.size(), 28u);
  EXPECT_EQ(test.size(), 12u);
  EXPECT_EQ(test.x[0], d.x[28]);
}

}  // namespace
}  // namespace qmlsim::ml
