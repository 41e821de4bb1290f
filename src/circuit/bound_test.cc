#include "circuit/bound.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace qmlsim {
namespace {

TEST(Bound, CanonicalFormSortsTargetsAndReordersTheMatrix) {
  Circuit c(3);
  c.add(GateId::CNOT, {2, 0});  // control 2, target 0
  c.add(GateId::SWAP, {2, 1});
  c.add(GateId::IsingZZ, {2, 0}, std::vector<double>{0.5});
  const std::vector<BoundGate> b = bind_params(c, {});
  EXPECT_EQ(b[0].targets, std::vector<int>{0});
  EXPECT_EQ(b[0].controls, std::vector<int>{2});
  EXPECT_FALSE(b[0].diagonal);
  EXPECT_EQ(b[1].targets, (std::vector<int>{1, 2}));
  EXPECT_TRUE(b[2].diagonal);
  EXPECT_EQ(b[2].matrix.size(), 4u);
  // Canonical index bit j <-> targets[j]: a wire order reversal is undone.
  Operation op;
  op.gate = GateId::QubitUnitary;
  op.wires = {1, 0};
  Matrix m(16, 0.0);
  m[0 * 4 + 0] = m[1 * 4 + 2] = m[2 * 4 + 1] = m[3 * 4 + 3] = 1.0;  // table index: wire 1 is MSB
  m[1 * 4 + 2] = cplx{0, 1};
  m[2 * 4 + 1] = cplx{0, 1};
  op.unitary = std::make_shared<Matrix>(m);
  const BoundGate g = bind_params(op, {});
  EXPECT_EQ(g.targets, (std::vector<int>{0, 1}));
  // table row 1 = (w1=0, w0=1) -> canonical row 1 (bit0 = w0 = 1): the ISWAP is symmetric.
  EXPECT_EQ(g.at(1, 2), (cplx{0, 1}));
}

TEST(Bound, ParameterReferencesUseScaleAndShift) {
  Circuit c(1);
  c.add(GateId::RZ, {0}, std::vector<ParamExpr>{ParamExpr::ref(1, 2.0, 0.5)});
  EXPECT_EQ(c.num_slots(), 2);
  const double theta[] = {0.0, 0.25};
  const BoundGate g = bind_params(c.ops()[0], theta);
  EXPECT_NEAR(std::arg(g.matrix[1]), 0.5, 1e-15);  // RZ(1.0): phase +0.5 on |1>
}

TEST(Bound, CircuitRejectsBadOperations) {
  Circuit c(2);
  EXPECT_THROW(c.add(GateId::CNOT, {0, 0}), Error);
  EXPECT_THROW(c.add(GateId::H, {2}), Error);
  EXPECT_THROW(c.add(GateId::RX, {0}), Error);
  EXPECT_THROW(c.add(GateId::H, {0, 1}), Error);
  Operation op;
  op.gate = GateId::QubitUnitary;
  op.wires = {0};
  op.unitary = std::make_shared<Matrix>(Matrix{1, 1, 0, 1});
  EXPECT_THROW(c.add(op), Error);
}

}  // namespace
}  // namespace qmlsim
