#include "grad/tape.h"

#include <numbers>

#include "core/bits.h"

namespace qmlsim {
namespace {

// A primitive single-parameter factor: gate id (from the table) and its generator.
struct Factor {
  GateId gate;      // RX, RY, RZ, PhaseShift, MultiRZ, IsingXX/YY/ZZ/XY
  ParamExpr param;  // the angle
};

// Generator G of a primitive (U(a) = exp(i a G)) on `wires` (table order).
PauliSum primitive_generator(GateId g, const std::vector<int>& wires) {
  PauliSum s;
  index_t all = 0;
  for (int w : wires) all |= bit(w);
  switch (g) {
    case GateId::RX:
      s.add(-0.5, all, 0);
      break;
    case GateId::RY:
      s.add(-0.5, all, all);
      break;
    case GateId::RZ:
    case GateId::MultiRZ:
    case GateId::IsingZZ:
      s.add(-0.5, 0, all);
      break;
    case GateId::IsingXX:
      s.add(-0.5, all, 0);
      break;
    case GateId::IsingYY:
      s.add(-0.5, all, all);
      break;
    case GateId::IsingXY:  // exp(i a/4 (XX + YY))
      s.add(0.25, all, 0);
      s.add(0.25, all, all);
      break;
    case GateId::PhaseShift:  // |1><1| = (I - Z)/2
      s.add(0.5, 0, 0);
      s.add(-0.5, 0, all);
      break;
    default:
      break;
  }
  return s;
}

// G' = P_controls G, with P = prod_c (I - Z_c)/2: expand the product term by term.
PauliSum controlled_generator(const PauliSum& g, const std::vector<int>& controls) {
  PauliSum out = g;
  for (int c : controls) {
    PauliSum next;
    for (const PauliTerm& t : out.terms) {
      next.add(0.5 * t.coeff, t.xmask, t.zmask);
      next.add(-0.5 * t.coeff, t.xmask, t.zmask | bit(c));
    }
    out = std::move(next);
  }
  return out;
}

std::vector<Factor> factors(const Operation& op) {
  const GateInfo& g = gate_info(op.gate);
  const GateId base = g.base;
  const auto& p = op.params;
  switch (base) {
    case GateId::Rot:
      return {{GateId::RZ, p[0]}, {GateId::RY, p[1]}, {GateId::RZ, p[2]}};
    case GateId::U1:
      return {{GateId::PhaseShift, p[0]}};
    case GateId::U2:
      return {{GateId::PhaseShift, p[1]},
              {GateId::RY, ParamExpr::literal(std::numbers::pi / 2)},
              {GateId::PhaseShift, p[0]}};
    case GateId::U3:
      return {{GateId::PhaseShift, p[2]}, {GateId::RY, p[0]}, {GateId::PhaseShift, p[1]}};
    default:
      return {{base, p[0]}};
  }
}

}  // namespace

std::vector<TapeStep> make_tape(const Circuit& c, std::span<const double> theta) {
  std::vector<TapeStep> tape;
  for (const Operation& op : c.ops()) {
    bool trainable = false;
    for (const ParamExpr& e : op.params) trainable = trainable || e.slot >= 0;
    if (!trainable) {
      tape.push_back({bind(op, theta), -1, 0, {}});
      continue;
    }
    const GateInfo& g = gate_info(op.gate);
    std::vector<int> controls = op.controls;
    controls.insert(controls.end(), op.wires.begin(), op.wires.begin() + g.num_controls);
    const std::vector<int> targets(op.wires.begin() + g.num_controls, op.wires.end());
    for (const Factor& f : factors(op)) {
      Operation prim;
      prim.gate = f.gate;
      prim.wires = targets;
      prim.controls = controls;
      prim.params = {f.param};
      TapeStep step;
      step.gate = bind(prim, theta);
      if (f.param.slot >= 0) {
        step.slot = f.param.slot;
        step.scale = f.param.scale;
        step.generator = controlled_generator(primitive_generator(f.gate, targets), controls);
      }
      tape.push_back(std::move(step));
    }
  }
  return tape;
}

}  // namespace qmlsim
