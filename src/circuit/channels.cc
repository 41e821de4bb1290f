#include "circuit/channels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>

#include "core/error.h"

namespace qmlsim {

namespace {

constexpr std::array<ChannelInfo, static_cast<std::size_t>(ChannelId::kCount)> kTable = {{
    {ChannelId::none, "", 0, 0, {}},
    {ChannelId::depolarizing, "depolarizing", 1, 1, {"probability"}},
    {ChannelId::two_qubit_depolarizing, "two_qubit_depolarizing", 2, 1, {"probability"}},
    {ChannelId::bit_flip, "bit_flip", 1, 1, {"probability"}},
    {ChannelId::phase_flip, "phase_flip", 1, 1, {"probability"}},
    {ChannelId::pauli_channel, "pauli_channel", 1, 3, {"probX", "probY", "probZ"}},
    {ChannelId::two_qubit_dephasing, "two_qubit_dephasing", 2, 1, {"probability"}},
    {ChannelId::amplitude_damping, "amplitude_damping", 1, 1, {"gamma"}},
    {ChannelId::generalized_amplitude_damping,
     "generalized_amplitude_damping",
     1,
     2,
     {"gamma", "probability"}},
    {ChannelId::phase_damping, "phase_damping", 1, 1, {"gamma"}},
    {ChannelId::thermal_relaxation,
     "thermal_relaxation",
     1,
     4,
     {"t1", "t2", "time", "excited_population"}},
    {ChannelId::kraus, "kraus", 0, 0, {}},
}};

// The Pauli matrices I, X, Y, Z.
const Matrix& pauli(int k) {
  static const std::array<Matrix, 4> p = {Matrix{1, 0, 0, 1}, Matrix{0, 1, 1, 0},
                                          Matrix{0, cplx{0, -1}, cplx{0, 1}, 0},
                                          Matrix{1, 0, 0, -1}};
  return p[static_cast<std::size_t>(k)];
}

// a (x) b, a on the more significant wire.
Matrix kron(const Matrix& a, const Matrix& b) {
  const std::size_t da = static_cast<std::size_t>(std::lround(std::sqrt(a.size())));
  const std::size_t db = static_cast<std::size_t>(std::lround(std::sqrt(b.size())));
  const std::size_t d = da * db;
  Matrix out(d * d);
  for (std::size_t i = 0; i < da; ++i)
    for (std::size_t j = 0; j < da; ++j)
      for (std::size_t k = 0; k < db; ++k)
        for (std::size_t l = 0; l < db; ++l)
          out[(i * db + k) * d + j * db + l] = a[i * da + j] * b[k * db + l];
  return out;
}

Matrix scaled(const Matrix& m, double s) {
  Matrix out = m;
  for (cplx& x : out) x *= s;
  return out;
}

Matrix product(const Matrix& a, const Matrix& b, std::size_t d) {
  Matrix out(d * d);
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t k = 0; k < d; ++k)
      for (std::size_t j = 0; j < d; ++j) out[i * d + j] += a[i * d + k] * b[k * d + j];
  return out;
}

// A Kraus operator sqrt(w) m with, for one parameter x, dw/dx and dm/dx
// (KrausTerm): the weights carry every sqrt of a probability, so the terms'
// superoperator w m (x) conj(m) and its derivative stay finite at w = 0.
using Terms = std::vector<KrausTerm>;

KrausTerm term(double w, double dw, Matrix m, Matrix dm = {}) {
  if (dm.empty()) dm.assign(m.size(), 0);
  return {w, dw, std::move(m), std::move(dm)};
}

// A Pauli mixture: weight 1 - total on I, p_k on the Pauli word P_k (indices
// into pauli(), two digits base 4 for two qubits); words hold (word, p_k,
// dp_k/dx).
struct Word {
  int word;
  double p, dp;
};
Terms pauli_mixture(int qubits, const std::vector<Word>& words) {
  double total = 0, dtotal = 0;
  for (const Word& w : words) {
    total += w.p;
    dtotal += w.dp;
  }
  const Matrix id = qubits == 1 ? pauli(0) : kron(pauli(0), pauli(0));
  Terms out = {term(std::max(0.0, 1 - total), -dtotal, id)};
  for (const Word& w : words)
    out.push_back(
        term(w.p, w.dp, qubits == 1 ? pauli(w.word) : kron(pauli(w.word / 4), pauli(w.word % 4))));
  return out;
}

// sqrt(1 - gamma) and its derivative; the derivative at gamma = 1 is infinite
// (an Error when asked for).
std::pair<double, double> root_of_rest(double gamma, double dgamma, const char* channel) {
  const double h = std::sqrt(1 - gamma);
  if (dgamma == 0) return {h, 0};
  if (h == 0)
    throw Error(std::string(channel) +
                ": the derivative at gamma = 1 is infinite (its coherences go as sqrt(1 - gamma))");
  return {h, -dgamma / (2 * h)};
}

// Decay rate gamma towards |0> with weight p (d: their derivatives).
Terms generalized_damping(double gamma, double dgamma, double p, double dp) {
  const auto [h, dh] = root_of_rest(gamma, dgamma, "amplitude damping");
  return {term(p, dp, {1, 0, 0, h}, {0, 0, 0, dh}),
          term(p * gamma, dp * gamma + p * dgamma, {0, 1, 0, 0}),
          term(1 - p, -dp, {h, 0, 0, 1}, {dh, 0, 0, 0}),
          term((1 - p) * gamma, -dp * gamma + (1 - p) * dgamma, {0, 0, 1, 0})};
}

// Coherences times h = sqrt(1 - gamma) (dh: its derivative).
Terms dephasing(double h, double dh) {
  return {term(1, 0, {1, 0, 0, h}, {0, 0, 0, dh}), term(1 - h * h, -2 * h * dh, {0, 0, 0, 1})};
}

// Populations relax towards (1 - excited, excited) at rate 1/t1 and coherences
// decay as exp(-time/t2): generalized amplitude damping (whose coherences decay
// as exp(-time/(2 t1))) followed by the dephasing that makes up the rest.
// wrt: the parameter (t1, t2, time, excited) derivatives are taken for.
// Extreme parameters (t1 or t2 near the smallest doubles) give the limits
// exactly: no term overflows into inf - inf or 0 * inf.
Terms thermal_relaxation(double t1, double t2, double time, double excited, int wrt) {
  const double decay = std::exp(-time / t1);
  // exp(-time/t2 + time/(2 t1)) <= 1 as t2 <= 2 t1, with (2 t1 - t2)/(2 t1) in [0, 1)
  const double gap = 2 * t1 == t2 || time == 0 ? 0.0 : (2 * t1 - t2) / (2 * t1) / t2;
  const double rest = std::exp(-time * gap);
  double dgamma = 0, drest = 0;  // forward runs (wrt < 0) take no derivative
  if (wrt >= 0) {
    // d(decay), d(exponent of rest) for the parameter wrt
    const double ddecay[] = {decay * time / (t1 * t1), 0, -decay / t1, 0};
    const double dexponent[] = {-time / (2 * t1 * t1), time / (t2 * t2), -gap, 0};
    dgamma = -ddecay[wrt];
    drest = rest * dexponent[wrt];
  }
  const Terms damp = generalized_damping(1 - decay, dgamma, 1 - excited, wrt == 3 ? -1.0 : 0.0);
  const Terms dephase = dephasing(rest, drest);
  Terms out;
  for (const KrausTerm& a : dephase)
    for (const KrausTerm& b : damp) {
      Matrix dm = product(a.dm, b.m, 2);
      const Matrix right = product(a.m, b.dm, 2);
      for (std::size_t i = 0; i < dm.size(); ++i) dm[i] += right[i];
      out.push_back(term(a.weight * b.weight, a.dweight * b.weight + a.weight * b.dweight,
                         product(a.m, b.m, 2), std::move(dm)));
    }
  return out;
}

[[noreturn]] void bad_param(const ChannelInfo& c, int p, double v, const std::string& range) {
  throw Error(std::string(c.name) + ": " + std::string(c.param_names[p]) + " = " +
              std::to_string(v) + " is outside " + range);
}

}  // namespace

const ChannelInfo& channel_info(ChannelId id) { return kTable[static_cast<std::size_t>(id)]; }

std::optional<ChannelId> channel_by_name(std::string_view name) {
  for (const ChannelInfo& c : kTable)
    if (c.id != ChannelId::none && c.name == name) return c.id;
  return std::nullopt;
}

void check_channel_params(ChannelId id, std::span<const double> params) {
  const ChannelInfo& c = channel_info(id);
  if (static_cast<int>(params.size()) != c.num_params)
    throw Error(std::string(c.name) + " takes " + std::to_string(c.num_params) +
                " parameter(s), got " + std::to_string(params.size()));
  for (int p = 0; p < c.num_params; ++p)
    if (!std::isfinite(params[static_cast<std::size_t>(p)]))
      bad_param(c, p, params[static_cast<std::size_t>(p)], "the finite numbers");
  if (id == ChannelId::thermal_relaxation) {
    const double t1 = params[0], t2 = params[1], time = params[2], excited = params[3];
    if (t1 <= 0) bad_param(c, 0, t1, "(0, inf)");
    if (t2 <= 0 || t2 > 2 * t1) bad_param(c, 1, t2, "(0, 2 t1]");
    if (time < 0) bad_param(c, 2, time, "[0, inf)");
    if (excited < 0 || excited > 1) bad_param(c, 3, excited, "[0, 1]");
    return;
  }
  double total = 0;
  for (int p = 0; p < c.num_params; ++p) {
    const double v = params[static_cast<std::size_t>(p)];
    if (v < 0 || v > 1) bad_param(c, p, v, "[0, 1]");
    total += v;
  }
  if (id == ChannelId::pauli_channel && total > 1)
    throw Error("pauli_channel: probX + probY + probZ = " + std::to_string(total) +
                " is more than 1");
}

std::vector<KrausTerm> kraus_terms(ChannelId id, std::span<const double> params, int wrt) {
  // d(params[k]) / d(params[wrt])
  auto d = [&](int k) { return k == wrt ? 1.0 : 0.0; };
  switch (id) {
    case ChannelId::depolarizing: {
      const double p = params[0] / 3, dp = d(0) / 3;
      return pauli_mixture(1, {{1, p, dp}, {2, p, dp}, {3, p, dp}});
    }
    case ChannelId::two_qubit_depolarizing: {
      std::vector<Word> words;
      for (int w = 1; w < 16; ++w) words.push_back({w, params[0] / 15, d(0) / 15});
      return pauli_mixture(2, words);
    }
    case ChannelId::bit_flip:
      return pauli_mixture(1, {{1, params[0], d(0)}});
    case ChannelId::phase_flip:
      return pauli_mixture(1, {{3, params[0], d(0)}});
    case ChannelId::pauli_channel:
      return pauli_mixture(1, {{1, params[0], d(0)}, {2, params[1], d(1)}, {3, params[2], d(2)}});
    case ChannelId::two_qubit_dephasing: {  // IZ, ZI, ZZ
      const double p = params[0] / 3, dp = d(0) / 3;
      return pauli_mixture(2, {{3, p, dp}, {12, p, dp}, {15, p, dp}});
    }
    case ChannelId::amplitude_damping:
      return generalized_damping(params[0], d(0), 1, 0);
    case ChannelId::generalized_amplitude_damping:
      return generalized_damping(params[0], d(0), params[1], d(1));
    case ChannelId::phase_damping: {
      const auto [h, dh] = root_of_rest(params[0], d(0), "phase_damping");
      return dephasing(h, dh);
    }
    case ChannelId::thermal_relaxation:
      return thermal_relaxation(params[0], params[1], params[2], params[3], wrt);
    case ChannelId::none:
    case ChannelId::kraus:
    case ChannelId::kCount:
      break;
  }
  throw Error("kraus_terms: not a table channel");
}

std::vector<Matrix> kraus_operators(ChannelId id, std::span<const double> params) {
  std::vector<Matrix> out;
  for (KrausTerm& t : kraus_terms(id, params))
    out.push_back(scaled(t.m, std::sqrt(std::max(0.0, t.weight))));
  return out;
}

void check_kraus_set(const std::vector<Matrix>& kraus, double tol) {
  if (kraus.empty()) throw Error("kraus: needs at least one matrix");
  const std::size_t size = kraus[0].size();
  std::size_t d = 0;
  for (std::size_t dim = 2; dim <= (std::size_t{1} << kMaxKrausQubits); dim *= 2)
    if (dim * dim == size) d = dim;
  if (d == 0)
    throw Error("kraus: matrices must be 2x2 or 4x4 (1 or 2 qubits), got " + std::to_string(size) +
                " entries");
  Matrix sum(d * d);
  for (const Matrix& k : kraus) {
    if (k.size() != size) throw Error("kraus: the matrices differ in size");
    for (const cplx& x : k)
      if (!std::isfinite(x.real()) || !std::isfinite(x.imag()))
        throw Error("kraus: a matrix entry is not finite");
    for (std::size_t i = 0; i < d; ++i)
      for (std::size_t j = 0; j < d; ++j)
        for (std::size_t r = 0; r < d; ++r)
          sum[i * d + j] += std::conj(k[r * d + i]) * k[r * d + j];
  }
  double err = 0;
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = 0; j < d; ++j)
      err = std::max(err, std::abs(sum[i * d + j] - (i == j ? 1.0 : 0.0)));
  if (err > tol)
    throw Error("kraus: the operators are not trace preserving (sum K^dagger K differs from I by " +
                std::to_string(err) + ")");
}

namespace {

// s += scale (a (x) conj(b)) in the vectorised form: vec(a rho b^dagger)[r + d c]
// = sum a[r][r'] rho[r'][c'] conj(b[c][c']), rows and columns of s indexed
// r + d c.
void add_map(Matrix& s, const Matrix& a, const Matrix& b, double scale) {
  if (scale == 0) return;
  const std::size_t d = static_cast<std::size_t>(std::lround(std::sqrt(a.size())));
  const std::size_t big = d * d;
  for (std::size_t r = 0; r < d; ++r)
    for (std::size_t c = 0; c < d; ++c)
      for (std::size_t r2 = 0; r2 < d; ++r2)
        for (std::size_t c2 = 0; c2 < d; ++c2)
          s[(r + d * c) * big + r2 + d * c2] += scale * a[r * d + r2] * std::conj(b[c * d + c2]);
}

Matrix zero_map(std::size_t kraus_size) { return Matrix(kraus_size * kraus_size); }

}  // namespace

Matrix superoperator(const std::vector<Matrix>& kraus) {
  Matrix s = zero_map(kraus.at(0).size());
  for (const Matrix& k : kraus) add_map(s, k, k, 1);
  return s;
}

Matrix superoperator_derivative(const std::vector<KrausTerm>& terms) {
  Matrix s = zero_map(terms.at(0).m.size());
  // d(w K (x) conj(K)) = dw K (x) conj(K) + w (dK (x) conj(K) + K (x) conj(dK))
  for (const KrausTerm& t : terms) {
    add_map(s, t.m, t.m, t.dweight);
    add_map(s, t.dm, t.m, t.weight);
    add_map(s, t.m, t.dm, t.weight);
  }
  return s;
}

}  // namespace qmlsim
