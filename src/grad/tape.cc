#include "grad/tape.h"

#include <array>

namespace qmlsim {

std::vector<TapeStep> make_tape(const Circuit& c, std::span<const double> theta) {
  std::vector<TapeStep> tape;
  tape.reserve(c.ops().size());
  for (const Operation& op : c.ops()) {
    TapeStep step;
    step.gate = bind_params(op, theta);
    const GateInfo& g = gate_info(op.gate);
    std::array<double, kMaxGateParams> values{};
    for (int p = 0; p < g.num_params; ++p) values[p] = op.params[p].value(theta);
    const std::vector<int> targets(op.wires.begin() + g.num_controls, op.wires.end());
    for (int p = 0; p < g.num_params; ++p) {
      const ParamExpr& e = op.params[p];
      if (e.slot < 0) continue;
      const std::span<const double> v(values.data(), g.num_params);
      const int k = static_cast<int>(targets.size());
      Matrix d = g.diagonal ? target_diagonal_derivative(op.gate, v, k, p)
                            : target_matrix_derivative(op.gate, v, k, p);
      std::vector<int> wires = targets;  // sorted by to_canonical
      step.derivatives.push_back({e.slot, e.scale, to_canonical(std::move(d), g.diagonal, wires)});
    }
    tape.push_back(std::move(step));
  }
  return tape;
}

}  // namespace qmlsim
