// QAOA for Max-Cut (docs/workloads.md, job 1): H_C = sum_edges 0.5 (Z_i Z_j - 1),
// Hadamards, then p layers of MultiRZ(gamma_k) on every edge and RX(2 alpha_k)
// on every qubit. Parameters [2, p]: row 0 gammas, row 1 alphas.
#pragma once

#include <span>

#include "circuit/circuit.h"
#include "circuit/observable.h"
#include "circuit/readout.h"
#include "ml/datasets.h"
#include "ml/params.h"
#include "models/hybrid.h"

namespace qmlsim::models {

class QaoaMaxCut {
 public:
  // REQUIRES 1 <= depth; the graph's nodes <= kMaxQubits.
  QaoaMaxCut(ml::Graph graph, int depth);

  const ml::Graph& graph() const { return graph_; }
  const Circuit& circuit() const { return circuit_; }
  const PauliSum& cost_hamiltonian() const { return cost_; }
  const ml::ParamLayout& layout() const { return layout_; }

  // Noise after every gate (circuit.h: with_gate_noise): the circuit then runs
  // on a density matrix (or trajectories), in one process per restart.
  void add_gate_noise(const std::vector<GateNoise>& noise);
  // Readout error: each qubit's bit flipped with probability p when read. The
  // cost becomes what a device reads (circuit/readout.h: read_through of H_C)
  // and samples are read through it; the most probable state stays the true one.
  void add_readout_error(double p);
  bool has_channels() const { return circuit_.has_channels(); }
  // The qubits of one state as memory counts them under o.method (2n for a
  // density matrix).
  int state_qubits(const EvalOptions& o) const {
    return has_channels() ? choose_method(graph_.nodes, {.channels = true}, engine(o)).state_qubits
                          : graph_.nodes;
  }

  // scale * U(0, 1) for every parameter.
  void init(std::span<double> params, Rng& rng, double scale) const;
  // <H_C> (read through the readout error, if any); with grad non-empty also
  // its derivatives (adjoint), written to grad.
  double cost(std::span<const double> params, std::span<double> grad,
              const EvalOptions& options) const;
  // Number of edges cut by an assignment (bit i = side of node i).
  int cut_size(index_t assignment) const;
  struct Cut {
    index_t assignment = 0;
    int size = 0;
  };
  // What the final state gives a user: its most probable basis state (lowest
  // index on ties), and the best cut among `shots` seeded samples.
  struct Readout {
    Cut most_probable;
    Cut best_sampled;
  };
  Readout readout(std::span<const double> params, std::int64_t shots, std::uint64_t seed,
                  const EvalOptions& options) const;
  // The maximum cut by exhaustive search over 2^(n-1) assignments (node n-1
  // fixed on side 0), in parallel; ties go to the lowest assignment.
  Cut max_cut(int threads) const;

 private:
  ml::Graph graph_;
  Circuit circuit_;
  PauliSum cost_;
  PauliSum measured_cost_;  // cost_ read through readout_
  ReadoutError readout_;
  ml::ParamLayout layout_;
};

}  // namespace qmlsim::models
