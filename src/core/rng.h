// A small seeded random generator whose whole state is four 64-bit words, so
// checkpoints can store it and a resumed run continues the same stream.
// xoshiro256** (Blackman & Vigna), seeded through splitmix64.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace qmlsim {

class Rng {
 public:
  using State = std::array<std::uint64_t, 4>;

  explicit Rng(std::uint64_t seed = 0) { reseed(seed); }

  void reseed(std::uint64_t seed) {
    for (std::uint64_t& w : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      w = z ^ (z >> 31);
    }
  }

  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n) without modulo bias. REQUIRES n > 0.
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n);
    std::uint64_t x;
    do x = next();
    while (x >= limit);
    return x % n;
  }
  // A uniformly random permutation of 0..n-1 (Fisher-Yates).
  std::vector<std::size_t> permutation(std::size_t n) {
    std::vector<std::size_t> p(n);
    std::iota(p.begin(), p.end(), std::size_t{0});
    for (std::size_t i = n; i > 1; --i) std::swap(p[i - 1], p[below(i)]);
    return p;
  }

  const State& state() const { return s_; }
  void set_state(const State& s) { s_ = s; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  State s_{};
};

}  // namespace qmlsim
