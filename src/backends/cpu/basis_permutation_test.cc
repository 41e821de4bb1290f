// Composed basis permutations against gate-by-gate application (itself checked
// against the dense oracle in kernels_test): X, CNOT, SWAP and controlled X are
// accepted, Toffoli and non-permutations refused.
#include "backends/cpu/basis_permutation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "backends/cpu/statevector.h"
#include "core/bits.h"
#include "testing/dense_oracle.h"

namespace qmlsim::cpu {
namespace {

BoundGate gate(GateId id, std::vector<int> wires) {
  Operation op;
  op.gate = id;
  op.wires = std::move(wires);
  if (gate_info(id).num_params > 0) op.params = {ParamExpr::literal(0.3)};
  return bind_params(op, {});
}

TEST(AffinePermutation, AcceptsAffinePermutationsOnly) {
  AffinePermutation p(4);
  EXPECT_TRUE(p.append(gate(GateId::X, {2})));
  EXPECT_TRUE(p.append(gate(GateId::CNOT, {3, 0})));
  EXPECT_TRUE(p.append(gate(GateId::SWAP, {1, 3})));
  EXPECT_FALSE(p.append(gate(GateId::Toffoli, {0, 1, 2})));  // not affine
  EXPECT_FALSE(p.append(gate(GateId::H, {0})));
  EXPECT_FALSE(p.append(gate(GateId::CY, {0, 1})));  // phases
  EXPECT_FALSE(p.append(gate(GateId::RZ, {1})));
  EXPECT_FALSE(p.append(gate(GateId::CNOT, {4, 0})));  // wire outside b
  EXPECT_EQ(p.gates(), 3);
}

// `count` random X, CNOT and SWAP gates on b wires, each appended to p.
// Gates on qubits `lowest` and up (below them the permutation moves blocks).
std::vector<BoundGate> random_run(int b, int count, std::mt19937_64& rng, AffinePermutation& p,
                                  int lowest = 0) {
  const GateId ids[] = {GateId::X, GateId::CNOT, GateId::SWAP, GateId::CNOT};
  std::vector<BoundGate> gates;
  for (int i = 0; i < count; ++i) {
    const GateId id = ids[rng() % (b - lowest >= 2 ? 4 : 1)];
    std::vector<int> q(b - lowest);
    std::iota(q.begin(), q.end(), lowest);
    std::shuffle(q.begin(), q.end(), rng);
    q.resize(static_cast<std::size_t>(gate_info(id).num_wires));
    gates.push_back(gate(id, q));
    EXPECT_TRUE(p.append(gates.back()));
  }
  return gates;
}

template <class R>
void check_random_runs() {
  std::mt19937_64 rng(17);
  for (int b : {1, 3, 8, 11}) {
    for (int trial = 0; trial < 40; ++trial) {
      AffinePermutation p(b);
      // Runs on all qubits, on qubits 2 and up, and on qubits 5 and up (their
      // low bits move as blocks), the last also with a CNOT from the top qubit
      // onto qubit 0 (then no block may form).
      const int lowest = std::min(b - 1, trial % 4 == 0 ? 0 : trial % 4 == 1 ? 2 : 5);
      std::vector<BoundGate> gates = random_run(b, 12, rng, p, lowest);
      if (trial % 4 == 3 && b >= 2) {
        gates.push_back(gate(GateId::CNOT, {b - 1, 0}));
        EXPECT_TRUE(p.append(gates.back()));
      }
      ASSERT_EQ(p.gates(), static_cast<int>(gates.size()));
      const testing::State in = testing::random_state(b, rng);
      StateVector<R> want(b), got(b), out(b);
      want.set_amplitudes(in);
      want.apply(gates);
      got.set_amplitudes(in);
      p.apply(got.data(), out.data());
      for (index_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(out.amplitude(i), want.amplitude(i)) << "b=" << b << " i=" << i;
      // Two arrays in one loop: each as if alone.
      const testing::State in2 = testing::random_state(b, rng);
      StateVector<R> want2(b), got2(b), out2(b), again(b);
      want2.set_amplitudes(in2);
      want2.apply(gates);
      got2.set_amplitudes(in2);
      p.apply(got.data(), again.data(), got2.data(), out2.data());
      for (index_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(again.amplitude(i), want.amplitude(i)) << "b=" << b << " i=" << i;
        ASSERT_EQ(out2.amplitude(i), want2.amplitude(i)) << "b=" << b << " i=" << i;
      }
    }
  }
}

// P T P^dagger against its definition: with psi' = P psi (the composed gates),
// T' psi' must equal P (T psi), for random runs, random Pauli terms (X, Y, Z
// on random wires) and random states.
TEST(AffinePermutation, ConjugatesPauliTerms) {
  std::mt19937_64 rng(23);
  for (int b : {1, 3, 6}) {
    for (int trial = 0; trial < 40; ++trial) {
      AffinePermutation p(b);
      const std::vector<BoundGate> gates = random_run(b, 10, rng, p);
      ASSERT_EQ(p.gates(), 10);
      const index_t all = bit(b) - 1;
      const PauliTerm t{0.5 + trial, rng() & all, rng() & all};
      const PauliTerm c = p.conjugate(t);
      PauliSum h, hc;
      h.add(t.coeff, t.xmask, t.zmask);
      hc.add(c.coeff, c.xmask, c.zmask);
      const testing::State psi = testing::random_state(b, rng);
      StateVector<double> s(b), th(b), want(b), moved(b), got(b);
      s.set_amplitudes(psi);
      th.assign_applied(h, s);  // T psi
      want.copy_from(th);
      want.apply(gates);  // P T psi
      moved.copy_from(s);
      moved.apply(gates);             // P psi
      got.assign_applied(hc, moved);  // T' P psi
      for (index_t i = 0; i < want.size(); ++i)
        ASSERT_LT(std::abs(got.amplitude(i) - want.amplitude(i)), 1e-12)
            << "b=" << b << " trial " << trial << " i=" << i;
    }
  }
}

TEST(AffinePermutation, EqualsGateByGateC64) { check_random_runs<float>(); }
TEST(AffinePermutation, EqualsGateByGateC128) { check_random_runs<double>(); }

}  // namespace
}  // namespace qmlsim::cpu
