#include "circuit/program.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"
#include "testing/dense_oracle.h"

namespace qmlsim {
namespace {

using testing::State;

State zero_state(int n) {
  State psi(std::size_t{1} << n, 0.0);
  psi[0] = 1.0;
  return psi;
}

// The Error message of constructing a program from ops (empty when none).
std::string error_of(int n, const std::vector<ProgramOp>& ops, int params = 1,
                     std::vector<cplx> initial = {}) {
  try {
    Program p(n, ops, params, std::move(initial), 0.0);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Program, ParametersMapLinearlyOntoSlots) {
  // RY(2 x + 0.1) on qubit 1, controlled by qubit 0 on |0>: from |00> the
  // control holds, so qubit 1 turns by 2 * 0.3 + 0.1.
  const Program p(2, {{"RY", {1}, {ProgramParam{0, 2.0, 0.1}}, {0}, {false}, {}, {}}}, 1, {}, 0.0);
  const std::vector<double> values = {0.3};
  const State psi = testing::run_dense(p.circuit, p.theta(values), zero_state(2));
  EXPECT_NEAR(psi[0b10].real(), std::sin(0.35), 1e-12);
  EXPECT_NEAR(psi[0b00].real(), std::cos(0.35), 1e-12);
  EXPECT_NEAR(std::abs(psi[0b01]) + std::abs(psi[0b11]), 0.0, 1e-12);
  // Controlled on |1>, the same gate does nothing to |00>.
  const Program q(2, {{"RY", {1}, {0.7}, {0}, {true}, {}, {}}}, 0, {}, 0.0);
  EXPECT_NEAR(testing::run_dense(q.circuit, {}, zero_state(2))[0].real(), 1.0, 1e-12);
}

TEST(Program, ChannelsAndKrausSetsAreOps) {
  const Program p(1,
                  {{"depolarizing", {0}, {ProgramParam{0}}, {}, {}, {}, {}},
                   {"kraus", {0}, {}, {}, {}, {}, {{1, 0, 0, 1}}}},
                  1, {}, 0.0);
  ASSERT_EQ(p.circuit.ops().size(), 2u);
  EXPECT_EQ(p.circuit.ops()[0].channel, ChannelId::depolarizing);
  EXPECT_EQ(p.circuit.ops()[1].channel, ChannelId::kraus);
  EXPECT_TRUE(p.circuit.has_channels());
}

TEST(Program, MeasurementsResetsAndConditionsMakeItDynamic) {
  ProgramOp h{"H", {0}, {}, {}, {}, {}, {}};
  ProgramOp measure{"measure", {0}, {}, {}, {}, {}, {}};
  measure.clbit = 1;
  ProgramOp x{"X", {1}, {}, {0}, {false}, {}, {}};  // negated control: X wrapped around
  x.condition_bits = {1};
  x.condition_value = 1;
  ProgramOp reset{"reset", {0}, {}, {}, {}, {}, {}};
  const Program p(2, {h, measure, x, reset}, 0, {}, 0.0, 2);
  ASSERT_TRUE(p.circuit.has_dynamic());
  const auto& ops = p.circuit.ops();
  ASSERT_EQ(ops.size(), 6u);  // H, measure, X (flip), X, X (flip), reset
  EXPECT_EQ(ops[1].instruction, Instruction::measure);
  EXPECT_EQ(ops[1].clbit, 1);
  for (int i = 2; i < 5; ++i) EXPECT_EQ(ops[i].condition, (Condition{{1}, 1, false})) << i;
  EXPECT_EQ(ops[5].instruction, Instruction::reset);
  measure.clbit = 2;
  EXPECT_THROW(Program(2, {measure}, 0, {}, 0.0, 2), Error);  // no classical bit 2
  x.condition_value = 2;
  EXPECT_THROW(Program(2, {x}, 0, {}, 0.0, 2), Error);  // 2 does not fit in one bit
  ProgramOp loose{"X", {0}, {}, {}, {}, {}, {}};
  loose.condition_value = 1;
  EXPECT_EQ(error_of(1, {loose}), "X: a condition value without condition bits");
  reset.controls = {1};
  EXPECT_THROW(Program(2, {reset}, 0, {}, 0.0, 0), Error);
}

TEST(Program, BadInputIsAnErrorNamingWhatIsWrong) {
  EXPECT_EQ(error_of(0, {}),
            "wires: 0 is out of range (1 to " + std::to_string(kMaxQubits) + " qubits)");
  EXPECT_EQ(error_of(1, {{"FOO", {0}, {}, {}, {}, {}, {}}}), "unknown gate or channel 'FOO'");
  EXPECT_EQ(error_of(1, {{"RX", {0}, {ProgramParam{1}}, {}, {}, {}, {}}}),
            "gate RX: parameter slot 1 is out of range (1 parameters)");
  EXPECT_EQ(error_of(1, {{"RX", {0}, {NAN}, {}, {}, {}, {}}}),
            "gate RX: parameter is not a finite number");
  EXPECT_EQ(error_of(2, {{"X", {1}, {}, {0}, {true, false}, {}, {}}}),
            "gate X: 2 control value(s) for 1 control(s)");
  EXPECT_EQ(error_of(2, {{"bit_flip", {1}, {0.1}, {0}, {}, {}, {}}}),
            "channel bit_flip: takes no controls");
  EXPECT_EQ(error_of(1, {{"bit_flip", {0}, {0.1}, {}, {}, {}, {{1, 0, 0, 1}}}}),
            "channel bit_flip: Kraus matrices are for the channel 'kraus' only");
  EXPECT_EQ(error_of(1, {}, -1), "num_params: -1 is negative");
  EXPECT_EQ(error_of(2, {}, 0, {1.0, 0.0}),
            "initial state: 2 amplitudes for 2 qubit(s) (4, or 16 for a density matrix)");
  EXPECT_EQ(error_of(1, {}, 0, {1.0, 1.0}), "initial state: not normalised");
  // A density matrix: 4^n entries, Hermitian, trace 1, diagonal >= 0.
  EXPECT_EQ(error_of(1, {}, 0, {0.5, 0.0, 0.0, 0.5}), "");
  EXPECT_EQ(error_of(1, {}, 0, {0.5, 0.1, 0.2, 0.5}),
            "initial state: the density matrix is not Hermitian");
  EXPECT_EQ(error_of(1, {}, 0, {0.5, 0.0, 0.0, 0.6}),
            "initial state: a density matrix of trace != 1");
  EXPECT_EQ(error_of(1, {}, 0, {1.5, 0.0, 0.0, -0.5}),
            "initial state: a density matrix with a negative diagonal entry");
  EXPECT_EQ(error_of(1, {}, 0, {std::nan(""), 0.0}),
            "initial state: an entry is not a finite number");
  const Program p(1, {}, 2, {}, 0.0);
  EXPECT_THROW(p.theta({0.1}), Error);
  EXPECT_THROW(p.theta({0.1, INFINITY}), Error);
  EXPECT_EQ(p.theta({0.1, 0.2}).size(), 2u);
}

}  // namespace
}  // namespace qmlsim
