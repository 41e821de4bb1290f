// End-to-end training tests at small scale: quality of each reference job,
// resume after a stop, damaged checkpoints, run-directory contents.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <numeric>
#include <sstream>
#include <thread>

#include "backends/cuda/statevector.h"
#include "core/error.h"
#include "core/rng.h"
#include "io/checkpoint.h"
#include "io/hdf5_file.h"
#include "train/divergence.h"
#include "train/jobs.h"
#include "train/progress.h"
#include "train/run_dir.h"
#include "train/stop_signals.h"
#include "train/trainer.h"

namespace qmlsim::train {
namespace {

namespace fs = std::filesystem;

TEST(Progress, RedrawsOnlyOnATerminalOutsideALauncher) {
  // ctest's stdout is not a terminal; QMLSIM_PROGRESS forces either mode, and a
  // launcher's variables turn redrawing off (its pseudo-terminal is no evidence).
  ::unsetenv("QMLSIM_PROGRESS");
  EXPECT_FALSE(stdout_is_terminal());
  ::setenv("QMLSIM_PROGRESS", "bar", 1);
  EXPECT_TRUE(stdout_is_terminal());
  ::setenv("QMLSIM_PROGRESS", "lines", 1);
  EXPECT_FALSE(stdout_is_terminal());
  ::unsetenv("QMLSIM_PROGRESS");
  std::ostringstream log;
  Progress p(log, false, false);
  p.begin_epoch(1, 2, 3);
  for (int i = 1; i <= 3; ++i) p.step(i, {{"loss", 0.5}});
  p.end_epoch({{"loss", 0.25}});
  EXPECT_EQ(log.str().find('\r'), std::string::npos);
  EXPECT_EQ(log.str().find('\033'), std::string::npos);
  EXPECT_NE(log.str().find("3/3 [==="), std::string::npos) << log.str();
}

TEST(Jobs, DefaultsParseForEveryKind) {
  for (const char* kind : {"qaoa", "qcnn", "sonar"}) {
    const io::Config c = io::Config::parse(std::string("[job]\nkind = \"") + kind + "\"\n",
                                           "t.toml", "/", {}, job_defaults, job_path_keys());
    EXPECT_EQ(c.kind(), kind);
  }
  EXPECT_THROW(job_defaults("vqe"), Error);
}

class Training : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("qmlsim_train_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  static io::Config config(const std::string& example, const std::vector<std::string>& sets) {
    return load_job_config(std::string(QMLSIM_EXAMPLES) + "/" + example, sets);
  }
  std::string dir(const std::string& name) const { return (root_ / name).string(); }

  int run(const io::Config& c, const std::string& run_dir, bool resume = false,
          std::int64_t max_steps = -1, bool allow_config_change = false) {
    TrainOptions o;
    o.run_dir = run_dir;
    o.resume = resume;
    o.allow_config_change = allow_config_change;
    o.max_steps = max_steps;
    o.quiet = true;
    std::ostringstream out;
    const int status = train(c, o, out);
    log_ += out.str();
    return status;
  }

  // The values of `field` in metrics.jsonl records of the given type.
  static std::vector<double> metric(const std::string& run_dir, const std::string& type,
                                    const std::string& field) {
    std::ifstream in(run_dir + "/metrics.jsonl");
    std::vector<double> out;
    for (std::string line; std::getline(in, line);) {
      if (line.find("\"type\":\"" + type + "\"") == std::string::npos) continue;
      const auto p = line.find("\"" + field + "\":");
      if (p != std::string::npos) out.push_back(std::stod(line.substr(p + field.size() + 3)));
    }
    return out;
  }

  // The final weights of a run, as numbers.
  static std::vector<double> weights(const io::Config& c, const std::string& run_dir) {
    const ml::ParamLayout layout =
        c.kind() == "qaoa" ? make_qaoa_job(c)->layout() : make_supervised_job(c).model->layout();
    return io::load_weights(run_dir + "/weights.h5", layout);
  }

  static std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  fs::path root_;
  std::string log_;
};

TEST_F(Training, QcnnHybridReachesNinetyPercentTestAccuracy) {
  // The published hyperparameters (8 qubits, 50 epochs); three data/init seeds.
  for (int seed : {1, 2, 3}) {
    const std::string d = dir("qcnn" + std::to_string(seed));
    ASSERT_EQ(run(config("qcnn.toml", {"job.seed=" + std::to_string(seed)}), d), 0);
    const std::vector<double> acc = metric(d, "epoch", "val_accuracy");
    ASSERT_EQ(acc.size(), 50u);
    EXPECT_GE(acc.back(), 0.9) << "seed " << seed;
    for (const char* f : {"config.toml", "metrics.jsonl", "weights.h5", "result.json"})
      EXPECT_TRUE(fs::exists(d + "/" + f)) << f;
  }
}

TEST_F(Training, HybridKindTrainsAnOpenQasm3ModelOnBreastCancerData) {
  // examples/hybrid_breast_cancer.toml: a CSV data set, a dense encoder, an
  // OpenQASM 3 circuit with trainable inputs, two readouts and a head.
  const std::string d = dir("hybrid");
  ASSERT_EQ(run(config("hybrid_breast_cancer.toml", {}), d), 0);
  const std::vector<double> acc = metric(d, "epoch", "val_accuracy");
  const std::vector<double> loss = metric(d, "epoch", "loss");
  ASSERT_EQ(acc.size(), 20u);
  EXPECT_GE(acc.back(), 0.9);
  EXPECT_LT(loss.back(), 0.5 * loss.front());
  EXPECT_NE(read(d + "/config.toml").find("data_inputs = [ 'x' ]"), std::string::npos);
  // A --set of a list, and the errors of a config that does not fit the circuit.
  const std::string bad = dir("hybrid_bad");
  // Trajectories with a damping pragma in the circuit: refused by key, before the run directory.
  const std::string damped = dir("damped.qasm");
  std::ofstream(damped) << read(std::string(QMLSIM_EXAMPLES) + "/hybrid/classifier.qasm")
                        << "#pragma braket noise amplitude_damping(0.1) q[0]\n";
  try {
    run(config("hybrid_breast_cancer.toml",
               {"model.circuit=\"" + damped + "\"", "noise.method=\"trajectories\""}),
        bad);
    ADD_FAILURE() << "trajectories with amplitude damping must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("noise.method: \"trajectories\" differentiates only"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(bad));
  EXPECT_THROW(run(config("hybrid_breast_cancer.toml", {"model.weights="}), bad), Error);
  try {
    run(config("hybrid_breast_cancer.toml", {"model.encoder=8:tanh"}), bad);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "model.encoder: 8 values per example reach the circuit, whose data inputs take 4");
  }
}

TEST_F(Training, HybridKindTrainsACircuitExportedByQiskit) {
  // examples/circuits/qiskit_params.qasm, written by qiskit.qasm3.dumps: its
  // input `theta` takes the data, the other inputs (one named β) are trained.
  std::string csv = "theta,label\n";
  Rng rng(3);
  for (int i = 0; i < 40; ++i) {
    const double t = rng.uniform(-3, 3);
    csv += std::to_string(t) + (std::abs(t) < 1.5 ? ",1\n" : ",0\n");
  }
  fs::create_directories(dir("qiskit"));
  std::ofstream(dir("qiskit/data.csv")) << csv;
  std::ofstream(dir("qiskit/job.toml"))
      << "[job]\nkind = \"hybrid\"\n[data]\npath = \"data.csv\"\nstandardize = false\n"
      << "[model]\ncircuit = \"" << QMLSIM_EXAMPLES << "/circuits/qiskit_params.qasm\"\n"
      << "data_inputs = [\"theta\"]\nweights = [\"_w_0_\", \"_w_1_\", \"_w_2_\", \"_w_3_\", "
      << "\"β\"]\nreadouts = [\"Z0\", \"X1\"]\nhead = [\"1\"]\n"
      << "[train]\nepochs = 30\nlearning_rate = 0.05\nbatch_size = 8\n";
  const std::string d = dir("qiskit/run");
  ASSERT_EQ(run(load_job_config(dir("qiskit/job.toml"), {}), d), 0);
  const std::vector<double> loss = metric(d, "epoch", "loss");
  ASSERT_EQ(loss.size(), 30u);
  EXPECT_LT(loss.back(), 0.5 * loss.front());
  EXPECT_GE(metric(d, "epoch", "accuracy").back(), 0.9);
}

TEST_F(Training, ThreeClassesFromCsvNpyOrHdf5TrainTheSameWeights) {
  // examples/hybrid_wine.toml: one logit per class, categorical cross-entropy.
  const std::string d = dir("wine");
  ASSERT_EQ(run(config("hybrid_wine.toml", {"train.epochs=10"}), d), 0);
  const std::vector<double> acc = metric(d, "epoch", "val_accuracy");
  ASSERT_EQ(acc.size(), 10u);
  EXPECT_GE(acc.back(), 0.9);
  std::ostringstream out;
  infer(load_job_config(d + "/config.toml", {}), d + "/weights.h5", out,
        QMLSIM_EXAMPLES "/data/wine.csv", dir("wine.csv"));
  const std::string predictions = read(dir("wine.csv"));
  EXPECT_EQ(predictions.substr(0, predictions.find('\n')), "p_0,p_1,p_2,class");
  EXPECT_EQ(std::count(predictions.begin(), predictions.end(), '\n'), 179);
  // The same table as a .npy file (written here byte by byte, format 1.0) and as
  // HDF5 datasets x and y: the same examples, so the same weights.
  std::ifstream csv(QMLSIM_EXAMPLES "/data/wine.csv");
  std::vector<double> table;
  std::vector<double> features, labels;
  for (std::string line; std::getline(csv, line);) {
    if (line.empty() || line[0] == '#' || !std::isdigit(static_cast<unsigned char>(line[0])))
      continue;
    std::stringstream ss(line);
    std::vector<double> row;
    for (std::string f; std::getline(ss, f, ',');) row.push_back(std::stod(f));
    table.insert(table.end(), row.begin(), row.end());
    features.insert(features.end(), row.begin(), row.end() - 1);
    labels.push_back(row.back());
  }
  ASSERT_EQ(labels.size(), 178u);
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (178, 14), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream npy(dir("wine.npy"), std::ios::binary);
  npy << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(header.size() & 0xff)
      << static_cast<char>(header.size() >> 8) << header;
  npy.write(reinterpret_cast<const char*>(table.data()),
            static_cast<std::streamsize>(table.size() * sizeof(double)));
  npy.close();
  {
    io::H5Writer h5(dir("wine.h5"));
    h5.write("x", features, {178, 13});
    h5.write("y", labels, {178});
    h5.close();
  }
  const std::vector<double> w = weights(config("hybrid_wine.toml", {}), d);
  for (const char* file : {"wine.npy", "wine.h5"}) {
    const io::Config c = config("hybrid_wine.toml", {"train.epochs=10", "data.path=" + dir(file)});
    const std::string r = dir(std::string("run_") + file);
    ASSERT_EQ(run(c, r), 0);
    EXPECT_EQ(weights(c, r), w) << file;
  }
  // Labels outside the listed classes, and a two-class loss on three classes.
  EXPECT_THROW(run(config("hybrid_wine.toml", {"data.classes=0,1"}), dir("bad1")), Error);
  try {
    run(config("hybrid_wine.toml", {"train.loss=bce"}), dir("bad2"));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(3 in the label column; a binary classifier"),
              std::string::npos)
        << e.what();
  }
  try {
    run(config("hybrid_wine.toml", {"model.head=2"}), dir("bad3"));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "model.head: the model's output has 2 values; the loss needs one per class, 3");
  }
}

TEST_F(Training, HybridConfigsReproduceTheBuiltInJobs) {
  // Job 2: examples/hybrid_qcnn.toml (circuit file, data file, Keras-initialised
  // head) trains to the built-in QCNN's losses and weights from the same seed.
  // Its data file holds exactly the built-in job's examples, in order.
  Rng rng(1234);
  const ml::Dataset drawn = ml::qcnn_excitations(8, 20, rng);
  const ml::Dataset file =
      ml::read_table(QMLSIM_EXAMPLES "/data/qcnn_excitations_8.csv", -1, ml::LabelRule{});
  ASSERT_EQ(file.size(), drawn.size());
  for (std::size_t i = 0; i < drawn.size(); ++i) {
    std::vector<double> one_hot(8, 0.0);
    one_hot[static_cast<std::size_t>(drawn.x[i][0])] = drawn.x[i][1];
    EXPECT_EQ(file.x[i], one_hot) << "row " << i;
    EXPECT_EQ(file.y[i], drawn.y[i]) << "row " << i;
  }
  const std::vector<std::string> sets = {"job.precision=c128", "train.epochs=3"};
  const io::Config builtin = config("qcnn.toml", sets), hybrid = config("hybrid_qcnn.toml", sets);
  ASSERT_EQ(run(builtin, dir("qcnn")), 0);
  ASSERT_EQ(run(hybrid, dir("hybrid_qcnn")), 0);
  for (const char* field : {"loss", "val_loss", "accuracy", "val_accuracy"}) {
    const std::vector<double> a = metric(dir("qcnn"), "epoch", field);
    const std::vector<double> b = metric(dir("hybrid_qcnn"), "epoch", field);
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(b.size(), 3u);
    for (std::size_t e = 0; e < a.size(); ++e) EXPECT_NEAR(a[e], b[e], 1e-12) << field << e;
  }
  const std::vector<double> wa = weights(builtin, dir("qcnn"));
  const std::vector<double> wb = weights(hybrid, dir("hybrid_qcnn"));
  ASSERT_EQ(wa.size(), wb.size());  // the same tensors in the same order
  // Adam's steps amplify rounding (its second moments are tiny): agreement to 1e-9.
  for (std::size_t i = 0; i < wa.size(); ++i)
    EXPECT_NEAR(wa[i], wb[i], 1e-9 * std::max(1.0, std::abs(wa[i]))) << "weight " << i;

  // Job 3: examples/hybrid_sonar.toml's model, started from the built-in dressed
  // classifier's initial weights (tensor by tensor), gives its losses, gradients
  // and weights over Adam steps on the built-in job's rows.
  const io::Config sonar = config("sonar_dressed.toml", {});
  const SupervisedJob a = make_supervised_job(sonar);
  const SupervisedJob b = make_supervised_job(config("hybrid_sonar.toml", {}));
  const std::pair<const char*, const char*> names[] = {
      {"input/weight", "encoder1/weight"}, {"input/bias", "encoder1/bias"},
      {"quantum/w1", "quantum/w1"},        {"quantum/w2", "quantum/w2"},
      {"quantum/rot", "quantum/rot"},      {"output/weight", "head1/weight"},
      {"output/bias", "head1/bias"}};
  const ml::ParamLayout &la = a.model->layout(), &lb = b.model->layout();
  ASSERT_EQ(la.size(), lb.size());
  auto to_hybrid = [&](const std::vector<double>& from) {
    std::vector<double> to(from.size());
    for (const auto& [x, y] : names) {
      const ml::TensorSpec &sa = la.find(x), &sb = lb.find(y);
      EXPECT_EQ(sa.size(), sb.size()) << x;
      std::copy_n(from.begin() + static_cast<std::ptrdiff_t>(sa.offset),
                  std::min(sa.size(), sb.size()),
                  to.begin() + static_cast<std::ptrdiff_t>(sb.offset));
    }
    return to;
  };
  Rng init(42);
  std::vector<double> pa(la.size());
  a.model->init(pa, init);
  std::vector<double> pb = to_hybrid(pa);
  ml::Optimizer oa(optimizer_config(sonar), pa.size(), "a"),
      ob(optimizer_config(sonar), pb.size(), "b");
  const models::EvalOptions eval = eval_options(sonar);
  std::vector<std::size_t> rows(a.train.size());
  std::iota(rows.begin(), rows.end(), std::size_t{0});
  for (int step = 0; step < 3; ++step) {
    std::vector<double> ga(pa.size(), 0.0), gb(pb.size(), 0.0);
    const auto ra = a.model->loss_and_gradient(pa, a.train, rows, a.loss, ga, eval);
    const auto rb = b.model->loss_and_gradient(pb, a.train, rows, b.loss, gb, eval);
    for (std::size_t i = 0; i < rows.size(); ++i)
      EXPECT_NEAR(ra.losses[i], rb.losses[i], 1e-12) << "step " << step << " row " << i;
    const std::vector<double> ga_h = to_hybrid(ga);
    for (std::size_t i = 0; i < gb.size(); ++i)
      EXPECT_NEAR(gb[i], ga_h[i], 1e-10 * std::max(1.0, std::abs(ga_h[i]))) << step << " " << i;
    oa.step(pa, ga, 0.1);
    ob.step(pb, gb, 0.1);
  }
  const std::vector<double> pa_h = to_hybrid(pa);
  // Adam divides by the root of tiny second moments: agreement to rounding, not bits.
  for (std::size_t i = 0; i < pb.size(); ++i) EXPECT_NEAR(pb[i], pa_h[i], 1e-8) << "weight " << i;
}

TEST_F(Training, QaoaFollowsPennyLaneAndDescendsAtAStableStep) {
  // PennyLane 0.45.1 default.qubit, same graph, same initial parameters, plain
  // gradient descent with step 0.1 (scripts/crosscheck/qaoa_pennylane.py):
  // the published step overshoots the saddle at the origin, in both codes.
  const std::string d = dir("qaoa");
  ASSERT_EQ(run(config("qaoa_maxcut.toml", {}), d), 0);
  const std::vector<double> pennylane = {-11.99391249449039, -11.749465021872178,
                                         -11.59657197243562, -12.128437380652821,
                                         -7.971339914533544};
  const std::vector<double> cost = metric(d, "step", "cost");
  ASSERT_EQ(cost.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_NEAR(cost[i], pennylane[i], 1e-9) << "step " << i;
  const std::string result = read(d + "/result.json");
  EXPECT_NE(result.find("\"optimum\":21"), std::string::npos) << result;
  const auto at = result.find("\"cost\":");
  ASSERT_NE(at, std::string::npos);
  EXPECT_NEAR(std::stod(result.substr(at + 7)), -9.845647697085976, 1e-9);
  EXPECT_TRUE(fs::exists(d + "/graph.svg"));

  // Step 0.01 is below 2 / (largest Hessian eigenvalue): the cost falls at every step.
  const std::string d2 = dir("qaoa_small_step");
  ASSERT_EQ(run(config("qaoa_maxcut.toml", {"train.learning_rate=0.01"}), d2), 0);
  const std::vector<double> c2 = metric(d2, "step", "cost");
  ASSERT_EQ(c2.size(), 5u);
  for (std::size_t i = 1; i < 5; ++i) EXPECT_LT(c2[i], c2[i - 1]) << "step " << i;
}

TEST_F(Training, SonarSixWiresLowersTrainingLossByThirtyPercent) {
  const std::string d = dir("sonar");
  ASSERT_EQ(run(config("sonar_dressed.toml", {"model.wires=6"}), d), 0);
  const std::vector<double> loss = metric(d, "epoch", "loss");
  ASSERT_EQ(loss.size(), 5u);
  EXPECT_LE(loss.back(), 0.7 * loss.front());
}

TEST_F(Training, ResumeGivesTheWeightsOfAnUninterruptedRun) {
  struct Case {
    const char* example;
    std::vector<std::string> sets;
    std::int64_t stop;
  };
  const std::vector<Case> cases = {
      {"qcnn.toml",
       {"data.qubits=4", "data.rounds=10", "train.epochs=3", "train.batch_size=8",
        "train.checkpoint_every=2"},
       5},
      {"qcnn.toml", {"data.qubits=4", "data.rounds=10", "train.epochs=3", "train.batch_size=8"}, 4},
      {"sonar_dressed.toml",
       {"model.wires=4", "data.rows=40", "data.test_fraction=0.25", "train.batch_size=10",
        "train.epochs=3", "train.checkpoint_every=1"},
       7},
      {"qaoa_maxcut.toml", {"train.steps=4", "train.learning_rate=0.01"}, 2},
      // Noisy circuits (on the density matrix) resume bit for bit too.
      {"qcnn.toml",
       {"data.qubits=4", "data.rounds=10", "train.epochs=2", "train.batch_size=8",
        "noise.depolarizing=0.02", "noise.amplitude_damping=0.05"},
       3},
  };
  int k = 0;
  for (const Case& cs : cases) {
    const io::Config c = config(cs.example, cs.sets);
    const std::string whole = dir("whole" + std::to_string(k)),
                      parts = dir("parts" + std::to_string(k));
    ++k;
    ASSERT_EQ(run(c, whole), 0);
    ASSERT_EQ(run(c, parts, false, cs.stop), 0);
    EXPECT_FALSE(fs::exists(parts + "/weights.h5"));
    ASSERT_EQ(run(c, parts, true, 1), 0);  // one more step, another stop
    ASSERT_EQ(run(c, parts, true), 0);
    EXPECT_EQ(weights(c, whole), weights(c, parts)) << cs.example << ": weights differ";
    EXPECT_TRUE(read(whole + "/weights.h5") == read(parts + "/weights.h5"))
        << cs.example << ": weight files differ";
    // The metrics log reads as one run: the same step records, in order.
    const auto l1 = metric(whole, "step", "loss"), l2 = metric(parts, "step", "loss");
    EXPECT_EQ(l1, l2) << cs.example;
    EXPECT_EQ(metric(whole, "epoch", "loss"), metric(parts, "epoch", "loss")) << cs.example;
  }
}

// Preemption: a SIGTERM stops the run at its next step boundary with a
// checkpoint, status 143 and one line; the resumed run ends where an unbroken one does.
TEST_F(Training, SigtermStopsAtAStepWithACheckpointAndResumeEndsAsAnUnbrokenRun) {
  const io::Config c = config("qcnn.toml", {"data.qubits=4", "data.rounds=10", "train.epochs=3",
                                            "train.batch_size=8", "train.checkpoint_every=100"});
  const std::string whole = dir("whole"), parts = dir("parts");
  ASSERT_EQ(run(c, whole), 0);
  ASSERT_EQ(run(c, parts, false, 2), 0);
  {
    const StopSignals preemption;
    std::raise(SIGTERM);  // arrives before the resumed run's first step
    EXPECT_EQ(StopSignals::received(), SIGTERM);
    testing::internal::CaptureStderr();
    EXPECT_EQ(run(c, parts, true), 128 + SIGTERM);
    // --quiet (as run() trains) still says why it stopped, on stderr: a cluster log
    // shows more than exit 143.
    EXPECT_EQ(testing::internal::GetCapturedStderr(),
              "Stopped by SIGTERM before step 3: checkpoint written; continue with --resume\n");
  }
  EXPECT_FALSE(fs::exists(parts + "/weights.h5"));
  EXPECT_EQ(metric(parts, "step", "loss").size(), 2u);  // it stopped before a third
  ASSERT_EQ(run(c, parts, true), 0);
  EXPECT_EQ(weights(c, whole), weights(c, parts));
  EXPECT_EQ(metric(whole, "step", "loss"), metric(parts, "step", "loss"));
}

// The same with the signal sent from another thread while steps run.
TEST_F(Training, SigtermDuringARunStopsItAtTheNextStep) {
  const io::Config c = config("qcnn.toml", {"data.qubits=4", "data.rounds=10",
                                            "train.epochs=100000", "train.batch_size=8"});
  const std::string d = dir("run");
  const StopSignals preemption;
  std::atomic<bool> done = false;
  // Complete step records so far (a line still being written is not counted).
  auto steps_logged = [&] {
    std::ifstream in(d + "/metrics.jsonl");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::size_t count = 0;
    for (std::size_t at = 0; (at = text.find("\"type\":\"step\"", at)) != std::string::npos; ++at)
      if (text.find('\n', at) != std::string::npos) ++count;
    return count;
  };
  std::thread sender([&] {  // after three steps have been logged
    while (!done && steps_logged() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!done) ::kill(::getpid(), SIGTERM);
  });
  const int status = run(c, d);
  done = true;
  sender.join();
  EXPECT_EQ(status, 128 + SIGTERM);
  const std::size_t steps = metric(d, "step", "loss").size();
  EXPECT_GE(steps, 3u);
  const std::vector<CheckpointFile> kept = RunDir(d).checkpoints();
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(kept.front().path, RunDir(d).checkpoint_path(static_cast<std::int64_t>(steps)));
}

TEST_F(Training, CheckpointsAreOrderedByStepNotAsText) {
  const RunDir d(dir("order"));
  fs::create_directories(dir("order") + "/checkpoints");
  for (std::int64_t step : {99999999, 100000000, 7}) std::ofstream(d.checkpoint_path(step)) << "x";
  std::ofstream(dir("order") + "/checkpoints/ckpt-notes.h5") << "x";
  const std::vector<CheckpointFile> kept = d.checkpoints();
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].path, d.checkpoint_path(100000000));
  EXPECT_EQ(kept[0].step, 100000000);
  EXPECT_EQ(kept[1].path, d.checkpoint_path(99999999));
  EXPECT_EQ(kept[2].path, d.checkpoint_path(7));
}

TEST_F(Training, DamagedNewestCheckpointFallsBackToThePreviousOne) {
  const io::Config c = config("qcnn.toml", {"data.qubits=4", "data.rounds=10", "train.epochs=2",
                                            "train.batch_size=8", "train.checkpoint_every=1"});
  const std::string whole = dir("whole"), parts = dir("parts");
  ASSERT_EQ(run(c, whole), 0);
  ASSERT_EQ(run(c, parts, false, 4), 0);
  const std::string newest = parts + "/checkpoints/ckpt-00000004.h5";
  ASSERT_TRUE(fs::exists(newest));
  {
    std::ofstream damage(newest, std::ios::binary | std::ios::trunc);
    damage << "not an HDF5 file";
  }
  log_.clear();
  TrainOptions o;
  o.run_dir = parts;
  o.resume = true;
  std::ostringstream out;
  ASSERT_EQ(train(c, o, out), 0);
  EXPECT_NE(out.str().find("warning: " + newest), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("ckpt-00000003.h5 (step 3)"), std::string::npos) << out.str();
  EXPECT_EQ(weights(c, whole), weights(c, parts));
}

// A metrics record that cannot be written (a full disk; here a file-size
// limit) is an error, not a silent loss.
TEST_F(Training, MetricsThatCannotBeWrittenAreAnError) {
  const std::string path = dir("metrics.jsonl");
  MetricsLog log(path, false, 0, 0);
  log.write("{\"type\":\"step\",\"step\":1}");
  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto previous = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = static_cast<rlim_t>(fs::file_size(path));
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  EXPECT_THROW(log.write(std::string(4096, ' ')), Error);
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous);
}

// One writer per run directory: while another holds the run's lock, a
// trainer is refused with the holder named, and nothing of the run changes.
TEST_F(Training, SecondTrainerOnARunDirectoryIsRefused) {
  const io::Config c = config("qcnn.toml", {"data.qubits=4", "data.rounds=4", "train.epochs=1"});
  const std::string d = dir("run");
  {
    const RunDir held(d);
    const RunLock lock(held);
    try {
      run(c, d);
      FAIL() << "a second trainer on a locked run directory must be refused";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("another training process writes this run (host "), std::string::npos)
          << what;
      EXPECT_NE(what.find("pid " + std::to_string(::getpid())), std::string::npos) << what;
    }
    EXPECT_FALSE(fs::exists(d + "/config.toml"));
  }
  EXPECT_EQ(run(c, d), 0);  // released with its holder
}

// A symbolic link planted in a run directory (a shared scratch folder) is
// refused by name, and the file it points to is never written.
TEST_F(Training, PlantedSymbolicLinksInARunDirectoryAreRefused) {
  const io::Config c = config("qcnn.toml", {"data.qubits=4", "data.rounds=4", "train.epochs=1"});
  const std::string victim = dir("victim.txt");
  for (const std::string name : {".lock", "config.toml.tmp", "metrics.jsonl.tmp", "weights.h5.tmp",
                                 "checkpoints", "metrics.jsonl", "checkpoints/ckpt-00000001.h5"}) {
    std::ofstream(victim) << "precious";
    const std::string d = dir("links-" + std::to_string(std::hash<std::string>{}(name)));
    fs::create_directories(d);
    if (name.rfind("checkpoints/", 0) == 0) fs::create_directories(d + "/checkpoints");
    fs::create_symlink(victim, d + "/" + name);
    try {
      run(c, d);
      FAIL() << name << ": a planted link must be refused";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(d + "/" + name + ": a symbolic link"), std::string::npos)
          << e.what();
    }
    EXPECT_EQ(read(victim), "precious") << name;
  }
  // A temporary planted while the run goes on is refused too, not written through.
  const std::string d = dir("late-link");
  fs::create_directories(d);
  fs::create_symlink(victim, d + "/result.json.tmp");
  RunDir(d + "/sub").write_text("x", "y");  // a folder below is unaffected
  EXPECT_THROW(io::write_atomically(d + "/result.json", [](const std::string&) {}), Error);
  EXPECT_EQ(read(victim), "precious");
  EXPECT_TRUE(fs::is_symlink(d + "/result.json.tmp"));
}

// --resume of a finished run has nothing to train and leaves its results as
// they were (it rewrote result.json without the final metrics).
TEST_F(Training, ResumingAFinishedRunKeepsItsResults) {
  const io::Config c = config(
      "qcnn.toml", {"data.qubits=4", "data.rounds=10", "train.epochs=2", "train.batch_size=8"});
  const std::string d = dir("run");
  ASSERT_EQ(run(c, d), 0);
  const std::string result = read(d + "/result.json"), weights = read(d + "/weights.h5");
  ASSERT_NE(result.find("\"val_accuracy\""), std::string::npos) << result;
  ASSERT_EQ(run(c, d, true), 0);
  EXPECT_EQ(read(d + "/result.json"), result);
  EXPECT_EQ(read(d + "/weights.h5"), weights);
}

// --resume over checkpoints none of which can be read is an error that
// leaves the run as it was: never a fresh start whose pruning deletes them.
TEST_F(Training, ResumeWithEveryCheckpointDamagedIsRefusedAndTouchesNothing) {
  const io::Config c = config("qcnn.toml", {"data.qubits=4", "data.rounds=10", "train.epochs=2",
                                            "train.batch_size=8", "train.checkpoint_every=1"});
  const std::string d = dir("run");
  ASSERT_EQ(run(c, d, false, 4), 0);
  std::vector<std::string> ckpts;
  for (const auto& e : fs::directory_iterator(d + "/checkpoints")) {
    ckpts.push_back(e.path().string());
    std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << "not an HDF5 file";
  }
  ASSERT_FALSE(ckpts.empty());
  const std::string metrics = read(d + "/metrics.jsonl");
  try {
    run(c, d, true);
    FAIL() << "resuming over unreadable checkpoints must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("none of its " + std::to_string(ckpts.size()) +
                                         " checkpoint(s) can be read"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read(d + "/metrics.jsonl"), metrics);
  for (const std::string& p : ckpts) EXPECT_EQ(read(p), "not an HDF5 file") << p;
}

// A diverging run stops with the step named before writing anything of that
// step (no crash in the histogram writer); its newest checkpoint is finite.
TEST_F(Training, NonFiniteLossStopsTheRunAtItsStep) {
  const io::Config c =
      config("qcnn.toml", {"data.qubits=4", "data.rounds=10", "train.epochs=40",
                           "train.batch_size=8", "train.lr_decay=1000000", "train.optimizer=sgd"});
  const std::string d = dir("run");
  try {
    run(c, d);
    FAIL() << "a run whose loss turns non-finite must stop";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(" at step "), std::string::npos) << what;
    EXPECT_NE(what.find("training stopped"), std::string::npos) << what;
  }
  std::vector<std::string> ckpts;
  for (const auto& e : fs::directory_iterator(d + "/checkpoints")) ckpts.push_back(e.path());
  ASSERT_FALSE(ckpts.empty());
  std::sort(ckpts.begin(), ckpts.end());
  const ml::ParamLayout layout = make_supervised_job(c).model->layout();
  const io::TrainingState s = io::load_checkpoint(ckpts.back(), c.kind(), layout);
  for (double x : s.params) EXPECT_TRUE(std::isfinite(x));
  for (double x : metric(d, "step", "loss")) EXPECT_TRUE(std::isfinite(x));
}

// train.on_nonfinite: a step with a non-finite loss or gradient stops the
// run, naming it, or is skipped; a non-finite parameter always stops it.
TEST(Divergence, NonFiniteStepsStopOrAreSkipped) {
  const std::vector<double> fine = {0.1, -2}, broken = {0.1, NAN};
  EXPECT_TRUE(step_is_finite(0.5, fine, false, "the loss", 3, 1));
  EXPECT_FALSE(step_is_finite(0.5, broken, true, "the loss", 3, 1));
  EXPECT_FALSE(step_is_finite(INFINITY, fine, true, "the loss", 3, 1));
  const auto message = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(message([&] {
              step_is_finite(0.5, broken, false, "the loss", 3, 1);
            }).rfind("the gradient is not finite at step 3 (epoch 1): training stopped", 0),
            0u);
  EXPECT_EQ(message([&] {
              step_is_finite(NAN, fine, false, "the cost", 7, -1);
            }).rfind("the cost is nan at step 7: training stopped", 0),
            0u);
  EXPECT_EQ(message([&] {
              check_finite(0.5, broken, "the loss", 4, 2);
            }).rfind("a parameter is not finite at step 4 (epoch 2)", 0),
            0u);
  EXPECT_EQ(message([&] { check_finite(0.5, fine, "the loss", 4, 2); }), "no error");
}

TEST_F(Training, RunDirectoryMisuseIsAnError) {
  const io::Config c = config("qcnn.toml", {"data.qubits=4", "data.rounds=4", "train.epochs=1"});
  const std::string d = dir("run");
  ASSERT_EQ(run(c, d), 0);
  try {
    run(c, d);
    FAIL() << "a second fresh run into a used run directory must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("add --resume"), std::string::npos) << e.what();
  }
  const io::Config other =
      config("qcnn.toml", {"data.qubits=4", "data.rounds=4", "train.epochs=2"});
  try {
    run(other, d, true);
    FAIL() << "resuming with another config must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--resume with another config"), std::string::npos)
        << e.what();
  }
}

// Each checkpoint records its run's identity (config hash and run id); resume
// checks it even when config.toml is gone, and file name and step must agree.
TEST_F(Training, ResumeChecksTheRunIdentityOfEveryCheckpoint) {
  const auto qcnn = [](const std::vector<std::string>& extra) {
    std::vector<std::string> sets = {"data.qubits=4", "data.rounds=10", "train.epochs=2",
                                     "train.batch_size=8", "train.checkpoint_every=1"};
    sets.insert(sets.end(), extra.begin(), extra.end());
    return config("qcnn.toml", sets);
  };
  const io::Config c = qcnn({"job.threads=1"});
  const std::string whole = dir("whole"), parts = dir("parts");
  ASSERT_EQ(run(c, whole), 0);
  ASSERT_EQ(run(c, parts, false, 3), 0);
  const ml::ParamLayout layout = make_supervised_job(c).model->layout();
  const auto identity = [&](std::int64_t step) {
    io::RunIdentity id;
    io::load_checkpoint(RunDir(parts).checkpoint_path(step), "qcnn", layout, &id);
    return id;
  };
  const io::RunIdentity first = identity(3);
  EXPECT_EQ(first.config_hash, config_hash(c));
  // The run's own resolved config.toml is the same config.
  EXPECT_EQ(config_hash(load_job_config(parts + "/config.toml", {})), first.config_hash);
  EXPECT_EQ(first.run_id.size(), 16u);
  // A thread count changes no number: the run resumes with it.
  ASSERT_EQ(run(qcnn({"job.threads=2"}), parts, true, 1), 0);
  EXPECT_EQ(identity(4).run_id, first.run_id);
  // Without config.toml the checkpoints still know their config.
  fs::remove(parts + "/config.toml");
  const io::Config other = qcnn({"job.threads=1", "train.learning_rate=0.05"});
  try {
    run(other, parts, true);
    FAIL() << "resuming checkpoints of another config must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a checkpoint of another config"), std::string::npos)
        << e.what();
  }
  // A file whose name says another step than it holds is skipped.
  fs::copy_file(RunDir(parts).checkpoint_path(4), RunDir(parts).checkpoint_path(9));
  const double time_so_far =
      io::load_checkpoint(RunDir(parts).checkpoint_path(4), "qcnn", layout).train_time_s;
  EXPECT_GT(time_so_far, 0);
  ASSERT_EQ(run(c, parts, true), 0);
  EXPECT_NE(log_.find("names step 9 but holds step 4"), std::string::npos) << log_;
  EXPECT_EQ(weights(c, whole), weights(c, parts));
  // The training time counts every session.
  const std::string result = read(parts + "/result.json");
  const auto at = result.find("\"train_time_s\":");
  ASSERT_NE(at, std::string::npos) << result;
  EXPECT_GE(std::stod(result.substr(at + 15)), time_so_far) << result;
  // Knowingly, a run continues under another config.
  const std::string changed = dir("changed");
  ASSERT_EQ(run(c, changed, false, 3), 0);
  EXPECT_THROW(run(other, changed, true), Error);
  ASSERT_EQ(run(other, changed, true, -1, true), 0);
}

// Messages name their cause: the key that empties the training split, the
// dangling link a run directory is.
TEST_F(Training, EmptySplitsAndDanglingRunDirectoriesNameTheirCause) {
  const auto message = [&](const io::Config& c, const std::string& run_dir) -> std::string {
    try {
      run(c, run_dir);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message(config("qcnn.toml", {"data.qubits=4", "data.train_fraction=0"}), dir("a"))
                .find("data.train_fraction: leaves no training examples"),
            std::string::npos);
  EXPECT_NE(
      message(config("sonar_dressed.toml", {"data.rows=1", "data.test_fraction=0.99"}), dir("b"))
          .find("data.test_fraction: leaves no training examples"),
      std::string::npos);
  fs::create_symlink(dir("nowhere") + "/run", dir("link"));
  EXPECT_NE(message(config("qcnn.toml", {"data.qubits=4", "train.epochs=1"}), dir("link"))
                .find("a symbolic link to " + dir("nowhere") + "/run, which does not exist"),
            std::string::npos);
}

// The [noise] table puts channels after every gate of the job's circuits:
// the run trains on density matrices (another loss than without noise).
TEST_F(Training, NoiseTableTrainsOnDensityMatrices) {
  const std::vector<std::string> sets = {"data.qubits=4", "data.rounds=10", "train.epochs=1"};
  ASSERT_EQ(run(config("qcnn.toml", sets), dir("clean")), 0);
  std::vector<std::string> noisy = sets;
  noisy.push_back("noise.depolarizing=0.05");
  ASSERT_EQ(run(config("qcnn.toml", noisy), dir("noisy")), 0);
  const auto clean_loss = metric(dir("clean"), "step", "loss");
  const auto noisy_loss = metric(dir("noisy"), "step", "loss");
  ASSERT_EQ(clean_loss.size(), noisy_loss.size());
  EXPECT_NE(clean_loss, noisy_loss);
  noisy.push_back("noise.method=\"trajectories\"");  // damping-free: trajectories take gradients
  noisy.push_back("noise.trajectories=20");
  ASSERT_EQ(run(config("qcnn.toml", noisy), dir("trajectories")), 0);
  // With damping they cannot: said by key, before the run directory exists.
  std::vector<std::string> damped = noisy;
  damped.push_back("noise.amplitude_damping=0.05");
  try {
    run(config("qcnn.toml", damped), dir("damped"));
    ADD_FAILURE() << "trajectories with amplitude damping must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("noise.method: \"trajectories\" differentiates only"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(dir("damped")));
  std::vector<std::string> readout = sets;
  readout.push_back("noise.readout_error=0.05");
  ASSERT_EQ(run(config("qcnn.toml", readout), dir("readout")), 0);
  EXPECT_NE(metric(dir("readout"), "step", "loss"), clean_loss);
}

TEST_F(Training, QaoaTrainsUnderNoise) {
  // The [noise] table on QAOA: channels after every gate and readout error
  // change the costs it trains on (density matrices); several state ranks
  // are refused with the key named.
  const std::string graph = dir("ring6.edges");
  std::ofstream(graph) << "0 1\n1 2\n2 3\n3 4\n4 5\n0 5\n0 3\n";
  const std::vector<std::string> sets = {"train.steps=3", "job.precision=\"c128\"",
                                         "data.graph=\"" + graph + "\"", "data.nodes=6"};
  ASSERT_EQ(run(config("qaoa_maxcut.toml", sets), dir("clean")), 0);
  std::vector<std::string> noisy = sets;
  noisy.push_back("noise.phase_damping=0.05");
  noisy.push_back("noise.readout_error=0.02");
  ASSERT_EQ(run(config("qaoa_maxcut.toml", noisy), dir("noisy")), 0);
  const auto clean_cost = metric(dir("clean"), "step", "cost");
  const auto noisy_cost = metric(dir("noisy"), "step", "cost");
  ASSERT_EQ(clean_cost.size(), 3u);
  ASSERT_EQ(noisy_cost.size(), 3u);
  // The same starting weights: noise draws the expected cut towards a random
  // assignment's |E| / 2 (3.5 here; the later steps follow other gradients).
  EXPECT_LT(std::abs(noisy_cost[0] + 3.5), std::abs(clean_cost[0] + 3.5));
  EXPECT_NE(noisy_cost, clean_cost);
  std::vector<std::string> ranks = noisy;
  ranks.push_back("job.state_ranks=2");
  EXPECT_THROW(run(config("qaoa_maxcut.toml", ranks), dir("ranks")), Error);
}

TEST_F(Training, CudaBackendTrainsLikeTheCpu) {
  // A short run of every job on the GPU ends at the CPU run's weights;
  // skipped where there is no GPU. In complex128: in complex64 the two
  // backends round differently (the GPU's kernels sum in double), and Adam
  // turns a near-zero gradient's rounding into a step of the learning rate's
  // size (4e-3 on one QCNN weight after two epochs, H200, 2026-12-04); the
  // kernels' complex64 results are compared in cuda_backend_test.
  const cuda::DeviceStatus gpu = cuda::device_status();
  if (gpu.count == 0) GTEST_SKIP() << "no GPU here (" << gpu.error << "): CUDA training skipped";
  const std::vector<std::pair<std::string, std::vector<std::string>>> jobs = {
      {"qcnn.toml", {"train.epochs=2", "job.precision=\"c128\""}},
      {"sonar_dressed.toml", {"train.epochs=2", "model.wires=8", "job.precision=\"c128\""}},
      {"qaoa_maxcut.toml", {"train.steps=3", "job.precision=\"c128\""}}};
  for (const auto& [example, sets] : jobs) {
    std::vector<std::string> on_gpu = sets;
    on_gpu.push_back("job.backend=\"cuda\"");
    const io::Config c = config(example, sets), g = config(example, on_gpu);
    const std::string dc = dir("cpu_" + example), dg = dir("gpu_" + example);
    ASSERT_EQ(run(c, dc), 0);
    ASSERT_EQ(run(g, dg), 0);
    const std::vector<double> wc = weights(c, dc), wg = weights(g, dg);
    ASSERT_EQ(wc.size(), wg.size());
    for (std::size_t i = 0; i < wc.size(); ++i)
      EXPECT_NEAR(wg[i], wc[i], 1e-7) << example << " weight " << i;
  }
}

TEST_F(Training, InferPrintsPredictionsAndMetrics) {
  const io::Config c = config("qcnn.toml", {"data.qubits=4", "data.rounds=5", "train.epochs=2"});
  const std::string d = dir("run");
  ASSERT_EQ(run(c, d), 0);
  std::ostringstream out;
  infer(load_job_config(d + "/config.toml", {}), d + "/weights.h5", out);
  EXPECT_NE(out.str().find("Test split, 6 examples"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("Mean squared error: "), std::string::npos);
  EXPECT_NE(out.str().find("Accuracy: "), std::string::npos);
  // Weights of another model are rejected with the file named.
  const io::Config big = config("qcnn.toml", {"data.qubits=6"});
  EXPECT_THROW(infer(big, d + "/weights.h5", out), Error);
}

}  // namespace
}  // namespace qmlsim::train
