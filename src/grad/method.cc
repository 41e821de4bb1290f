#include "grad/method.h"

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

}  // namespace

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
