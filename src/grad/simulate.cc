#include "grad/simulate.h"

#include <algorithm>

#include "backends/cpu/statevector.h"
#include "backends/cuda/statevector.h"
#include "passes/fusion.h"

namespace qmlsim {
namespace {

template <class SV>
void read_out(const SV& sv, const SimulateRequest& req, SimulateResult& out) {
  for (const PauliSum& h : req.observables) out.expvals.push_back(sv.expval(h));
  if (req.shots > 0) out.counts = sv.sample(req.shots, req.seed);
}

// Index of the largest |a_i|^2 (the first one on ties).
template <class Amp>
index_t argmax_probability(index_t size, Amp amp) {
  index_t best = 0;
  double best_p = -1;
  for (index_t i = 0; i < size; ++i) {
    const double p = amp(i);
    if (p > best_p) {
      best_p = p;
      best = i;
    }
  }
  return best;
}

}  // namespace

template <class R>
SimulateResult simulate(const Circuit& c, std::span<const double> theta, const SimulateRequest& req,
                        const AdjointOptions& options) {
  std::vector<BoundGate> gates = bind_params(c, theta);
  int fusion = options.fusion;
  if (options.backend == Backend::cuda) fusion = std::min(fusion, cuda::kMaxDenseTargets);
  if (fusion > 0) gates = fuse(gates, {fusion, std::max(10, fusion)});
  SimulateResult out;
  out.gates_after_fusion = gates.size();
  const int n = c.num_qubits();
  if (options.backend == Backend::cuda) {
    cuda::StateVector<R> sv(n);
    sv.apply(gates);
    read_out(sv, req, out);
    if (req.most_probable) {
      const std::vector<cplx> a = sv.to_vector();
      out.most_probable = argmax_probability(sv.size(), [&](index_t i) { return std::norm(a[i]); });
    }
    return out;
  }
  cpu::StateVector<R> sv(n, options.threads);
  if (options.chunk_qubits >= 0) sv.set_chunk_qubits(options.chunk_qubits);
  sv.apply(gates);
  read_out(sv, req, out);
  if (req.most_probable) {
    const R* a = sv.data();
    out.most_probable = argmax_probability(sv.size(), [&](index_t i) {
      return double(a[2 * i]) * a[2 * i] + double(a[2 * i + 1]) * a[2 * i + 1];
    });
  }
  return out;
}

template SimulateResult simulate<float>(const Circuit&, std::span<const double>,
                                        const SimulateRequest&, const AdjointOptions&);
template SimulateResult simulate<double>(const Circuit&, std::span<const double>,
                                         const SimulateRequest&, const AdjointOptions&);

}  // namespace qmlsim
