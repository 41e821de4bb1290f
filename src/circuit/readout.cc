#include "circuit/readout.h"

#include <string>

#include "core/error.h"

namespace qmlsim {

bool ReadoutError::any() const {
  for (const auto& f : qubits)
    if (f && (f->p01 != 0 || f->p10 != 0)) return true;
  return false;
}

const ReadoutFlip* ReadoutError::of(int q) const {
  if (q < 0 || q >= static_cast<int>(qubits.size()) || !qubits[static_cast<std::size_t>(q)])
    return nullptr;
  return &*qubits[static_cast<std::size_t>(q)];
}

void check_readout_flip(const ReadoutFlip& f, const std::string& what) {
  for (double p : {f.p01, f.p10})
    if (!(p >= 0 && p <= 1))
      throw Error(what + ": a readout error probability " + std::to_string(p) +
                  " is outside [0, 1]");
}

PauliSum read_through(const PauliSum& h, const ReadoutError& e) {
  if (!e.any()) return h;
  PauliSum out;
  out.named_qubits = h.named_qubits;
  for (const PauliTerm& t : h.terms) {
    std::vector<int> noisy;
    for (int q = 0; q < 64; ++q)
      if (((t.xmask | t.zmask) >> q & 1) && e.of(q)) noisy.push_back(q);
    if (static_cast<int>(noisy.size()) > kMaxReadoutSupport)
      throw Error("observable: a Pauli word on " + std::to_string(noisy.size()) +
                  " qubits with readout errors (at most " + std::to_string(kMaxReadoutSupport) +
                  ")");
    for (std::uint64_t keep = 0; keep < (std::uint64_t{1} << noisy.size()); ++keep) {
      double c = t.coeff;
      index_t x = t.xmask, z = t.zmask;
      for (std::size_t j = 0; j < noisy.size(); ++j) {
        const ReadoutFlip& f = *e.of(noisy[j]);
        if (keep >> j & 1) {
          c *= 1 - f.p01 - f.p10;
        } else {
          c *= f.p10 - f.p01;
          x &= ~(index_t{1} << noisy[j]);
          z &= ~(index_t{1} << noisy[j]);
        }
      }
      if (c != 0) out.add(c, x, z);
    }
  }
  if (out.terms.empty()) out.add(0, 0, 0);
  return out;
}

std::vector<double> read_through(std::vector<double> p, const ReadoutError& e) {
  for (int q = 0; q < static_cast<int>(e.qubits.size()); ++q) {
    const ReadoutFlip* f = e.of(q);
    if (!f) continue;
    const index_t bit = index_t{1} << q;
    for (index_t i = 0; i < p.size(); ++i) {
      if (i & bit) continue;
      const double zero = p[i], one = p[i | bit];
      p[i] = zero * (1 - f->p01) + one * f->p10;
      p[i | bit] = zero * f->p01 + one * (1 - f->p10);
    }
  }
  return p;
}

std::map<index_t, std::int64_t> read_through(const std::map<index_t, std::int64_t>& counts,
                                             const ReadoutError& e, std::uint64_t seed) {
  if (!e.any()) return counts;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::map<index_t, std::int64_t> out;
  for (const auto& [outcome, count] : counts)
    for (std::int64_t shot = 0; shot < count; ++shot) {
      index_t read = outcome;
      for (int q = 0; q < static_cast<int>(e.qubits.size()); ++q) {
        const ReadoutFlip* f = e.of(q);
        if (!f) continue;
        const bool one = outcome >> q & 1;
        if (u(rng) < (one ? f->p10 : f->p01)) read ^= index_t{1} << q;
      }
      ++out[read];
    }
  return out;
}

}  // namespace qmlsim
