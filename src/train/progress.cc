#include "train/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"

namespace qmlsim::train {

bool stdout_is_terminal() {
  if (const char* forced = std::getenv("QMLSIM_PROGRESS"); forced && *forced) {
    if (std::strcmp(forced, "bar") == 0) return true;
    if (std::strcmp(forced, "lines") == 0) return false;
    throw Error(std::string("QMLSIM_PROGRESS: expected bar or lines, got '") + forced + "'");
  }
  // Open MPI (and srun --pty) give ranks a pseudo-terminal even when the
  // launcher's own output goes to a log, such as what kubectl logs shows.
  for (const char* launcher : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (std::getenv(launcher)) return false;
  return isatty(STDOUT_FILENO) == 1;
}

void Progress::begin_epoch(int epoch, int epochs, int steps) {
  steps_ = steps;
  done_ = 0;
  start_ = std::chrono::steady_clock::now();
  if (!quiet_) out_ << "Epoch " << epoch << "/" << epochs << "\n" << std::flush;
}

std::string Progress::line(int done,
                           const std::vector<std::pair<std::string, double>>& metrics) const {
  constexpr int kWidth = 30;
  const int filled = steps_ > 0 ? kWidth * done / steps_ : kWidth;
  std::string bar(static_cast<std::size_t>(kWidth), '.');
  for (int i = 0; i < filled; ++i) bar[static_cast<std::size_t>(i)] = '=';
  if (filled < kWidth && filled > 0) bar[static_cast<std::size_t>(filled)] = '>';
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  char head[160];
  std::snprintf(head, sizeof head, "%d/%d [%s] - %.1fs %.0fms/step", done, steps_, bar.c_str(),
                secs, done > 0 ? 1e3 * secs / done : 0.0);
  std::string s = head;
  for (const auto& [name, v] : metrics) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " - %s: %.4f", name.c_str(), v);
    s += buf;
  }
  return s;
}

void Progress::step(int done, const std::vector<std::pair<std::string, double>>& metrics) {
  done_ = done;
  if (quiet_ || !tty_) return;
  out_ << "\r" << line(done, metrics) << "\033[K" << std::flush;
}

void Progress::end_epoch(const std::vector<std::pair<std::string, double>>& metrics) {
  if (quiet_) return;
  out_ << (tty_ ? "\r" : "") << line(done_, metrics) << (tty_ ? "\033[K\n" : "\n") << std::flush;
}

}  // namespace qmlsim::train
