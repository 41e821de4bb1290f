// The one choice of how the engine runs a circuit: on a state vector, a
// density matrix or trajectories, and for a dynamic circuit by the walk over
// its branches on that state. The engine's entry points, the CLI, the models
// and every Python door ask choose_method; nothing else decides.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "circuit/circuit.h"
#include "grad/options.h"

namespace qmlsim {

// What of a circuit the choice depends on.
struct CircuitNeeds {
  bool channels = false;     // noise channels
  bool mixed_start = false;  // starts from a density matrix (EngineOptions::initial_state)
  bool dynamic = false;      // mid-circuit measurement, reset or classical control
};

struct MethodChoice {
  // statevector, density_matrix or trajectories (never automatic).
  Method method = Method::statevector;
  // A dynamic circuit: walked branch by branch (grad/dynamic.h) on the
  // method's state, exactly; by trajectories, branches drawn at random.
  bool branch_walk = false;
  // The qubits of the vector one state occupies (2n on a density matrix): what
  // memory checks and item policies count.
  int state_qubits = 0;

  bool density_matrix() const { return method == Method::density_matrix; }
  bool trajectories() const { return method == Method::trajectories; }
  // The method's name as users write it (kMethodNames).
  std::string_view name() const { return kMethodNames[static_cast<std::size_t>(method)]; }
};

// How an n-qubit circuit with these needs runs under o:
// - density_matrix: on the density matrix;
// - trajectories: by trajectories where the circuit has channels or is
//   dynamic, else (nothing to draw) on the state vector;
// - statevector: on the state vector; channels are an Error unless the
//   circuit is dynamic (the walk then takes each Kraus branch exactly);
// - automatic: the state vector for a pure circuit; a noisy one (channels or
//   a mixed start) on the density matrix where it fits in memory, else by
//   trajectories (a dynamic one: walked on the state vector, Kraus branches
//   exactly). With o.trajectory_estimate, channels run by trajectories
//   wherever o.trajectories of them cost less than the density matrix.
MethodChoice choose_method(int n, const CircuitNeeds& needs, const EngineOptions& o);
// The same with c's needs (a mixed start: o.initial_state holds 4^n entries).
MethodChoice choose_method(const Circuit& c, const EngineOptions& o);

// What one run of a circuit holds at its peak: the qubits of its state (2n
// on a density matrix; the item policies go by them, grad/engine.h) and its
// bytes (what memory checks count, per item in flight).
struct ItemSize {
  int state_qubits = 0;
  std::uint64_t bytes = 0;
};

// ItemSize of c run under o with `states` states of the chosen method (a
// forward pass 1, a VJP 2, a Jacobian 3); a gradient on the density matrix
// adds the states its backward pass keeps before channels (at most
// o.checkpoint_bytes' worth, or about 2 sqrt(channels) states beyond it).
ItemSize item_size(const Circuit& c, int states, Precision p, const EngineOptions& o);
// The largest ItemSize among the circuits (each with o).
ItemSize largest_item(const std::vector<const Circuit*>& circuits, int states, Precision p,
                      const EngineOptions& o);

// Bytes of a density matrix on n qubits (the 2n-qubit vector).
std::uint64_t density_matrix_bytes(int n, Precision p);
// Whether an n-qubit complex128 density matrix fits in 90% of this machine's memory.
bool density_matrix_fits(int n);
// Whether options.initial_state is a density matrix of c's qubits (4^n entries).
bool starts_mixed(const Circuit& c, const EngineOptions& options);

}  // namespace qmlsim
