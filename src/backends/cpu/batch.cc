#include "backends/cpu/batch.h"

#include "backends/cpu/statevector.h"
#include "core/parallel.h"

namespace qmlsim::cpu {

template <class R>
std::vector<std::vector<double>> expvals_batch(int n,
                                               const std::vector<std::vector<BoundGate>>& circuits,
                                               const std::vector<PauliSum>& observables,
                                               int threads) {
  std::vector<std::vector<double>> out(circuits.size());
  const bool small = (std::int64_t{1} << n) < kMinParallelWork;
  const int outer = small ? threads : 1;
  const int inner = small ? 1 : threads;
  const std::int64_t count = static_cast<std::int64_t>(circuits.size());
#pragma omp parallel num_threads(outer) if (outer > 1)
  {
    StateVector<R> sv(n, inner);  // one state per thread, reused across items
#pragma omp for schedule(dynamic)
    for (std::int64_t i = 0; i < count; ++i) {
      sv.set_basis_state(0);
      sv.apply(circuits[static_cast<std::size_t>(i)]);
      for (const PauliSum& h : observables)
        out[static_cast<std::size_t>(i)].push_back(sv.expval(h));
    }
  }
  return out;
}

template std::vector<std::vector<double>> expvals_batch<float>(
    int, const std::vector<std::vector<BoundGate>>&, const std::vector<PauliSum>&, int);
template std::vector<std::vector<double>> expvals_batch<double>(
    int, const std::vector<std::vector<BoundGate>>&, const std::vector<PauliSum>&, int);

}  // namespace qmlsim::cpu
