#include "passes/cache_blocking.h"

#include <bit>

#include "core/bits.h"

namespace qmlsim {

std::vector<Segment> plan_segments(const std::vector<BoundGate>& gates, int n, int chunk_qubits,
                                   int run_qubits) {
  const index_t runs = bit(run_qubits) - 1;
  std::vector<Segment> out;
  const int count = static_cast<int>(gates.size());
  auto close = [&](int begin, int end, index_t used) {
    Segment s;
    s.begin = begin;
    s.end = end;
    if (end - begin >= 2 && std::popcount(used) <= chunk_qubits) {
      for (int q = 0; q < n && std::popcount(used) < chunk_qubits; ++q) used |= bit(q);
      for (int q = 0; q < n; ++q)
        if (used >> q & 1) s.qubits.push_back(q);
    }
    out.push_back(std::move(s));
  };
  int begin = 0;
  index_t used = runs;
  for (int i = 0; i < count; ++i) {
    index_t m = 0;
    for (int q : gates[i].targets) m |= bit(q);
    for (int q : gates[i].controls) m |= bit(q);
    if (i > begin && std::popcount(used | m) > chunk_qubits) {
      close(begin, i, used);
      begin = i;
      used = runs;
    }
    used |= m;
  }
  if (begin < count) close(begin, count, used);
  return out;
}

}  // namespace qmlsim
