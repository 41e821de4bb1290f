#include "passes/light_cone.h"

#include <cassert>

namespace qmlsim {

std::vector<char> undo_needed(const std::vector<BoundGate>& gates,
                              const std::vector<Measure>& measured, bool one_sided) {
  assert(measured.size() == gates.size());
  std::vector<char> needed(gates.size(), 0);
  if (one_sided) {
    bool seen = false;  // a measured gate earlier in program order
    for (std::size_t i = 0; i < gates.size(); ++i) {
      needed[i] = seen;
      seen = seen || measured[i] != Measure::none;
    }
    return needed;
  }
  index_t reached = 0;  // wires in the causal future of a measured gate so far
  for (std::size_t i = 0; i < gates.size(); ++i) {
    const index_t wires = gates[i].wire_mask();
    needed[i] = (wires & reached) != 0;
    if (needed[i] || measured[i] != Measure::none) reached |= wires;
  }
  return needed;
}

}  // namespace qmlsim
