// A timeline of named spans for Chrome's trace-event format (Perfetto and
// chrome://tracing open it): complete events ("ph": "X") with microsecond
// timestamps from a per-process origin, one "process" per rank and one
// "thread" per worker thread. Recording is off unless a Tracer is installed;
// then a span costs two clock reads and a locked append.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace qmlsim {

class Tracer {
 public:
  using Clock = std::chrono::steady_clock;

  // Timestamps count from now; call right after a barrier so that every rank
  // shares the origin.
  void start_clock() { origin_ = Clock::now(); }
  // Records a span on the calling thread (its OpenMP thread number).
  void add(const char* name, const char* category, Clock::time_point begin, Clock::time_point end);
  // The events as JSON objects separated by commas, with pid = `pid`, plus the
  // metadata naming the process.
  std::string events_json(int pid, const std::string& process_name) const;
  std::size_t size() const;

  // The installed tracer, or null (recording off).
  static Tracer* active() { return active_; }
  static void install(Tracer* t) { active_ = t; }

 private:
  struct Event {
    const char* name;
    const char* category;
    double ts_us, dur_us;
    int tid;
  };
  Clock::time_point origin_ = Clock::now();
  mutable std::mutex mu_;
  std::vector<Event> events_;
  static inline Tracer* active_ = nullptr;
};

// Records [construction, destruction) as a span when a tracer is installed.
class TraceSpan {
 public:
  TraceSpan(const char* name, const char* category = "train")
      : name_(name),
        category_(category),
        begin_(Tracer::active() ? Tracer::Clock::now() : Tracer::Clock::time_point{}) {}
  ~TraceSpan() {
    if (Tracer* t = Tracer::active()) t->add(name_, category_, begin_, Tracer::Clock::now());
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  const char* name_;
  const char* category_;
  Tracer::Clock::time_point begin_;
};

}  // namespace qmlsim
