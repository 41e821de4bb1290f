// Diverging runs (train.on_nonfinite): a step whose loss (cost) or gradient
// is not finite stops the run before anything of the step is written, so the
// newest checkpoint stays the last finite state (Keras' TerminateOnNaN), or
// with "skip" leaves the update out; a parameter that stops being finite
// always stops the run.
#pragma once

#include <cstdint>
#include <span>

namespace qmlsim::train {

// Whether a step may update the parameters: its loss and gradient finite.
// Otherwise false with skip (the caller records the skipped step), else an
// Error naming what is not finite, the step and the epoch (< 0: none).
bool step_is_finite(double loss, std::span<const double> grad, bool skip, const char* what,
                    std::int64_t step, std::int64_t epoch);
// After a step's update: an Error unless its loss and the new parameters are finite.
void check_finite(double loss, std::span<const double> params, const char* what, std::int64_t step,
                  std::int64_t epoch);

}  // namespace qmlsim::train
