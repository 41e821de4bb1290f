#include "passes/cache_blocking.h"

#include <bit>
#include <cassert>

#include "core/bits.h"

namespace qmlsim {

SegmentPlan plan_segments(const std::vector<BoundGate>& gates, int n, int chunk_qubits,
                          int run_qubits, int diagonal_wires, const std::vector<char>& order) {
  assert(order.empty() || order.size() == gates.size());
  const index_t runs = bit(run_qubits) - 1;
  const index_t all = n >= 64 ? ~index_t{0} : bit(n) - 1;
  std::vector<index_t> mask(gates.size());
  std::vector<char> anywhere(gates.size());  // fits any W
  for (std::size_t i = 0; i < gates.size(); ++i) {
    mask[i] = gates[i].wire_mask();
    anywhere[i] = gates[i].diagonal && std::popcount(mask[i]) <= diagonal_wires;
  }
  SegmentPlan plan;
  std::vector<int> pending(gates.size());
  for (std::size_t i = 0; i < gates.size(); ++i) pending[i] = static_cast<int>(i);
  while (!pending.empty()) {
    std::vector<int> taken, rest;
    index_t used = runs, blocked = 0;
    bool skipped[3] = {};  // a gate of each order was skipped
    for (std::size_t k = 0; k < pending.size(); ++k) {
      const int i = pending[k];
      if ((blocked & all) == all) {  // nothing further can move past the skipped gates
        rest.insert(rest.end(), pending.begin() + static_cast<std::ptrdiff_t>(k), pending.end());
        break;
      }
      const bool fits = anywhere[i] || std::popcount(used | mask[i]) <= chunk_qubits;
      const int o = order.empty() ? 0 : order[static_cast<std::size_t>(i)];
      if ((mask[i] & blocked) == 0 && fits && (o == 0 || !skipped[3 - o])) {
        if (!anywhere[i]) used |= mask[i];
        taken.push_back(i);
      } else {
        blocked |= mask[i];
        skipped[o] = true;
        rest.push_back(i);
      }
    }
    if (taken.empty()) {  // the first gate is wider than a chunk: alone, applied directly
      taken.push_back(rest.front());
      rest.erase(rest.begin());
      used = 0;
    }
    Segment s;
    s.begin = static_cast<int>(plan.order.size());
    s.end = s.begin + static_cast<int>(taken.size());
    if (taken.size() >= 2) {
      for (int q = 0; q < n && std::popcount(used) < chunk_qubits; ++q) used |= bit(q);
      for (int q = 0; q < n; ++q)
        if (used >> q & 1) s.qubits.push_back(q);
    }
    plan.order.insert(plan.order.end(), taken.begin(), taken.end());
    plan.segments.push_back(std::move(s));
    pending = std::move(rest);
  }
  return plan;
}

}  // namespace qmlsim
