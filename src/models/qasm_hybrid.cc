#include "models/qasm_hybrid.h"

#include <algorithm>

#include "core/error.h"

namespace qmlsim::models {

QasmHybrid::QasmHybrid(QasmHybridSpec spec) : spec_(std::move(spec)) {
  const QasmProgram& p = spec_.program;
  const std::string& src = spec_.source;
  num_qubits_ = p.circuit.num_qubits();
  has_channels_ = p.circuit.has_channels();
  if (p.circuit.has_dynamic())
    throw Error("model.circuit: " + src +
                " has a mid-circuit measurement, reset or classically controlled operation; "
                "training needs gradients, which such circuits do not have yet (run it with "
                "`qmlsim run`)");
  auto find = [&](const std::string& name, const char* role) -> const QasmInput& {
    for (const QasmInput& in : p.inputs)
      if (in.name == name) return in;
    throw Error(src + ": declares no input '" + name + "' (listed as a " + role + ")");
  };
  // theta = [weights in listed order..., data inputs in listed order...]
  std::vector<bool> used(p.inputs.size(), false);
  auto take = [&](const std::vector<std::string>& names, const char* role) {
    std::size_t count = 0;
    for (const std::string& name : names) {
      const QasmInput& in = find(name, role);
      const auto k = static_cast<std::size_t>(&in - p.inputs.data());
      if (used[k]) throw Error(src + ": input '" + name + "' is listed twice");
      used[k] = true;
      for (int e = 0; e < in.size; ++e) theta_to_input_.push_back(in.offset + e);
      count += static_cast<std::size_t>(in.size);
    }
    return count;
  };
  num_quantum_ = take(spec_.weights, "weight");
  num_inputs_ = take(spec_.data_inputs, "data input");
  for (std::size_t k = 0; k < p.inputs.size(); ++k) {
    if (!used[k]) {
      throw Error(src + ": input '" + p.inputs[k].name +
                  "' is neither a weight nor a data input (model.weights, model.data_inputs)");
    }
  }
  for (std::size_t k = 0; k < spec_.readouts.size(); ++k) {
    check_observable_fits(spec_.readouts[k], num_qubits_,
                          "model.readouts: readout " + std::to_string(k + 1) + " (" +
                              spec_.readouts[k].to_string() + ")",
                          src);
  }
  if (spec_.readouts.empty()) throw Error("model.readouts: needs at least one readout");
  // Parameters: the circuit weights first (one contiguous block), then the layers.
  quantum_offset_ = layout_.size();
  for (const std::string& name : spec_.weights) {
    layout_.add("quantum/" + name, {find(name, "weight").size});
  }
  int width = spec_.features;
  for (std::size_t i = 0; i < spec_.encoder.size(); ++i) {
    const LayerSpec& l = spec_.encoder[i];
    encoder_.emplace_back(layout_, "encoder" + std::to_string(i + 1), width, l.units, l.activation);
    width = l.units;
  }
  if (static_cast<std::size_t>(width) != num_inputs_) {
    throw Error(std::string(spec_.encoder.empty() ? "data" : "model.encoder") + ": " +
                std::to_string(width) +
                " values per example reach the circuit, whose data inputs "
                "take " +
                std::to_string(num_inputs_));
  }
  width = static_cast<int>(spec_.readouts.size());
  for (std::size_t i = 0; i < spec_.head.size(); ++i) {
    const LayerSpec& l = spec_.head[i];
    head_.emplace_back(layout_, "head" + std::to_string(i + 1), width, l.units, l.activation);
    width = l.units;
  }
  if (width != spec_.outputs) {
    const std::string need = spec_.outputs == 1
                                 ? "one prediction is needed (add a head ending in 1 unit)"
                                 : "the loss needs one per class, " + std::to_string(spec_.outputs);
    throw Error(std::string(spec_.head.empty() ? "model.readouts" : "model.head") +
                ": the model's output has " + std::to_string(width) + " values; " + need);
  }
  num_outputs_ = static_cast<std::size_t>(spec_.outputs);
  readouts_ = spec_.readouts;
}

void QasmHybrid::init(std::span<double> params, Rng& rng) const {
  for (std::size_t i = 0; i < num_quantum_; ++i)
    params[quantum_offset_ + i] = rng.uniform(spec_.init_low, spec_.init_high);
  for (const auto* layers : {&encoder_, &head_}) {
    for (const ml::Dense& d : *layers) {
      if (spec_.glorot)
        d.init_glorot(params, rng);
      else
        d.init_torch(params, rng);
    }
  }
}

QasmHybrid::Trace QasmHybrid::forward(const std::vector<ml::Dense>& layers,
                                      std::span<const double> params, std::span<const double> x) {
  Trace t;
  t.out.assign(x.begin(), x.end());
  for (const ml::Dense& d : layers) {
    t.in.push_back(t.out);
    t.z.emplace_back(static_cast<std::size_t>(d.out()));
    t.out.assign(static_cast<std::size_t>(d.out()), 0.0);
    d.forward(params, t.in.back(), t.z.back(), t.out);
  }
  return t;
}

void QasmHybrid::backward(const std::vector<ml::Dense>& layers, std::span<const double> params,
                          const Trace& t, std::vector<double> dy, std::span<double> grad,
                          std::span<double> dx) {
  for (std::size_t i = layers.size(); i-- > 0;) {
    std::vector<double> d_in(t.in[i].size());
    layers[i].backward(params, t.in[i], t.z[i], dy, grad, d_in);
    dy = std::move(d_in);
  }
  if (!dx.empty()) std::copy(dy.begin(), dy.end(), dx.begin());
}

void QasmHybrid::encode(std::span<const double> params, std::span<const double> x,
                        std::span<double> inputs) const {
  const Trace t = forward(encoder_, params, x);
  std::copy(t.out.begin(), t.out.end(), inputs.begin());
}

void QasmHybrid::encode_backward(std::span<const double> params, std::span<const double> x,
                                 std::span<const double> d_inputs, std::span<double> grad) const {
  if (encoder_.empty()) return;  // the features are data, not parameters
  const Trace t = forward(encoder_, params, x);
  backward(encoder_, params, t, {d_inputs.begin(), d_inputs.end()}, grad, {});
}

void QasmHybrid::head(std::span<const double> params, std::span<const double> expvals,
                      std::span<double> predictions) const {
  const std::vector<double> out = forward(head_, params, expvals).out;
  std::copy(out.begin(), out.end(), predictions.begin());
}

void QasmHybrid::head_backward(std::span<const double> params, std::span<const double> expvals,
                               std::span<const double> d_predictions, std::span<double> d_expvals,
                               std::span<double> grad) const {
  const Trace t = forward(head_, params, expvals);
  backward(head_, params, t, {d_predictions.begin(), d_predictions.end()}, grad, d_expvals);
}

std::vector<double> QasmHybrid::program_inputs(std::span<const double> theta) const {
  std::vector<double> x(theta_to_input_.size());
  for (std::size_t i = 0; i < theta.size(); ++i)
    x[static_cast<std::size_t>(theta_to_input_[i])] = theta[i];
  return x;
}

std::vector<double> QasmHybrid::slots(std::vector<double> theta) const {
  return spec_.program.angles_at(program_inputs(theta));
}

std::vector<double> QasmHybrid::slots_backward(std::span<const double> theta,
                                               std::vector<double> d_slots) const {
  const std::vector<double> dx = spec_.program.input_gradient(program_inputs(theta), d_slots);
  std::vector<double> d_theta(theta.size());
  for (std::size_t i = 0; i < theta.size(); ++i)
    d_theta[i] = dx[static_cast<std::size_t>(theta_to_input_[i])];
  return d_theta;
}

}  // namespace qmlsim::models
