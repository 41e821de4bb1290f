// Bit tricks for amplitude indices.
#pragma once

#include <bit>
#include <cstdint>

#include "core/types.h"

namespace qmlsim {

// Inserts a zero bit at position `pos`, shifting higher bits up by one.
constexpr index_t insert_zero_bit(index_t i, int pos) {
  const index_t low = i & ((index_t{1} << pos) - 1);
  return ((i >> pos) << (pos + 1)) | low;
}

// Inserts zero bits at each position in `sorted_pos[0..n)`; REQUIRES ascending order.
constexpr index_t insert_zero_bits(index_t i, const int* sorted_pos, int n) {
  for (int k = 0; k < n; ++k) i = insert_zero_bit(i, sorted_pos[k]);
  return i;
}

constexpr int parity(index_t x) { return std::popcount(x) & 1; }

constexpr index_t bit(int q) { return index_t{1} << q; }

}  // namespace qmlsim
