// qmlsim train CONFIG and qmlsim infer RUN_DIR: the reference jobs end to end.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "comm/comm.h"
#include "core/error.h"
#include "io/object_store.h"
#include "train/jobs.h"
#include "train/plan.h"
#include "train/stop_signals.h"
#include "train/trainer.h"

namespace qmlsim::cli {
namespace {

const std::vector<OptionSpec> kTrainSpecs = {
    {"--set", "KEY=VALUE", "override a config key, e.g. --set train.epochs=10", true},
    {"--run-dir", "DIR", "run directory (default: runs/<config name>)"},
    {"--resume", "", "continue from the newest checkpoint in the run directory"},
    {"--allow-config-change", "",
     "with --resume: continue from checkpoints of another config (e.g. a changed learning rate)"},
    {"--max-steps", "N", "stop after N optimizer steps (with a checkpoint); --resume continues"},
    {"--quiet", "", "no progress output"},
    {"--trace", "",
     "write RUN_DIR/trace.json: a timeline of every rank (Perfetto, chrome://tracing)"},
    {"--expect-ranks", "N", "refuse to start unless the job has exactly N MPI ranks"},
    {"--backend", "cpu|cuda", "shorthand for --set job.backend=...: cuda takes one GPU per rank"},
    {"--help", "", "show this help"},
};

constexpr const char* kTrainUsage =
    "qmlsim train CONFIG.toml [--set KEY=VALUE ...] [--run-dir DIR] [--max-steps N]\n"
    "       [--resume [--allow-config-change]] [--quiet] [--trace] [--backend cpu|cuda]\n"
    "mpirun -np N qmlsim train CONFIG.toml ... [--expect-ranks N]\n\n"
    "Jobs (job.kind): qaoa, qcnn, sonar, and hybrid (your own OpenQASM 3 circuit with dense\n"
    "layers: docs/hybrid-models.md); see examples/*.toml for the keys and their defaults.\n"
    "The run directory receives config.toml (resolved), metrics.jsonl, checkpoints/,\n"
    "weights.h5 and result.json (QAOA also graph.svg).";

const std::vector<OptionSpec> kInferSpecs = {
    {"--weights", "FILE", "weights file (default: RUN_DIR/weights.h5)"},
    {"--config", "FILE", "config file (default: RUN_DIR/config.toml)"},
    {"--set", "KEY=VALUE", "override a config key", true},
    {"--backend", "cpu|cuda", "shorthand for --set job.backend=..."},
    {"--data", "FILE", "hybrid jobs: predict the rows of this file (CSV, .npy or HDF5)"},
    {"--out", "FILE", "with --data: write the predictions there (CSV), not to stdout"},
    {"--help", "", "show this help"},
};

constexpr const char* kInferUsage =
    "qmlsim infer RUN_DIR | qmlsim infer --weights FILE --config FILE [--set KEY=VALUE ...]\n"
    "       [--backend cpu|cuda] [--data FILE [--out FILE]]\n\n"
    "QCNN, Sonar and hybrid: predictions and labels of the test split, mean squared error,\n"
    "accuracy. Hybrid with --data FILE [--out predictions.csv]: one prediction and class\n"
    "(+1 or -1; with several classes, each class's probability) per row of FILE, prepared\n"
    "(scaled) as the training data were.\n"
    "QAOA: the cost, the most probable cut and the optimum of the saved parameters.";

const std::vector<OptionSpec> kPlanSpecs = {
    {"--set", "KEY=VALUE", "override a config key", true},
    {"--ranks", "N", "MPI ranks of the planned run (default 1)"},
    {"--ranks-per-node", "R", "ranks sharing one node's memory and cores (default 1)"},
    {"--threads", "T", "threads per rank (default: this machine's cores / ranks per node)"},
    {"--backend", "cpu|cuda", "where the run would execute (default: the config's job.backend)"},
    {"--node-hour-price", "P", "price of one node for one hour: adds the run's cost"},
    {"--json", "", "print one JSON object"},
    {"--help", "", "show this help"},
};

constexpr const char* kPlanUsage =
    "qmlsim plan CONFIG.toml [--set KEY=VALUE ...] [--ranks N] [--ranks-per-node R] "
    "[--threads T] [--backend cpu|cuda] [--node-hour-price P] [--json]\n\n"
    "Memory of one state and of a rank's working set, whether it fits this machine, and the\n"
    "time per step, epoch and run, calibrated by running the job's own circuit here.";

}  // namespace

int plan_command(const std::vector<std::string>& argv) {
  const Args args(argv, kPlanSpecs);
  if (args.has("--help")) {
    std::cout << format_help(kPlanUsage, kPlanSpecs, "docs/observability.md");
    return 0;
  }
  if (args.positionals().size() != 1)
    throw Error("expected exactly one config file (see qmlsim plan --help)");
  require_file_path(args.positionals()[0], "config");
  const io::Config config = train::load_job_config(args.positionals()[0], args.all("--set"));
  train::PlanOptions o;
  o.ranks = static_cast<int>(args.get_int("--ranks", 1, 1, 1 << 20));
  o.ranks_per_node = static_cast<int>(args.get_int("--ranks-per-node", 1, 1, 4096));
  o.threads = static_cast<int>(args.get_int("--threads", 0, 1, 4096));
  o.backend = args.get_choice("--backend", "", {"cpu", "cuda"});
  if (const auto price = args.get("--node-hour-price")) {
    char* end = nullptr;
    o.node_hour_price = std::strtod(price->c_str(), &end);
    if (end == price->c_str() || *end != '\0' || !(o.node_hour_price >= 0))
      throw Error("--node-hour-price: '" + *price + "' is not a non-negative number");
  }
  const train::Plan plan = train::make_plan(config, o);
  if (args.has("--json"))
    train::print_plan_json(plan, std::cout);
  else
    train::print_plan(plan, o, std::cout);
  return 0;
}

namespace {

// The --set overrides, with --backend X as job.backend=X after them.
std::vector<std::string> sets_with_backend(const Args& args) {
  std::vector<std::string> sets = args.all("--set");
  if (args.has("--backend"))
    sets.push_back("job.backend=\"" + args.get_choice("--backend", "cpu", {"cpu", "cuda"}) + "\"");
  return sets;
}

}  // namespace

int train_command(const std::vector<std::string>& argv) {
  const Args args(argv, kTrainSpecs);
  if (args.has("--help")) {
    std::cout << format_help(kTrainUsage, kTrainSpecs, "docs/training.md");
    return 0;
  }
  if (args.positionals().size() != 1)
    throw Error("expected exactly one config file (see qmlsim train --help)");
  const std::string config_path = args.positionals()[0];
  require_file_path(config_path, "config");
  if (const auto dir = args.get("--run-dir")) {
    if (dir->empty()) throw Error("--run-dir: an empty path (give a directory)");
    io::require_path_or_s3_url(*dir, "--run-dir");
  }
  const io::Config config = train::load_job_config(config_path, sets_with_backend(args));
  const comm::Comm& world = comm::Comm::world();
  if (args.has("--expect-ranks")) {
    const std::int64_t want = args.get_int("--expect-ranks", 1, 1, 1 << 20);
    if (want != world.size())
      throw Error(
          "--expect-ranks " + std::to_string(want) + ": this job has " +
          std::to_string(world.size()) +
          (world.size() == 1 ? " rank (started as separate processes, not by mpirun?)" : " ranks"));
  }
  train::TrainOptions options;
  options.run_dir =
      args.get("--run-dir").value_or("runs/" + std::filesystem::path(config_path).stem().string());
  options.resume = args.has("--resume");
  options.allow_config_change = args.has("--allow-config-change");
  if (options.allow_config_change && !options.resume)
    throw Error("--allow-config-change: only with --resume");
  options.max_steps = args.get_int("--max-steps", -1, 0, INT64_MAX);
  options.quiet = args.has("--quiet");
  options.trace = args.has("--trace");
  const train::StopSignals preemption;  // SIGTERM/SIGINT: a checkpoint, then exit 143/130
  return train::train(config, options, std::cout);
}

int infer_command(const std::vector<std::string>& argv) {
  const Args args(argv, kInferSpecs);
  if (args.has("--help")) {
    std::cout << format_help(kInferUsage, kInferSpecs, "docs/training.md");
    return 0;
  }
  if (args.positionals().size() > 1) throw Error("expected at most one run directory");
  std::string dir = args.positionals().empty() ? "" : args.positionals()[0];
  io::require_path_or_s3_url(dir, "run directory");
  while (io::is_s3_url(dir) && dir.size() > 5 && dir.back() == '/') dir.pop_back();
  for (const char* flag : {"--weights", "--config", "--data", "--out"})
    if (args.has(flag)) io::require_path_or_s3_url(*args.get(flag), flag);
  if (dir.empty() && (!args.has("--weights") || !args.has("--config")))
    throw Error("give a run directory, or both --weights and --config");
  // A run in a bucket, and flags naming objects, are read from local copies.
  const std::string config_path = args.get("--config").value_or(dir + "/config.toml");
  const io::Config config =
      io::read_via_local(config_path, args.has("--config") ? "--config" : "run directory",
                         [&](const std::string& local) {
                           return train::load_job_config(local, sets_with_backend(args));
                         });
  const std::string weights =
      io::fetch_to_local(args.get("--weights").value_or(dir + "/weights.h5"),
                         args.has("--weights") ? "--weights" : "run directory");
  if (!comm::Comm::world().root()) return 0;  // under mpirun, rank 0 alone answers
  if (args.has("--out") && !args.has("--data")) throw Error("--out: needs --data");
  const std::string out = args.get("--out").value_or("");
  // An --out object is written to a local file first, then sent whole.
  const std::string local_out = io::is_s3_url(out) ? io::scratch_path("predictions") : out;
  train::infer(config, weights, std::cout, args.get("--data").value_or(""), local_out);
  if (local_out != out) io::object_store().put_file(io::parse_s3_url(out, "--out"), local_out);
  return 0;
}

}  // namespace qmlsim::cli
