// `qmlsim plan`: before a long run, what one state needs in memory, whether a
// rank's working set fits this machine, and the time per step, epoch and run on
// N ranks, from a short calibration of the job's own circuit on this machine.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "io/config.h"

namespace qmlsim::train {

struct PlanOptions {
  int ranks = 1;
  int ranks_per_node = 1;
  int threads = 0;              // per rank; 0: this machine's cores / ranks_per_node
  std::string backend;          // cpu or cuda; empty: the config's job.backend
  double node_hour_price = -1;  // < 0: no cost line
};

struct Plan {
  int qubits = 0;               // the circuits' (a noisy job's states have twice as many)
  bool density_matrix = false;  // noisy circuits: states are density matrices
  std::string precision;
  std::string backend;
  std::uint64_t state_bytes = 0;    // one state vector (with job.state_ranks > 1: one slice)
  int state_ranks = 1;              // ranks holding one state (job.state_ranks)
  int states_at_once = 0;           // per rank: 2 per example in flight (state + adjoint)
  std::uint64_t rank_bytes = 0;     // state_bytes * states_at_once
  std::uint64_t machine_bytes = 0;  // what a process may use here (usable_memory; cuda: the GPU)
  bool fits = false;                // ranks_per_node ranks fit this machine (else no timings)
  int threads = 0;
  double step_s = 0, eval_s = 0, epoch_s = 0, run_s = 0;
  std::int64_t steps_per_epoch = 0, epochs = 0;  // QAOA: steps = iterations, epochs = 1
  double cost = -1;                              // node hours * price, when a price is given
  double calibration_s = 0;
};

Plan make_plan(const io::Config& config, const PlanOptions& options);
void print_plan(const Plan& plan, const PlanOptions& options, std::ostream& out);
void print_plan_json(const Plan& plan, std::ostream& out);

}  // namespace qmlsim::train
