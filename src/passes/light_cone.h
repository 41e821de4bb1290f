// Which gates the backward sweep of adjoint differentiation must undo. The
// sweep undoes gates from last to first so that each measured gate sees both
// states at its own position. A cross matrix over a gate's wires does not change
// under unitaries on other wires applied to both states, so a gate needs undoing
// only if some earlier measured gate lies in its causal past (a chain of gates
// that share wires, in program order). The others (an encoding layer before the
// first trainable gate, say, or the first trainable gate on each wire) are never
// undone: a measured one only has its cross matrix formed. Pure circuit logic.
#pragma once

#include <vector>

#include "circuit/bound.h"

namespace qmlsim {

// needed[i] for gates[i] in program order; measured[i] says whether gate i's
// cross matrix is wanted. one_sided: some steps act on one state alone (a
// density matrix's channels), which changes every later cross matrix whatever
// its wires: then every gate after the first measured one is needed.
// REQUIRES measured.size() == gates.size().
std::vector<char> undo_needed(const std::vector<BoundGate>& gates,
                              const std::vector<Measure>& measured, bool one_sided = false);

}  // namespace qmlsim
