#include "grad/method.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/statevector.h"
#include "core/error.h"
#include "core/memory.h"

namespace qmlsim {
namespace {

// Whether `count` trajectories of n qubits cost less than the density matrix:
// count 2^n amplitudes against 4^n, with a margin of 4 for the trajectories'
// own work (drawing branches, a state each).
bool trajectories_cheaper(int n, std::int64_t count) {
  return n >= 2 && n < 62 && count < (std::int64_t{1} << n) / 4;
}

Method method_for(int n, const CircuitNeeds& k, const EngineOptions& o) {
  switch (o.method) {
    case Method::density_matrix:
      return Method::density_matrix;
    case Method::trajectories:
      return k.channels || k.dynamic ? Method::trajectories : Method::statevector;
    case Method::statevector:
      if (k.channels && !k.dynamic)
        throw Error(
            "method statevector: the circuit has noise channels, which run on a density matrix or "
            "by trajectories (method density_matrix or trajectories)");
      return Method::statevector;
    case Method::automatic:
      break;
  }
  if (!k.channels && !k.mixed_start) return Method::statevector;
  const bool estimate = o.trajectory_estimate && k.channels && !k.dynamic;
  if (estimate && trajectories_cheaper(n, o.trajectories)) return Method::trajectories;
  if (density_matrix_fits(n)) return Method::density_matrix;
  return k.channels && !k.dynamic ? Method::trajectories : Method::statevector;
}

// States a density-matrix gradient keeps before `channels` channels
// (grad/density_matrix.cc: plan_backward, pull_back): all of them within
// `budget` bytes of `state` each, else every stride-th, stride ~
// sqrt(channels), and one block recomputed from it.
double kept_states(double channels, double state, double budget) {
  if (channels * state <= budget) return channels;
  return std::min(channels, 2 * std::ceil(std::sqrt(channels)));
}

}  // namespace

ItemSize item_size(const Circuit& c, int states, Precision p, const EngineOptions& o) {
  const MethodChoice m = choose_method(c, o);
  // In double: a density matrix forced beyond the qubit limit overflows 64 bits.
  const double state = std::ldexp(p == Precision::c64 ? 8.0 : 16.0, m.state_qubits);
  double bytes = states * state;
  if (m.density_matrix() && states > 1) {
    const auto channels = static_cast<double>(std::count_if(
        c.ops().begin(), c.ops().end(), [](const Operation& op) { return op.is_channel(); }));
    bytes += kept_states(channels, state, static_cast<double>(o.checkpoint_bytes)) * state;
  }
  const double most = std::ldexp(1.0, 62);
  return {m.state_qubits, static_cast<std::uint64_t>(std::min(bytes, most))};
}

ItemSize largest_item(const std::vector<const Circuit*>& circuits, int states, Precision p,
                      const EngineOptions& o) {
  ItemSize out;
  for (const Circuit* c : circuits) {
    const ItemSize s = item_size(*c, states, p, o);
    out = {std::max(out.state_qubits, s.state_qubits), std::max(out.bytes, s.bytes)};
  }
  return out;
}

MethodChoice choose_method(int n, const CircuitNeeds& needs, const EngineOptions& o) {
  MethodChoice out;
  out.method = method_for(n, needs, o);
  out.branch_walk = needs.dynamic;
  out.state_qubits = out.density_matrix() ? 2 * n : n;
  return out;
}

MethodChoice choose_method(const Circuit& c, const EngineOptions& o) {
  return choose_method(c.num_qubits(), {c.has_channels(), starts_mixed(c, o), c.has_dynamic()}, o);
}

std::uint64_t density_matrix_bytes(int n, Precision p) { return cpu::state_bytes(2 * n, p); }

bool density_matrix_fits(int n) {
  const std::uint64_t have = usable_memory().bytes;
  return 2 * n <= kMaxQubits &&
         (have == 0 ? n <= 13 : density_matrix_bytes(n, Precision::c128) <= have / 10 * 9);
}

bool starts_mixed(const Circuit& c, const EngineOptions& options) {
  const int n = c.num_qubits();
  return 2 * n < 64 && options.initial_state.size() == index_t{1} << (2 * n);
}

}  // namespace qmlsim
