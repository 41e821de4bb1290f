// Every gate, every wire order, every kernel set and both precisions against the
// dense-matrix oracle; fused against unfused; norm over 10,000 random gates.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <utility>

#include "backends/cpu/statevector.h"
#include "core/bits.h"
#include "passes/fusion.h"
#include "testing/dense_oracle.h"

namespace qmlsim::cpu {
namespace {

using testing::State;

template <class R>
constexpr double tol() {
  return sizeof(R) == 4 ? 1e-5 : 1e-12;
}

template <class R>
State simulate(const KernelSet* ks, int n, const std::vector<BoundGate>& gates, const State& in,
               int threads = 1) {
  StateVector<R> sv(n, threads, ks);
  sv.set_amplitudes(in);
  sv.apply(gates);
  return sv.to_vector();
}

// All ordered selections of `k` distinct wires out of n.
std::vector<std::vector<int>> wire_orders(int n, int k) {
  std::vector<std::vector<int>> out;
  std::vector<int> pick(k);
  auto rec = [&](auto&& self, int depth, unsigned used) -> void {
    if (depth == k) {
      out.push_back(pick);
      return;
    }
    for (int q = 0; q < n; ++q) {
      if (used >> q & 1) continue;
      pick[depth] = q;
      self(self, depth + 1, used | 1u << q);
    }
  };
  rec(rec, 0, 0);
  return out;
}

template <class R>
void check_every_gate(const KernelSet* ks) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> angle(-3.2, 3.2);
  const int n = 5;  // lane bits are at most 3, so targets fall inside and above lanes
  for (int gi = 0; gi < static_cast<int>(GateId::kCount); ++gi) {
    const auto id = static_cast<GateId>(gi);
    const GateInfo& g = gate_info(id);
    std::vector<int> sizes = {g.num_wires};
    if (g.num_wires < 0) sizes = {1, 2, 3, 4};
    for (int k : sizes) {
      for (const std::vector<int>& wires : wire_orders(n, k)) {
        for (int extra = 0; extra <= (k < n ? 1 : 0); ++extra) {
          Operation op;
          op.gate = id;
          op.wires = wires;
          if (extra) {  // one extra control on a wire the gate does not use
            for (int q = 0; q < n; ++q)
              if (std::find(wires.begin(), wires.end(), q) == wires.end()) {
                op.controls = {static_cast<int>((q + rng() % n) % n)};
                if (std::find(wires.begin(), wires.end(), op.controls[0]) != wires.end())
                  op.controls = {q};
                break;
              }
          }
          for (int p = 0; p < g.num_params; ++p)
            op.params.push_back(ParamExpr::literal(angle(rng)));
          if (id == GateId::QubitUnitary)
            op.unitary = std::make_shared<Matrix>(testing::random_unitary(k, rng));
          Circuit c(n);
          c.add(op);
          const State in = testing::random_state(n, rng);
          const State want = testing::run_dense(c, {}, in);
          const State got = simulate<R>(ks, n, bind_params(c, {}), in);
          ASSERT_LT(testing::max_abs_diff(want, got), tol<R>())
              << ks->name << " " << describe(c.ops()[0]);
        }
      }
    }
  }
}

// Dense gates of 5 and 6 targets (fused blocks): all above the lanes (the
// widest templated kernel), one in the lanes, and beyond the templates.
template <class R>
void check_wide_dense(const KernelSet* ks) {
  std::mt19937_64 rng(9);
  const int n = 10;
  for (const std::vector<int>& wires : {std::vector<int>{4, 5, 6, 7, 9},
                                        std::vector<int>{9, 3, 5, 8, 4},
                                        {0, 5, 6, 7, 8},
                                        std::vector<int>{3, 4, 5, 6, 7, 8}}) {
    Operation op;
    op.gate = GateId::QubitUnitary;
    op.wires = wires;
    op.unitary =
        std::make_shared<Matrix>(testing::random_unitary(static_cast<int>(wires.size()), rng));
    Circuit c(n);
    c.add(op);
    const State in = testing::random_state(n, rng);
    const State want = testing::run_dense(c, {}, in);
    const State got = simulate<R>(ks, n, bind_params(c, {}), in);
    ASSERT_LT(testing::max_abs_diff(want, got), 10 * tol<R>()) << ks->name << " " << describe(op);
  }
}

class KernelSets : public ::testing::TestWithParam<const KernelSet*> {};

TEST_P(KernelSets, WideDenseGatesC64) { check_wide_dense<float>(GetParam()); }
TEST_P(KernelSets, WideDenseGatesC128) { check_wide_dense<double>(GetParam()); }
TEST_P(KernelSets, EveryGateEveryWireOrderC64) { check_every_gate<float>(GetParam()); }
TEST_P(KernelSets, EveryGateEveryWireOrderC128) { check_every_gate<double>(GetParam()); }

template <class R>
void check_controls(const KernelSet* ks) {
  // Multi-controlled gates with controls below, between and above the targets.
  std::mt19937_64 rng(11);
  const int n = 7;
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<int> q(n);
    std::iota(q.begin(), q.end(), 0);
    std::shuffle(q.begin(), q.end(), rng);
    const int k = 1 + trial % 3, nc = 1 + (trial / 3) % 3;
    Operation op;
    op.gate = GateId::QubitUnitary;
    op.wires.assign(q.begin(), q.begin() + k);
    op.controls.assign(q.begin() + k, q.begin() + k + nc);
    op.unitary = std::make_shared<Matrix>(testing::random_unitary(k, rng));
    if (trial % 5 == 0) {  // a diagonal gate with controls
      op.gate = GateId::MultiRZ;
      op.unitary.reset();
      op.params = {ParamExpr::literal(0.3 + trial)};
    }
    Circuit c(n);
    c.add(op);
    const State in = testing::random_state(n, rng);
    const State want = testing::run_dense(c, {}, in);
    ASSERT_LT(testing::max_abs_diff(want, simulate<R>(ks, n, bind_params(c, {}), in)), tol<R>())
        << ks->name << " " << describe(op);
  }
}

TEST_P(KernelSets, ControlsAnywhereC64) { check_controls<float>(GetParam()); }
TEST_P(KernelSets, ControlsAnywhereC128) { check_controls<double>(GetParam()); }

template <class R>
void check_fused(const KernelSet* ks) {
  std::mt19937_64 rng(3);
  for (int n : {1, 2, 3, 6, 8}) {
    const Circuit c = testing::random_circuit(n, 40, rng, true);
    const State in = testing::random_state(n, rng);
    const State want = testing::run_dense(c, {}, in);
    const std::vector<BoundGate> gates = bind_params(c, {});
    const State unfused = simulate<R>(ks, n, gates, in);
    ASSERT_LT(testing::max_abs_diff(want, unfused), 10 * tol<R>()) << ks->name << " n=" << n;
    for (int k = 1; k <= 6; ++k) {
      const std::vector<BoundGate> fused = fuse(gates, {k, 10});
      const State got = simulate<R>(ks, n, fused, in);
      ASSERT_LT(testing::max_abs_diff(want, got), 10 * tol<R>())
          << ks->name << " n=" << n << " fusion=" << k;
      ASSERT_LT(testing::max_abs_diff(unfused, got), 10 * tol<R>());
    }
  }
}

TEST_P(KernelSets, FusedEqualsUnfusedAndOracleC64) { check_fused<float>(GetParam()); }
TEST_P(KernelSets, FusedEqualsUnfusedAndOracleC128) { check_fused<double>(GetParam()); }

// A random real 2 x 2 orthogonal matrix: a rotation (RY's form) or a reflection.
Matrix real_orthogonal_2x2(std::mt19937_64& rng) {
  const double t = std::uniform_real_distribution<double>(0, 6.283)(rng);
  const double c = std::cos(t), s = std::sin(t);
  return rng() % 2 ? Matrix{c, -s, s, c} : Matrix{c, s, s, -c};
}

// The fused adjoint step (KernelSet::adjoint_step): the anti-Hermitian part of
// M_ab = sum conj(bra_a) ket_b over G's groups (controls set), then ket = G ket and
// bra = G bra, against the dense oracle and a plain sum, for targets and controls
// inside and above the lanes; diagonal gates up to 8 targets (10 qubits).
template <class R>
void check_adjoint_step(const KernelSet* ks) {
  std::mt19937_64 rng(13);
  int fused = 0;
  for (int n : {4, 5, 7, 10}) {
    for (int trial = 0; trial < 80; ++trial) {
      std::vector<int> q(n);
      std::iota(q.begin(), q.end(), 0);
      std::shuffle(q.begin(), q.end(), rng);
      const bool diag = trial % 2 == 1;
      const int k = diag ? (n < 10 ? 1 + trial % 3 : 3 + trial % 6) : 1 + (trial % 4 == 0),
                nc = trial % 3 == 0;
      Operation op;
      op.wires.assign(q.begin(), q.begin() + k);
      op.controls.assign(q.begin() + k, q.begin() + k + nc);
      if (diag) {
        op.gate = GateId::MultiRZ;
        op.params = {ParamExpr::literal(0.7 + trial)};
      } else {
        op.gate = GateId::QubitUnitary;
        // Some one-target gates real (the kernels' real-matrix variants).
        op.unitary = std::make_shared<Matrix>(
            k == 1 && trial % 5 == 2 ? real_orthogonal_2x2(rng) : testing::random_unitary(k, rng));
      }
      Circuit c(n);
      c.add(op);
      const BoundGate g = bind_params(c, {})[0];
      const State bra = testing::random_state(n, rng), ket = testing::random_state(n, rng);
      const State ket2 = testing::run_dense(c, {}, ket), bra2 = testing::run_dense(c, {}, bra);
      const std::size_t dim = g.dim();
      Matrix want = testing::cross_matrix_sum(g, bra, ket);
      if (diag)  // only the diagonal is formed for diagonal gates
        for (std::size_t e = 0; e < dim * dim; ++e)
          if (e % (dim + 1) != 0) want[e] = 0;
      want = antihermitian_part(want);
      StateVector<R> sb(n, 1, ks), sk(n, 1, ks), pb(n, 1, ks), pk(n, 1, ks);
      sb.set_amplitudes(bra);
      sk.set_amplitudes(ket);
      pb.set_amplitudes(bra);
      pk.set_amplitudes(ket);
      const KernelGate kg = to_kernel_gate(g);
      const PreparedGates<R> prepared(*ks, &kg, 1, n);
      double out[2 * kMaxAdjointDim * kMaxAdjointDim], peek[2 * kMaxAdjointDim * kMaxAdjointDim];
      const bool done = prepared.adjoint_step(sb.data(), sk.data(), out);
      // Without write-back: the same sums, both states untouched.
      ASSERT_EQ(prepared.adjoint_step(pb.data(), pk.data(), peek, false), done);
      if (done) {
        StateVector<R> bra0(n, 1, ks), ket0(n, 1, ks);  // at this precision
        bra0.set_amplitudes(bra);
        ket0.set_amplitudes(ket);
        ASSERT_EQ(pk.to_vector(), ket0.to_vector());
        ASSERT_EQ(pb.to_vector(), bra0.to_vector());
        for (std::size_t e = 0; e < 2 * (diag ? dim : dim * dim); ++e)
          ASSERT_EQ(peek[e], out[e]) << e;
        // real_part: the same real parts (imaginary parts formed or 0), and
        // with write-back the same states.
        double re[2 * kMaxAdjointDim * kMaxAdjointDim];
        ASSERT_TRUE(prepared.adjoint_step(pb.data(), pk.data(), re, false, true));
        ASSERT_TRUE(prepared.adjoint_step(bra0.data(), ket0.data(), peek, true, true));
        ASSERT_EQ(ket0.to_vector(), sk.to_vector());
        ASSERT_EQ(bra0.to_vector(), sb.to_vector());
        for (std::size_t e = 0; e < (diag ? dim : dim * dim); ++e) {
          ASSERT_EQ(re[2 * e], out[2 * e]) << e;
          ASSERT_EQ(peek[2 * e], out[2 * e]) << e;
          ASSERT_TRUE(re[2 * e + 1] == out[2 * e + 1] || re[2 * e + 1] == 0) << e;
        }
      }
      // Applies to dense one-target gates, dense two-target gates (lane
      // controls only with a lane target), and diagonal gates of up to 8
      // targets, at most 6 above the lanes, once the state fills a vector.
      const int lanes = std::countr_zero(ks->vector_bytes / (2 * sizeof(R)));
      const int hi = static_cast<int>(
          std::count_if(g.targets.begin(), g.targets.end(), [&](int t) { return t >= lanes; }));
      const bool lane_control =
          std::any_of(g.controls.begin(), g.controls.end(), [&](int c) { return c < lanes; });
      const bool expected =
          n >= lanes &&
          (diag ? g.num_targets() <= 8 && hi <= 6
                : g.num_targets() == 1 || (g.num_targets() == 2 && (hi < 2 || !lane_control)));
      ASSERT_EQ(done, expected) << ks->name << " " << describe(op);
      if (!done) continue;
      ++fused;
      ASSERT_LT(testing::max_abs_diff(sk.to_vector(), ket2), tol<R>()) << ks->name << describe(op);
      ASSERT_LT(testing::max_abs_diff(sb.to_vector(), bra2), tol<R>()) << ks->name << describe(op);
      // A diagonal gate's out holds P's diagonal alone.
      for (std::size_t e = 0; e < (diag ? dim : dim * dim); ++e)
        ASSERT_LT(std::abs(cplx{out[2 * e], out[2 * e + 1]} - want[diag ? e * (dim + 1) : e]),
                  20 * tol<R>())
            << ks->name << " " << describe(op) << " entry " << e;
    }
  }
  EXPECT_GT(fused, 200) << ks->name;
}

// Two adjoint steps in one pass (KernelSet::adjoint_pair): both gates' sums
// from the states on entry, then both states multiplied by A and B, against the
// dense oracle; taken only for one-target gates above the lanes without controls.
// Both gates, one or neither real (the real-matrix variant takes both real).
template <class R>
void check_adjoint_pair(const KernelSet* ks) {
  std::mt19937_64 rng(29);
  int paired = 0;
  for (int n : {4, 5, 7}) {
    for (int trial = 0; trial < 60; ++trial) {
      std::vector<int> q(n);
      std::iota(q.begin(), q.end(), 0);
      std::shuffle(q.begin(), q.end(), rng);
      const bool controlled = trial % 7 == 3;
      Circuit c(n);
      for (int g = 0; g < 2; ++g) {
        Operation op;
        op.gate = GateId::QubitUnitary;
        op.wires = {q[g]};
        if (controlled && g == 1) op.controls = {q[2]};
        const bool real = trial % 3 == 1 || (trial % 3 == 2 && g == 0);
        op.unitary = std::make_shared<Matrix>(real ? real_orthogonal_2x2(rng)
                                                   : testing::random_unitary(1, rng));
        c.add(op);
      }
      const std::vector<BoundGate> g = bind_params(c, {});
      const State bra = testing::random_state(n, rng), ket = testing::random_state(n, rng);
      const State ket2 = testing::run_dense(c, {}, ket), bra2 = testing::run_dense(c, {}, bra);
      const Matrix want_a = antihermitian_part(testing::cross_matrix_sum(g[0], bra, ket));
      const Matrix want_b = antihermitian_part(testing::cross_matrix_sum(g[1], bra, ket));
      StateVector<R> sb(n, 1, ks), sk(n, 1, ks), pb(n, 1, ks), pk(n, 1, ks);
      sb.set_amplitudes(bra);
      sk.set_amplitudes(ket);
      pb.set_amplitudes(bra);
      pk.set_amplitudes(ket);
      const KernelGate ka = to_kernel_gate(g[0]), kb = to_kernel_gate(g[1]);
      const PreparedGates<R> a(*ks, &ka, 1, n), b(*ks, &kb, 1, n);
      double oa[8], ob[8], peek_a[8], peek_b[8];
      const bool done = a.adjoint_pair(b, sb.data(), sk.data(), oa, ob);
      ASSERT_EQ(a.adjoint_pair(b, pb.data(), pk.data(), peek_a, peek_b, false), done);
      const int lanes = std::countr_zero(ks->vector_bytes / (2 * sizeof(R)));
      const bool expected = !controlled && q[0] >= lanes && q[1] >= lanes;
      ASSERT_EQ(done, expected) << ks->name << " " << describe(c.ops()[0]) << ", "
                                << describe(c.ops()[1]);
      if (!done) continue;
      ++paired;
      StateVector<R> bra0(n, 1, ks), ket0(n, 1, ks);
      bra0.set_amplitudes(bra);
      ket0.set_amplitudes(ket);
      ASSERT_EQ(pk.to_vector(), ket0.to_vector());
      ASSERT_EQ(pb.to_vector(), bra0.to_vector());
      for (int e = 0; e < 8; ++e) {
        ASSERT_EQ(peek_a[e], oa[e]);
        ASSERT_EQ(peek_b[e], ob[e]);
      }
      // real_part: the same real parts, the imaginary parts 0, the same states.
      ASSERT_TRUE(a.adjoint_pair(b, pb.data(), pk.data(), peek_a, peek_b, false, true));
      for (int e = 0; e < 8; e += 2) {
        ASSERT_EQ(peek_a[e], oa[e]);
        ASSERT_EQ(peek_b[e], ob[e]);
        ASSERT_EQ(peek_a[e + 1], 0.0);
        ASSERT_EQ(peek_b[e + 1], 0.0);
      }
      ASSERT_TRUE(a.adjoint_pair(b, bra0.data(), ket0.data(), peek_a, peek_b, true, true));
      ASSERT_EQ(ket0.to_vector(), sk.to_vector());
      ASSERT_EQ(bra0.to_vector(), sb.to_vector());
      ASSERT_LT(testing::max_abs_diff(sk.to_vector(), ket2), tol<R>()) << ks->name;
      ASSERT_LT(testing::max_abs_diff(sb.to_vector(), bra2), tol<R>()) << ks->name;
      for (std::size_t e = 0; e < 4; ++e) {
        ASSERT_LT(std::abs(cplx{oa[2 * e], oa[2 * e + 1]} - want_a[e]), 20 * tol<R>()) << e;
        ASSERT_LT(std::abs(cplx{ob[2 * e], ob[2 * e + 1]} - want_b[e]), 20 * tol<R>()) << e;
      }
    }
  }
  EXPECT_GT(paired, 10) << ks->name;
}

// A run of adjoint steps at diagonal gates in one pass
// (KernelSet::adjoint_diagonal_run): every gate's diagonal of P from the states
// on entry, then both states multiplied by every gate, against plain sums and
// the reference kernel; targets in and above the lanes, states of one vector
// block and of several (n = 12), and of more blocks than a sum in R takes
// (n = 18); gates whose targets the kernel finds in a block's low bits only,
// above them only, and in both; a layer of one-qubit phases on every qubit;
// refused for a controlled gate, one with more than 6 targets above the
// lanes, and too long a run.
template <class R>
void check_adjoint_diagonal_run(const KernelSet* ks) {
  std::mt19937_64 rng(41);
  std::uniform_real_distribution<double> angle(-3, 3);
  const int lanes = std::countr_zero(ks->vector_bytes / (2 * sizeof(R)));
  int runs = 0;
  for (int n : {3, 5, 9, 12, 18}) {
    for (int trial = 0; trial < (n == 18 ? 4 : 24); trial += n == 18 ? 3 : 1) {  // 18: 0, 3
      const bool controlled = trial % 8 == 5, too_wide = trial % 8 == 6 && n >= lanes + 7,
                 too_long = trial == 7, layer = trial % 8 == 3;
      const int count = too_long ? kMaxDiagonalRun + 1
                        : layer  ? std::min(n, kMaxDiagonalRun)
                                 : 1 + trial % 6;
      std::vector<BoundGate> gates;
      for (int i = 0; i < count; ++i) {
        std::vector<int> q(n);
        std::iota(q.begin(), q.end(), 0);
        std::shuffle(q.begin(), q.end(), rng);
        const bool with_control = i == count - 1 && controlled;
        const int k =
            std::min(with_control ? n - 1 : n, i == 0 && too_wide ? 7 : 1 + (i + trial) % 4);
        BoundGate g;
        g.diagonal = true;
        if (i == 0 && too_wide)  // 7 targets above the lanes
          for (int t = 0; t < 7; ++t) g.targets.push_back(lanes + t);
        else if (layer)
          g.targets = {i};
        else
          g.targets.assign(q.begin(), q.begin() + k);
        std::sort(g.targets.begin(), g.targets.end());
        if (with_control) g.controls = {q[static_cast<std::size_t>(k)]};
        for (std::size_t a = 0; a < g.dim(); ++a) g.matrix.push_back(std::polar(1.0, angle(rng)));
        gates.push_back(std::move(g));
      }
      const State bra = testing::random_state(n, rng), ket = testing::random_state(n, rng);
      State bra2 = bra, ket2 = ket;
      for (const BoundGate& g : gates) {
        apply_reference(g, bra2.data(), n);
        apply_reference(g, ket2.data(), n);
      }
      StateVector<R> sb(n, 1, ks), sk(n, 1, ks), pb(n, 1, ks), pk(n, 1, ks);
      sb.set_amplitudes(bra);
      sk.set_amplitudes(ket);
      pb.set_amplitudes(bra);
      pk.set_amplitudes(ket);
      std::vector<KernelGate> kg;
      for (const BoundGate& g : gates) kg.push_back(to_kernel_gate(g));
      std::vector<std::unique_ptr<PreparedGates<R>>> prepared;
      std::vector<const PreparedGates<R>*> list;
      for (const KernelGate& k : kg) {
        prepared.push_back(std::make_unique<PreparedGates<R>>(*ks, &k, 1, n));
        list.push_back(prepared.back().get());
      }
      std::vector<std::vector<double>> out(gates.size()), peek(gates.size());
      std::vector<double*> out_p, peek_p;
      for (std::size_t i = 0; i < gates.size(); ++i) {
        out[i].assign(2 * gates[i].dim(), -1.0);
        peek[i].assign(2 * gates[i].dim(), -1.0);
        out_p.push_back(out[i].data());
        peek_p.push_back(peek[i].data());
      }
      const bool done = PreparedGates<R>::adjoint_diagonal_run(list.data(), count, sb.data(),
                                                               sk.data(), out_p.data());
      ASSERT_EQ(PreparedGates<R>::adjoint_diagonal_run(list.data(), count, pb.data(), pk.data(),
                                                       peek_p.data(), false),
                done);
      const bool expected = n >= lanes && !controlled && !too_wide && !too_long;
      ASSERT_EQ(done, expected) << ks->name << " n " << n << " trial " << trial;
      StateVector<R> bra0(n, 1, ks), ket0(n, 1, ks);  // at this precision
      bra0.set_amplitudes(bra);
      ket0.set_amplitudes(ket);
      ASSERT_EQ(pk.to_vector(), ket0.to_vector());
      ASSERT_EQ(pb.to_vector(), bra0.to_vector());
      if (!done) {
        ASSERT_EQ(sk.to_vector(), ket0.to_vector());
        ASSERT_EQ(sb.to_vector(), bra0.to_vector());
        continue;
      }
      ++runs;
      ASSERT_LT(testing::max_abs_diff(sk.to_vector(), ket2), tol<R>()) << ks->name;
      ASSERT_LT(testing::max_abs_diff(sb.to_vector(), bra2), tol<R>()) << ks->name;
      for (std::size_t i = 0; i < gates.size(); ++i) {
        const std::size_t dim = gates[i].dim();
        const Matrix want = antihermitian_part(testing::cross_matrix_sum(gates[i], bra, ket));
        for (std::size_t a = 0; a < dim; ++a) {
          ASSERT_EQ(peek[i][2 * a], out[i][2 * a]);
          ASSERT_EQ(peek[i][2 * a + 1], out[i][2 * a + 1]);
          ASSERT_LT(std::abs(cplx{out[i][2 * a], out[i][2 * a + 1]} - want[a * (dim + 1)]),
                    20 * tol<R>())
              << ks->name << " n " << n << " trial " << trial << " gate " << i << " entry " << a;
        }
      }
    }
  }
  EXPECT_GT(runs, 40) << ks->name;
}

TEST_P(KernelSets, FusedAdjointDiagonalRunC64) { check_adjoint_diagonal_run<float>(GetParam()); }
TEST_P(KernelSets, FusedAdjointDiagonalRunC128) { check_adjoint_diagonal_run<double>(GetParam()); }

TEST_P(KernelSets, FusedAdjointPairC64) { check_adjoint_pair<float>(GetParam()); }
TEST_P(KernelSets, FusedAdjointPairC128) { check_adjoint_pair<double>(GetParam()); }

TEST_P(KernelSets, FusedAdjointStepC64) { check_adjoint_step<float>(GetParam()); }
TEST_P(KernelSets, FusedAdjointStepC128) { check_adjoint_step<double>(GetParam()); }

// A random matrix (Gaussian entries, not unitary: superoperators are not) on
// k targets of the shape run_dense skips work for: real entries, and/or zero
// between basis states whose target bits differ in an odd number of places.
Matrix shaped_matrix(int k, bool real, bool parity, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  const std::size_t dim = std::size_t{1} << k;
  Matrix m(dim * dim);
  for (std::size_t r = 0; r < dim; ++r)
    for (std::size_t c = 0; c < dim; ++c)
      if (!parity || std::popcount(r ^ c) % 2 == 0)
        m[r * dim + c] = {normal(rng), real ? 0.0 : normal(rng)};
  return m;
}

// Dense gates of two to four targets whose matrices are real, parity-
// preserving or both (their own kernels above the lanes), on random wires
// inside and above the lanes, with and without a control, against the
// reference kernel; also on a state that streams from memory.
template <class R>
void check_shaped_dense(const KernelSet* ks) {
  std::mt19937_64 rng(31);
  for (int n : {8, sizeof(R) == 4 ? 22 : 21}) {
    const State psi = testing::random_state(n, rng);
    const int trials = n == 8 ? 48 : 6;
    for (int trial = 0; trial < trials; ++trial) {
      std::vector<int> q(n);
      std::iota(q.begin(), q.end(), 0);
      std::shuffle(q.begin(), q.end(), rng);
      const int k = 2 + trial % 3;
      BoundGate g;
      g.targets.assign(q.begin(), q.begin() + k);
      if (trial % 4 == 0) g.targets = {n - k, n - 1, n - 2, n - 3};  // all high
      g.targets.resize(static_cast<std::size_t>(k));
      std::sort(g.targets.begin(), g.targets.end());
      if (trial % 5 == 1) g.controls = {q[static_cast<std::size_t>(k)]};
      if (std::find(g.targets.begin(), g.targets.end(), g.controls.empty() ? -1 : g.controls[0]) !=
          g.targets.end())
        g.controls.clear();
      g.matrix = shaped_matrix(k, trial % 3 != 1, (trial / 3) % 2 == 0, rng);
      StateVector<R> sv(n, 2, ks);
      sv.set_amplitudes(psi);
      sv.apply(g);
      State want = psi;
      apply_reference(g, want.data(), n);
      double scale = 0;
      for (const cplx& a : want) scale = std::max(scale, std::abs(a));
      ASSERT_LT(testing::max_abs_diff(sv.to_vector(), want), 10 * tol<R>() * scale)
          << ks->name << " n=" << n << " trial " << trial;
    }
  }
}

TEST_P(KernelSets, ShapedDenseGatesC64) { check_shaped_dense<float>(GetParam()); }
TEST_P(KernelSets, ShapedDenseGatesC128) { check_shaped_dense<double>(GetParam()); }

// States of 32 MiB and more stream from memory, and the dense kernels then
// prefetch ahead of each stream: the same results as the reference kernel,
// for lane and high targets, one to three of them, on every kernel set.
// (Prefetching cannot change a result; this runs that code on every set.)
template <class R>
void check_large_states(const KernelSet* ks) {
  std::mt19937_64 rng(29);
  const int n = sizeof(R) == 4 ? 22 : 21;  // 32 MiB
  const State psi = testing::random_state(n, rng);
  Circuit c(n);
  c.add(GateId::U3, {0}, std::vector<double>{0.3, 0.4, 0.5});
  c.add(GateId::IsingXY, {0, 1}, std::vector<double>{0.7});
  std::vector<BoundGate> gates = bind_params(c, {});
  for (const std::vector<int>& t : {std::vector<int>{0, 1, 2}, std::vector<int>{3, 9, n - 1}}) {
    BoundGate g;  // a dense three-qubit block, as fusion makes them
    g.targets = t;
    g.matrix = testing::random_unitary(3, rng);
    gates.push_back(g);
  }
  for (const BoundGate& g : gates) {
    StateVector<R> sv(n, 2, ks);
    sv.set_chunk_qubits(0);
    sv.set_amplitudes(psi);
    sv.apply(g);
    State want = psi;
    apply_reference(g, want.data(), n);
    ASSERT_LT(testing::max_abs_diff(sv.to_vector(), want), tol<R>()) << ks->name;
  }
}

TEST_P(KernelSets, LargeStatesEqualTheReferenceC64) { check_large_states<float>(GetParam()); }
TEST_P(KernelSets, LargeStatesEqualTheReferenceC128) { check_large_states<double>(GetParam()); }

// Kernel forms (kernels.h), each forced in turn: every form equals the
// reference, and the other forms bit for bit, on dense gates whose targets all
// lie above the lanes (one to four, anywhere up to the top qubit, with and
// without a control) and on diagonal gates with long runs (wires far above the
// lanes, one in the lanes, controls).
template <class R>
void check_kernel_forms(const KernelSet* ks) {
  std::mt19937_64 rng(31);
  const int n = 15;  // above the parallel threshold: two threads split the walk
  const int lanes = std::countr_zero(static_cast<unsigned>(ks->vector_bytes) / (2 * sizeof(R)));
  const State psi = testing::random_state(n, rng);
  std::vector<BoundGate> gates;
  for (int k = 1; k <= 4; ++k)
    for (int trial = 0; trial < 6; ++trial) {
      std::vector<int> high(n - lanes);
      std::iota(high.begin(), high.end(), lanes);
      if (trial > 0)
        std::shuffle(high.begin(), high.end(), rng);  // trial 0: the top k
      else
        std::reverse(high.begin(), high.end());
      BoundGate g;
      g.targets.assign(high.begin(), high.begin() + k);
      std::sort(g.targets.begin(), g.targets.end());
      g.matrix = testing::random_unitary(k, rng);
      if (trial % 2)  // a control above the lanes or in them
        g.controls = {trial % 4 == 1 || lanes == 0 ? high[k] : static_cast<int>(rng() % lanes)};
      gates.push_back(g);
    }
  const int far = lanes + 6;  // runs of 2^6 vectors
  for (const auto& [targets, controls] :
       std::vector<std::pair<std::vector<int>, std::vector<int>>>{{{n - 1}, {}},
                                                                  {{0, n - 1}, {}},
                                                                  {{far, n - 2}, {}},
                                                                  {{far, n - 3, n - 1}, {}},
                                                                  {{n - 1}, {far}},
                                                                  {{1, far + 1}, {n - 1}},
                                                                  {{n - 2}, {0}}}) {
    BoundGate g;
    g.targets = targets;
    g.controls = controls;
    g.diagonal = true;
    for (std::size_t i = 0; i < (std::size_t{1} << targets.size()); ++i)
      g.matrix.push_back(std::polar(1.0, 0.37 * static_cast<double>(i + 1)));
    gates.push_back(g);
  }
  for (const BoundGate& g : gates) {
    State want = psi;
    apply_reference(g, want.data(), n);
    State first;
    for (const char* form : {"lockstep", "tiled2", "tiled4", "tiled8", "sequential"}) {
      const std::string before = force_kernel_form(form);
      StateVector<R> sv(n, 2, ks);
      sv.set_chunk_qubits(0);
      sv.set_amplitudes(psi);
      sv.apply(g);
      force_kernel_form(before);
      const State got = sv.to_vector();
      ASSERT_LT(testing::max_abs_diff(got, want), tol<R>()) << ks->name << " " << form;
      if (first.empty()) first = got;
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], first[i]) << ks->name << " " << form << " amplitude " << i;
    }
  }
}

TEST_P(KernelSets, KernelFormsEqualTheReferenceC64) { check_kernel_forms<float>(GetParam()); }
TEST_P(KernelSets, KernelFormsEqualTheReferenceC128) { check_kernel_forms<double>(GetParam()); }

TEST(Kernels, UnknownKernelFormIsRefused) {
  EXPECT_THROW(force_kernel_form("zigzag"), Error);
  EXPECT_FALSE(kernel_form_forced());
}

// Sign diagonals against their gates: a random quadratic form (CZ on random
// pairs, Z on random qubits, an overall sign) applied to two states in one pass
// equals the Z and CZ gates applied one by one by the dense oracle (n <= 7) or
// the plain reference kernel (above: 2^8 and more vectors, so every part of
// the kernel's index split is used).
template <class R>
void check_sign_diagonals(const KernelSet* ks) {
  std::mt19937_64 rng(17);
  for (int n : {0, 1, 2, 3, 4, 5, 7, 12, 13}) {
    for (int trial = 0; trial < 4; ++trial) {
      SignDiagonal d;
      Circuit gates(n);
      for (int p = 0; p < n; ++p) {
        if (rng() % 3 == 0) {
          d.linear |= bit(p);
          gates.add(GateId::Z, {p});
        }
        for (int q = p + 1; q < n; ++q)
          if (rng() % 3 == 0) {
            d.partners[p] |= bit(q);
            gates.add(GateId::CZ, {q, p});  // control q, target p
          }
      }
      d.negate = trial % 2 == 1;
      const State a0 = testing::random_state(n, rng), b0 = testing::random_state(n, rng);
      auto want = [&](const State& psi) {
        State out = psi;
        if (n <= 7) {
          out = testing::run_dense(gates, {}, psi);
        } else {
          for (const BoundGate& g : bind_params(gates, {})) apply_reference(g, out.data(), n);
        }
        if (d.negate)
          for (cplx& x : out) x = -x;
        return out;
      };
      std::vector<R> a(std::size_t{2} << n), b(std::size_t{2} << n);
      for (std::size_t i = 0; i < a0.size(); ++i) {
        a[2 * i] = static_cast<R>(a0[i].real());
        a[2 * i + 1] = static_cast<R>(a0[i].imag());
        b[2 * i] = static_cast<R>(b0[i].real());
        b[2 * i + 1] = static_cast<R>(b0[i].imag());
      }
      std::vector<R> a_only = a;
      if constexpr (sizeof(R) == 4) {
        ks->apply_signs_f32(d, a.data(), b.data(), n);
        ks->apply_signs_f32(d, a_only.data(), nullptr, n);
      } else {
        ks->apply_signs_f64(d, a.data(), b.data(), n);
        ks->apply_signs_f64(d, a_only.data(), nullptr, n);
      }
      ASSERT_EQ(a, a_only) << ks->name << " n=" << n;
      auto as_state = [](const std::vector<R>& v) {
        State out(v.size() / 2);
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = {v[2 * i], v[2 * i + 1]};
        return out;
      };
      ASSERT_LT(testing::max_abs_diff(as_state(a), want(a0)), tol<R>()) << ks->name << " n=" << n;
      ASSERT_LT(testing::max_abs_diff(as_state(b), want(b0)), tol<R>()) << ks->name << " n=" << n;
    }
  }
}

TEST_P(KernelSets, SignDiagonalsEqualTheirGatesC64) { check_sign_diagonals<float>(GetParam()); }
TEST_P(KernelSets, SignDiagonalsEqualTheirGatesC128) { check_sign_diagonals<double>(GetParam()); }

INSTANTIATE_TEST_SUITE_P(AllSets, KernelSets, ::testing::ValuesIn(available_kernel_sets()),
                         [](const auto& info) {
                           std::string s = info.param->name;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

TEST(Kernels, NormPreservedOver10000RandomGates) {
  std::mt19937_64 rng(5);
  const int n = 10;
  const Circuit c = testing::random_circuit(n, 10000, rng, true);
  StateVector<double> d(n);
  StateVector<float> f(n);
  const std::vector<BoundGate> gates = bind_params(c, {});
  d.apply(gates);
  f.apply(gates);
  EXPECT_NEAR(d.norm_squared(), 1.0, 1e-10);
  EXPECT_NEAR(f.norm_squared(), 1.0, 1e-3);
}

TEST(Kernels, ThreadedEqualsSerialBitwise) {
  std::mt19937_64 rng(9);
  const int n = 16;  // above the parallel threshold
  const Circuit c = testing::random_circuit(n, 60, rng, true);
  const std::vector<BoundGate> gates = fuse(bind_params(c, {}), {4, 10});
  StateVector<double> a(n, 1), b(n, 2);
  a.apply(gates);
  b.apply(gates);
  for (index_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.amplitude(i), b.amplitude(i)) << i;
}

}  // namespace
}  // namespace qmlsim::cpu
