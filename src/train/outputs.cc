#include "train/outputs.h"

#include <filesystem>
#include <sstream>
#include <string>

#include "core/json.h"

namespace qmlsim::train {
namespace {

std::string record(const Metrics& fields, const char* type, std::int64_t epoch, std::int64_t step) {
  std::ostringstream os;
  JsonWriter w(os);
  w.begin_object().key("type").value(type).key("epoch").value(static_cast<long long>(epoch));
  w.key("step").value(static_cast<long long>(step));
  for (const auto& [k, v] : fields) w.key(k).value(v);
  w.end_object();
  return os.str();
}

// The earlier sessions' TensorBoard events of the steps and epochs a resumed
// run redoes (a killed session may have written past its last checkpoint), as
// metrics.jsonl drops its rows.
void drop_redone_events(const std::string& dir, std::int64_t step, std::int64_t epochs_done) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) != 0) continue;
    io::filter_events(entry.path().string(), [&](std::string_view tag, std::int64_t s) {
      return tag.rfind("batch/", 0) == 0 ? s <= step : s <= epochs_done;
    });
  }
}

}  // namespace

RunOutputs::RunOutputs(const comm::Comm& world, const RunDir* dir, bool resumed, std::int64_t step,
                       std::int64_t epochs_done, bool trace)
    : world_(world), dir_(dir) {
  if (dir_) {
    log_.emplace(dir_->file("metrics.jsonl"), resumed, step, epochs_done);
    if (resumed) drop_redone_events(dir_->path(), step, epochs_done);
    events_.emplace(dir_->path());
  }
  if (trace) {
    tracer_ = std::make_unique<Tracer>();
    world_.barrier();
    tracer_->start_clock();
    Tracer::install(tracer_.get());
  }
}

RunOutputs::~RunOutputs() {
  if (tracer_ && Tracer::active() == tracer_.get()) Tracer::install(nullptr);
}

void RunOutputs::step(std::int64_t epoch, std::int64_t step, const Metrics& m) {
  if (!dir_) return;
  log_->write(record(m, "step", epoch, step));
  for (const auto& [k, v] : m) events_->scalar("batch/" + k, step, v);
  events_->flush();
}

void RunOutputs::epoch(std::int64_t epoch, std::int64_t step, const Metrics& m,
                       const ml::ParamLayout& layout, std::span<const double> params,
                       const std::vector<std::pair<std::string, std::vector<double>>>& histograms) {
  if (!dir_) return;
  log_->write(record(m, "epoch", epoch, step));
  for (const auto& [k, v] : m) events_->scalar("epoch/" + k, epoch, v);
  for (const ml::TensorSpec& t : layout.tensors())
    events_->histogram("params/" + t.name, epoch, params.subspan(t.offset, t.size()));
  for (const auto& [tag, values] : histograms) events_->histogram(tag, epoch, values);
  events_->flush();
}

void RunOutputs::finish() {
  if (!tracer_) return;
  Tracer::install(nullptr);
  const std::string mine =
      tracer_->events_json(world_.rank(), "rank " + std::to_string(world_.rank()));
  const std::vector<std::string> all = world_.gather_to_root(mine);
  if (!dir_) return;
  std::string json = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  for (std::size_t r = 0; r < all.size(); ++r) json += (r ? "," : "") + all[r];
  json += "]}\n";
  dir_->write_text("trace.json", json);
}

}  // namespace qmlsim::train
