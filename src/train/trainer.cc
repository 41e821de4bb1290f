#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "core/error.h"
#include "core/json.h"
#include "io/checkpoint.h"
#include "io/svg.h"
#include "ml/optimizer.h"
#include "train/jobs.h"
#include "train/progress.h"
#include "train/run_dir.h"

namespace qmlsim::train {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Checks the run directory against this config; returns the state to start from.
io::TrainingState start_state(const io::Config& config, const RunDir& dir,
                              const ml::ParamLayout& layout, const TrainOptions& options,
                              std::ostream& out, bool* resumed) {
  *resumed = false;
  const std::string saved_config = dir.file("config.toml");
  const std::vector<std::string> ckpts = dir.checkpoints();
  if (!options.resume && !ckpts.empty())
    throw Error(dir.path() +
                ": already holds checkpoints of a run; add --resume to continue it, or choose "
                "another --run-dir");
  if (options.resume && std::filesystem::exists(saved_config)) {
    std::ifstream in(saved_config);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string now = config.to_toml();
    if (ss.str() != now) {
      std::istringstream a(ss.str()), b(now);
      std::string la, lb;
      int line = 0;
      while (std::getline(a, la) && std::getline(b, lb) && la == lb) ++line;
      throw Error(saved_config + ":" + std::to_string(line + 1) +
                  ": --resume with another config ('" + la + "' there, '" + lb + "' now)");
    }
  }
  io::TrainingState s;
  for (const std::string& path : options.resume ? ckpts : std::vector<std::string>{}) {
    try {
      s = io::load_checkpoint(path, config.kind(), layout);
      *resumed = true;
      if (!options.quiet) out << "Resuming from " << path << " (step " << s.step << ")\n";
      return s;
    } catch (const Error& e) {
      out << "warning: " << e.what() << "; trying the checkpoint before it\n";
    }
  }
  if (options.resume && !options.quiet) out << "No checkpoint to resume from: starting afresh\n";
  return s;
}

std::string json_line(const std::vector<std::pair<std::string, double>>& fields,
                      const std::string& type, std::int64_t epoch, std::int64_t step) {
  std::ostringstream os;
  JsonWriter w(os);
  w.begin_object().key("type").value(type).key("epoch").value(static_cast<long long>(epoch));
  w.key("step").value(static_cast<long long>(step));
  for (const auto& [k, v] : fields) w.key(k).value(v);
  w.end_object();
  return os.str();
}

void save(const RunDir& dir, const io::Config& config, const ml::ParamLayout& layout,
          const io::TrainingState& s, const ml::Optimizer& opt, int keep) {
  io::TrainingState c = s;
  c.optimizer = opt.state();
  io::save_checkpoint(dir.checkpoint_path(s.step), config.kind(), layout, c);
  dir.prune_checkpoints(keep);
}

int train_supervised(const io::Config& config, const TrainOptions& options, std::ostream& out) {
  const SupervisedJob job = make_supervised_job(config);
  const models::HybridModel& model = *job.model;
  const ml::ParamLayout& layout = model.layout();
  const models::EvalOptions eval = eval_options(config);
  const auto seed = static_cast<std::uint64_t>(config.get_int("job.seed", 0, INT64_MAX));
  const auto epochs = static_cast<int>(config.get_int("train.epochs", 1, 1000000));
  const auto batch = static_cast<std::size_t>(config.get_int("train.batch_size", 1, 1 << 30));
  const bool shuffle = config.get_bool("train.shuffle");
  const double lr0 = config.get_double("train.learning_rate", 0, 1e6);
  const double decay = config.get_double("train.lr_decay", 0, 1e6);
  const auto decay_epochs = static_cast<int>(config.get_int("train.lr_decay_epochs", 1, 1000000));
  const std::int64_t every = config.get_int("train.checkpoint_every", 0, INT64_MAX);
  const auto keep = static_cast<int>(config.get_int("train.keep_checkpoints", 1, 1000000));
  ml::Optimizer opt(optimizer_config(config), layout.size(), "train.optimizer");

  const RunDir dir(options.run_dir);
  bool resumed = false;
  io::TrainingState s = start_state(config, dir, layout, options, out, &resumed);
  if (resumed) {
    opt.set_state(s.optimizer);
  } else {
    Rng rng(seed);
    s.params.assign(layout.size(), 0.0);
    model.init(s.params, rng);
    s.rng = rng.state();
    s.sums.assign(3, 0.0);
  }
  dir.write_text("config.toml", config.to_toml());
  MetricsLog log(dir.file("metrics.jsonl"), resumed, s.step, s.epoch);
  Progress progress(out, stdout_is_terminal(), options.quiet);
  if (!options.quiet && !resumed)
    out << config.kind() << ": " << layout.size() << " parameters, " << model.num_qubits()
        << " qubits, " << job.train.size() << " training and " << job.test.size()
        << " test examples, " << eval.threads << " threads, " << precision_name(eval.precision)
        << "\n";

  const std::size_t n = job.train.size();
  const int steps_per_epoch = static_cast<int>((n + batch - 1) / batch);
  std::vector<double> grad(layout.size());
  std::vector<std::pair<std::string, double>> final_metrics;
  std::int64_t steps_here = 0;
  const auto t_start = Clock::now();
  for (; s.epoch < epochs; ++s.epoch) {
    const double lr = ml::step_learning_rate(lr0, decay, decay_epochs, static_cast<int>(s.epoch));
    const std::vector<std::size_t> order =
        ml::epoch_order(n, seed, static_cast<int>(s.epoch), shuffle);
    progress.begin_epoch(static_cast<int>(s.epoch) + 1, epochs, steps_per_epoch);
    const auto t_epoch = Clock::now();
    for (; s.step_in_epoch < steps_per_epoch; ++s.step_in_epoch) {
      if (options.max_steps >= 0 && steps_here >= options.max_steps) {
        save(dir, config, layout, s, opt, keep);
        if (!options.quiet)
          out << "\nStopped after " << steps_here << " steps (--max-steps); "
              << "continue with --resume\n";
        return 1;
      }
      const auto t_step = Clock::now();
      const std::size_t b0 = static_cast<std::size_t>(s.step_in_epoch) * batch;
      const std::vector<std::size_t> idx(
          order.begin() + static_cast<std::ptrdiff_t>(b0),
          order.begin() + static_cast<std::ptrdiff_t>(std::min(n, b0 + batch)));
      std::fill(grad.begin(), grad.end(), 0.0);
      const auto r = model.loss_and_gradient(s.params, job.train, idx, job.loss, grad, eval);
      for (double& g : grad) g /= static_cast<double>(idx.size());
      opt.step(s.params, grad, lr);
      double loss = 0, correct = 0;
      for (std::size_t i = 0; i < idx.size(); ++i) {
        loss += r.losses[i];
        correct += ml::correct(r.predictions[i], job.train.y[idx[i]]);
      }
      s.sums[0] += loss;
      s.sums[1] += correct;
      s.sums[2] += static_cast<double>(idx.size());
      ++s.step;
      ++steps_here;
      const double dt = seconds_since(t_step);
      const double m = static_cast<double>(idx.size());
      log.write(json_line({{"loss", loss / m},
                           {"accuracy", correct / m},
                           {"learning_rate", lr},
                           {"step_time_s", dt},
                           {"examples_per_s", m / dt}},
                          "step", s.epoch + 1, s.step));
      progress.step(static_cast<int>(s.step_in_epoch) + 1,
                    {{"loss", s.sums[0] / s.sums[2]}, {"accuracy", s.sums[1] / s.sums[2]}});
      if (every > 0 && s.step % every == 0 && s.step_in_epoch + 1 < steps_per_epoch) {
        io::TrainingState next = s;
        ++next.step_in_epoch;
        save(dir, config, layout, next, opt, keep);
      }
    }
    std::vector<std::pair<std::string, double>> metrics = {{"loss", s.sums[0] / s.sums[2]},
                                                           {"accuracy", s.sums[1] / s.sums[2]}};
    if (job.test.size() > 0) {
      std::vector<std::size_t> all(job.test.size());
      std::iota(all.begin(), all.end(), std::size_t{0});
      const std::vector<double> p = model.predict(s.params, job.test, all, eval);
      double vl = 0, va = 0;
      for (std::size_t i = 0; i < p.size(); ++i) {
        vl += job.loss.value(p[i], job.test.y[i]);
        va += ml::correct(p[i], job.test.y[i]);
      }
      metrics.push_back({"val_loss", vl / static_cast<double>(p.size())});
      metrics.push_back({"val_accuracy", va / static_cast<double>(p.size())});
    }
    progress.end_epoch(metrics);
    metrics.push_back({"learning_rate", lr});
    metrics.push_back({"epoch_time_s", seconds_since(t_epoch)});
    log.write(json_line(metrics, "epoch", s.epoch + 1, s.step));
    final_metrics = metrics;
    s.step_in_epoch = 0;
    s.sums.assign(3, 0.0);
    io::TrainingState next = s;
    ++next.epoch;
    if (every == 0 || s.step % every == 0 || next.epoch == epochs)
      save(dir, config, layout, next, opt, keep);
  }

  io::save_weights(dir.file("weights.h5"), config.kind(), layout, s.params);
  std::ostringstream os;
  JsonWriter w(os);
  w.begin_object().key("job").value(config.kind()).key("epochs").value(epochs);
  w.key("steps").value(static_cast<long long>(s.step));
  for (const auto& [k, v] : final_metrics) w.key(k).value(v);
  w.key("train_time_s").value(seconds_since(t_start)).key("weights").value("weights.h5");
  w.end_object();
  dir.write_text("result.json", os.str() + "\n");
  if (!options.quiet) {
    out << "Finished " << epochs << " epochs (" << s.step << " steps):";
    for (const auto& [k, v] : final_metrics) out << " " << k << " " << v;
    out << "\nWeights: " << dir.file("weights.h5") << "\n";
  }
  return 0;
}

std::string bitstring(index_t x, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += ((x >> i) & 1) ? '1' : '0';
  return s;  // node 0 first
}

// The QAOA summary shared by train and infer: cost, best cuts, optimum.
// Returns the best sampled assignment (the most probable one without samples).
index_t report_qaoa(const models::QaoaMaxCut& m, const io::Config& config,
                    std::span<const double> params, const models::EvalOptions& eval, double cost,
                    JsonWriter& w, std::ostream& out, bool quiet) {
  const std::int64_t shots = config.get_int("model.samples", 0, std::int64_t{1} << 32);
  const auto seed = static_cast<std::uint64_t>(config.get_int("job.seed", 0, INT64_MAX));
  const models::QaoaMaxCut::Readout r = m.readout(params, shots, seed, eval);
  const models::QaoaMaxCut::Cut opt = m.max_cut(eval.threads);
  const int n = m.graph().nodes;
  const models::QaoaMaxCut::Cut best = shots > 0 ? r.best_sampled : r.most_probable;
  if (!quiet) {
    out << "Most probable bitstring (node 0 first): " << bitstring(r.most_probable.assignment, n)
        << ", cut " << r.most_probable.size << "\n";
    if (shots > 0)
      out << "Best of " << shots << " samples: " << bitstring(best.assignment, n) << ", cut "
          << best.size << "\n";
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

int train_qaoa(const io::Config& config, const TrainOptions& options, std::ostream& out) {
  const auto model = make_qaoa_job(config);
  const ml::ParamLayout& layout = model->layout();
  const models::EvalOptions eval = eval_options(config);
  const auto seed = static_cast<std::uint64_t>(config.get_int("job.seed", 0, INT64_MAX));
  const std::int64_t steps = config.get_int("train.steps", 0, 1000000000);
  const double lr = config.get_double("train.learning_rate", 0, 1e6);
  const std::int64_t every = config.get_int("train.checkpoint_every", 0, INT64_MAX);
  const auto keep = static_cast<int>(config.get_int("train.keep_checkpoints", 1, 1000000));
  const double scale = config.get_double("model.init_scale", 0, 1e6);
  ml::Optimizer opt(optimizer_config(config), layout.size(), "train.optimizer");

  const RunDir dir(options.run_dir);
  bool resumed = false;
  io::TrainingState s = start_state(config, dir, layout, options, out, &resumed);
  if (resumed) {
    opt.set_state(s.optimizer);
  } else {
    Rng rng(seed);
    s.params.assign(layout.size(), 0.0);
    model->init(s.params, rng, scale);
    s.rng = rng.state();
  }
  dir.write_text("config.toml", config.to_toml());
  MetricsLog log(dir.file("metrics.jsonl"), resumed, s.step, 0);
  if (!options.quiet && !resumed)
    out << "qaoa: " << model->graph().nodes << " nodes, " << model->graph().edges.size()
        << " edges, p = " << layout.tensors()[0].shape[1] << ", " << eval.threads << " threads, "
        << precision_name(eval.precision) << "\n";
  std::vector<double> grad(layout.size());
  std::int64_t steps_here = 0;
  const auto t_start = Clock::now();
  for (; s.step < steps; ++s.step, ++steps_here) {
    if (options.max_steps >= 0 && steps_here >= options.max_steps) {
      save(dir, config, layout, s, opt, keep);
      if (!options.quiet) out << "Stopped after " << steps_here << " steps (--max-steps)\n";
      return 1;
    }
    const auto t = Clock::now();
    const double cost = model->cost(s.params, grad, eval);
    opt.step(s.params, grad, lr);
    const double dt = seconds_since(t);
    if (!options.quiet) {
      if (s.step == 0)
        out << "Initial cost: " << cost << "\n";
      else
        out << "Cost at step " << s.step << ": " << cost << "\n";
      out << "Completed iteration " << s.step + 1 << "\nTime to complete iteration: " << dt
          << " seconds\n"
          << std::flush;
    }
    log.write(json_line({{"cost", cost}, {"learning_rate", lr}, {"step_time_s", dt}}, "step", 1,
                        s.step + 1));
    if ((every > 0 && (s.step + 1) % every == 0) || s.step + 1 == steps) {
      io::TrainingState next = s;
      ++next.step;
      save(dir, config, layout, next, opt, keep);
    }
  }
  const double cost = model->cost(s.params, {}, eval);
  if (!options.quiet) out << "Final cost: " << cost << "\n";
  io::save_weights(dir.file("weights.h5"), config.kind(), layout, s.params);
  std::ostringstream os;
  JsonWriter w(os);
  w.begin_object().key("job").value("qaoa").key("steps").value(static_cast<long long>(s.step));
  w.key("params").value(s.params);
  const index_t best = report_qaoa(*model, config, s.params, eval, cost, w, out, options.quiet);
  w.key("train_time_s").value(seconds_since(t_start));
  w.end_object();
  dir.write_text("result.json", os.str() + "\n");
  dir.write_text(
      "graph.svg",
      io::cut_svg(model->graph().nodes, model->graph().edges, best,
                  "best cut found: " + std::to_string(model->cut_size(best)) + " edges"));
  if (!options.quiet)
    out << "Results: " << dir.file("result.json") << ", drawing: " << dir.file("graph.svg") << "\n";
  return 0;
}

}  // namespace

int train(const io::Config& config, const TrainOptions& options, std::ostream& out) {
  if (config.kind() == "qaoa") return train_qaoa(config, options, out);
  return train_supervised(config, options, out);
}

void infer(const io::Config& config, const std::string& weights, std::ostream& out) {
  const models::EvalOptions eval = eval_options(config);
  if (config.kind() == "qaoa") {
    const auto model = make_qaoa_job(config);
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
  const std::vector<double> params = io::load_weights(weights, job.model->layout());
  const bool has_test = job.test.size() > 0;
  const ml::Dataset& data = has_test ? job.test : job.train;
  std::vector<std::size_t> all(data.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  const std::vector<double> p = job.model->predict(params, data, all, eval);
  out << (has_test ? "Test split" : "No test split: the training examples") << ", " << data.size()
      << " examples\n";
  out << "prediction label\n";
  double mse = 0, acc = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    char line[64];
    std::snprintf(line, sizeof line, "%+.6f %+.0f\n", p[i], data.y[i]);
    out << line;
    mse += (p[i] - data.y[i]) * (p[i] - data.y[i]);
    acc += ml::correct(p[i], data.y[i]);
  }
  out << "Mean squared error: " << mse / static_cast<double>(p.size())
      << "\nAccuracy: " << acc / static_cast<double>(p.size()) << "\n";
}

}  // namespace qmlsim::train
