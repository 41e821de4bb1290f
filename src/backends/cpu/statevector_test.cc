// Expectation values, sampling and cache-blocked application against the
// dense oracle and against each other.
#include "backends/cpu/statevector.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backends/cpu/batch.h"
#include "passes/fusion.h"
#include "testing/dense_oracle.h"

namespace qmlsim::cpu {
namespace {

using testing::State;

PauliSum random_pauli_sum(int n, int terms, std::mt19937_64& rng) {
  PauliSum h;
  std::uniform_real_distribution<double> c(-1, 1);
  for (int t = 0; t < terms; ++t) {
    index_t x = 0, z = 0;
    for (int q = 0; q < n; ++q) {
      switch (rng() % 4) {
        case 1:
          x |= index_t{1} << q;
          break;
        case 2:
          x |= index_t{1} << q;
          z |= index_t{1} << q;
          break;
        case 3:
          z |= index_t{1} << q;
          break;
        default:
          break;
      }
    }
    if (t % 3 == 0) x = 0;  // plenty of diagonal terms
    h.add(c(rng), x, z);
  }
  h.add(0.5, 0, 0);
  return h;
}

template <class R>
void check_expval(double tol) {
  std::mt19937_64 rng(21);
  for (int n : {1, 3, 6, 11, 13}) {  // 11+ qubits: several blocks in the reductions
    const State psi = testing::random_state(n, rng);
    StateVector<R> sv(n, 2);
    sv.set_amplitudes(psi);
    const PauliSum h = random_pauli_sum(n, 12, rng);
    const double want = n <= 11 ? testing::expval_dense(h, psi) : 0;
    if (n <= 11) {
      EXPECT_NEAR(sv.expval(h), want, tol) << "n=" << n;
    }
    EXPECT_NEAR(sv.norm_squared(), 1.0, tol);
    // Thread count does not change the result, bitwise.
    StateVector<R> one(n, 1);
    one.set_amplitudes(psi);
    EXPECT_EQ(one.expval(h), sv.expval(h));
  }
}

TEST(StateVector, ExpvalMatchesDenseOracleC128) { check_expval<double>(1e-12); }
TEST(StateVector, ExpvalMatchesDenseOracleC64) { check_expval<float>(1e-5); }

template <class R>
void check_expval_fast_paths(double tol) {
  // expval's and assign_applied's real-weight passes (diagonal; flips inside a
  // block, across blocks, both; one or several weight tables) against the dense
  // oracle and against the general complex pass of expval_between.
  std::mt19937_64 rng(4);
  const int n = 11;  // 10-bit blocks: qubit 10 selects the block
  const State psi = testing::random_state(n, rng);
  StateVector<R> sv(n, 2);
  sv.set_amplitudes(psi);
  for (const char* text : {"Z0", "Z10", "Z0 Z10 - 0.5*Z3 + 0.25", "X10", "X10 Z3", "X0 X10", "X2",
                           "X0", "Y3 Y10 + 0.7*X5 X6 Z10", "0.3*X4 Z1 Z0 - Z8 X9", "Y1"}) {
    const PauliSum h = parse_pauli_sum(text, "test");
    EXPECT_NEAR(sv.expval(h), testing::expval_dense(h, psi), tol) << text;
    EXPECT_NEAR(sv.expval(h), sv.expval_between(h, sv), tol) << text;
    StateVector<R> hp(n, 2);  // H|psi>, the adjoint method's first step, and <H>
    EXPECT_NEAR(hp.assign_applied(h, sv), testing::expval_dense(h, psi), tol) << text;
    EXPECT_LT(testing::max_abs_diff(hp.to_vector(),
                                    testing::apply_dense(testing::pauli_matrix(h, n), psi)),
              10 * tol)
        << text;
  }
}

TEST(StateVector, ExpvalFastPathsC128) { check_expval_fast_paths<double>(1e-12); }
TEST(StateVector, ExpvalFastPathsC64) { check_expval_fast_paths<float>(1e-5); }

TEST(StateVector, ExpvalBetweenIsTheRealPartOfTheMatrixElement) {
  std::mt19937_64 rng(2);
  const int n = 5;
  const State a = testing::random_state(n, rng), b = testing::random_state(n, rng);
  const PauliSum h = random_pauli_sum(n, 6, rng);
  const State hb = testing::apply_dense(testing::pauli_matrix(h, n), b);
  cplx want = 0;
  for (std::size_t i = 0; i < a.size(); ++i) want += std::conj(a[i]) * hb[i];
  StateVector<double> sa(n), sb(n);
  sa.set_amplitudes(a);
  sb.set_amplitudes(b);
  EXPECT_NEAR(sa.expval_between(h, sb), want.real(), 1e-12);
}

// <bra| g |ket> for gates of 1-3 targets on any wires, with and without a
// control, with dense, sparse (at most half the entries nonzero: the sparse
// path) and diagonal matrices, on 1 and 2 threads, against a plain sum over
// every index (g applied index by index) in double.
template <class R>
void check_gate_matrix_element(double tol) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  for (int n : {5, 13}) {  // 13: several blocks of 2^10 groups
    const State bra = testing::random_state(n, rng), ket = testing::random_state(n, rng);
    StateVector<R> sb(n), sk(n);
    sb.set_amplitudes(bra);
    sk.set_amplitudes(ket);
    for (int trial = 0; trial < 48; ++trial) {
      const int k = 1 + trial % 3, kind = (trial / 3) % 4;  // 0 dense, 1-2 sparse, 3 diagonal
      // The first 24 trials have their lowest wire at 0, 1 or 2 (runs of 1, 2 and 4
      // amplitudes below the gate, each summed its own way), the rest anywhere.
      const int low = trial < 24 ? std::min(trial / 3 % 3, n - k - 1) : 0;
      std::vector<int> wires;
      for (int q = low; q < n; ++q) wires.push_back(q);
      std::shuffle(wires.begin() + (trial < 24 ? 1 : 0), wires.end(), rng);
      BoundGate g;
      g.targets.assign(wires.begin(), wires.begin() + k);
      std::sort(g.targets.begin(), g.targets.end());
      if (trial % 2) g.controls = {wires[static_cast<std::size_t>(k)]};
      g.diagonal = kind == 3;
      const std::size_t dim = g.dim(), entries = g.diagonal ? dim : dim * dim;
      for (std::size_t e = 0; e < entries; ++e) g.matrix.push_back({normal(rng), normal(rng)});
      if (kind == 1 || kind == 2)  // keep about a third (kind 1) or a quarter (kind 2)
        for (std::size_t e = 0; e < entries; ++e)
          if (rng() % (kind + 2) != 0 || (kind == 2 && e == 0)) g.matrix[e] = 0;
      cplx want = 0;
      for (index_t i = 0; i < (index_t{1} << n); ++i) {
        bool on = true;
        for (int c : g.controls) on = on && (i >> c & 1);
        if (!on) continue;
        std::size_t r = 0;
        index_t cleared = i;
        for (int j = 0; j < k; ++j) {
          r |= static_cast<std::size_t>(i >> g.targets[static_cast<std::size_t>(j)] & 1) << j;
          cleared &= ~(index_t{1} << g.targets[static_cast<std::size_t>(j)]);
        }
        for (std::size_t c = 0; c < dim; ++c) {
          index_t from = cleared;
          for (int j = 0; j < k; ++j)
            if (c >> j & 1) from |= index_t{1} << g.targets[static_cast<std::size_t>(j)];
          want += std::conj(bra[i]) * g.at(r, c) * ket[from];
        }
      }
      for (int threads : {1, 2}) {
        sb.set_threads(threads);
        const cplx got = sb.matrix_element(g, sk);
        EXPECT_NEAR(got.real(), want.real(), tol) << "n " << n << " trial " << trial;
        EXPECT_NEAR(got.imag(), want.imag(), tol) << "n " << n << " trial " << trial;
      }
    }
  }
}

// A matrix of zeros (a parameter a channel does not depend on): no entry, 0.
TEST(StateVector, GateMatrixElementOfAZeroMatrixIsZero) {
  std::mt19937_64 rng(12);
  const int n = 4;
  StateVector<double> a(n), b(n);
  a.set_amplitudes(testing::random_state(n, rng));
  b.set_amplitudes(testing::random_state(n, rng));
  BoundGate zero;
  zero.targets = {1, 3};
  zero.matrix.assign(16, cplx{0});
  EXPECT_EQ(a.matrix_element(zero, b), cplx{0});
}

TEST(StateVector, GateMatrixElementMatchesAPlainSumC128) {
  check_gate_matrix_element<double>(1e-11);
}
TEST(StateVector, GateMatrixElementMatchesAPlainSumC64) { check_gate_matrix_element<float>(2e-4); }

TEST(StateVector, SamplingIsSeededAndFollowsTheBornRule) {
  std::mt19937_64 rng(8);
  const int n = 12;
  const State psi = testing::random_state(n, rng);
  StateVector<double> sv(n, 2);
  sv.set_amplitudes(psi);
  const std::int64_t shots = 200000;
  const auto counts = sv.sample(shots, 99);
  EXPECT_EQ(counts, sv.sample(shots, 99));
  // Streamed in chunks (memory independent of the shot count): each uniform
  // lands on the same outcome whichever chunk sorts it, so the counts agree.
  EXPECT_EQ(counts, sv.sample(shots, 99, 777));
  EXPECT_EQ(counts, sv.sample(shots, 99, 1));
  EXPECT_NE(counts, sv.sample(shots, 100));
  StateVector<double> serial(n, 1);
  serial.set_amplitudes(psi);
  EXPECT_EQ(counts, serial.sample(shots, 99));
  // Marginal of qubit 0 and of the top qubit within 5 standard deviations.
  for (int q : {0, n - 1}) {
    double p = 0;
    for (std::size_t i = 0; i < psi.size(); ++i)
      if (i >> q & 1) p += std::norm(psi[i]);
    std::int64_t ones = 0, total = 0;
    for (const auto& [i, c] : counts) {
      total += c;
      if (i >> q & 1) ones += c;
    }
    EXPECT_EQ(total, shots);
    const double sd = std::sqrt(p * (1 - p) / shots);
    EXPECT_NEAR(static_cast<double>(ones) / shots, p, 5 * sd) << "qubit " << q;
  }
  // A basis state samples to itself.
  StateVector<float> basis(n, 1);
  basis.set_basis_state(0b101);
  const auto only = basis.sample(1000, 1);
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only.begin()->first, 0b101u);
}

// apply_from_zero: |0...0> then the gates, whatever the state held before, the
// same amplitudes as set_basis_state(0) and apply(): with a gathered first
// segment (which fills its chunks instead of reading them), a contiguous one,
// and no blocking.
template <class R>
void check_apply_from_zero() {
  std::mt19937_64 rng(78);
  const int n = 14;
  for (int trial = 0; trial < 6; ++trial) {
    // Odd trials start on the low qubits only, so the first segment is contiguous.
    const Circuit inner = testing::random_circuit(trial % 2 == 0 ? n : 8, 120, rng, true);
    Circuit c(n);
    for (const Operation& op : inner.ops()) c.add(op);
    const std::vector<BoundGate> gates = fuse(bind_params(c, {}), {3, 10, 2.0});
    for (int chunk : {0, 9}) {
      StateVector<R> want(n, 2), got(n, 2);
      want.set_chunk_qubits(chunk);
      got.set_chunk_qubits(chunk);
      want.apply(gates);
      got.set_amplitudes(testing::random_state(n, rng));  // overwritten whole
      got.apply_from_zero(gates);
      ASSERT_EQ(got.to_vector(), want.to_vector()) << "trial " << trial << " chunk " << chunk;
    }
  }
}

TEST(StateVector, ApplyFromZeroEqualsBasisStateThenApplyC128) { check_apply_from_zero<double>(); }
TEST(StateVector, ApplyFromZeroEqualsBasisStateThenApplyC64) { check_apply_from_zero<float>(); }

template <class R>
void check_cache_blocking(double tol) {
  std::mt19937_64 rng(77);
  const int n = 14;
  const Circuit c = testing::random_circuit(n, 200, rng, true);
  const std::vector<BoundGate> gates = fuse(bind_params(c, {}), {3, 10, 2.0});
  const State psi = testing::random_state(n, rng);
  StateVector<R> plain(n, 2), blocked(n, 2), streamed(n, 2);
  plain.set_chunk_qubits(0);
  blocked.set_chunk_qubits(10);  // chunks of 10 qubits: segments gather strided runs
  streamed.set_chunk_qubits(10);
  blocked.set_streaming_stores(false);
  streamed.set_streaming_stores(true);  // scattered back with non-temporal stores
  plain.set_amplitudes(psi);
  blocked.set_amplitudes(psi);
  streamed.set_amplitudes(psi);
  plain.apply(gates);
  blocked.apply(gates);
  streamed.apply(gates);
  EXPECT_LT(testing::max_abs_diff(plain.to_vector(), blocked.to_vector()), tol);
  EXPECT_EQ(testing::max_abs_diff(blocked.to_vector(), streamed.to_vector()), 0.0);
  // Both pair one-qubit gates (2^14 amplitudes): against the plain reference too.
  State want = psi;
  for (const BoundGate& g : gates) apply_reference(g, want.data(), n);
  EXPECT_LT(testing::max_abs_diff(want, plain.to_vector()), tol);
}

TEST(StateVector, CacheBlockedEqualsPlainAndTheReferenceC128) {
  check_cache_blocking<double>(1e-12);
}
TEST(StateVector, CacheBlockedEqualsPlainAndTheReferenceC64) { check_cache_blocking<float>(1e-5); }

template <class R>
void check_composed_permutations(double tol) {
  // Rotation layers and CNOT rings, X and SWAP runs: inside cache-blocked
  // segments the runs of permutations are applied as one composed map, out of
  // place (an odd number of them leaves the chunk in the spare buffer).
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<double> u(-3, 3);
  const int n = 12;
  Circuit c(n);
  for (int layer = 0; layer < 3; ++layer) {
    for (int q = 0; q < n; ++q) c.add(GateId::RY, {q}, std::vector<double>{u(rng)});
    for (int q = 0; q < n; ++q) c.add(GateId::CNOT, {q, (q + 1) % n});
    if (layer == 1) {
      c.add(GateId::SWAP, {0, 11});
      c.add(GateId::X, {3});
      c.add(GateId::Toffoli, {1, 2, 5});  // a permutation, not affine: splits the run
      c.add(GateId::CNOT, {5, 9});
      c.add(GateId::CNOT, {9, 2});
    }
  }
  const State psi = testing::random_state(n, rng);
  // Reference: one gate at a time, unblocked (each gate kernel is checked
  // against the dense oracle in kernels_test; a dense 12-qubit oracle here
  // took most of this test's time).
  StateVector<double> ref(n, 1);
  ref.set_chunk_qubits(0);
  ref.set_amplitudes(psi);
  for (const BoundGate& g : bind_params(c, {})) ref.apply(g);
  const State want = ref.to_vector();
  // Fused, the layers come out as RY, CNOT, RY, CNOT, ...: the segments move the
  // RYs back past the CNOTs that do not touch them, to make the CNOTs one run.
  for (bool fused : {false, true}) {
    const std::vector<BoundGate> gates =
        fused ? fuse(bind_params(c, {}), {3, 10, 1.0}) : bind_params(c, {});
    for (int chunk : {9, 10}) {
      StateVector<R> sv(n, 2);
      sv.set_chunk_qubits(chunk);
      sv.set_amplitudes(psi);
      sv.apply(gates);
      EXPECT_LT(testing::max_abs_diff(sv.to_vector(), want), tol)
          << "chunk " << chunk << " fused " << fused;
    }
  }
}

TEST(StateVector, ComposedPermutationsInBlockedSegmentsC128) {
  check_composed_permutations<double>(1e-12);
}
TEST(StateVector, ComposedPermutationsInBlockedSegmentsC64) {
  check_composed_permutations<float>(1e-5);
}

// Measure::whole where `on`.
Measure flag(bool on) { return on ? Measure::whole : Measure::none; }

// The plain reference sweep: for i from last to first, step i's sums taken
// where measure[i] (their anti-Hermitian part), then the step applied to the
// states its side names (sides empty: both). The sums and the final states.
struct ReferenceSweep {
  std::vector<Matrix> sums;
  State phi, lambda;
};
template <class R>
ReferenceSweep reference_sweep(int n, const State& phi0, const State& lam0,
                               const std::vector<BoundGate>& inverse,
                               const std::vector<Measure>& measure,
                               const std::vector<Side>& sides = {}) {
  StateVector<R> phi(n), lam(n);
  phi.set_chunk_qubits(0);
  lam.set_chunk_qubits(0);
  phi.set_amplitudes(phi0);
  lam.set_amplitudes(lam0);
  ReferenceSweep out;
  out.sums.resize(inverse.size());
  for (std::size_t i = inverse.size(); i-- > 0;) {
    if (measure[i] != Measure::none)
      out.sums[i] = antihermitian_part(
          testing::cross_matrix_sum(inverse[i], lam.to_vector(), phi.to_vector()));
    const Side side = sides.empty() ? Side::both : sides[i];
    if (side != Side::lambda_only) phi.apply(inverse[i]);
    if (side != Side::this_only) lam.apply(inverse[i]);
  }
  out.phi = phi.to_vector();
  out.lambda = lam.to_vector();
  return out;
}

// The adjoint sweep against a plain reference: every inverse gate undone on both
// states one by one, and each measured gate's cross matrix summed in the test
// before its undo (then its anti-Hermitian part taken).
// Random measured flags make many gates fall outside every measured gate's light
// cone, so the sweep's skipped gates, peeks (cross matrix without write-back,
// fused or not) and chunks that need no write-back are all exercised.
template <class R>
void check_adjoint_sweep(double tol) {
  std::mt19937_64 rng(31);
  const int n = 11;
  for (int trial = 0; trial < 8; ++trial) {
    std::vector<BoundGate> gates =
        bind_params(testing::random_circuit(n, 60, rng, trial % 2 == 1), {});
    // From trial 2 on, unmeasured layers of sign gates (Z, CZ, real +-1
    // diagonals on at most two wires) in the middle and at the end: the sweep
    // undoes each run of them in one pass over both states (SignRuns), also
    // where a chunk lacks some of their wires.
    const std::size_t random_gates = gates.size();
    std::vector<char> sign_gate(gates.size(), 0);
    if (trial >= 2) {
      auto layer = [&](int first) {
        Circuit c(n);
        for (int q = first; q + 1 < n; q += 2) c.add(GateId::CZ, {q, q + 1});
        c.add(GateId::CZ, {10, 0});
        c.add(GateId::Z, {3});
        std::vector<BoundGate> out = bind_params(c, {});
        BoundGate minus;  // -1 on every amplitude
        minus.targets = {5};
        minus.diagonal = true;
        minus.matrix = {-1.0, -1.0};
        BoundGate cz2;  // a CZ as a two-target diagonal
        cz2.targets = {2, 7};
        cz2.diagonal = true;
        cz2.matrix = {1.0, 1.0, 1.0, -1.0};
        BoundGate ctl;  // -1 where qubit 1 is set and qubit 6 is not
        ctl.targets = {6};
        ctl.controls = {1};
        ctl.diagonal = true;
        ctl.matrix = {-1.0, 1.0};
        out.push_back(minus);
        out.push_back(cz2);
        out.push_back(ctl);
        return out;
      };
      const std::vector<BoundGate> middle = layer(0), end = layer(1);
      gates.insert(gates.begin() + static_cast<std::ptrdiff_t>(random_gates / 2), middle.begin(),
                   middle.end());
      sign_gate.insert(sign_gate.begin() + static_cast<std::ptrdiff_t>(random_gates / 2),
                       middle.size(), 1);
      gates.insert(gates.end(), end.begin(), end.end());
      sign_gate.insert(sign_gate.end(), end.size(), 1);
    }
    // From trial 4 on, measured layers of diagonal gates (a QAOA cost layer:
    // ZZ on a ring and chords, with an RZ, a wider diagonal and a controlled
    // one inside) first and at three quarters: the sweep takes each run of
    // them in one pass (diagonal_run), also where a chunk lacks their wires.
    std::vector<char> diagonal_gate(gates.size(), 0);
    if (trial >= 4) {
      auto layer = [&] {
        Circuit c(n);
        std::uniform_real_distribution<double> angle(-3, 3);
        for (int q = 0; q < n; ++q) {
          c.add(GateId::IsingZZ, {q, (q + 1) % n}, {ParamExpr::literal(angle(rng))});
          if (q % 3 == 0)
            c.add(GateId::IsingZZ, {q, (q + 5) % n}, {ParamExpr::literal(angle(rng))});
          if (q == 4) c.add(GateId::RZ, {9}, {ParamExpr::literal(angle(rng))});
          if (q == 6) c.add(GateId::MultiRZ, {1, 4, 10}, {ParamExpr::literal(angle(rng))});
          if (q == 7) c.add(GateId::CRZ, {2, 8}, {ParamExpr::literal(angle(rng))});
          if (q == 8)  // wider than the fused step takes (256 entries): its own sums
            c.add(GateId::MultiRZ, {0, 1, 2, 3, 5, 6, 7, 9, 10}, {ParamExpr::literal(angle(rng))});
        }
        return bind_params(c, {});
      };
      const std::vector<BoundGate> first = layer(), later = layer();
      const auto at = static_cast<std::ptrdiff_t>(3 * gates.size() / 4);
      gates.insert(gates.begin() + at, later.begin(), later.end());
      sign_gate.insert(sign_gate.begin() + at, later.size(), 0);
      diagonal_gate.insert(diagonal_gate.begin() + at, later.size(), 1);
      gates.insert(gates.begin(), first.begin(), first.end());
      sign_gate.insert(sign_gate.begin(), first.size(), 0);
      diagonal_gate.insert(diagonal_gate.begin(), first.size(), 1);
    }
    std::vector<BoundGate> inverse;
    std::vector<Measure> measure;
    for (std::size_t i = 0; i < gates.size(); ++i) {
      inverse.push_back(adjoint(gates[i]));
      measure.push_back(flag(diagonal_gate[i] ||
                             (!sign_gate[i] && rng() % 2 == 0 && gates[i].num_targets() <= 3)));
    }
    const State phi0 = testing::random_state(n, rng), lam0 = testing::random_state(n, rng);
    const std::vector<Matrix> want = reference_sweep<R>(n, phi0, lam0, inverse, measure).sums;
    for (int threads : {1, 2})
      for (int chunk : {0, 9, -9}) {  // -9: chunks of 9, scattered with non-temporal stores
        StateVector<R> p(n, threads), l(n, threads);
        p.set_chunk_qubits(std::abs(chunk));
        p.set_streaming_stores(chunk < 0);
        p.set_amplitudes(phi0);
        l.set_amplitudes(lam0);
        std::vector<Matrix> got;
        p.adjoint_sweep(l, inverse, measure, got);
        ASSERT_EQ(got.size(), gates.size());
        for (std::size_t i = 0; i < gates.size(); ++i) {
          // Diagonal gates have diagonal derivatives: only M_aa is formed, and
          // held as the dim diagonal entries.
          const std::size_t dim = gates[i].dim();
          ASSERT_EQ(got[i].size(), measure[i] == Measure::none ? 0
                                   : gates[i].diagonal         ? dim
                                                               : dim * dim)
              << i;
          for (std::size_t e = 0; e < want[i].size(); ++e) {
            if (gates[i].diagonal && e % (dim + 1) != 0) continue;
            const cplx g = gates[i].diagonal ? got[i][e / (dim + 1)] : got[i][e];
            ASSERT_LT(std::abs(g - want[i][e]), tol)
                << "trial " << trial << " threads " << threads << " chunk " << chunk << " gate "
                << i << " entry " << e;
          }
        }
      }
  }
}

// A forward pass takes the state's chunk as set, and the default one for a
// state in the cache (the larger chunk is for states streamed from memory,
// hundreds of MiB: too large for a unit test).
TEST(StateVector, ForwardChunkIsTheSetOneOrTheDefaultInCache) {
  StateVector<float> sv(12);
  EXPECT_EQ(sv.chunk_qubits(), StateVector<float>::default_chunk_qubits());
  EXPECT_EQ(sv.forward_chunk_qubits(), sv.chunk_qubits());
  sv.set_chunk_qubits(9);
  EXPECT_EQ(sv.forward_chunk_qubits(), 9);
  sv.set_chunk_qubits(0);
  EXPECT_EQ(sv.forward_chunk_qubits(), 0);
}

TEST(StateVector, AdjointSweepEqualsGateByGateUndoC128) { check_adjoint_sweep<double>(1e-11); }
TEST(StateVector, AdjointSweepEqualsGateByGateUndoC64) { check_adjoint_sweep<float>(2e-4); }

// Steps on one state (a density matrix's channel inverses on rho, duals on
// lambda) among the gates: the sweep against the same plain reference, each
// one-sided step applied to its state alone. Their matrices are not unitary;
// among them diagonal steps (which a chunk may take with wires outside it) and
// permutations (which must not join the composed runs both states take).
// Without undo_all the states are compared only through the sums.
template <class R>
void check_one_sided_sweep(double tol) {
  std::mt19937_64 rng(83);
  const int n = 11;
  std::uniform_real_distribution<double> u(-1, 1);
  std::uniform_int_distribution<int> wire(0, n - 1);
  for (int trial = 0; trial < 6; ++trial) {
    const std::vector<BoundGate> circuit =
        bind_params(testing::random_circuit(n, 40, rng, trial % 2 == 1), {});
    std::vector<BoundGate> inverse;
    std::vector<Measure> measure;
    std::vector<Side> sides;
    for (const BoundGate& g : circuit) {
      inverse.push_back(adjoint(g));
      measure.push_back(flag(rng() % 2 == 0 && g.num_targets() <= 3));
      sides.push_back(Side::both);
      for (int k = static_cast<int>(rng() % 3); k-- > 0;) {  // one-sided steps after it
        BoundGate m;
        const int kind = static_cast<int>(rng() % 4);
        int a = wire(rng), b = wire(rng);
        while (b == a) b = wire(rng);
        if (kind == 3) {  // a CNOT: a permutation
          m.targets = {b};
          m.controls = {a};
          m.matrix = {0, 1, 1, 0};
        } else {
          // Norm at most 1, so values stay of order 1: the mean of two
          // unitaries, or a diagonal of moduli 0.5-1.
          m.targets =
              kind == 0 ? std::vector<int>{a} : std::vector<int>{std::min(a, b), std::max(a, b)};
          m.diagonal = kind == 2;
          const int k = static_cast<int>(m.targets.size());
          if (m.diagonal) {
            for (std::size_t e = 0; e < m.dim(); ++e)
              m.matrix.push_back(std::polar(0.75 + 0.25 * u(rng), 3 * u(rng)));
          } else {
            const Matrix u1 = testing::random_unitary(k, rng), u2 = testing::random_unitary(k, rng);
            for (std::size_t e = 0; e < u1.size(); ++e) m.matrix.push_back(0.5 * (u1[e] + u2[e]));
          }
        }
        inverse.push_back(m);
        measure.push_back(Measure::none);
        sides.push_back(rng() % 2 == 0 ? Side::this_only : Side::lambda_only);
      }
    }
    const State phi0 = testing::random_state(n, rng), lam0 = testing::random_state(n, rng);
    const ReferenceSweep ref = reference_sweep<R>(n, phi0, lam0, inverse, measure, sides);
    const std::vector<Matrix>& want = ref.sums;
    for (bool undo_all : {false, true})
      for (int threads : {1, 2})
        for (int chunk : {0, 7, 9}) {
          StateVector<R> p(n, threads), l(n, threads);
          p.set_chunk_qubits(chunk);
          p.set_amplitudes(phi0);
          l.set_amplitudes(lam0);
          std::vector<Matrix> got;
          p.adjoint_sweep(l, inverse, measure, got, undo_all, sides);
          ASSERT_EQ(got.size(), inverse.size());
          const std::string where = "trial " + std::to_string(trial) + " threads " +
                                    std::to_string(threads) + " chunk " + std::to_string(chunk) +
                                    " undo_all " + std::to_string(undo_all);
          for (std::size_t i = 0; i < inverse.size(); ++i) {
            const std::size_t dim = inverse[i].dim();
            ASSERT_EQ(got[i].size(), measure[i] == Measure::none ? 0
                                     : inverse[i].diagonal       ? dim
                                                                 : dim * dim);
            for (std::size_t e = 0; e < want[i].size(); ++e) {
              if (inverse[i].diagonal && e % (dim + 1) != 0) continue;
              const cplx g = inverse[i].diagonal ? got[i][e / (dim + 1)] : got[i][e];
              ASSERT_LT(std::abs(g - want[i][e]), tol) << where << " gate " << i << " entry " << e;
            }
          }
          if (!undo_all) continue;
          const State ps = p.to_vector(), ls = l.to_vector(), &pw = ref.phi, &lw = ref.lambda;
          for (std::size_t a = 0; a < ps.size(); ++a) {
            ASSERT_LT(std::abs(ps[a] - pw[a]), tol) << where << " this, amplitude " << a;
            ASSERT_LT(std::abs(ls[a] - lw[a]), tol) << where << " lambda, amplitude " << a;
          }
        }
  }
}

TEST(StateVector, AdjointSweepWithOneSidedStepsEqualsStepByStepC128) {
  check_one_sided_sweep<double>(1e-10);
}
TEST(StateVector, AdjointSweepWithOneSidedStepsEqualsStepByStepC64) {
  check_one_sided_sweep<float>(5e-4);
}

// adjoint_sweep_from: lambda = H phi formed inside the first cache-blocked
// segment (H flips qubits the chunk holds; Z factors outside it are the
// chunk's sign) or in a pass of its own, then the sweep: the same expectation
// value and sums as assign_applied followed by adjoint_sweep, unblocked.
template <class R>
void check_sweep_from(double tol) {
  std::mt19937_64 rng(57);
  const int n = 11;
  const std::vector<PauliSum> observables = {
      parse_pauli_sum("0.7*Z0 Z10 + 0.3*X1 Y2 - 0.2*Y3 Z9 + 0.5", "test"),
      parse_pauli_sum("Z9 + 0.5*Z4 Z8", "test"),
      parse_pauli_sum("X10 + 0.25*Y9 Z0", "test")};  // flips qubits a chunk may lack
  for (int trial = 0; trial < 6; ++trial) {
    Circuit c = testing::random_circuit(n, 60, rng, trial % 2 == 1);
    const std::size_t random_gates = c.ops().size();
    if (trial >= 2) {  // ends in basis permutations (a pooling layer, a CNOT ring):
      // the sweep opens with their composed run, which acts on phi alone
      for (int q = 0; q < n; ++q) c.add(GateId::CNOT, {q, (q + 1 + trial) % n});
      c.add(GateId::X, {3});
      c.add(GateId::SWAP, {0, 9});
    }
    const std::vector<BoundGate> gates = bind_params(c, {});
    std::vector<BoundGate> inverse;
    std::vector<Measure> measure;
    for (std::size_t i = 0; i < gates.size(); ++i) {
      inverse.push_back(adjoint(gates[i]));
      measure.push_back(flag(i < random_gates && rng() % 2 == 0 && gates[i].num_targets() <= 3));
    }
    const State phi0 = testing::random_state(n, rng);
    for (const PauliSum& h : observables) {
      StateVector<R> phi(n), lam(n);
      phi.set_chunk_qubits(0);
      phi.set_amplitudes(phi0);
      const double want_e = lam.assign_applied(h, phi);
      std::vector<Matrix> want;
      phi.adjoint_sweep(lam, inverse, measure, want);
      for (int chunk : {0, 8, 9}) {
        StateVector<R> p(n, 2), l(n, 2, typename StateVector<R>::Unset{});
        p.set_chunk_qubits(chunk);
        p.set_amplitudes(phi0);
        std::vector<Matrix> got;
        const double e = p.adjoint_sweep_from(h, l, inverse, measure, got);
        EXPECT_NEAR(e, want_e, tol) << "trial " << trial << " chunk " << chunk;
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t i = 0; i < want.size(); ++i) {
          ASSERT_EQ(got[i].size(), want[i].size()) << i;
          for (std::size_t e2 = 0; e2 < want[i].size(); ++e2)
            ASSERT_LT(std::abs(got[i][e2] - want[i][e2]), tol)
                << "trial " << trial << " chunk " << chunk << " gate " << i << " entry " << e2;
        }
      }
    }
  }
}

TEST(StateVector, SweepFromObservableEqualsAssignThenSweepC128) { check_sweep_from<double>(1e-11); }
TEST(StateVector, SweepFromObservableEqualsAssignThenSweepC64) { check_sweep_from<float>(2e-4); }

TEST(StateVector, BatchesRunOneStatePerThreadWithIdenticalResults) {
  std::mt19937_64 rng(31);
  const int n = 8;
  std::vector<std::vector<BoundGate>> circuits;
  for (int i = 0; i < 37; ++i)
    circuits.push_back(bind_params(testing::random_circuit(n, 30, rng, true), {}));
  const std::vector<PauliSum> obs = {random_pauli_sum(n, 5, rng), parse_pauli_sum("Z0 Z7", "t")};
  const auto two = expvals_batch<double>(n, circuits, obs, 2);
  const auto one = expvals_batch<double>(n, circuits, obs, 1);
  ASSERT_EQ(two.size(), circuits.size());
  for (std::size_t i = 0; i < circuits.size(); ++i) {
    EXPECT_EQ(two[i], one[i]);
    StateVector<double> sv(n);
    sv.apply(circuits[i]);
    EXPECT_NEAR(two[i][0], sv.expval(obs[0]), 1e-12);
    EXPECT_NEAR(two[i][1], sv.expval(obs[1]), 1e-12);
  }
}

TEST(StateVector, ImpossibleSizesAreErrors) {
  EXPECT_THROW(StateVector<double>(-1), Error);
  EXPECT_THROW(StateVector<double>(kMaxQubits + 1), Error);
}

}  // namespace
}  // namespace qmlsim::cpu
