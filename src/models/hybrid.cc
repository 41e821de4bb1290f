#include "models/hybrid.h"

#include "backends/cuda/small_batch.h"
#include "circuit/readout.h"
#include "core/parallel.h"
#include "core/trace.h"
#include "distributed/simulate.h"
#include "grad/adjoint.h"
#include "grad/simulate.h"

namespace qmlsim::models {

PauliSum pauli_z(int qubit) {
  PauliSum h;
  h.add(1.0, 0, index_t{1} << qubit);
  return h;
}

std::vector<double> HybridModel::theta(std::span<const double> params,
                                       std::span<const double> x) const {
  std::vector<double> t(num_quantum_ + num_inputs_);
  std::copy_n(params.begin() + static_cast<std::ptrdiff_t>(quantum_offset_), num_quantum_,
              t.begin());
  encode(params, x, std::span<double>(t).subspan(num_quantum_));
  return t;
}

template <class R>
void HybridModel::predict_one(std::span<const double> params, std::span<const double> x,
                              std::span<double> predictions, const EvalOptions& options) const {
  SimulateRequest req;
  req.observables = readouts_;
  const std::vector<double> t = slots(theta(params, x));
  const SimulateResult r =
      options.distributed()
          ? distributed::simulate<R>(circuit(x), t, req, dist_engine(options), *options.state_group)
          : simulate<R>(circuit(x), t, req, engine(options));
  head(params, r.expvals, predictions);
}

std::vector<double> HybridModel::head_and_loss(std::span<const double> params,
                                               std::span<const double> e, double label,
                                               const ml::Loss& loss, double* row) const {
  std::copy(e.begin(), e.end(), row + readout_offset());
  const std::span<double> predictions(row + kPredictionOffset, num_outputs_);
  head(params, e, predictions);
  row[kLossOffset] = loss.value(predictions, label);
  std::vector<double> d_predictions(num_outputs_), d_e(e.size());
  loss.derivative(predictions, label, d_predictions);
  head_backward(params, e, d_predictions, d_e,
                std::span<double>(row + grad_offset(), layout_.size()));
  return d_e;
}

template <class R>
void HybridModel::gradient_one(std::span<const double> params, std::span<const double> x,
                               double label, const ml::Loss& loss, double* row,
                               const EvalOptions& options) const {
  Tracer* const tracer = Tracer::active();  // clock reads only when tracing
  const auto t_begin = tracer ? Tracer::Clock::now() : Tracer::Clock::time_point{};
  Tracer::Clock::time_point t_forward{};
  const Circuit& c = circuit(x);
  const std::vector<double> t = theta(params, x);
  // The head runs inside the adjoint pass, between its forward and backward
  // halves: the upstream weights need the readouts.
  const WeightsFn weights = [&](std::span<const double> e) {
    if (tracer) t_forward = Tracer::Clock::now();
    return head_and_loss(params, e, label, loss, row);
  };
  const AdjointResult r =
      options.distributed()
          ? distributed::adjoint_vjp<R>(c, slots(t), readouts_, weights, dist_engine(options),
                                        *options.state_group)
          : adjoint_vjp<R>(c, slots(t), readouts_, weights, engine(options));
  if (tracer) {  // one span per half of the adjoint pass
    tracer->add("forward", "circuit", t_begin, t_forward);
    tracer->add("backward", "circuit", t_forward, Tracer::Clock::now());
  }
  const std::span<double> grad(row + grad_offset(), layout_.size());
  const std::vector<double> g = slots_backward(t, r.gradient);
  for (std::size_t i = 0; i < num_quantum_; ++i) grad[quantum_offset_ + i] += g[i];
  encode_backward(params, x, std::span<const double>(g).subspan(num_quantum_), grad);
}

void HybridModel::add_gate_noise(const std::vector<GateNoise>& noise) {
  for (Circuit* c : templates()) {
    *c = with_gate_noise(*c, noise);
    has_channels_ = has_channels_ || c->has_channels();
  }
}

void HybridModel::add_readout_error(double p) {
  if (p == 0) return;
  ReadoutError e;
  e.qubits.assign(static_cast<std::size_t>(num_qubits_), ReadoutFlip{p, p});
  for (PauliSum& h : readouts_) h = read_through(h, e);
}

bool HybridModel::batched_on_gpu(const EvalOptions& options) const {
  return options.backend == Backend::cuda && !options.distributed() &&
         cuda::small_batch_fits(num_qubits_, options.precision, readouts_.size());
}

template <class R>
void HybridModel::gradient_batch(std::span<const double> params, const ml::Dataset& data,
                                 const std::vector<std::size_t>& index, const ml::Loss& loss,
                                 std::vector<double>& rows, const EvalOptions& options) const {
  const std::size_t width = row_width();
  std::vector<const Circuit*> circuits;
  std::vector<std::vector<double>> thetas;
  std::vector<WeightsFn> weights;
  for (std::size_t i = 0; i < index.size(); ++i) {
    const std::vector<double>& x = data.x[index[i]];
    circuits.push_back(&circuit(x));
    thetas.push_back(theta(params, x));
    double* row = &rows[i * width];
    const double label = data.y[index[i]];
    weights.push_back([this, row, label, &loss, params](std::span<const double> e) {
      return head_and_loss(params, e, label, loss, row);
    });
  }
  std::vector<std::vector<double>> slot_values;
  for (const std::vector<double>& t : thetas) slot_values.push_back(slots(t));
  const std::vector<AdjointResult> r =
      adjoint_vjp_many<R>(circuits, slot_values, readouts_, weights, engine(options));
  for (std::size_t i = 0; i < index.size(); ++i) {
    const std::span<double> grad(&rows[i * width] + grad_offset(), layout_.size());
    const std::vector<double> g = slots_backward(thetas[i], r[i].gradient);
    for (std::size_t k = 0; k < num_quantum_; ++k) grad[quantum_offset_ + k] += g[k];
    encode_backward(params, data.x[index[i]], std::span<const double>(g).subspan(num_quantum_),
                    grad);
  }
}

template <class R>
std::vector<double> HybridModel::predict_batch(std::span<const double> params,
                                               const ml::Dataset& data,
                                               const std::vector<std::size_t>& index,
                                               const EvalOptions& options) const {
  std::vector<const Circuit*> circuits;
  std::vector<std::vector<double>> thetas;
  for (std::size_t i : index) {
    circuits.push_back(&circuit(data.x[i]));
    thetas.push_back(slots(theta(params, data.x[i])));
  }
  const std::vector<std::vector<double>> e =
      expvals_many<R>(circuits, thetas, readouts_, engine(options));
  std::vector<double> out(index.size() * num_outputs_);
  for (std::size_t i = 0; i < e.size(); ++i)
    head(params, e[i], std::span<double>(out).subspan(i * num_outputs_, num_outputs_));
  return out;
}

std::vector<double> HybridModel::predict(std::span<const double> params, const ml::Dataset& data,
                                         const std::vector<std::size_t>& index,
                                         const EvalOptions& options) const {
  if (batched_on_gpu(options))
    return options.precision == Precision::c64
               ? predict_batch<float>(params, data, index, options)
               : predict_batch<double>(params, data, index, options);
  std::vector<double> out(index.size() * num_outputs_);
  parallel_items(index.size(), one_example_per_thread(index.size(), options), options.threads,
                 [&](std::size_t i, int threads) {
                   EvalOptions o = options;
                   o.threads = threads;
                   const std::vector<double>& x = data.x[index[i]];
                   const std::span<double> p =
                       std::span<double>(out).subspan(i * num_outputs_, num_outputs_);
                   if (options.precision == Precision::c64)
                     predict_one<float>(params, x, p, o);
                   else
                     predict_one<double>(params, x, p, o);
                 });
  return out;
}

std::vector<double> HybridModel::example_rows(std::span<const double> params,
                                              const ml::Dataset& data,
                                              const std::vector<std::size_t>& index,
                                              const ml::Loss& loss,
                                              const EvalOptions& options) const {
  const std::size_t width = row_width();
  std::vector<double> rows(index.size() * width, 0.0);
  if (batched_on_gpu(options)) {
    if (options.precision == Precision::c64)
      gradient_batch<float>(params, data, index, loss, rows, options);
    else
      gradient_batch<double>(params, data, index, loss, rows, options);
    return rows;
  }
  parallel_items(index.size(), one_example_per_thread(index.size(), options), options.threads,
                 [&](std::size_t i, int threads) {
                   EvalOptions o = options;
                   o.threads = threads;
                   double* row = &rows[i * width];
                   const std::vector<double>& x = data.x[index[i]];
                   const double y = data.y[index[i]];
                   if (options.precision == Precision::c64)
                     gradient_one<float>(params, x, y, loss, row, o);
                   else
                     gradient_one<double>(params, x, y, loss, row, o);
                 });
  return rows;
}

HybridModel::Batch HybridModel::loss_and_gradient(std::span<const double> params,
                                                  const ml::Dataset& data,
                                                  const std::vector<std::size_t>& index,
                                                  const ml::Loss& loss, std::span<double> grad_sum,
                                                  const EvalOptions& options) const {
  const std::vector<double> rows = example_rows(params, data, index, loss, options);
  const std::size_t width = row_width();
  Batch b;
  for (std::size_t i = 0; i < index.size(); ++i) {
    const double* row = &rows[i * width];
    b.losses.push_back(row[kLossOffset]);
    b.predictions.insert(b.predictions.end(), row + kPredictionOffset,
                         row + kPredictionOffset + num_outputs_);
    for (std::size_t k = 0; k < layout_.size(); ++k) grad_sum[k] += row[grad_offset() + k];
  }
  return b;
}

}  // namespace qmlsim::models
