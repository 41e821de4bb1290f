// What a training run records besides checkpoints: metrics.jsonl and a
// TensorBoard event file (rank 0), and with --trace a Chrome trace-event
// timeline of every rank, merged into RUN_DIR/trace.json by rank 0.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "comm/comm.h"
#include "core/trace.h"
#include "io/tensorboard.h"
#include "ml/params.h"
#include "train/run_dir.h"

namespace qmlsim::train {

using Metrics = std::vector<std::pair<std::string, double>>;

class RunOutputs {
 public:
  // `dir` is null on ranks other than 0. With `trace`, every rank installs a
  // tracer whose clock starts after a barrier (a collective call).
  RunOutputs(const comm::Comm& world, const RunDir* dir, bool resumed, std::int64_t step,
             std::int64_t epochs_done, bool trace);
  ~RunOutputs();
  RunOutputs(const RunOutputs&) = delete;
  RunOutputs& operator=(const RunOutputs&) = delete;

  // One optimizer step: a metrics.jsonl record and "batch/<name>" scalars at `step`.
  void step(std::int64_t epoch, std::int64_t step, const Metrics& m);
  // One epoch: a record, "epoch/<name>" scalars at `epoch`, and histograms of
  // every parameter tensor ("params/<tensor>") and of named value sets
  // (for example "readouts/Z4": the readout over the epoch's examples).
  void epoch(std::int64_t epoch, std::int64_t step, const Metrics& m, const ml::ParamLayout& layout,
             std::span<const double> params,
             const std::vector<std::pair<std::string, std::vector<double>>>& histograms);
  // Writes the merged trace (collective when tracing; call on every rank).
  void finish();

 private:
  const comm::Comm& world_;
  const RunDir* dir_;
  std::optional<MetricsLog> log_;
  std::optional<io::EventWriter> events_;
  std::unique_ptr<Tracer> tracer_;
};

}  // namespace qmlsim::train
