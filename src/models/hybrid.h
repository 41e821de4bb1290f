// A hybrid model for supervised jobs: classical encoder -> circuit -> Pauli
// readouts -> classical head -> outputs() predictions per example (one, or one
// logit per class). Subclasses
// supply the pieces; this class runs batches (one state per thread for circuits
// up to 18 qubits, threads inside the state for larger ones) and joins backpropagation
// through the classical parts to the circuit's adjoint vector-Jacobian product:
// one forward and one backward circuit pass per example.
//
// Circuit slots: 0..num_quantum-1 are the trainable circuit parameters (one
// contiguous block of the flat parameter vector, at quantum_offset), followed
// by the example's input angles written by encode().
#pragma once

#include <span>
#include <vector>

#include "circuit/circuit.h"
#include "circuit/observable.h"
#include "comm/comm.h"
#include "core/rng.h"
#include "core/types.h"
#include "distributed/state.h"
#include "grad/adjoint.h"
#include "grad/method.h"
#include "ml/datasets.h"
#include "ml/loss.h"
#include "ml/params.h"

namespace qmlsim::models {

struct EvalOptions {
  Precision precision = Precision::c128;
  int threads = 1;
  int fusion = 3;
  Backend backend = Backend::cpu;
  // A group of 2^g processes that hold each example's state together
  // (distributed/simulate.h); null or one process: each process holds whole states.
  const comm::Comm* state_group = nullptr;
  std::size_t exchange_bytes = std::size_t{32} << 20;  // per process, for the group's exchanges
  // Circuits with noise channels: how they run (grad/options.h).
  Method method = Method::automatic;
  std::int64_t trajectories = 1000;
  std::uint64_t seed = 1;
  bool distributed() const { return state_group && state_group->size() > 1; }
};

// The distributed engine's options these evaluation options stand for.
inline distributed::Options dist_engine(const EvalOptions& o) {
  distributed::Options d;
  d.threads = o.threads;
  d.fusion = o.fusion;
  d.buffer_bytes = o.exchange_bytes;
  return d;
}

// The engine options (grad/adjoint.h) these evaluation options stand for.
inline EngineOptions engine(const EvalOptions& o) {
  EngineOptions a;
  a.threads = o.threads;
  a.fusion = o.fusion;
  a.backend = o.backend;
  a.method = o.method;
  a.trajectories = o.trajectories;
  a.seed = o.seed;
  return a;
}

class HybridModel {
 public:
  virtual ~HybridModel() = default;

  const ml::ParamLayout& layout() const { return layout_; }
  // The batch policy: true when `count` examples run one per thread (enough of
  // them, states of at most 2^18 amplitudes: a density matrix counts its 2n
  // qubits), false when they run in turn with the threads inside each state.
  // Measured with the QCNN at 14-20 qubits, 2 threads: one state per thread is
  // faster up to 16 qubits and equal at 18-20.
  // On the GPU, examples run in turn on the calling thread (it holds the device;
  // small circuits go to the GPU's own batches instead). A state spread over
  // ranks (`distributed`) runs its examples in turn too: its collectives are
  // called by one thread per rank (MPI_THREAD_FUNNELED).
  bool one_example_per_thread(std::size_t count, int threads, Backend backend, bool distributed,
                              Method method) const {
    return backend == Backend::cpu && !distributed && state_qubits(method) <= 18 &&
           count >= static_cast<std::size_t>(threads);
  }
  bool one_example_per_thread(std::size_t count, const EvalOptions& o) const {
    return one_example_per_thread(count, o.threads, o.backend, o.distributed(), o.method);
  }
  const std::vector<PauliSum>& readouts() const { return readouts_; }
  // Predictions per example.
  std::size_t outputs() const { return num_outputs_; }
  // An example's row: [loss, predictions..., readouts..., gradient...].
  std::size_t row_width() const { return grad_offset() + layout_.size(); }
  static constexpr std::size_t kLossOffset = 0, kPredictionOffset = 1;
  std::size_t readout_offset() const { return kPredictionOffset + num_outputs_; }
  std::size_t grad_offset() const { return readout_offset() + readouts_.size(); }
  int num_qubits() const { return num_qubits_; }
  virtual void init(std::span<double> params, Rng& rng) const = 0;
  // Noise after every gate of every circuit the model runs (circuit.h:
  // with_gate_noise); they then run on density matrices (or trajectories).
  void add_gate_noise(const std::vector<GateNoise>& noise);
  // Readout error: each measured qubit's bit flipped with probability p (the
  // readouts become the observables of what is read, circuit/readout.h).
  void add_readout_error(double p);
  // Whether the model's circuits hold noise channels.
  bool has_channels() const { return has_channels_; }
  // The qubits of one state as memory counts them under o.method: a density
  // matrix of n qubits takes what a state vector of 2n does.
  int state_qubits(const EvalOptions& o) const { return state_qubits(o.method); }
  int state_qubits(Method method) const {
    EngineOptions e;
    e.method = method;
    return choose_method(num_qubits_, {.channels = has_channels_}, e).state_qubits;
  }

  // outputs() predictions per example data.x[index[i]], example after example.
  std::vector<double> predict(std::span<const double> params, const ml::Dataset& data,
                              const std::vector<std::size_t>& index,
                              const EvalOptions& options) const;

  struct Batch {
    std::vector<double> predictions;
    std::vector<double> losses;
  };
  // One row per example, in index order: [loss, predictions..., readouts <H_k>...,
  // dL/dparams...] (row_width() values; offsets above). Each row depends only on its example, not
  // on the thread count or on the other examples: data-parallel ranks compute
  // slices of a batch and sum the gathered rows in global order.
  std::vector<double> example_rows(std::span<const double> params, const ml::Dataset& data,
                                   const std::vector<std::size_t>& index, const ml::Loss& loss,
                                   const EvalOptions& options) const;

  // Per-example predictions (outputs() each) and losses; grad_sum (size layout().size()) gets the
  // SUM of the per-example gradients, added in index order (so the result does
  // not depend on the thread count).
  Batch loss_and_gradient(std::span<const double> params, const ml::Dataset& data,
                          const std::vector<std::size_t>& index, const ml::Loss& loss,
                          std::span<double> grad_sum, const EvalOptions& options) const;

 protected:
  // The circuit template for example x (its input slots follow the quantum ones).
  virtual const Circuit& circuit(std::span<const double> x) const = 0;
  // Every template circuit(x) may return, for add_gate_noise.
  virtual std::vector<Circuit*> templates() = 0;
  // Input angles for example x (size num_inputs).
  virtual void encode(std::span<const double> params, std::span<const double> x,
                      std::span<double> inputs) const = 0;
  // Given dL/d(inputs), adds dL/d(params) of the encoder to grad.
  virtual void encode_backward(std::span<const double> params, std::span<const double> x,
                               std::span<const double> d_inputs, std::span<double> grad) const = 0;
  // The circuit's slot values from theta = [quantum params..., input angles...]:
  // theta itself unless the circuit's angles are functions of it (an OpenQASM 3
  // circuit's inputs); slots_backward turns d/d(slots) into d/d(theta).
  virtual std::vector<double> slots(std::vector<double> theta) const { return theta; }
  virtual std::vector<double> slots_backward(std::span<const double> theta,
                                             std::vector<double> d_slots) const {
    (void)theta;
    return d_slots;
  }
  // The predictions (outputs() values) from the readouts <H_k>.
  virtual void head(std::span<const double> params, std::span<const double> expvals,
                    std::span<double> predictions) const = 0;
  // Given dL/d(predictions), writes dL/d(expvals) and adds the head's dL/d(params) to grad.
  virtual void head_backward(std::span<const double> params, std::span<const double> expvals,
                             std::span<const double> d_predictions, std::span<double> d_expvals,
                             std::span<double> grad) const = 0;

  ml::ParamLayout layout_;
  int num_qubits_ = 0;
  std::size_t quantum_offset_ = 0;
  std::size_t num_quantum_ = 0;
  std::size_t num_inputs_ = 0;
  std::size_t num_outputs_ = 1;
  std::vector<PauliSum> readouts_;
  bool has_channels_ = false;

 private:
  std::vector<double> theta(std::span<const double> params, std::span<const double> x) const;
  template <class R>
  void predict_one(std::span<const double> params, std::span<const double> x,
                   std::span<double> predictions, const EvalOptions& options) const;
  // Fills the example's row (row_width() values).
  template <class R>
  void gradient_one(std::span<const double> params, std::span<const double> x, double label,
                    const ml::Loss& loss, double* row, const EvalOptions& options) const;
  // The head and the loss on readouts e, between the adjoint's two halves: writes the
  // row's loss, predictions and readouts, adds the head's gradient; returns dL/de.
  std::vector<double> head_and_loss(std::span<const double> params, std::span<const double> e,
                                    double label, const ml::Loss& loss, double* row) const;
  // The GPU's small batches: every example of `index` at once (rows as example_rows).
  bool batched_on_gpu(const EvalOptions& options) const;
  template <class R>
  void gradient_batch(std::span<const double> params, const ml::Dataset& data,
                      const std::vector<std::size_t>& index, const ml::Loss& loss,
                      std::vector<double>& rows, const EvalOptions& options) const;
  template <class R>
  std::vector<double> predict_batch(std::span<const double> params, const ml::Dataset& data,
                                    const std::vector<std::size_t>& index,
                                    const EvalOptions& options) const;
};

// Observable Z on one qubit.
PauliSum pauli_z(int qubit);

}  // namespace qmlsim::models
