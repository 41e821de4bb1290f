#include "core/bits.h"

#include <gtest/gtest.h>

namespace qmlsim {
namespace {

TEST(Bits, InsertZeroBit) {
  EXPECT_EQ(insert_zero_bit(0b111, 0), 0b1110u);
  EXPECT_EQ(insert_zero_bit(0b111, 1), 0b1101u);
  EXPECT_EQ(insert_zero_bit(0b111, 3), 0b0111u);
}

TEST(Bits, InsertZeroBitsEnumeratesComplement) {
  const int pos[] = {1, 4};
  for (index_t i = 0; i < 8; ++i) {
    const index_t j = insert_zero_bits(i, pos, 2);
    EXPECT_EQ(j & (bit(1) | bit(4)), 0u);
    if (i > 0) {
      EXPECT_GT(j, insert_zero_bits(i - 1, pos, 2));
    }
  }
}

TEST(Bits, Parity) {
  EXPECT_EQ(parity(0), 0);
  EXPECT_EQ(parity(0b1011), 1);
  EXPECT_EQ(parity(0b1001), 0);
}

}  // namespace
}  // namespace qmlsim
