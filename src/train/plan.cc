#include "train/plan.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "backends/cpu/statevector.h"
#include "backends/cuda/statevector.h"
#include "core/error.h"
#include "core/json.h"
#include "core/memory.h"
#include "distributed/state.h"
#include "train/jobs.h"

namespace qmlsim::train {
namespace {

using Clock = std::chrono::steady_clock;

template <class Fn>
double seconds(Fn&& fn) {
  const auto t = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Median of `reps` timings (one untimed warm-up when a run is short).
template <class Fn>
double calibrate(Fn&& fn, int reps) {
  const double first = seconds(fn);
  if (first > 2.0) return first;  // long: one run is the measurement
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) t.push_back(seconds(fn));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Time for `count` examples (gradient or forward only) on one rank, measured
// on as many as one round of the batch policy needs.
double share_time(const models::HybridModel& model, const ml::Dataset& data, std::int64_t count,
                  const ml::Loss& loss, const models::EvalOptions& eval, bool gradient) {
  if (count <= 0) return 0;
  // One state per thread: time a few rounds of `threads` examples at once (the
  // rounds amortise the start of a parallel region, as a real batch does).
  const bool per_thread = model.one_example_per_thread(static_cast<std::size_t>(count), eval);
  const std::int64_t sample = per_thread ? std::min<std::int64_t>(count, 4 * eval.threads) : 1;
  std::vector<std::size_t> idx(static_cast<std::size_t>(sample));
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i % data.size();
  std::vector<double> params(model.layout().size());
  Rng rng(1);
  model.init(params, rng);
  const double t = calibrate(
      [&] {
        if (gradient)
          (void)model.example_rows(params, data, idx, loss, eval);
        else
          (void)model.predict(params, data, idx, eval);
      },
      5);
  return t * static_cast<double>(count) / static_cast<double>(sample);
}

}  // namespace

Plan make_plan(const io::Config& config, const PlanOptions& options) {
  if (options.ranks < 1 || options.ranks_per_node < 1)
    throw Error("--ranks and --ranks-per-node must be at least 1");
  io::Config c = config;
  Plan p;
  const int cores = omp_get_max_threads();
  p.threads = options.threads > 0 ? options.threads : std::max(1, cores / options.ranks_per_node);
  models::EvalOptions eval = eval_options(c);
  eval.threads = p.threads;
  if (!options.backend.empty())
    eval.backend = options.backend == "cuda" ? Backend::cuda : Backend::cpu;
  use_backend(eval, 0);
  p.precision = precision_name(eval.precision);
  p.backend = backend_name(eval.backend);
  // A rank's states live on its GPU with the cuda backend, else in host memory.
  p.machine_bytes = eval.backend == Backend::cuda
                        ? static_cast<std::uint64_t>(cuda::device_status().memory_gib * (1 << 30))
                        : usable_memory().bytes;
  // States over job.state_ranks ranks: a rank holds slices; data parallelism is over groups.
  p.state_ranks = static_cast<int>(c.get_int("job.state_ranks", 1, 1 << 20));
  if (options.ranks % p.state_ranks != 0)
    c.fail("job.state_ranks", std::to_string(p.state_ranks) +
                                  " ranks per state do not divide --ranks " +
                                  std::to_string(options.ranks));
  const int groups = options.ranks / p.state_ranks;
  // Memory first: calibration runs only when a rank's working set fits here. With
  // states over several ranks it runs on whole states in one process (when they fit)
  // and divides the per-example time by the ranks of a state: exchanges are not
  // modelled (bench/distributed measures them).
  auto sizes = [&](int qubits, int states) {
    const WorkingSet w = working_set(qubits, states, p.state_ranks, eval);
    p.qubits = qubits;
    p.states_at_once = states;
    p.state_bytes = w.state_bytes;
    p.rank_bytes = w.bytes;
    p.fits = p.rank_bytes * static_cast<std::uint64_t>(options.ranks_per_node) <
             p.machine_bytes * 9 / 10;
    const bool whole_fits =
        cpu::state_bytes(qubits, eval.precision) * static_cast<std::uint64_t>(states) <
        p.machine_bytes * 9 / 10;
    return p.fits && whole_fits;
  };
  const auto t0 = Clock::now();
  const TrainSettings t = train_settings(c);
  if (c.kind() == "qaoa") {
    const auto model = make_qaoa_job(c);
    p.steps_per_epoch = t.steps;
    p.epochs = 1;
    const bool fits = sizes(model->state_qubits(eval), 2);
    p.qubits = model->graph().nodes;
    p.density_matrix = model->has_channels();
    if (fits) {
      std::vector<double> params(model->layout().size(), 0.1), grad(params.size());
      p.step_s = calibrate([&] { (void)model->cost(params, grad, eval); }, 3);
    }
  } else {
    const SupervisedJob job = make_supervised_job(c);
    const models::HybridModel& model = *job.model;
    const auto batch = static_cast<std::int64_t>(t.batch_size);
    const auto n = static_cast<std::int64_t>(job.train.size());
    const std::int64_t share = ceil_div(std::min(batch, n), groups);
    const bool per_thread = model.one_example_per_thread(
        static_cast<std::size_t>(share), p.threads, eval.backend, p.state_ranks > 1, eval.method);
    p.steps_per_epoch = ceil_div(n, batch);
    p.epochs = t.epochs;
    // A noisy model's states are density matrices: twice the qubits.
    const bool fits = sizes(model.state_qubits(eval), 2 * (per_thread ? p.threads : 1));
    p.qubits = model.num_qubits();
    p.density_matrix = model.has_channels();
    if (fits) {
      p.step_s = share_time(model, job.train, share, job.loss, eval, true);
      const auto test = static_cast<std::int64_t>(job.test.size());
      if (test > 0)
        p.eval_s = share_time(model, job.test, ceil_div(test, groups), job.loss, eval, false);
    }
  }
  p.step_s /= p.state_ranks;
  p.eval_s /= p.state_ranks;
  p.calibration_s = std::chrono::duration<double>(Clock::now() - t0).count();
  p.epoch_s = static_cast<double>(p.steps_per_epoch) * p.step_s + p.eval_s;
  p.run_s = static_cast<double>(p.epochs) * p.epoch_s;
  if (options.node_hour_price >= 0) {
    const double nodes = std::ceil(static_cast<double>(options.ranks) / options.ranks_per_node);
    p.cost = p.run_s / 3600.0 * nodes * options.node_hour_price;
  }
  return p;
}

namespace {
std::string bytes(std::uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

std::string duration(double s) {
  char buf[64];
  if (s < 1)
    std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  else if (s < 120)
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  else if (s < 7200)
    std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else
    std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  return buf;
}
}  // namespace

void print_plan(const Plan& p, const PlanOptions& o, std::ostream& out) {
  out << "qubits: " << p.qubits
      << (p.density_matrix ? " (noisy: density matrices, the size of " +
                                 std::to_string(2 * p.qubits) + "-qubit states)"
                           : std::string())
      << ", " << p.precision << ", backend " << p.backend << "\n"
      << (p.state_ranks > 1 ? "states over " + std::to_string(p.state_ranks) + " ranks; one slice: "
                            : std::string("one state vector: "))
      << bytes(p.state_bytes) << "\n"
      << "per rank: " << p.states_at_once << " state vectors at once ("
      << (p.states_at_once > 2 ? "state + adjoint state for each of " +
                                     std::to_string(p.states_at_once / 2) + " threads"
                               : std::string("state + adjoint state"))
      << ") = " << bytes(p.rank_bytes) << "\n"
      << (p.backend == "cuda" ? "this GPU: " : "this machine: ") << bytes(p.machine_bytes) << "; "
      << o.ranks_per_node << " rank(s) per node " << (p.fits ? "fit" : "DO NOT FIT") << "\n"
      << "ranks: " << o.ranks << ", threads per rank: " << p.threads << "\n";
  if (!p.fits) {
    out << "no time estimate: the calibration run would not fit in this machine's memory\n";
    return;
  }
  out << "calibrated in " << duration(p.calibration_s) << " on this machine"
      << (p.state_ranks > 1 ? " (whole states; time divided by the ranks of a state, "
                              "exchanges not modelled)"
                            : "")
      << "\n"
      << "step: " << duration(p.step_s) << "; " << p.steps_per_epoch << " steps per epoch";
  if (p.eval_s > 0) out << " + validation " << duration(p.eval_s);
  out << "\nepoch: " << duration(p.epoch_s) << "; " << p.epochs
      << " epoch(s): " << duration(p.run_s) << "\n";
  if (p.cost >= 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f", p.cost);
    out << "cost at " << o.node_hour_price << " per node-hour: " << buf << "\n";
  }
}

void print_plan_json(const Plan& p, std::ostream& out) {
  JsonWriter w(out);
  w.begin_object().key("qubits").value(p.qubits).key("precision").value(p.precision);
  w.key("density_matrix").value(p.density_matrix);
  w.key("backend").value(p.backend);
  w.key("state_bytes").value(static_cast<double>(p.state_bytes));
  w.key("state_ranks").value(p.state_ranks);
  w.key("states_at_once").value(p.states_at_once);
  w.key("rank_bytes").value(static_cast<double>(p.rank_bytes));
  w.key("machine_bytes").value(static_cast<double>(p.machine_bytes)).key("fits").value(p.fits);
  w.key("threads").value(p.threads).key("step_s").value(p.step_s).key("eval_s").value(p.eval_s);
  w.key("steps_per_epoch").value(static_cast<long long>(p.steps_per_epoch));
  w.key("epochs").value(static_cast<long long>(p.epochs));
  w.key("epoch_s").value(p.epoch_s).key("run_s").value(p.run_s);
  if (p.cost >= 0) w.key("cost").value(p.cost);
  w.end_object();
  out << "\n";
}

}  // namespace qmlsim::train
