#include "train/divergence.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace qmlsim::train {

namespace {

bool all_finite(std::span<const double> v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

// Stops a diverging run before anything of the step is written: the newest
// checkpoint stays the last finite state (Keras' TerminateOnNaN).
[[noreturn]] void stop_diverged(const std::string& what_is, std::int64_t step, std::int64_t epoch) {
  throw Error(what_is + " at step " + std::to_string(step) +
              (epoch >= 0 ? " (epoch " + std::to_string(epoch) + ")" : "") +
              ": training stopped; the newest checkpoint holds the last finite state "
              "(train.on_nonfinite = \"skip\" skips such steps)");
}

}  // namespace

// After a step's update: its loss and the new parameters must be finite.
void check_finite(double loss, std::span<const double> params, const char* what, std::int64_t step,
                  std::int64_t epoch) {
  if (!std::isfinite(loss))
    stop_diverged(std::string(what) + " is " + std::to_string(loss), step, epoch);
  if (!all_finite(params)) stop_diverged("a parameter is not finite", step, epoch);
}

// Whether a step may update the parameters: its loss and gradient finite.
// Otherwise, with skip, the update is left out (the caller logs it); without,
// the run stops.
bool step_is_finite(double loss, std::span<const double> grad, bool skip, const char* what,
                    std::int64_t step, std::int64_t epoch) {
  if (std::isfinite(loss) && all_finite(grad)) return true;
  if (skip) return false;
  if (!std::isfinite(loss))
    stop_diverged(std::string(what) + " is " + std::to_string(loss), step, epoch);
  stop_diverged("the gradient is not finite", step, epoch);
}

}  // namespace qmlsim::train
