// QAOA for Max-Cut (docs/workloads.md, job 1): H_C = sum_edges 0.5 (Z_i Z_j - 1),
// Hadamards, then p layers of MultiRZ(gamma_k) on every edge and RX(2 alpha_k)
// on every qubit. Parameters [2, p]: row 0 gammas, row 1 alphas.
#pragma once

#include <span>

#include "circuit/circuit.h"
#include "circuit/observable.h"
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

  // scale * U(0, 1) for every parameter.
  void init(std::span<double> params, Rng& rng, double scale) const;
  // <H_C>; with grad non-empty also d<H_C>/dparams (adjoint), written to grad.
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
  ml::ParamLayout layout_;
};

}  // namespace qmlsim::models
