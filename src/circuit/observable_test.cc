#include "circuit/observable.h"

#include <gtest/gtest.h>

#include "core/bits.h"

namespace qmlsim {
namespace {

TEST(Observable, ParsesSumsProductsAndConstants) {
  const PauliSum h = parse_pauli_sum("0.5*Z0*Z1 - X2 + 0.25", "obs");
  ASSERT_EQ(h.terms.size(), 3u);
  EXPECT_EQ(h.terms[0].coeff, 0.5);
  EXPECT_EQ(h.terms[0].zmask, bit(0) | bit(1));
  EXPECT_EQ(h.terms[0].xmask, 0u);
  EXPECT_EQ(h.terms[1].coeff, -1.0);
  EXPECT_EQ(h.terms[1].xmask, bit(2));
  EXPECT_EQ(h.terms[2].coeff, 0.25);
  EXPECT_EQ(h.terms[2].xmask | h.terms[2].zmask, 0u);
  EXPECT_EQ(h.min_qubits(), 3);

  const PauliSum juxt = parse_pauli_sum("Z0 Z1", "obs");
  ASSERT_EQ(juxt.terms.size(), 1u);
  EXPECT_EQ(juxt.terms[0].zmask, bit(0) | bit(1));

  const PauliSum y = parse_pauli_sum("-2 Y3 * I1 + 1e-1*X0", "obs");
  ASSERT_EQ(y.terms.size(), 2u);
  EXPECT_EQ(y.terms[0].coeff, -2.0);
  EXPECT_EQ(y.terms[0].xmask, bit(3));
  EXPECT_EQ(y.terms[0].zmask, bit(3));
  EXPECT_DOUBLE_EQ(y.terms[1].coeff, 0.1);
}

TEST(Observable, CoefficientsUpToTheLimitAreAccepted) {
  EXPECT_EQ(parse_pauli_sum("0.5e30*Z0 - 0.5e30*Z1", "o").terms.size(), 2u);
  EXPECT_DOUBLE_EQ(parse_pauli_sum("2Z0", "o").terms[0].coeff, 2.0);  // implicit product
  EXPECT_DOUBLE_EQ(parse_pauli_sum(".5*Z0", "o").terms[0].coeff, 0.5);
  EXPECT_DOUBLE_EQ(parse_pauli_sum("1.5E-3 Z0", "o").terms[0].coeff, 1.5e-3);
  EXPECT_EQ(parse_pauli_sum("X63 - Z1", "o").min_qubits(), 64);  // found by the fuzz target
  EXPECT_EQ(parse_pauli_sum("0.5", "o").min_qubits(), 0);
  EXPECT_EQ(parse_pauli_sum("I5 + Z0", "o").min_qubits(), 6);  // an identity names its qubit too
}

struct BadCase {
  const char* text;
  int column;
  const char* message;
};

TEST(Observable, MalformedInputsGiveLocatedErrors) {
  const BadCase cases[] = {
      {"", 1, "empty observable"},
      {"   ", 4, "empty observable"},
      {"Z", 2, "needs a qubit index"},
      {"Q0", 1, "unexpected character 'Q'"},
      {"Z0 +", 5, "expected a number or a Pauli"},
      {"Z0 + + Z1", 6, "expected a number or a Pauli"},
      {"*Z0", 1, "'*' needs a factor before it"},
      {"Z0 *", 5, "'*' needs a factor after it"},
      {"Z0*Z0", 4, "qubit 0 appears twice"},
      {"X1 Y1", 4, "qubit 1 appears twice"},
      {"Z99", 1, "too large"},
      {"0.5*Z0)", 7, "unexpected character ')'"},
      {"Z0, Z1", 3, "unexpected character ','"},
      {"0x10*Z0", 1, "hexadecimal numbers are not accepted"},
      {"Z0.5", 3, "a qubit index must be a whole number"},
      {"2.5.3*Z0", 4, "malformed number"},
      {"1e999*Z0", 1, "too large for a double"},
      {"Z0 + 1e200*1e200*Z1", 6, "coefficient is not a finite number"},
      {"1e308*Z0 + 1e308*Z1", 1, "absolute values sum to inf, above the limit of 1e+30"},
      {"1e30*Z0 + 1e15*Z1", 1, "sum to 1e+30, above the limit"},
  };
  for (const BadCase& c : cases) {
    try {
      parse_pauli_sum(c.text, "--observable 1");
      ADD_FAILURE() << "no error for '" << c.text << "'";
    } catch (const Error& e) {
      const std::string want = "--observable 1:1:" + std::to_string(c.column) + ": ";
      EXPECT_EQ(std::string(e.what()).rfind(want, 0), 0u) << c.text << " -> " << e.what();
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace qmlsim
