#include "grad/batch.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "backends/cpu/statevector.h"
#include "core/error.h"
#include "core/memory.h"
#include "grad/density_matrix.h"
#include "grad/engine.h"

namespace qmlsim {
namespace {

// Whether every item runs as the batch's first would: no starting state or
// observables of its own (the *_many entry points' batches).
bool uniform(const std::vector<BatchItem>& items) {
  return std::none_of(items.begin(), items.end(), [](const BatchItem& it) {
    return !it.initial_state.empty() || it.observables != nullptr;
  });
}

const std::vector<PauliSum>& observables_of(const BatchItem& item,
                                            const std::vector<PauliSum>& batch) {
  return item.observables ? *item.observables : batch;
}

// Every item's observables act on its circuit's qubits (an Error otherwise).
void check_observables(const std::vector<BatchItem>& items, const std::vector<PauliSum>& batch) {
  for (const BatchItem& it : items)
    for (const PauliSum& h : observables_of(it, batch))
      check_observable_fits(h, it.circuit->num_qubits(), "observable");
}

std::vector<const Circuit*> circuits_of(const std::vector<BatchItem>& items) {
  std::vector<const Circuit*> out;
  for (const BatchItem& it : items) out.push_back(it.circuit);
  return out;
}

std::vector<std::vector<double>> thetas_of(const std::vector<BatchItem>& items) {
  std::vector<std::vector<double>> out;
  for (const BatchItem& it : items) out.emplace_back(it.theta.begin(), it.theta.end());
  return out;
}

// The options an item runs with: the batch's, with its own starting state.
EngineOptions options_of(const BatchItem& item, const EngineOptions& options) {
  EngineOptions o = options;
  if (!item.initial_state.empty()) o.initial_state = item.initial_state;
  return o;
}

// The largest item's size with `states` states (method.h: item_size).
ItemSize largest_of(const std::vector<BatchItem>& items, int states, Precision precision,
                    const EngineOptions& options) {
  ItemSize out;
  for (const BatchItem& it : items) {
    const ItemSize s = item_size(*it.circuit, states, precision, options_of(it, options));
    out = {std::max(out.state_qubits, s.state_qubits), std::max(out.bytes, s.bytes)};
  }
  return out;
}

// One item with `states` states fits (the largest item decides; the item
// policies run fewer at once where one per thread would not fit).
void check_batch_fits(const std::vector<BatchItem>& items, int states, Precision precision,
                      const EngineOptions& options) {
  const BatchItem* largest = &items[0];
  std::uint64_t most = 0;
  for (const BatchItem& it : items) {
    const std::uint64_t bytes =
        item_size(*it.circuit, states, precision, options_of(it, options)).bytes;
    if (bytes > most) {
      most = bytes;
      largest = &it;
    }
  }
  check_states_fit(*largest->circuit, states, precision, options_of(*largest, options));
}

// Runs fn(i, item_options) for every item of `states` states (its starting
// state in item_options): as detail::for_each_sweep for adjoint sweeps (two
// states or more), else as detail::for_each_item.
template <class R, class Fn>
void for_each_batch_item(const std::vector<BatchItem>& items, int states,
                         const EngineOptions& options, Fn&& fn) {
  detail::common_qubits(circuits_of(items), "batch");
  auto item = [&](std::size_t i, const EngineOptions& inner) {
    fn(i, options_of(items[i], inner));
  };
  const ItemSize size = largest_of(items, states, kPrecisionOf<R>, options);
  if (states > 1)
    detail::for_each_sweep<R>(items.size(), size, options, item);
  else
    detail::for_each_item(items.size(), size, options, item);
}

template <class R>
std::vector<SimulateResult> simulate_items(const std::vector<BatchItem>& items,
                                           const SimulateRequest& request,
                                           const EngineOptions& options) {
  std::vector<SimulateResult> out(items.size());
  const bool expvals_only = request.shots == 0 && !request.most_probable && !request.state &&
                            !request.probabilities && !request.leaves;
  if (expvals_only && uniform(items)) {
    const std::vector<std::vector<double>> e =
        expvals_many<R>(circuits_of(items), thetas_of(items), request.observables, options);
    for (std::size_t i = 0; i < items.size(); ++i) out[i].expvals = e[i];
    return out;
  }
  for_each_batch_item<R>(items, 1, options, [&](std::size_t i, const EngineOptions& o) {
    out[i] = simulate<R>(*items[i].circuit, items[i].theta, request, o);
  });
  return out;
}

template <class R>
std::vector<AdjointResult> vjp_items(const std::vector<BatchItem>& items,
                                     const std::vector<PauliSum>& observables,
                                     const std::vector<std::vector<double>>& weights,
                                     const EngineOptions& options) {
  if (uniform(items)) {
    std::vector<WeightsFn> fns;
    for (const std::vector<double>& w : weights)
      fns.emplace_back([&w](std::span<const double>) { return w; });
    return adjoint_vjp_many<R>(circuits_of(items), thetas_of(items), observables, fns, options);
  }
  std::vector<AdjointResult> out(items.size());
  for_each_batch_item<R>(items, 2, options, [&](std::size_t i, const EngineOptions& o) {
    out[i] = adjoint_vjp<R>(*items[i].circuit, items[i].theta,
                            observables_of(items[i], observables), weights[i], o);
  });
  return out;
}

// One VJP per observable (a forward and a backward pass each): two states.
template <class R>
JacobianResult jacobian_by_vjp(const BatchItem& item, const std::vector<PauliSum>& observables,
                               const EngineOptions& options) {
  JacobianResult out;
  std::vector<double> w(observables.size(), 0.0);
  for (std::size_t k = 0; k < observables.size(); ++k) {
    w[k] = 1;
    AdjointResult r = adjoint_vjp<R>(*item.circuit, item.theta, observables, w, options);
    w[k] = 0;
    if (k == 0) out.expvals = std::move(r.expvals);
    out.rows.push_back(std::move(r.gradient));
  }
  return out;
}

template <class R>
std::vector<JacobianResult> jacobian_items(const std::vector<BatchItem>& items,
                                           const std::vector<PauliSum>& observables,
                                           bool keep_forward, const EngineOptions& options) {
  std::vector<JacobianResult> out(items.size());
  const int states = keep_forward ? 3 : 2;
  for_each_batch_item<R>(items, states, options, [&](std::size_t i, const EngineOptions& o) {
    if (!keep_forward) {
      out[i] = jacobian_by_vjp<R>(items[i], observables, o);
      return;
    }
    out[i].rows =
        adjoint_jacobian<R>(*items[i].circuit, items[i].theta, observables, o, &out[i].expvals);
  });
  return out;
}

}  // namespace

void check_states_fit(const Circuit& c, int states, Precision precision,
                      const EngineOptions& options) {
  if (options.backend != Backend::cpu) return;
  const MethodChoice method = choose_method(c, options);
  const bool dm = method.density_matrix();
  check_fits_in_memory(item_size(c, states, precision, options).bytes,
                       std::to_string(states) + " " + std::to_string(c.num_qubits()) + "-qubit " +
                           (dm ? "density matri(ces)" : "state(s)") +
                           (dm && states > 1 ? " and the states its gradient keeps" : ""));
}

std::vector<SimulateResult> simulate_batch(const std::vector<BatchItem>& items,
                                           const SimulateRequest& request, Precision precision,
                                           const EngineOptions& options) {
  if (items.empty()) return {};
  check_observables(items, request.observables);
  check_batch_fits(items, 1, precision, options);
  return precision == Precision::c64 ? simulate_items<float>(items, request, options)
                                     : simulate_items<double>(items, request, options);
}

std::vector<AdjointResult> vjp_batch(const std::vector<BatchItem>& items,
                                     const std::vector<PauliSum>& observables,
                                     const std::vector<std::vector<double>>& weights,
                                     Precision precision, const EngineOptions& options) {
  if (weights.size() != items.size())
    throw Error("vjp: " + std::to_string(weights.size()) + " rows of weights for " +
                std::to_string(items.size()) + " circuit(s)");
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::size_t k = observables_of(items[i], observables).size();
    if (weights[i].size() != k)
      throw Error("vjp: " + std::to_string(weights[i].size()) + " cotangent(s) for " +
                  std::to_string(k) + " observable(s)");
  }
  if (items.empty()) return {};
  check_observables(items, observables);
  check_batch_fits(items, 2, precision, options);
  return precision == Precision::c64 ? vjp_items<float>(items, observables, weights, options)
                                     : vjp_items<double>(items, observables, weights, options);
}

std::vector<JacobianResult> jacobian_batch(const std::vector<BatchItem>& items,
                                           const std::vector<PauliSum>& observables,
                                           Precision precision, const EngineOptions& options) {
  if (items.empty()) return {};
  check_observables(items, observables);
  check_batch_fits(items, 2, precision, options);
  bool keep_forward = true;
  try {
    check_batch_fits(items, 3, precision, options);
  } catch (const OutOfMemory&) {
    keep_forward = false;
  }
  return precision == Precision::c64
             ? jacobian_items<float>(items, observables, keep_forward, options)
             : jacobian_items<double>(items, observables, keep_forward, options);
}

}  // namespace qmlsim
