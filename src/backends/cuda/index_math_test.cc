// The CUDA kernels' index arithmetic, run on the CPU against the CPU backend's
// helpers and against brute force.
#include "backends/cuda/index_math.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/bits.h"

namespace qmlsim::cuda {
namespace {

TEST(CudaIndexMath, InsertZerosEnumeratesTheGroupsInOrder) {
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 12);
    std::vector<int> pos;
    for (int q = 0; q < n; ++q)
      if (rng() % 3 == 0) pos.push_back(q);
    u64 mask = 0;
    for (int q : pos) mask |= u64{1} << q;
    u64 g = 0;  // brute force: the g-th index with zeros at pos
    for (u64 i = 0; i < (u64{1} << n); ++i) {
      if (i & mask) continue;
      ASSERT_EQ(insert_zeros(g, pos.data(), static_cast<int>(pos.size())), i);
      ASSERT_EQ(insert_zeros(g, pos.data(), static_cast<int>(pos.size())),
                insert_zero_bits(g, pos.data(), static_cast<int>(pos.size())));
      ++g;
    }
  }
}

TEST(CudaIndexMath, LocalIndexReadsTargetBits) {
  const int t[] = {1, 4, 6};
  EXPECT_EQ(local_index(0b1010010, t, 3), 0b111u);
  EXPECT_EQ(local_index(0b0010000, t, 3), 0b010u);
  EXPECT_EQ(local_index(0b1000000, t, 3), 0b100u);
  EXPECT_EQ(local_index(0b0101101, t, 3), 0b000u);
}

TEST(CudaIndexMath, PauliSignIsTheParityOfZOnTheSourceIndex) {
  // (Z0 psi)_j = (-1)^(j0) psi_j; (X0 Z1 psi)_j = (-1)^((j^1) bit 1) psi_(j^1).
  EXPECT_EQ(pauli_sign(0b0, 0, 0b1), 1.0);
  EXPECT_EQ(pauli_sign(0b1, 0, 0b1), -1.0);
  EXPECT_EQ(pauli_sign(0b10, 0b1, 0b10), -1.0);
  EXPECT_EQ(pauli_sign(0b01, 0b1, 0b10), 1.0);
  EXPECT_EQ(pauli_sign(0b11, 0b1, 0b11), -1.0);  // source 0b10: Z1 sees a 1
  EXPECT_EQ(pauli_sign(0b10, 0b1, 0b11), 1.0);   // source 0b11: two ones, even
}

}  // namespace
}  // namespace qmlsim::cuda
