#include "core/trace.h"

#include <omp.h>

#include <cstdio>

#include "core/json.h"

namespace qmlsim {

void Tracer::add(const char* name, const char* category, Clock::time_point begin,
                 Clock::time_point end) {
  const double ts = std::chrono::duration<double, std::micro>(begin - origin_).count();
  const double dur = std::chrono::duration<double, std::micro>(end - begin).count();
  const int tid = omp_get_thread_num();
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back({name, category, ts, dur, tid});
}

std::size_t Tracer::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

std::string Tracer::events_json(int pid, const std::string& process_name) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out = "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
                    ",\"tid\":0,\"args\":{\"name\":" + JsonWriter::quote(process_name) + "}}";
  char buf[96];
  for (const Event& e : events_) {
    out += ",{\"name\":" + JsonWriter::quote(e.name) + ",\"cat\":" + JsonWriter::quote(e.category);
    std::snprintf(buf, sizeof buf, ",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d}",
                  e.ts_us, e.dur_us, pid, e.tid);
    out += buf;
  }
  return out;
}

}  // namespace qmlsim
