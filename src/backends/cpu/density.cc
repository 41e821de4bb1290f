#include "backends/cpu/density.h"

#include <algorithm>
#include <bit>

namespace qmlsim::cpu {
namespace {

// i^popcount(x & z): the phase of a Pauli word's Y factors.
cplx y_phase(const PauliTerm& t) {
  static const cplx powers[4] = {1, {0, 1}, -1, {0, -1}};
  return powers[std::popcount(t.xmask & t.zmask) % 4];
}

}  // namespace

// Tr(H rho) = sum over terms c P of c sum_k phase(k) rho[k][k ^ x], with
// P|k> = phase(k) |k ^ x>; here the terms whose column k ^ x is among
// columns c0..c1-1.
template <class R>
double density_trace_columns(const R* columns, int m, index_t c0, index_t c1, const PauliSum& h) {
  const index_t dim = index_t{1} << m;
  double sum = 0;
  for (const PauliTerm& t : h.terms) {
    const cplx y = y_phase(t);
    double term = 0;
    for (index_t c = c0; c < c1; ++c) {
      const index_t k = c ^ t.xmask;
      const index_t i = k + dim * (c - c0);
      const cplx v = y * cplx(columns[2 * i], columns[2 * i + 1]);
      term += std::popcount(k & t.zmask) % 2 ? -v.real() : v.real();
    }
    sum += t.coeff * term;
  }
  return sum;
}

template <class R>
std::vector<double> density_diagonal_columns(const R* columns, int m, index_t c0, index_t c1) {
  const index_t dim = index_t{1} << m;
  std::vector<double> p(c1 - c0);
  for (index_t c = c0; c < c1; ++c)
    p[c - c0] = std::max(0.0, double(columns[2 * (c + dim * (c - c0))]));
  return p;
}

template <class R>
void set_density_observable(R* a, int m, const PauliSum& h) {
  const index_t dim = index_t{1} << m;
  std::fill(a, a + 2 * dim * dim, R(0));
  for (const PauliTerm& t : h.terms) {
    const cplx y = y_phase(t) * t.coeff;
    for (index_t k = 0; k < dim; ++k) {
      const index_t i = (k ^ t.xmask) + dim * k;
      const cplx v = std::popcount(k & t.zmask) % 2 ? -y : y;
      a[2 * i] += static_cast<R>(v.real());
      a[2 * i + 1] += static_cast<R>(v.imag());
    }
  }
}

#define QMLSIM_INSTANTIATE(R)                                                                 \
  template double density_trace_columns<R>(const R*, int, index_t, index_t, const PauliSum&); \
  template std::vector<double> density_diagonal_columns<R>(const R*, int, index_t, index_t);  \
  template void set_density_observable<R>(R*, int, const PauliSum&);
QMLSIM_INSTANTIATE(float)
QMLSIM_INSTANTIATE(double)
#undef QMLSIM_INSTANTIATE

}  // namespace qmlsim::cpu
