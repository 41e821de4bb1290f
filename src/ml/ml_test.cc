#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
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

TEST(Loss, CategoricalCrossEntropyOnLogits) {
  const Loss l = Loss::parse("cce", 0, "loss");
  EXPECT_TRUE(l.categorical());
  const std::vector<double> p = {0.3, -1.2, 2.5};
  for (double y : {0.0, 1.0, 2.0}) {
    // Independent value: -log softmax(p)[y] from the definition.
    const double z = std::exp(0.3) + std::exp(-1.2) + std::exp(2.5);
    EXPECT_NEAR(l.value(p, y), -std::log(std::exp(p[static_cast<std::size_t>(y)]) / z), 1e-14);
    std::vector<double> d(3);
    l.derivative(p, y, d);
    for (std::size_t k = 0; k < 3; ++k) {
      const double h = 1e-6;
      auto a = p, b = p;
      a[k] += h;
      b[k] -= h;
      EXPECT_NEAR(d[k], (l.value(a, y) - l.value(b, y)) / (2 * h), 1e-8) << y << " " << k;
    }
  }
  // Huge logits do not overflow.
  const std::vector<double> big = {1000.0, 0.0};
  EXPECT_NEAR(l.value(big, 1.0), 1000.0, 1e-9);
  EXPECT_EQ(correct(p, 2.0), 1.0);
  EXPECT_EQ(correct(p, 0.0), 0.0);
  EXPECT_EQ(predicted_class(std::vector<double>{1.0, 1.0}), 0);  // the first of equals
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

LabelRule binary(const std::string& positive = "") {
  LabelRule r;
  r.positive = positive;
  return r;
}

LabelRule regression() {
  LabelRule r;
  r.kind = LabelRule::Kind::kRegression;
  return r;
}

LabelRule classes(std::vector<std::string> names = {}) {
  LabelRule r;
  r.kind = LabelRule::Kind::kClasses;
  r.classes = std::move(names);
  return r;
}

TEST(Table, ReadsCsvWithHeaderLabelsAndClasses) {
  const std::string path =
      write_temp("qmlsim_table.csv", "# comment\na,b,label\n1,2,yes\n3.5,-4,no\n5,6e-1,yes\n");
  std::vector<std::string> names;
  const Dataset d = read_table(path, -1, binary(), &names);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d.x[1], (std::vector<double>{3.5, -4}));
  EXPECT_EQ(d.y, (std::vector<double>{1, -1, 1}));  // "yes" > "no"
  EXPECT_EQ(names, (std::vector<std::string>{"no", "yes"}));
  EXPECT_EQ(read_table(path, -1, binary("no")).y, (std::vector<double>{-1, 1, -1}));
  const Dataset numeric =
      read_table(write_temp("qmlsim_t2.csv", "0,1.5,2\n1,2.5,10\n"), 0, binary());
  EXPECT_EQ(numeric.y, (std::vector<double>{-1, 1}));  // 1 > 0 numerically
  EXPECT_EQ(numeric.x[1], (std::vector<double>{2.5, 10}));
  EXPECT_EQ(read_table(write_temp("qmlsim_t3.csv", "1,2,0.5\n3,4,-7\n"), -1, regression()).y,
            (std::vector<double>{0.5, -7}));
  Dataset train = read_table(write_temp("qmlsim_t4.csv", "1,0,a\n3,0,b\n"), -1, binary());
  Dataset other = train;
  standardize(train, other);
  EXPECT_EQ(train.x[0], (std::vector<double>{-1, 0}));
  EXPECT_EQ(other.x[1], (std::vector<double>{1, 0}));
}

TEST(Table, SeveralClassesBecomeIndices) {
  // Sorted numerically when all labels are numbers (10 after 9), else as text.
  const std::string path = write_temp("qmlsim_c.csv", "1,10\n2,9\n3,10\n4,2\n");
  std::vector<std::string> names;
  EXPECT_EQ(read_table(path, -1, classes(), &names).y, (std::vector<double>{2, 1, 2, 0}));
  EXPECT_EQ(names, (std::vector<std::string>{"2", "9", "10"}));
  // An explicit order; a label outside it is a located error.
  EXPECT_EQ(read_table(path, -1, classes({"10", "9", "2"})).y, (std::vector<double>{0, 1, 0, 2}));
  try {
    read_table(path, -1, classes({"10", "9"}));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ":4: label '2' is not one of the classes (10, 9)");
  }
  EXPECT_THROW(read_table(write_temp("qmlsim_c1.csv", "1,a\n2,a\n"), -1, classes()), Error);
}

TEST(Table, NumpyFilesAsNumpyWritesThem) {
  // Written by numpy 2.4 (np.save): [[1.5,-2,0],[3.25,4,1],[5,6.5,2],[7,-8,1]] and integer
  // versions; the label is the last column.
  std::vector<std::string> names;
  const Dataset f8 = read_table(QMLSIM_TESTDATA "/table_f8.npy", -1, classes(), &names);
  EXPECT_EQ(f8.x, (std::vector<std::vector<double>>{{1.5, -2}, {3.25, 4}, {5, 6.5}, {7, -8}}));
  EXPECT_EQ(f8.y, (std::vector<double>{0, 1, 2, 1}));
  EXPECT_EQ(names, (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(read_table(QMLSIM_TESTDATA "/table_f4.npy", -1, classes()).x, f8.x);
  const Dataset fortran = read_table(QMLSIM_TESTDATA "/table_i2_fortran.npy", -1, classes());
  EXPECT_EQ(fortran.x, (std::vector<std::vector<double>>{{1, -2}, {3, 4}, {5, 6}, {7, -8}}));
  EXPECT_EQ(fortran.y, f8.y);
  EXPECT_EQ(read_table(QMLSIM_TESTDATA "/table_u1.npy", 0, regression()).y,
            (std::vector<double>{1, 3, 5, 7}));
  EXPECT_EQ(read_features(QMLSIM_TESTDATA "/table_f8.npy", 2, -1), f8.x);
  EXPECT_EQ(read_features(QMLSIM_TESTDATA "/table_f8.npy", 3, -1)[1],
            (std::vector<double>{3.25, 4, 1}));
  auto message = [](const std::string& file) {
    try {
      read_table(QMLSIM_TESTDATA "/" + file, -1, classes());
    } catch (const Error& e) {
      return std::string(e.what()).substr(std::string(QMLSIM_TESTDATA).size() + 1);
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("table_big_endian.npy"),
            "table_big_endian.npy: big-endian .npy arrays are not supported (dtype '>f8')");
  EXPECT_EQ(message("table_3d.npy"),
            "table_3d.npy: .npy array of shape (2, 2, 2); expected 2-D (rows, columns)");
  EXPECT_EQ(message("table_nan.npy"), "table_nan.npy: row 2, column 1: not a finite number");
  // Cut short, or with bytes to spare: the shape must match the data exactly.
  std::ifstream in(QMLSIM_TESTDATA "/table_f8.npy", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THROW(parse_npy_table(bytes.substr(0, bytes.size() - 1), "t.npy", -1), Error);
  EXPECT_THROW(parse_npy_table(bytes + "x", "t.npy", -1), Error);
  EXPECT_THROW(parse_npy_table("plain text", "t.npy", -1), Error);
}

TEST(Table, ErrorsNameFileAndLine) {
  auto message = [](const std::string& text, LabelRule rule = binary()) {
    const std::string path = write_temp("qmlsim_bad.csv", text);
    try {
      read_table(path, -1, rule);
    } catch (const Error& e) {
      return std::string(e.what()).substr(path.size());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("1,2,a\n3,b\n"), ":2: 2 fields, the rows before have 3");
  EXPECT_EQ(message("1,2,a\n3,x,b\n"), ":2: field 2: 'x' is not a number");
  EXPECT_EQ(message("1,2,a\n3,nan,b\n"), ":2: field 2: 'nan' is not a finite number");
  EXPECT_EQ(message("1,2,a\n3,4,b\n5,6,a\n7,8,c\n"),
            ":4: a third class 'c' (3 in the label column; a binary classifier takes two, loss = "
            "\"cce\" several)");
  EXPECT_EQ(message("1,2,a\n3,4,a\n"),
            ": 1 class in the label column; a binary classifier needs two");
  EXPECT_EQ(message("1,2,3\n3,4,x\n", regression()), ":2: label 'x' is not a finite number");
  EXPECT_EQ(message("# only a comment\n"), ": no data rows");
  // With the positive label named, every other label must be one class: a
  // third is an error at its row, never silently the negative class.
  for (const char* third : {"2", "nan", "malignant", "0.5"}) {
    EXPECT_EQ(message("1,2,0\n3,4,1\n5,6," + std::string(third) + "\n", binary("0")),
              ":3: a third class '" + std::string(third) +
                  "' (a binary classifier takes two: '0' and '1')")
        << third;
  }
  EXPECT_EQ(message("1,2,0\n3,4,1\n5,6,1\n", binary("0")), "no error");
}

}  // namespace
}  // namespace qmlsim::ml
