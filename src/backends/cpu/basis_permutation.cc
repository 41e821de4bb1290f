#include "backends/cpu/basis_permutation.h"

#include <bit>
#include <cassert>
#include <cstring>
#include <utility>

#include "core/bits.h"

namespace qmlsim::cpu {
namespace {

// dest[c] = r where column c of g's matrix is the basis vector r; false if g
// does not permute basis states.
bool basis_images(const BoundGate& g, std::vector<std::size_t>& dest) {
  if (g.diagonal) return false;
  const std::size_t dim = g.dim();
  dest.assign(dim, dim);
  for (std::size_t r = 0; r < dim; ++r)
    for (std::size_t c = 0; c < dim; ++c) {
      const cplx e = g.matrix[r * dim + c];
      if (e == cplx{0}) continue;
      if (e != cplx{1} || dest[c] != dim) return false;
      dest[c] = r;
    }
  for (std::size_t c = 0; c < dim; ++c)
    if (dest[c] == dim) return false;
  return true;
}

// The basis index that g sends x to.
index_t image(const BoundGate& g, const std::vector<std::size_t>& dest, index_t x) {
  for (int c : g.controls)
    if (!(x >> c & 1)) return x;
  std::size_t local = 0;
  for (int j = 0; j < g.num_targets(); ++j)
    local |= static_cast<std::size_t>(x >> g.targets[j] & 1) << j;
  const std::size_t r = dest[local];
  for (int j = 0; j < g.num_targets(); ++j) {
    x &= ~bit(g.targets[j]);
    x |= static_cast<index_t>(r >> j & 1) << g.targets[j];
  }
  return x;
}

}  // namespace

AffinePermutation::AffinePermutation(int b) : b_(b), col_(static_cast<std::size_t>(b)) {
  for (int j = 0; j < b; ++j) col_[j] = bit(j);
}

bool AffinePermutation::append(const BoundGate& g) {
  std::vector<std::size_t> dest;
  if (!basis_images(g, dest)) return false;
  std::vector<int> wires = g.targets;
  wires.insert(wires.end(), g.controls.begin(), g.controls.end());
  for (int w : wires)
    if (w >= b_) return false;
  // Affine iff G(x) = G(0) ^ sum_j x_j (G(e_j) ^ G(0)) on the gate's own wires.
  const index_t g0 = image(g, dest, 0);
  const std::size_t nw = wires.size();
  for (std::size_t x = 0; x < (std::size_t{1} << nw); ++x) {
    index_t idx = 0, want = g0;
    for (std::size_t j = 0; j < nw; ++j)
      if (x >> j & 1) {
        idx |= bit(wires[j]);
        want ^= image(g, dest, bit(wires[j])) ^ g0;
      }
    if (image(g, dest, idx) != want) return false;
  }
  // G after F: shift' = G(F(0)), col'_j = G(F(e_j)) ^ shift'.
  const index_t shift = image(g, dest, shift_);
  for (index_t& c : col_) c = image(g, dest, c ^ shift_) ^ shift;
  shift_ = shift;
  ++gates_;
  return true;
}

PauliTerm AffinePermutation::conjugate(const PauliTerm& t) const {
  index_t x = 0;  // A x
  for (int j = 0; j < b_; ++j)
    if (t.xmask >> j & 1) x ^= col_[j];
  // z' from A^T z' = z, row j: parity(col_j & z') = z_j (A is invertible):
  // Gaussian elimination over GF(2) on the rows, the right-hand side in bit b.
  std::vector<index_t> rows(static_cast<std::size_t>(b_));
  for (int j = 0; j < b_; ++j) rows[j] = col_[j] | (static_cast<index_t>(t.zmask >> j & 1) << b_);
  for (int c = 0; c < b_; ++c) {
    int p = c;
    while (p < b_ && !(rows[p] >> c & 1)) ++p;
    assert(p < b_);
    std::swap(rows[c], rows[p]);
    for (int r = 0; r < b_; ++r)
      if (r != c && (rows[r] >> c & 1)) rows[r] ^= rows[c];
  }
  index_t z = 0;
  for (int c = 0; c < b_; ++c)
    if (rows[c] >> b_ & 1) z |= bit(c);
  // coeff i^|x&z| X^x Z^z -> coeff i^|x&z| (+-1) X^x' Z^z' = coeff' i^|x'&z'| X^x' Z^z'.
  const int k = std::popcount(t.xmask & t.zmask) - std::popcount(x & z);
  assert(k % 2 == 0);  // Hermitian in, Hermitian out
  const bool minus = (std::popcount(z & shift_) & 1) != (((k % 4) + 4) % 4 == 2);
  return {minus ? -t.coeff : t.coeff, x, z};
}

// Blocks of fewer than 2^kMinBlockBits amplitudes move one amplitude at a
// time: a memcpy call per block of 2 or 4 cost more (a 24-qubit CNOT-ring
// circuit in complex64 ran 10% slower with them).
constexpr int kMinBlockBits = 3;

template <class R, int N>
void AffinePermutation::apply_to(const R* const* in, R* const* out) const {
  // The low m bits that F leaves alone (its columns there are the identity,
  // no other column or the shift touches them) move as blocks of 2^m
  // amplitudes: F(B 2^m + l) = F(B 2^m) + l. Over the block index, F(i) =
  // lo[i & (2^k - 1)] ^ F(high bits of i): a table over its low k bits, one
  // XOR per block; reads sequential, writes scattered (inside a chunk).
  index_t moved = shift_;  // the bits F changes, and those whose columns it changes
  for (int j = 0; j < b_; ++j) {
    const index_t d = col_[static_cast<std::size_t>(j)] ^ bit(j);
    if (d != 0) moved |= d | bit(j);
  }
  int m = moved == 0 ? b_ : std::countr_zero(moved);
  if (m < kMinBlockBits) m = 0;
  const int k = b_ - m < 8 ? b_ - m : 8;
  index_t lo[256];
  lo[0] = 0;
  for (index_t j = 1; j < (index_t{1} << k); ++j)
    lo[j] = lo[j & (j - 1)] ^ col_[static_cast<std::size_t>(m + std::countr_zero(j))];
  struct Amp {
    R re, im;
  };
  const Amp* src[N];
  Amp* dst[N];
  for (int v = 0; v < N; ++v) {
    src[v] = reinterpret_cast<const Amp*>(in[v]);
    dst[v] = reinterpret_cast<Amp*>(out[v]);
  }
  const index_t run = index_t{1} << m;
  for (index_t hi = 0; hi < (index_t{1} << (b_ - m - k)); ++hi) {
    index_t h = shift_;
    for (int j = m + k; j < b_; ++j)
      if (hi >> (j - m - k) & 1) h ^= col_[static_cast<std::size_t>(j)];
    const index_t first = hi << (m + k);
    for (index_t j = 0; j < (index_t{1} << k); ++j) {
      const index_t to = lo[j] ^ h, from = first + (j << m);
      for (int v = 0; v < N; ++v) {
        if (m == 0)
          dst[v][to] = src[v][from];
        else
          std::memcpy(dst[v] + to, src[v] + from, run * sizeof(Amp));
      }
    }
  }
}

template void AffinePermutation::apply_to<float, 1>(const float* const*, float* const*) const;
template void AffinePermutation::apply_to<float, 2>(const float* const*, float* const*) const;
template void AffinePermutation::apply_to<double, 1>(const double* const*, double* const*) const;
template void AffinePermutation::apply_to<double, 2>(const double* const*, double* const*) const;

}  // namespace qmlsim::cpu
