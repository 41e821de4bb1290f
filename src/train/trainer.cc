#include "train/trainer.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <sstream>

#include "comm/comm.h"
#include "core/checksum.h"
#include "core/error.h"
#include "core/json.h"
#include "core/trace.h"
#include "distributed/state.h"
#include "io/checkpoint.h"
#include "io/svg.h"
#include "ml/optimizer.h"
#include "train/divergence.h"
#include "train/jobs.h"
#include "train/outputs.h"
#include "train/progress.h"
#include "train/run_dir.h"
#include "train/stop_signals.h"

namespace qmlsim::train {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A new run's id: 16 random hex digits.
std::string new_run_id() {
  std::random_device device;
  Checksum sum;
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t r = device();
    sum.add(&r, sizeof r);
  }
  return sum.hex();
}

// Error unless the run directory's config.toml (when there is one) holds this
// config, the execution-only keys aside.
void check_saved_config(const io::Config& config, const std::string& saved_path) {
  const std::string saved = load_job_config(saved_path, {}).to_toml(execution_only_keys());
  const std::string now = config.to_toml(execution_only_keys());
  if (saved == now) return;
  std::istringstream a(saved), b(now);
  std::string la, lb;
  while (std::getline(a, la) && std::getline(b, lb) && la == lb) {
  }
  std::ifstream file(saved_path);
  int line = 1;
  for (std::string l; std::getline(file, l) && l != la;) ++line;
  throw Error(saved_path + ":" + std::to_string(line) + ": --resume with another config ('" + la +
              "' there, '" + lb + "' now); add --allow-config-change to continue knowingly");
}

// The newest checkpoint a resumed run can start from: damaged ones and ones
// whose name and step disagree are skipped with a warning; one of another
// config is an Error unless the options allow a config change.
std::optional<io::TrainingState> newest_checkpoint(const io::Config& config, const RunDir& dir,
                                                   const ml::ParamLayout& layout,
                                                   const TrainOptions& options, std::ostream& out,
                                                   io::RunIdentity* id) {
  const std::vector<CheckpointFile> ckpts = dir.checkpoints();
  std::string newest_error;
  for (const CheckpointFile& c : ckpts) {
    io::RunIdentity found;
    io::TrainingState s;
    try {
      s = io::load_checkpoint(c.path, config.kind(), layout, &found);
      if (s.step != c.step)
        throw Error(c.path + ": names step " + std::to_string(c.step) + " but holds step " +
                    std::to_string(s.step));
    } catch (const Error& e) {
      if (newest_error.empty()) newest_error = e.what();
      out << "warning: " << e.what() << "; trying the checkpoint before it\n";
      continue;
    }
    if (found.config_hash.empty()) {
      out << "warning: " << c.path << " records no run identity (written by an earlier qmlsim); "
          << "resuming it as a checkpoint of this config\n";
    } else if (found.config_hash != id->config_hash && !options.allow_config_change) {
      throw Error(c.path + ": a checkpoint of another config (config hash " + found.config_hash +
                  ", this config " + id->config_hash +
                  "); resume with the config it was written with, or add "
                  "--allow-config-change to continue from it knowingly");
    }
    if (!found.run_id.empty()) id->run_id = found.run_id;
    if (!options.quiet)
      out << "Resuming run " << id->run_id << " from " << c.path << " (step " << s.step << ")\n";
    return s;
  }
  if (!ckpts.empty())  // never start afresh over a run's checkpoints (pruning would take them)
    throw Error(dir.location() + ": --resume: none of its " + std::to_string(ckpts.size()) +
                " checkpoint(s) can be read (the newest: " + newest_error +
                "); move them aside to start afresh in this directory");
  return std::nullopt;
}

// Checks the run directory against this config; returns the state to start
// from and sets the run's identity (a resumed run keeps its id).
io::TrainingState start_state(const io::Config& config, const RunDir& dir,
                              const ml::ParamLayout& layout, const TrainOptions& options,
                              std::ostream& out, bool* resumed, io::RunIdentity* id) {
  *resumed = false;
  *id = {config.kind(), config_hash(config), new_run_id()};
  if (!options.resume && !dir.checkpoints().empty())
    throw Error(dir.location() +
                ": already holds checkpoints of a run; add --resume to continue it, or choose "
                "another --run-dir");
  if (!options.resume) return {};
  const std::string saved_config = dir.file("config.toml");
  if (std::filesystem::exists(saved_config) && !options.allow_config_change)
    check_saved_config(config, saved_config);
  if (std::optional<io::TrainingState> s =
          newest_checkpoint(config, dir, layout, options, out, id)) {
    *resumed = true;
    return std::move(*s);
  }
  if (!options.quiet) out << "No checkpoint to resume from: starting afresh\n";
  return {};
}

// The training state as bytes, to broadcast from rank 0 (which alone reads
// checkpoints) to the other ranks.
class Bytes {
 public:
  template <class T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const char*>(&v);
    data.append(p, sizeof v);
  }
  void put(const std::vector<double>& v) {
    put(v.size());
    data.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
  }
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, data.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  std::vector<double> get_vector() {
    std::vector<double> v(get<std::size_t>());
    if (!v.empty()) std::memcpy(v.data(), data.data() + at, v.size() * sizeof(double));
    at += v.size() * sizeof(double);
    return v;
  }
  std::string data;
  std::size_t at = 0;
};

void share_state(const comm::Comm& world, io::TrainingState& s, bool& resumed) {
  if (world.size() == 1) return;
  Bytes b;
  if (world.root()) {
    b.put(resumed);
    b.put(s.params);
    b.put(s.optimizer.size());
    for (const auto& [name, v] : s.optimizer) {
      b.put(name.size());
      b.data += name;
      b.put(v);
    }
    for (std::uint64_t w : s.rng) b.put(w);
    b.put(s.epoch);
    b.put(s.step);
    b.put(s.step_in_epoch);
    b.put(s.sums);
  }
  world.broadcast(b.data);
  if (world.root()) return;
  resumed = b.get<bool>();
  s.params = b.get_vector();
  s.optimizer.clear();
  for (auto n = b.get<std::size_t>(); n > 0; --n) {
    const auto len = b.get<std::size_t>();
    const std::string name = b.data.substr(b.at, len);
    b.at += len;
    s.optimizer[name] = b.get_vector();
  }
  for (std::uint64_t& w : s.rng) w = b.get<std::uint64_t>();
  s.epoch = b.get<std::int64_t>();
  s.step = b.get<std::int64_t>();
  s.step_in_epoch = b.get<std::int64_t>();
  s.sums = b.get_vector();
}

// The world as data-parallel groups of `state_ranks` consecutive ranks, each
// group holding one example's state at a time (job.state_ranks; 1: every rank
// is its own group and holds whole states).
struct Groups {
  int count = 1, index = 0;
  std::unique_ptr<comm::Comm> state;  // this rank's state group, when state_ranks > 1
  bool leader = true;                 // rank 0 of its state group: contributes the rows
};

Groups make_groups(const comm::Comm& world, const io::Config& config) {
  const auto ranks = static_cast<int>(config.get_int("job.state_ranks", 1, 1 << 20));
  if (world.size() % ranks != 0)
    config.fail("job.state_ranks", std::to_string(ranks) +
                                       " ranks per state do not divide the job's " +
                                       std::to_string(world.size()) + " ranks");
  Groups g;
  g.count = world.size() / ranks;
  g.index = world.rank() / ranks;
  if (ranks > 1) {
    g.state = world.split(g.index);
    g.leader = g.state->root();
  }
  return g;
}

// This group's contiguous share [begin, end) of n items.
std::pair<std::size_t, std::size_t> my_share(const Groups& groups, std::size_t n) {
  const auto r = static_cast<std::size_t>(groups.index), p = static_cast<std::size_t>(groups.count);
  return {n * r / p, n * (r + 1) / p};
}

// Every group's values in group order, gathered from the group leaders.
std::vector<double> gather_groups(const comm::Comm& world, const Groups& groups,
                                  const std::vector<double>& mine) {
  return world.allgather(groups.leader ? std::span<const double>(mine) : std::span<const double>());
}

// The stop signal every rank of `ranks` agrees on (the largest any received;
// 0: none), so that ranks computing together stop at the same step (null:
// this rank alone).
int agreed_stop_signal(const comm::Comm* ranks) {
  const int mine = StopSignals::received();
  if (!ranks || ranks->size() == 1) return mine;
  const std::vector<double> all = ranks->allgather(std::vector<double>{static_cast<double>(mine)});
  return static_cast<int>(*std::max_element(all.begin(), all.end()));
}

// The line a run stopped early prints, and its exit status. A stop by a signal
// is said by the root rank even under --quiet (on stderr then), so a cluster's
// log shows more than an exit status.
int stopped(int signal, std::int64_t steps_here, std::int64_t step, bool quiet, bool root,
            std::ostream& out) {
  if (signal && root)
    (quiet ? std::cerr : out) << (quiet ? "" : "\n") << "Stopped by " << StopSignals::name(signal)
                              << " before step " << step + 1
                              << ": checkpoint written; continue with --resume" << std::endl;
  else if (!signal && !quiet)
    out << "\nStopped after " << steps_here << " steps (--max-steps); continue with --resume\n";
  return signal ? 128 + signal : 0;
}

void save(const RunDir& dir, const io::RunIdentity& id, const ml::ParamLayout& layout,
          const io::TrainingState& s, const ml::Optimizer& opt, int keep, double train_time_s) {
  io::TrainingState c = s;
  c.optimizer = opt.state();
  c.train_time_s = train_time_s;
  io::save_checkpoint(dir.checkpoint_path(s.step), id, layout, c);
  dir.prune_checkpoints(keep);
  dir.sync();  // a bucket: the logs so far, then the checkpoint
}

// Ranks that hold one state together (job.state_ranks).
int state_ranks(const Groups& groups) { return groups.state ? groups.state->size() : 1; }

// The evaluation options of this rank: its backend made ready, its state
// group's processes when states are spread over several (job.state_ranks).
models::EvalOptions group_eval_options(const io::Config& config, const comm::Comm& world,
                                       const Groups& groups, int num_qubits) {
  models::EvalOptions eval = eval_options(config, world.local_size());
  use_backend(eval, world.local_rank());
  if (groups.state) {
    if (eval.backend != Backend::cpu) config.fail("job.state_ranks", "needs backend = \"cpu\"");
    distributed::slice_bits(groups.state->size(), num_qubits, "job.state_ranks");
    eval.state_group = groups.state.get();
  }
  return eval;
}

// True (on every rank) when a resumed run has nothing left to train and has
// its result.json: then what it wrote stays as it is. `done`: the shared
// state is past the last epoch; `dir`: rank 0's run directory.
bool finished_run(const comm::Comm& world, const RunDir* dir, bool done,
                  const TrainOptions& options, std::ostream& out) {
  std::vector<double> finished = {
      done && dir && std::filesystem::exists(dir->file("result.json")) ? 1.0 : 0.0};
  world.broadcast(finished);
  if (finished[0] != 0 && dir && !options.quiet)
    out << "The run has finished; its results: " << dir->location("result.json") << "\n";
  return finished[0] != 0;
}

// The sums over a step's m rows (examples order[b0..b0+m)) in global order:
// (loss, correct predictions); grad becomes the mean gradient; readouts, when
// given, collect each row's readout values.
std::pair<double, double> sum_rows(const models::HybridModel& model, const ml::Dataset& train,
                                   const std::vector<double>& rows,
                                   const std::vector<std::size_t>& order, std::size_t b0,
                                   std::size_t m, std::vector<double>& grad,
                                   std::vector<std::vector<double>>* readouts) {
  const std::size_t width = model.row_width(), grad_at = model.grad_offset();
  const std::size_t num_outputs = model.outputs(), readout_at = model.readout_offset();
  double loss = 0, correct = 0;
  std::fill(grad.begin(), grad.end(), 0.0);
  for (std::size_t i = 0; i < m; ++i) {
    const double* row = &rows[i * width];
    loss += row[models::HybridModel::kLossOffset];
    correct += ml::correct(
        std::span<const double>(row + models::HybridModel::kPredictionOffset, num_outputs),
        train.y[order[b0 + i]]);
    for (std::size_t k = 0; readouts && k < readouts->size(); ++k)
      (*readouts)[k].push_back(row[readout_at + k]);
    for (std::size_t k = 0; k < grad.size(); ++k) grad[k] += row[grad_at + k];
  }
  for (double& g : grad) g /= static_cast<double>(m);
  return {loss, correct};
}

// The run's one-line description.
void print_banner(std::ostream& out, const io::Config& config, const SupervisedJob& job,
                  const comm::Comm& world, const Groups& groups, const models::EvalOptions& eval) {
  const models::HybridModel& model = *job.model;
  out << config.kind() << ": " << model.layout().size() << " parameters, " << model.num_qubits()
      << " qubits, " << job.train.size() << " training and " << job.test.size()
      << " test examples, " << world.size() << (world.size() == 1 ? " rank, " : " ranks, ")
      << (groups.state ? std::to_string(groups.count) + " state groups of " +
                             std::to_string(groups.state->size()) + ", "
                       : std::string())
      << eval.threads << " threads" << (world.size() == 1 ? ", " : " per rank, ")
      << precision_name(eval.precision) << "\n";
}

// val_loss and val_accuracy over the test split (each group predicts its
// share), or nothing without one.
std::vector<std::pair<std::string, double>> validation_metrics(const SupervisedJob& job,
                                                               const comm::Comm& world,
                                                               const Groups& groups,
                                                               std::span<const double> params,
                                                               const models::EvalOptions& eval) {
  if (job.test.size() == 0) return {};
  const TraceSpan span("evaluation");
  const std::size_t num_outputs = job.model->outputs();
  const auto [v0, v1] = my_share(groups, job.test.size());
  std::vector<std::size_t> mine(v1 - v0);
  std::iota(mine.begin(), mine.end(), v0);
  const std::vector<double> p =
      gather_groups(world, groups, job.model->predict(params, job.test, mine, eval));
  double vl = 0, va = 0;
  for (std::size_t i = 0; i < job.test.size(); ++i) {
    const std::span<const double> pi(&p[i * num_outputs], num_outputs);
    vl += job.loss.value(pi, job.test.y[i]);
    va += ml::correct(pi, job.test.y[i]);
  }
  const auto tests = static_cast<double>(job.test.size());
  return {{"val_loss", vl / tests}, {"val_accuracy", va / tests}};
}

// The epoch's readout values as TensorBoard histograms ("readouts/Z4"); the
// values are moved out.
std::vector<std::pair<std::string, std::vector<double>>> readout_histograms(
    const models::HybridModel& model, std::vector<std::vector<double>>& values) {
  std::vector<std::pair<std::string, std::vector<double>>> histograms;
  for (std::size_t k = 0; k < values.size(); ++k) {
    std::string name = model.readouts()[k].to_string();  // "1*Z4" -> "Z4"
    if (name.rfind("1*", 0) == 0) name = name.substr(2);
    histograms.push_back({"readouts/" + name, std::move(values[k])});
    values[k].clear();
  }
  return histograms;
}

// weights.h5 and result.json of a finished supervised run.
void write_result(const RunDir& dir, const io::Config& config, const ml::ParamLayout& layout,
                  const io::TrainingState& s, int epochs, int ranks,
                  const std::vector<std::pair<std::string, double>>& final_metrics,
                  double train_time_s) {
  io::save_weights(dir.file("weights.h5"), config.kind(), layout, s.params);
  std::ostringstream os;
  JsonWriter w(os);
  w.begin_object().key("job").value(config.kind()).key("epochs").value(epochs);
  w.key("steps").value(static_cast<long long>(s.step)).key("ranks").value(ranks);
  for (const auto& [k, v] : final_metrics) w.key(k).value(v);
  w.key("train_time_s").value(train_time_s).key("weights").value("weights.h5");
  w.end_object();
  dir.write_text("result.json", os.str() + "\n");
}

// A supervised step's metrics line (loss and accuracy per example), or the
// record that it was skipped (train.on_nonfinite).
Metrics step_metrics(bool updated, double loss, double correct, std::size_t m, double lr, double dt,
                     double comm_s) {
  if (!updated) return {{"skipped_nonfinite", 1}, {"step_time_s", dt}};
  const double md = static_cast<double>(m);
  return {{"loss", loss / md}, {"accuracy", correct / md}, {"learning_rate", lr},
          {"step_time_s", dt}, {"allgather_s", comm_s},    {"examples_per_s", md / dt}};
}

// A supervised run's first state: the model's initial parameters from the seed.
io::TrainingState fresh_state(const models::HybridModel& model, std::uint64_t seed) {
  io::TrainingState s;
  Rng rng(seed);
  s.params.assign(model.layout().size(), 0.0);
  model.init(s.params, rng);
  s.rng = rng.state();
  s.sums.assign(3, 0.0);
  return s;
}

// Error before any work when the job cannot run here: noisy circuits over
// several ranks, or states (density matrices when noisy) that do not fit.
void check_fits(const io::Config& config, const models::HybridModel& model, std::size_t batch,
                const Groups& groups, const models::EvalOptions& eval, const comm::Comm& world) {
  if (model.has_channels() && groups.state)
    config.fail("job.state_ranks",
                "must be 1 for noisy circuits (one process holds each density matrix)");
  const int in_flight = model.one_example_per_thread(batch, eval) ? eval.threads : 1;
  check_working_set(working_set(model.state_qubits(eval), 2 * in_flight, state_ranks(groups), eval),
                    world.local_size(), eval, "train");
}

int train_supervised(const io::Config& config, const TrainOptions& options, std::ostream& out) {
  const comm::Comm& world = comm::Comm::world();
  const bool root = world.root();
  const SupervisedJob job = make_supervised_job(config);
  const models::HybridModel& model = *job.model;
  const ml::ParamLayout& layout = model.layout();
  const Groups groups = make_groups(world, config);
  const models::EvalOptions eval = group_eval_options(config, world, groups, model.num_qubits());
  const TrainSettings t = train_settings(config);
  const int epochs = t.epochs, keep = t.keep_checkpoints;
  const std::size_t batch = t.batch_size;
  check_fits(config, model, batch, groups, eval, world);
  const std::int64_t every = t.checkpoint_every;
  ml::Optimizer opt(optimizer_config(config), layout.size(), "train.optimizer");

  // Rank 0 alone touches the run directory; the others get the state from it.
  std::optional<RunDir> dir;
  std::optional<RunLock> lock;
  bool resumed = false;
  io::TrainingState s;
  io::RunIdentity id;
  if (root) {
    dir.emplace(options.run_dir);
    lock.emplace(*dir);
    s = start_state(config, *dir, layout, options, out, &resumed, &id);
  }
  share_state(world, s, resumed);
  if (finished_run(world, dir ? &*dir : nullptr, resumed && s.epoch >= epochs, options, out))
    return 0;
  if (resumed)
    opt.set_state(s.optimizer);
  else
    s = fresh_state(model, t.seed);
  if (root) dir->write_text("config.toml", config.to_toml());
  RunOutputs outputs(world, root ? &*dir : nullptr, resumed, s.step, s.epoch, options.trace);
  const bool quiet = options.quiet || !root;
  Progress progress(out, stdout_is_terminal(), quiet);
  if (!quiet && !resumed) print_banner(out, config, job, world, groups, eval);

  const std::size_t n = job.train.size();
  std::vector<std::vector<double>> readout_values(model.readouts().size());  // for histograms
  const int steps_per_epoch = static_cast<int>((n + batch - 1) / batch);
  std::vector<double> grad(layout.size());
  std::vector<std::pair<std::string, double>> final_metrics;
  std::int64_t steps_here = 0;
  const auto t_start = Clock::now();
  const double time_before = s.train_time_s;  // earlier sessions of a resumed run
  const auto train_time = [&] { return time_before + seconds_since(t_start); };
  for (; s.epoch < epochs; ++s.epoch) {
    const double lr = ml::step_learning_rate(t.learning_rate, t.lr_decay, t.lr_decay_epochs,
                                             static_cast<int>(s.epoch));
    const std::vector<std::size_t> order =
        ml::epoch_order(n, t.seed, static_cast<int>(s.epoch), t.shuffle);
    progress.begin_epoch(static_cast<int>(s.epoch) + 1, epochs, steps_per_epoch);
    const auto t_epoch = Clock::now();
    for (; s.step_in_epoch < steps_per_epoch; ++s.step_in_epoch) {
      const int signal = agreed_stop_signal(&world);  // every rank takes part in each step
      if (signal != 0 || (options.max_steps >= 0 && steps_here >= options.max_steps)) {
        if (root) save(*dir, id, layout, s, opt, keep, train_time());
        outputs.finish();
        return stopped(signal, steps_here, s.step, quiet, root, out);
      }
      // The global batch; this rank computes its contiguous share, and every
      // rank sums all rows in global order (bitwise the same for any rank count).
      const TraceSpan step_span("step");
      const auto t_step = Clock::now();
      std::vector<std::size_t> mine;
      const std::size_t b0 = static_cast<std::size_t>(s.step_in_epoch) * batch;
      const std::size_t m = std::min(n, b0 + batch) - b0;
      {
        const TraceSpan span("data");
        const auto [mine_begin, mine_end] = my_share(groups, m);
        mine.assign(order.begin() + static_cast<std::ptrdiff_t>(b0 + mine_begin),
                    order.begin() + static_cast<std::ptrdiff_t>(b0 + mine_end));
      }
      std::vector<double> my_rows;
      {
        const TraceSpan span("forward+backward");
        my_rows = model.example_rows(s.params, job.train, mine, job.loss, eval);
      }
      const auto t_comm = Clock::now();
      std::vector<double> rows;
      {
        const TraceSpan span("allreduce");
        rows = gather_groups(world, groups, my_rows);
      }
      const double comm_s = seconds_since(t_comm);
      double loss = 0, correct = 0;
      {
        const TraceSpan span("optimizer");
        std::tie(loss, correct) =
            sum_rows(model, job.train, rows, order, b0, m, grad, root ? &readout_values : nullptr);
      }
      const bool update =
          step_is_finite(loss, grad, t.skip_nonfinite, "the loss", s.step + 1, s.epoch + 1);
      if (update) {
        const TraceSpan span("optimizer");
        opt.step(s.params, grad, lr);
        check_finite(loss, s.params, "the loss", s.step + 1, s.epoch + 1);
        s.sums[0] += loss;
        s.sums[1] += correct;
        s.sums[2] += static_cast<double>(m);
      }
      ++s.step;
      ++steps_here;
      outputs.step(s.epoch + 1, s.step,
                   step_metrics(update, loss, correct, m, lr, seconds_since(t_step), comm_s));
      if (s.sums[2] > 0)
        progress.step(static_cast<int>(s.step_in_epoch) + 1,
                      {{"loss", s.sums[0] / s.sums[2]}, {"accuracy", s.sums[1] / s.sums[2]}});
      if (root && every > 0 && s.step % every == 0 && s.step_in_epoch + 1 < steps_per_epoch) {
        const TraceSpan span("checkpoint");
        io::TrainingState next = s;
        ++next.step_in_epoch;
        save(*dir, id, layout, next, opt, keep, train_time());
      }
    }
    std::vector<std::pair<std::string, double>> metrics = {{"loss", s.sums[0] / s.sums[2]},
                                                           {"accuracy", s.sums[1] / s.sums[2]}};
    for (const auto& m : validation_metrics(job, world, groups, s.params, eval))
      metrics.push_back(m);
    progress.end_epoch(metrics);
    metrics.push_back({"learning_rate", lr});
    metrics.push_back({"epoch_time_s", seconds_since(t_epoch)});
    outputs.epoch(s.epoch + 1, s.step, metrics, layout, s.params,
                  readout_histograms(model, readout_values));
    final_metrics = metrics;
    s.step_in_epoch = 0;
    s.sums.assign(3, 0.0);
    io::TrainingState next = s;
    ++next.epoch;
    if (root && (every == 0 || s.step % every == 0 || next.epoch == epochs)) {
      const TraceSpan span("checkpoint");
      save(*dir, id, layout, next, opt, keep, train_time());
    }
  }
  outputs.finish();
  if (!root) return 0;

  write_result(*dir, config, layout, s, epochs, world.size(), final_metrics, train_time());
  if (!quiet) {
    out << "Finished " << epochs << " epochs (" << s.step << " steps):";
    for (const auto& [k, v] : final_metrics) out << " " << k << " " << v;
    out << "\nWeights: " << dir->location("weights.h5") << "\n";
  }
  return 0;
}

std::string bitstring(index_t x, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += ((x >> i) & 1) ? '1' : '0';
  return s;  // node 0 first
}

// The QAOA summary shared by train and infer: cost, best cuts, optimum.
// Returns the better of the most probable and the best sampled assignment.
index_t report_qaoa(const models::QaoaMaxCut& m, const io::Config& config,
                    std::span<const double> params, const models::EvalOptions& eval, double cost,
                    JsonWriter& w, std::ostream& out, bool quiet) {
  const std::int64_t shots = config.get_int("model.samples", 0, std::int64_t{1} << 32);
  const std::uint64_t seed = train_settings(config).seed;
  const models::QaoaMaxCut::Readout r = m.readout(params, shots, seed, eval);
  const models::QaoaMaxCut::Cut opt = m.max_cut(eval.threads);
  const int n = m.graph().nodes;
  const models::QaoaMaxCut::Cut best =
      r.best_sampled.size > r.most_probable.size ? r.best_sampled : r.most_probable;
  if (!quiet) {
    out << "Most probable bitstring (node 0 first): " << bitstring(r.most_probable.assignment, n)
        << ", cut " << r.most_probable.size << "\n";
    if (shots > 0)
      out << "Best of " << shots << " samples: " << bitstring(r.best_sampled.assignment, n)
          << ", cut " << r.best_sampled.size << "\n";
    out << "Maximum cut (exhaustive search): " << opt.size << " (" << bitstring(opt.assignment, n)
        << ")\nApproximation ratio: " << static_cast<double>(best.size) / opt.size
        << "; expected cut " << -cost << " (ratio " << -cost / opt.size << ")\n";
  }
  w.key("cost").value(cost).key("expected_cut").value(-cost);
  w.key("most_probable_bitstring").value(bitstring(r.most_probable.assignment, n));
  w.key("most_probable_cut").value(r.most_probable.size);
  w.key("samples").value(static_cast<long long>(shots));
  w.key("best_bitstring").value(bitstring(best.assignment, n)).key("cut").value(best.size);
  w.key("optimum").value(opt.size).key("optimum_bitstring").value(bitstring(opt.assignment, n));
  w.key("approximation_ratio").value(static_cast<double>(best.size) / opt.size);
  w.key("expected_approximation_ratio").value(-cost / opt.size);
  return best.assignment;
}

// The parameters of restart r in the gathered [cost, params...] rows.
std::vector<double> all_params_of(const std::vector<double>& all, std::size_t width,
                                  std::size_t r) {
  return {all.begin() + static_cast<std::ptrdiff_t>(r * width + 1),
          all.begin() + static_cast<std::ptrdiff_t>((r + 1) * width)};
}

// QAOA on several ranks runs independent restarts (seed + rank), each in
// RUN_DIR/restart-<rank>/ with its own checkpoints; rank 0 reports and saves
// the restart with the lowest final cost in RUN_DIR.
int train_qaoa(const io::Config& config, const TrainOptions& options, std::ostream& out) {
  const comm::Comm& world = comm::Comm::world();
  const auto model = make_qaoa_job(config);
  const ml::ParamLayout& layout = model->layout();
  const Groups groups = make_groups(world, config);  // one restart per state group
  const models::EvalOptions eval = group_eval_options(config, world, groups, model->graph().nodes);
  if (model->has_channels() && groups.state)
    config.fail("job.state_ranks",
                "must be 1 for noisy circuits (one process holds each density matrix)");
  check_working_set(working_set(model->state_qubits(eval), 2, state_ranks(groups), eval),
                    world.local_size(), eval, "train");
  const bool restarts = groups.count > 1;
  const TrainSettings t = train_settings(config);
  const bool skip_nonfinite = t.skip_nonfinite;
  const std::uint64_t seed = t.seed + static_cast<std::uint64_t>(groups.index);
  const std::int64_t steps = t.steps, every = t.checkpoint_every;
  const double lr = t.learning_rate;
  const int keep = t.keep_checkpoints;
  const double scale = config.get_double("model.init_scale", 0, 1e6);
  ml::Optimizer opt(optimizer_config(config), layout.size(), "train.optimizer");

  const bool quiet = options.quiet || !world.root();
  const RunDir dir(restarts ? options.run_dir + "/restart-" + std::to_string(groups.index)
                            : options.run_dir);
  std::optional<RunLock> lock;
  if (groups.leader) lock.emplace(dir);  // the restart's writer
  bool resumed = false;
  std::ostringstream silent;
  io::RunIdentity id;
  io::TrainingState s =
      start_state(config, dir, layout, options, quiet ? silent : out, &resumed, &id);
  if (resumed) {
    opt.set_state(s.optimizer);
  } else {
    Rng rng(seed);
    s.params.assign(layout.size(), 0.0);
    model->init(s.params, rng, scale);
    s.rng = rng.state();
  }
  // A state group's leader writes its restart's files; the others compute with it.
  const bool writer = groups.leader;
  if (writer) dir.write_text("config.toml", config.to_toml());
  RunOutputs outputs(world, writer ? &dir : nullptr, resumed, s.step, 0, options.trace);
  if (!quiet && !resumed)
    out << "qaoa: " << model->graph().nodes << " nodes, " << model->graph().edges.size()
        << " edges, p = " << layout.tensors()[0].shape[1] << ", " << eval.threads << " threads, "
        << precision_name(eval.precision)
        << (groups.state ? ", states over " + std::to_string(groups.state->size()) + " ranks" : "")
        << (restarts ? ", " + std::to_string(groups.count) + " restarts (the first shown)" : "")
        << "\n";
  std::vector<double> grad(layout.size());
  std::int64_t steps_here = 0;
  const auto t_start = Clock::now();
  const double time_before = s.train_time_s;  // earlier sessions of a resumed run
  const auto train_time = [&] { return time_before + seconds_since(t_start); };
  for (; s.step < steps; ++s.step, ++steps_here) {
    // A restart's ranks agree; restarts are independent (and may be at other steps).
    const int signal = agreed_stop_signal(groups.state.get());
    if (signal != 0 || (options.max_steps >= 0 && steps_here >= options.max_steps)) {
      if (writer) save(dir, id, layout, s, opt, keep, train_time());
      outputs.finish();
      return stopped(signal, steps_here, s.step, quiet, world.root(), out);
    }
    const TraceSpan step_span("step");
    const auto t = Clock::now();
    double cost = 0;
    {
      const TraceSpan span("forward+backward");
      cost = model->cost(s.params, grad, eval);
    }
    if (step_is_finite(cost, grad, skip_nonfinite, "the cost", s.step + 1, -1)) {
      const TraceSpan span("optimizer");
      opt.step(s.params, grad, lr);
      check_finite(cost, s.params, "the cost", s.step + 1, -1);
    }
    const double dt = seconds_since(t);
    if (!quiet) {
      if (s.step == 0)
        out << "Initial cost: " << cost << "\n";
      else
        out << "Cost at step " << s.step << ": " << cost << "\n";
      out << "Completed iteration " << s.step + 1 << "\nTime to complete iteration: " << dt
          << " seconds\n"
          << std::flush;
    }
    outputs.step(1, s.step + 1, {{"cost", cost}, {"learning_rate", lr}, {"step_time_s", dt}});
    if ((every > 0 && (s.step + 1) % every == 0) || s.step + 1 == steps) {
      const TraceSpan span("checkpoint");
      io::TrainingState next = s;
      ++next.step;
      if (writer) save(dir, id, layout, next, opt, keep, train_time());
    }
  }
  const double my_cost = model->cost(s.params, {}, eval);
  if (writer) io::save_weights(dir.file("weights.h5"), config.kind(), layout, s.params);
  outputs.finish();
  if (writer) dir.sync();

  // Every restart's final cost and parameters; the best (lowest cost, then lowest rank) wins.
  std::vector<double> mine = {my_cost};
  mine.insert(mine.end(), s.params.begin(), s.params.end());
  const std::vector<double> all = gather_groups(world, groups, mine);
  if (groups.index != 0) return 0;  // rank 0's state group reads the best restart out
  const std::size_t width = mine.size();
  std::size_t best_rank = 0;
  for (std::size_t r = 1; r < all.size() / width; ++r)
    if (all[r * width] < all[best_rank * width]) best_rank = r;
  const double cost = all[best_rank * width];
  const std::vector<double> params = all_params_of(all, width, best_rank);
  if (!world.root()) {  // the other ranks of rank 0's state group: the readout's collectives
    std::ostringstream ignored;
    JsonWriter w(ignored);
    w.begin_object();
    report_qaoa(*model, config, all_params_of(all, width, best_rank), eval, all[best_rank * width],
                w, ignored, true);
    return 0;
  }
  const RunDir top(options.run_dir);
  if (!quiet) {
    out << "Final cost: " << my_cost << "\n";
    if (restarts) {
      for (std::size_t r = 0; r < all.size() / width; ++r)
        out << "Restart " << r << " (seed " << seed + r << "): final cost " << all[r * width]
            << "\n";
      out << "Best: restart " << best_rank << "\n";
    }
  }
  if (restarts) io::save_weights(top.file("weights.h5"), config.kind(), layout, params);
  std::ostringstream os;
  JsonWriter w(os);
  w.begin_object().key("job").value("qaoa").key("steps").value(static_cast<long long>(s.step));
  w.key("restarts").value(groups.count).key("best_restart").value(static_cast<int>(best_rank));
  w.key("params").value(params);
  const index_t best = report_qaoa(*model, config, params, eval, cost, w, out, quiet);
  w.key("train_time_s").value(train_time());
  w.end_object();
  top.write_text(
      "graph.svg",
      io::cut_svg(model->graph().nodes, model->graph().edges, best,
                  "best cut found: " + std::to_string(model->cut_size(best)) + " edges"));
  top.write_text("result.json", os.str() + "\n");  // last: the run is complete
  if (!quiet)
    out << "Results: " << top.location("result.json") << ", drawing: " << top.location("graph.svg")
        << "\n";
  return 0;
}

}  // namespace

int train(const io::Config& config, const TrainOptions& options, std::ostream& out) {
  if (config.kind() == "qaoa") return train_qaoa(config, options, out);
  return train_supervised(config, options, out);
}

void infer(const io::Config& config, const std::string& weights, std::ostream& out,
           const std::string& data_path, const std::string& out_path) {
  const models::EvalOptions eval = eval_options(config);
  use_backend(eval, comm::Comm::world().local_rank());
  if (config.kind() == "qaoa") {
    const auto model = make_qaoa_job(config);
    check_working_set(working_set(model->state_qubits(eval), 1, 1, eval), 1, eval, "infer");
    const std::vector<double> params = io::load_weights(weights, model->layout());
    const double cost = model->cost(params, {}, eval);
    std::ostringstream os;
    JsonWriter w(os);
    w.begin_object();
    out << "Cost: " << cost << "\n";
    report_qaoa(*model, config, params, eval, cost, w, out, false);
    return;
  }
  const SupervisedJob job = make_supervised_job(config);
  const int in_flight =
      job.model->one_example_per_thread(job.train.size(), eval) ? eval.threads : 1;
  check_working_set(working_set(job.model->state_qubits(eval), in_flight, 1, eval), 1, eval,
                    "infer");
  const std::vector<double> params = io::load_weights(weights, job.model->layout());
  const std::size_t k = job.model->outputs();
  // A class name for outputs p: the sign class (named when the data had names) or the argmax.
  auto class_of = [&](std::span<const double> p) -> std::string {
    const int c = ml::predicted_class(p);
    if (k == 1) {
      if (job.classes.size() == 2) return job.classes[c > 0 ? 1 : 0];
      return c > 0 ? "+1" : "-1";
    }
    return job.classes.at(static_cast<std::size_t>(c));
  };
  if (!data_path.empty()) {
    if (!job.read_examples) throw Error("--data: only hybrid jobs take new data files");
    ml::Dataset data;
    for (std::vector<double>& x : job.read_examples(data_path)) data.add(std::move(x), 0.0);
    std::vector<std::size_t> all(data.size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    const std::vector<double> p = job.model->predict(params, data, all, eval);
    std::ostringstream csv;
    // One output: the prediction; several: each class's probability (softmax of the logits).
    if (k == 1) {
      csv << "prediction,class\n";
    } else {
      for (const std::string& name : job.classes) csv << "p_" << name << ",";
      csv << "class\n";
    }
    std::vector<double> probs(k);
    for (std::size_t i = 0; i < data.size(); ++i) {
      const std::span<const double> pi(&p[i * k], k);
      if (k > 1) ml::softmax(pi, probs);
      for (const double v : k == 1 ? pi : std::span<const double>(probs)) {
        char field[32];
        std::snprintf(field, sizeof field, "%.9g,", v);
        csv << field;
      }
      csv << class_of(pi) << "\n";
    }
    if (out_path.empty()) {
      out << csv.str();
      return;
    }
    // Atomically: a failed write leaves no partial file under the final name.
    io::write_atomically(out_path, [&](const std::string& tmp) {
      std::ofstream file(tmp, std::ios::binary);
      file << csv.str();
      file.close();
      if (!file) {
        std::remove(tmp.c_str());
        throw Error("--out " + out_path + ": cannot write the file (" + std::strerror(errno) + ")");
      }
    });
    out << data.size() << " predictions written to " << out_path << "\n";
    return;
  }
  const bool has_test = job.test.size() > 0;
  const ml::Dataset& data = has_test ? job.test : job.train;
  std::vector<std::size_t> all(data.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  const std::vector<double> p = job.model->predict(params, data, all, eval);
  out << (has_test ? "Test split" : "No test split: the training examples") << ", " << data.size()
      << " examples\n";
  double loss = 0, acc = 0;
  if (k == 1) {
    out << "prediction label\n";
    for (std::size_t i = 0; i < data.size(); ++i) {
      char line[64];
      std::snprintf(line, sizeof line, "%+.6f %+.0f\n", p[i], data.y[i]);
      out << line;
      loss += (p[i] - data.y[i]) * (p[i] - data.y[i]);
      acc += ml::correct(p[i], data.y[i]);
    }
    out << "Mean squared error: " << loss / static_cast<double>(data.size());
  } else {
    out << "predicted label\n";
    for (std::size_t i = 0; i < data.size(); ++i) {
      const std::span<const double> pi(&p[i * k], k);
      out << class_of(pi) << " " << job.classes.at(static_cast<std::size_t>(data.y[i])) << "\n";
      loss += job.loss.value(pi, data.y[i]);
      acc += ml::correct(pi, data.y[i]);
    }
    out << "Cross-entropy: " << loss / static_cast<double>(data.size());
  }
  out << "\nAccuracy: " << acc / static_cast<double>(data.size()) << "\n";
}

}  // namespace qmlsim::train
