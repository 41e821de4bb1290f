// A state vector distributed over the processes of a communicator (2^g of
// them, g >= 0): each holds one slice of 2^m amplitudes (m = n - g) as a CPU
// StateVector, and every process knows the qubit map and which slice each
// process holds. Circuits run by plan (distributed/plan.h): gates inside slices, bulk
// exchanges between segments, relabelling for SWAP and for X/CNOT among slice
// qubits. Exchanges move pieces of at most `buffer_bytes` / 2 at a time
// through two buffers, so a process needs its slice plus that much.
//
// Results do not depend on the process count beyond rounding: reductions add
// per-process partial sums in process order; sampling gives the single-process
// counts for the same seed (the same uniforms, the same block sums in the same
// order, scanned rank after rank).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backends/cpu/statevector.h"
#include "circuit/circuit.h"
#include "comm/comm.h"
#include "distributed/plan.h"

namespace qmlsim::distributed {

struct Options {
  int threads = 1;  // per process
  int fusion = 3;   // per segment, as in the single-process engine
  std::size_t buffer_bytes = std::size_t{32} << 20;
};

// log2 of the process count; Error (one line, naming `what`: the flag or key that
// asked for the layout) when it is not a power of two or the slices would hold
// fewer than 2^kMinSliceQubits amplitudes.
inline constexpr int kMinSliceQubits = 10;
int slice_bits(int processes, int n, const std::string& what = "--distributed");

// What a state's runs cost this process so far.
struct RunStats {
  int exchanges = 0;        // exchange rounds
  double slices_moved = 0;  // in slices: sum over rounds of 1 - 2^-k
  double bytes_sent = 0;    // by this process, all vectors
  int relabels = 0;
  int per_gate_exchanges = 0;  // the per-gate scheme's count for the same gates (PlanStats)
  double per_gate_slices_moved = 0;
  double exchange_s = 0, compute_s = 0;  // wall time in exchanges and in gate steps
};

template <class R>
class DistState {
 public:
  // |0...0> on n qubits over comm's processes.
  DistState(int n, const comm::Comm& comm, const Options& options);

  int num_qubits() const { return n_; }
  int slice_qubits() const { return m_; }
  const QubitMap& map() const { return map_; }
  std::uint64_t slice() const { return slice_of_[static_cast<std::size_t>(comm_->rank())]; }
  cpu::StateVector<R>& local() { return local_; }
  const RunStats& stats() const { return stats_; }

  // Runs gates (logical qubits, canonical form) by plan.
  void apply(const std::vector<BoundGate>& gates);
  // Runs a plan made for this state's current map (plan(gates, n, g, map())).
  void run(const DistPlan& p);

  // <H_k> for each observable. Terms that flip slice qubits are grouped by those
  // qubits; each group first brings them into the slices (one exchange).
  std::vector<double> expvals(const std::vector<PauliSum>& observables);

  // Moves the amplitudes into the identity layout: process r holds amplitudes
  // r 2^m .. (r + 1) 2^m - 1 of the circuit's qubit order.
  void canonicalize();
  // Samples of all qubits (canonicalizes first); every process gets the counts.
  std::map<index_t, std::int64_t> sample(std::int64_t shots, std::uint64_t seed);
  // The basis state of highest probability, the lowest of equals (canonicalizes first).
  index_t most_probable();
  // The whole state on every process (canonicalizes first). For tests and small n.
  std::vector<cplx> gather();

  // Adjoint gradient of <H> for the circuit at theta, this state being the
  // circuit's final state (consumed). Returns d<H>/d(slot) for every slot and
  // writes <H> to *value.
  std::vector<double> gradient(const Circuit& c, std::span<const double> theta, const PauliSum& h,
                               double* value);

  void copy_from(const DistState& other);

 private:
  // Swaps physical pairs (local, slice) in every given state (same layout).
  void exchange(const std::vector<std::pair<int, int>>& pairs,
                const std::vector<cpu::StateVector<R>*>& states);
  void relabel(int control, int target);
  // Amplitudes per piece of an exchange (the buffers are made at the first call).
  index_t exchange_piece();
  // Runs a plan on several states in step (the adjoint's two vectors); `on_gates`
  // runs each kGates step on them.
  template <class Fn>
  void run_steps(const DistPlan& p, const std::vector<cpu::StateVector<R>*>& states, Fn&& on_gates);
  // Terms of h on this process's slice: after grouping, every term's slice bits are Z.
  PauliSum local_terms(const std::vector<PauliTerm>& terms) const;
  // Brings the slice qubits in `xmask` (physical) into the slices of `states`.
  void bring_in(index_t xmask, const std::vector<cpu::StateVector<R>*>& states);
  std::vector<std::pair<index_t, std::vector<PauliTerm>>> group_by_slice_flips(
      const PauliSum& h) const;

  int n_, g_, m_;
  const comm::Comm* comm_;
  Options options_;
  cpu::StateVector<R> local_;
  QubitMap map_;
  std::vector<std::uint64_t> slice_of_;  // by process
  std::vector<int> process_of_;          // by slice
  std::vector<R> send_, recv_;           // exchange buffers
  RunStats stats_;
};

extern template class DistState<float>;
extern template class DistState<double>;

}  // namespace qmlsim::distributed
