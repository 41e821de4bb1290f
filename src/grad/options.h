// The one options type of the engine's entry points (grad/adjoint.h,
// grad/simulate.h, grad/batch.h): where and how circuits run.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "core/memory.h"
#include "core/types.h"

namespace qmlsim {

// How a circuit runs: on a state vector (no channels), a density matrix
// (grad/density_matrix.h) or trajectories (grad/trajectories.h);
// grad/method.h: choose_method, the one place that decides, says how each
// resolves.
enum class Method { automatic, statevector, density_matrix, trajectories };

// The name users write for each method (--method, Options.method), in enum order.
inline constexpr std::array<std::string_view, 4> kMethodNames = {"auto", "statevector",
                                                                 "density_matrix", "trajectories"};
inline std::optional<Method> method_by_name(std::string_view name) {
  for (std::size_t i = 0; i < kMethodNames.size(); ++i)
    if (kMethodNames[i] == name) return static_cast<Method>(i);
  return std::nullopt;
}

// The bytes of forward states a density-matrix gradient keeps by default: a
// quarter of the usable memory, at most 4 GiB (1 GiB where it is unknown).
// Keeping a state costs a copy; beyond the budget the backward pass undoes
// channels (a pass per channel block) or recomputes (docs/design/noise.md).
inline std::uint64_t default_checkpoint_bytes() {
  static const std::uint64_t bytes = [] {
    const std::uint64_t have = usable_memory().bytes, four = std::uint64_t{4} << 30;
    return have == 0 ? std::uint64_t{1} << 30 : std::min(four, have / 4);
  }();
  return bytes;
}

// How circuits run, for adjoint gradients and plain simulation (grad/simulate.h).
struct EngineOptions {
  int threads = 1;
  int fusion = 3;                  // fuse the fixed gates between parametric ones (0: off)
  int chunk_qubits = -1;           // cache-blocking chunk (see StateVector); -1: the default
  Backend backend = Backend::cpu;  // cuda: the current device (cuda::select_device)
  // The state the circuit starts from (2^n amplitudes, bit q of an index =
  // qubit q, normalised by the caller); empty: |0...0>. Not owned.
  std::span<const cplx> initial_state = {};
  Method method = Method::automatic;
  // Density-matrix gradients: bytes of forward states the backward pass may
  // keep (beyond that, channels are undone or segments recomputed from fewer
  // checkpoints); by default default_checkpoint_bytes().
  std::uint64_t checkpoint_bytes = default_checkpoint_bytes();
  // Trajectories: how many, and the seed of their random streams.
  std::int64_t trajectories = 1000;
  std::uint64_t seed = 1;
  // The caller takes the mean of `trajectories` trajectories as a noisy
  // result (TFQ's estimate): automatic then runs them wherever they cost less
  // than the density matrix (grad/method.h).
  bool trajectory_estimate = false;
  // Dynamic circuits read exactly (grad/dynamic.h): the most outcome branches
  // of mid-circuit measurements, resets and (on a state vector) channels.
  std::int64_t max_branches = 65536;
};

}  // namespace qmlsim
