#include "train/jobs.h"

#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <optional>

#include "backends/cpu/statevector.h"
#include "backends/cuda/statevector.h"
#include "circuit/qasm.h"
#include "core/checksum.h"
#include "core/error.h"
#include "core/memory.h"
#include "distributed/state.h"
#include "grad/kraus_branches.h"
#include "io/data_table.h"
#include "io/object_store.h"
#include "models/dressed.h"
#include "models/qasm_hybrid.h"
#include "models/qcnn.h"

namespace qmlsim::train {
namespace {

// Per kind: the [data] and [model] sections, the job-specific [train] keys, and
// the values that differ between kinds.
struct KindDefaults {
  const char* kind;
  const char* seed;
  const char* precision;
  const char* optimizer;
  const char* learning_rate;
  const char* lr_decay;
  const char* adam_epsilon;
  const char* sections;  // [data] and [model]
  const char* train;     // job-specific [train] keys
};

constexpr KindDefaults kKinds[] = {
    {"qaoa", "1967", "c128", "sgd", "0.1", "1.0", "1e-8", R"(
[data]
graph = ""     # edge list or networkx adjacency list
nodes = 0      # 0: one more than the largest node id in the file

[model]
depth = 2            # p
init_scale = 0.01    # parameters start at init_scale * U(0, 1)
samples = 1000       # samples of the final state searched for the best cut (0: most probable state)
)",
     R"(steps = 5            # iterations: cost + gradient + one optimizer step
)"},
    {"qcnn", "1234", "c64", "adam", "0.02", "1.0", "1e-7", R"(
[data]
qubits = 8
rounds = 20            # examples = rounds * qubits
train_fraction = 0.7   # the first examples train, the rest test

[model]
variant = "hybrid"     # hybrid (readouts + two dense layers) or pure
hidden = 8
)",
     R"(loss = "mse"           # mse, margin_ranking, hinge, bce
margin = 0.1
batch_size = 32
epochs = 50
shuffle = true
)"},
    {"sonar", "42", "c128", "adam", "0.1", "0.99", "1e-8", R"(
[data]
path = ""              # UCI sonar.all-data
rows = 64              # rows kept after a seeded shuffle
test_fraction = 0.0    # share of the kept rows held out for validation

[model]
wires = 10
)",
     R"(loss = "margin_ranking"
margin = 0.1
batch_size = 64
epochs = 5
shuffle = true
)"},
    {"hybrid", "7", "c128", "adam", "0.01", "1.0", "1e-8", R"(
[data]
path = ""              # CSV (a header row is skipped), .npy (2-D) or HDF5 (.h5): one example per row
label = -1             # CSV/.npy label column, 0-based; negative counts from the end (-1: the last)
features_dataset = "x" # HDF5: the 2-D features dataset
labels_dataset = "y"   # HDF5: the 1-D labels dataset
positive = ""          # two classes: label of the +1 class; "": the larger of the two labels
classes = []           # loss cce: the classes in output order; []: the labels sorted
regression = false     # true: labels are numbers to fit (loss mse)
shuffle = true         # rows shuffled (seeded) before the split; false: file order
test_fraction = 0.2    # the last rows (after the shuffle) are held out
standardize = true     # features scaled by the training split's mean and deviation

[model]
circuit = ""           # OpenQASM 3 file; every `input` is a weight or a data input
data_inputs = []       # inputs fed per example (from the encoder, else the features)
weights = []           # trainable inputs
readouts = ["Z0"]      # Pauli sums measured, e.g. "Z0", "0.5*Z0*Z1"
encoder = []           # dense layers before the circuit, "units:activation" (none, tanh, sigmoid, relu)
head = []              # dense layers after the readouts; the last has 1 unit (cce: one per class)
dense_init = "torch"   # dense layers start as PyTorch's (U(+-1/sqrt(in))) or Keras' ("glorot", zero bias)
init_low = 0.0         # circuit weights start U(init_low, init_high)
init_high = 6.283185307179586
)",
     R"(loss = "bce"           # mse, margin_ranking, hinge, bce; cce (categorical cross-entropy: several classes)
margin = 0.1
batch_size = 32
epochs = 20
shuffle = true
)"},
};

}  // namespace

std::string job_defaults(const std::string& kind) {
  for (const KindDefaults& k : kKinds) {
    if (kind != k.kind) continue;
    const std::string q = "\"";
    return "[job]\nkind = " + q + k.kind + q + "\nseed = " + k.seed + "\nprecision = " + q +
           k.precision + q +
           "   # c64 (complex64) or c128 (complex128)\n"
           "threads = 0          # 0: every core\n"
           "fusion = 3           # largest fused gate, in qubits (0: no fusion)\n"
           "backend = \"cpu\"      # cpu, or cuda: one NVIDIA GPU per rank\n"
           "state_ranks = 1      # ranks that hold one state together (a power of two; mpirun)\n" +
           k.sections + "\n[train]\noptimizer = " + q + k.optimizer + q +
           "   # sgd or adam\nlearning_rate = " + k.learning_rate + "\nlr_decay = " + k.lr_decay +
           "   # multiplies the learning rate every lr_decay_epochs epochs\n"
           "lr_decay_epochs = 1\n"
           "adam_beta1 = 0.9\n"
           "adam_beta2 = 0.999\n"
           "adam_epsilon = " +
           k.adam_epsilon +
           "\ncheckpoint_every = 0   # steps between checkpoints; 0: at the end of every epoch\n"
           "keep_checkpoints = 3\n"
           "on_nonfinite = \"stop\"  # a non-finite loss or gradient: stop, or skip the step\n" +
           k.train +
           "\n[noise]               # after every gate, on each of its qubits (0: none)\n"
           "depolarizing = 0.0\n"
           "amplitude_damping = 0.0\n"
           "phase_damping = 0.0\n"
           "readout_error = 0.0   # each measured qubit's bit read flipped with this probability\n"
           "method = \"auto\"       # noisy circuits: auto, density_matrix or trajectories\n"
           "trajectories = 1000\n";
  }
  throw Error("unknown job kind '" + kind + "' (qaoa, qcnn, sonar, hybrid)");
}

const std::vector<std::string>& job_path_keys() {
  static const std::vector<std::string> keys = {"data.graph", "data.path", "model.circuit"};
  return keys;
}

io::Config load_job_config(const std::string& path, const std::vector<std::string>& sets) {
  return io::Config::load(path, sets, job_defaults, job_path_keys());
}

const std::vector<std::string>& execution_only_keys() {
  static const std::vector<std::string> keys = {"job.threads", "train.checkpoint_every",
                                                "train.keep_checkpoints"};
  return keys;
}

std::string config_hash(const io::Config& c) {
  Checksum sum;
  sum.add(c.to_toml(execution_only_keys(), true));
  return sum.hex();
}

WorkingSet working_set(int qubits, int states, int state_ranks, const models::EvalOptions& eval) {
  WorkingSet w;
  w.qubits = qubits;
  w.states = states;
  const int slice_qubits =
      state_ranks > 1 ? qubits - distributed::slice_bits(state_ranks, qubits, "job.state_ranks")
                      : qubits;
  w.state_bytes = cpu::state_bytes(slice_qubits, eval.precision);
  w.bytes = w.state_bytes * static_cast<std::uint64_t>(states) +
            (state_ranks > 1 ? eval.exchange_bytes : 0);
  return w;
}

void check_working_set(const WorkingSet& w, int ranks_here, const models::EvalOptions& eval,
                       const std::string& what) {
  if (eval.backend != Backend::cpu) return;
  check_fits_in_memory(w.bytes * static_cast<std::uint64_t>(ranks_here),
                       what + ": " + std::to_string(w.states) + " state vector(s) of " +
                           std::to_string(w.qubits) + " qubits (" + precision_name(eval.precision) +
                           ") per rank, " + std::to_string(ranks_here) + " rank(s) on this host");
}

namespace {
// Whether the config differentiates noisy circuits by trajectories.
bool by_trajectories(const io::Config& c) {
  return c.get_choice("noise.method", {"auto", "density_matrix", "trajectories"}) == "trajectories";
}
}  // namespace

std::vector<GateNoise> gate_noise(const io::Config& c) {
  std::vector<GateNoise> noise;
  for (const auto& [key, id] : {std::pair{"noise.depolarizing", ChannelId::depolarizing},
                                std::pair{"noise.amplitude_damping", ChannelId::amplitude_damping},
                                std::pair{"noise.phase_damping", ChannelId::phase_damping}}) {
    const double p = c.get_double(key, 0, 1);
    if (p > 0) noise.push_back({id, p});
  }
  // Trajectories differentiate mixtures of unitaries only: said here, by key,
  // before the run directory is made (not by the engine at the first step).
  const bool damped = std::any_of(noise.begin(), noise.end(), [](const GateNoise& n) {
    return n.channel == ChannelId::amplitude_damping;
  });
  if (damped && by_trajectories(c))
    c.fail("noise.method",
           "\"trajectories\" differentiates only channels that are mixtures of unitaries "
           "(depolarizing, phase damping), not noise.amplitude_damping; use \"auto\" or "
           "\"density_matrix\"");
  return noise;
}

models::EvalOptions eval_options(const io::Config& c, int ranks_per_host) {
  models::EvalOptions o;
  o.precision =
      c.get_choice("job.precision", {"c64", "c128"}) == "c64" ? Precision::c64 : Precision::c128;
  const auto t = static_cast<int>(c.get_int("job.threads", 0, 4096));
  o.threads = t > 0 ? t : std::max(1, omp_get_max_threads() / std::max(1, ranks_per_host));
  o.fusion = static_cast<int>(c.get_int("job.fusion", 0, 6));
  o.backend = c.get_choice("job.backend", {"cpu", "cuda"}) == "cuda" ? Backend::cuda : Backend::cpu;
  o.method =
      *method_by_name(c.get_choice("noise.method", {"auto", "density_matrix", "trajectories"}));
  o.trajectories = c.get_int("noise.trajectories", 1, std::int64_t{1} << 40);
  o.seed = static_cast<std::uint64_t>(c.get_int("job.seed", 0, INT64_MAX));
  return o;
}

void use_backend(const models::EvalOptions& o, int local_rank) {
  if (o.backend == Backend::cuda) cuda::select_device(local_rank);
}

TrainSettings train_settings(const io::Config& c) {
  TrainSettings t;
  t.seed = static_cast<std::uint64_t>(c.get_int("job.seed", 0, INT64_MAX));
  t.learning_rate = c.get_double("train.learning_rate", 0, 1e6);
  t.checkpoint_every = c.get_int("train.checkpoint_every", 0, INT64_MAX);
  t.keep_checkpoints = static_cast<int>(c.get_int("train.keep_checkpoints", 1, 1000000));
  t.skip_nonfinite = c.get_choice("train.on_nonfinite", {"stop", "skip"}) == "skip";
  if (c.kind() == "qaoa") {
    t.steps = c.get_int("train.steps", 0, 1000000000);
    return t;
  }
  t.epochs = static_cast<int>(c.get_int("train.epochs", 1, 1000000));
  t.batch_size = static_cast<std::size_t>(c.get_int("train.batch_size", 1, 1 << 30));
  t.shuffle = c.get_bool("train.shuffle");
  t.lr_decay = c.get_double("train.lr_decay", 0, 1e6);
  t.lr_decay_epochs = static_cast<int>(c.get_int("train.lr_decay_epochs", 1, 1000000));
  return t;
}

ml::OptimizerConfig optimizer_config(const io::Config& c) {
  ml::OptimizerConfig o;
  o.kind = c.get_choice("train.optimizer", {"sgd", "adam"});
  o.beta1 = c.get_double("train.adam_beta1", 0, 0.999999);
  o.beta2 = c.get_double("train.adam_beta2", 0, 0.999999999);
  o.epsilon = c.get_double("train.adam_epsilon", 1e-300, 1);
  return o;
}

namespace {

// "units:activation" layers of model.encoder / model.head.
std::vector<models::LayerSpec> layers(const io::Config& c, const std::string& key) {
  std::vector<models::LayerSpec> out;
  for (const std::string& text : c.get_string_list(key)) {
    const auto colon = text.find(':');
    models::LayerSpec l;
    const std::string units = text.substr(0, colon);
    char* end = nullptr;
    const long v = std::strtol(units.c_str(), &end, 10);
    if (units.empty() || *end != '\0' || v < 1 || v > 100000)
      c.fail(key, "'" + text + "': expected units:activation, e.g. 8:tanh");
    l.units = static_cast<int>(v);
    if (colon != std::string::npos)
      l.activation = ml::parse_activation(text.substr(colon + 1), c.origin(key) + ": " + key);
    out.push_back(l);
  }
  return out;
}

// Trajectories differentiate mixtures of unitaries only: a circuit's other
// channels (literal parameters, as noise pragmas have) are refused by key,
// before the run directory is made.
void refuse_trajectory_gradients(const io::Config& c, const Circuit& circuit,
                                 const std::string& path) {
  for (const Operation& op : circuit.ops()) {
    const bool literal = std::none_of(op.params.begin(), op.params.end(),
                                      [](const ParamExpr& p) { return p.slot >= 0; });
    if (op.is_channel() && literal && !branches_of(op, {}).mixture())
      c.fail("noise.method",
             "\"trajectories\" differentiates only channels that are mixtures of "
             "unitaries; " +
                 path + " has " + describe(op) + "; use \"auto\" or \"density_matrix\"");
  }
}
}  // namespace

void make_hybrid_job(const io::Config& c, std::uint64_t seed, SupervisedJob& job) {
  const std::string data = c.get_string("data.path");
  if (data.empty()) c.fail("data.path", "needs the path of a CSV, .npy or HDF5 file");
  const std::string circuit = c.get_string("model.circuit");
  if (circuit.empty()) c.fail("model.circuit", "needs the path of an OpenQASM 3 file");
  ml::LabelRule rule;
  rule.positive = c.get_string("data.positive");
  rule.classes = c.get_string_list("data.classes");
  if (c.get_bool("data.regression")) {
    if (job.loss.categorical()) c.fail("data.regression", "a regression cannot use the loss cce");
    rule.kind = ml::LabelRule::Kind::kRegression;
  } else if (job.loss.categorical()) {
    rule.kind = ml::LabelRule::Kind::kClasses;
  } else if (!rule.classes.empty()) {
    c.fail("data.classes", "only for the loss cce (one output per class)");
  }
  const int label = static_cast<int>(c.get_int("data.label", -100000, 100000));
  const std::string x_key = c.get_string("data.features_dataset");
  const std::string y_key = c.get_string("data.labels_dataset");
  const ml::Dataset all = io::read_via_local(data, "data.path", [&](const std::string& local) {
    return io::is_hdf5_path(data)
               ? ml::label_table(io::read_hdf5_table(local, x_key, y_key), rule, &job.classes)
               : ml::read_table(local, label, rule, &job.classes);
  });
  Rng rng(seed);
  const ml::Dataset shuffled =
      c.get_bool("data.shuffle") ? all.subset(rng.permutation(all.size())) : all;
  const double frac = c.get_double("data.test_fraction", 0, 0.99);
  const auto test = static_cast<std::size_t>(std::llround(frac * static_cast<double>(all.size())));
  auto [train, held] = shuffled.split(all.size() - test);
  const int features = static_cast<int>(train.x.empty() ? 0 : train.x[0].size());
  std::optional<ml::Scaling> scaling;
  if (c.get_bool("data.standardize")) scaling = ml::standardize(train, held);
  job.read_examples = [scaling, features, label, x_key](const std::string& path) {
    std::vector<std::vector<double>> x =
        io::read_via_local(path, "--data", [&](const std::string& local) {
          if (!io::is_hdf5_path(path)) return ml::read_features(local, features, label);
          std::vector<std::vector<double>> h = io::read_hdf5_table(local, x_key, "").x;
          if (h[0].size() != static_cast<std::size_t>(features))
            throw Error(path + ": dataset '" + x_key + "' has " + std::to_string(h[0].size()) +
                        " features; the model takes " + std::to_string(features));
          return h;
        });
    if (scaling)
      for (auto& row : x) scaling->apply(row);
    return x;
  };
  models::QasmHybridSpec spec;
  spec.program = io::read_via_local(circuit, "model.circuit",
                                    [](const std::string& local) { return read_qasm_file(local); });
  spec.source = circuit;
  if (spec.program.inputs.empty()) c.fail("model.circuit", circuit + " declares no inputs");
  if (by_trajectories(c)) refuse_trajectory_gradients(c, spec.program.circuit, circuit);
  spec.weights = c.get_string_list("model.weights");
  spec.data_inputs = c.get_string_list("model.data_inputs");
  const std::vector<std::string> readouts = c.get_string_list("model.readouts");
  for (std::size_t k = 0; k < readouts.size(); ++k) {
    spec.readouts.push_back(parse_pauli_sum(
        readouts[k], c.origin("model.readouts") + ": model.readouts " + std::to_string(k + 1)));
  }
  spec.encoder = layers(c, "model.encoder");
  spec.head = layers(c, "model.head");
  spec.features = features;
  spec.outputs = job.loss.categorical() ? static_cast<int>(job.classes.size()) : 1;
  spec.glorot = c.get_choice("model.dense_init", {"torch", "glorot"}) == "glorot";
  spec.init_low = c.get_double("model.init_low", -1e6, 1e6);
  spec.init_high = c.get_double("model.init_high", spec.init_low, 1e6);
  job.model = std::make_unique<models::QasmHybrid>(std::move(spec));
  job.train = std::move(train);
  job.test = std::move(held);
}

SupervisedJob make_supervised_job(const io::Config& c) {
  SupervisedJob job;
  const std::uint64_t seed = train_settings(c).seed;
  job.loss =
      ml::Loss::parse(c.get_choice("train.loss", {"mse", "margin_ranking", "hinge", "bce", "cce"}),
                      c.get_double("train.margin", -1e9, 1e9), "train.loss");
  if (job.loss.categorical() && c.kind() != "hybrid")
    c.fail("train.loss", "cce needs one output per class: a hybrid job");
  if (c.kind() == "qcnn") {
    const auto n = static_cast<int>(c.get_int("data.qubits", 2, kMaxQubits));
    const auto rounds = static_cast<int>(c.get_int("data.rounds", 1, 1000000));
    const double frac = c.get_double("data.train_fraction", 0, 1);
    const std::string variant = c.get_choice("model.variant", {"hybrid", "pure"});
    job.model = std::make_unique<models::Qcnn>(
        n, variant == "hybrid" ? models::QcnnVariant::kHybrid : models::QcnnVariant::kPure,
        static_cast<int>(c.get_int("model.hidden", 1, 4096)));
    Rng rng(seed);
    const ml::Dataset all = ml::qcnn_excitations(n, rounds, rng);
    auto [train, test] = all.split(static_cast<std::size_t>(std::llround(frac * all.size())));
    job.train = std::move(train);
    job.test = std::move(test);
  } else if (c.kind() == "sonar") {
    const std::string path = c.get_string("data.path");
    if (path.empty()) c.fail("data.path", "needs the path of sonar.all-data");
    const ml::Dataset all = io::read_via_local(
        path, "data.path", [](const std::string& local) { return ml::read_sonar(local); });
    const auto rows = static_cast<std::size_t>(c.get_int("data.rows", 1, 1 << 30));
    if (rows > all.size())
      c.fail("data.rows",
             std::to_string(rows) + " rows asked, the file has " + std::to_string(all.size()));
    const double frac = c.get_double("data.test_fraction", 0, 0.99);
    Rng rng(seed);
    std::vector<std::size_t> perm = rng.permutation(all.size());
    perm.resize(rows);
    const ml::Dataset kept = all.subset(perm);
    const auto test = static_cast<std::size_t>(std::llround(frac * static_cast<double>(rows)));
    auto [train, held] = kept.split(rows - test);
    job.train = std::move(train);
    job.test = std::move(held);
    if (job.train.size() == 0) c.fail("data.test_fraction", "leaves no training examples");
    job.model = std::make_unique<models::DressedClassifier>(
        static_cast<int>(c.get_int("model.wires", 4, kMaxQubits)),
        static_cast<int>(job.train.x.at(0).size()));
  } else if (c.kind() == "hybrid") {
    make_hybrid_job(c, seed, job);
  } else {
    throw Error("job kind '" + c.kind() + "' is not a supervised job");
  }
  if (job.train.size() == 0) {
    const char* key = c.kind() == "qcnn" ? "data.train_fraction" : "data.test_fraction";
    c.fail(key, "leaves no training examples");
  }
  job.model->add_gate_noise(gate_noise(c));
  job.model->add_readout_error(c.get_double("noise.readout_error", 0, 1));
  return job;
}

std::unique_ptr<models::QaoaMaxCut> make_qaoa_job(const io::Config& c) {
  const std::string path = c.get_string("data.graph");
  if (path.empty()) c.fail("data.graph", "needs the path of a graph file");
  const int nodes = static_cast<int>(c.get_int("data.nodes", 0, kMaxQubits));
  ml::Graph g = io::read_via_local(
      path, "data.graph", [&](const std::string& local) { return ml::read_graph(local, nodes); });
  auto model = std::make_unique<models::QaoaMaxCut>(
      std::move(g), static_cast<int>(c.get_int("model.depth", 1, 1000)));
  model->add_gate_noise(gate_noise(c));
  model->add_readout_error(c.get_double("noise.readout_error", 0, 1));
  return model;
}

}  // namespace qmlsim::train
