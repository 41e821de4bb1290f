// Dynamic circuits against the deferred-measurement oracle: each measurement
// becomes a CNOT onto a fresh ancilla, each reset a CNOT onto a fresh ancilla
// and a CNOT back, each classical condition controls on the ancillas holding
// its bits; the dense density-matrix oracle then gives the exact expectation
// values, the classical records' distribution and the joint distribution of
// records and final samples. Exact walks agree to 1e-10 (state vector and
// density matrix), sampled ones within 5 standard errors.
#include "grad/dynamic.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <cmath>
#include <map>
#include <random>

#include "backends/cuda/statevector.h"
#include "circuit/qasm.h"
#include "core/error.h"
#include "grad/adjoint.h"
#include "testing/dense_oracle.h"

namespace qmlsim {
namespace {

constexpr int kClbits = 3;

// A random dynamic circuit on n qubits and kClbits classical bits: gates,
// measurements, resets (some conditioned), conditioned gates (negated
// conditions only on self-inverse gates) and, when `noisy`, channels.
Circuit random_dynamic(int n, int length, bool noisy, std::mt19937_64& rng) {
  Circuit c(n, kClbits);
  std::vector<char> measured(kClbits, 0);
  for (int k = 0; k < length; ++k) {
    const int kind = static_cast<int>(rng() % 7);
    const int q = static_cast<int>(rng() % n);
    Operation op;
    if (kind == 0 || kind == 1) {
      op.instruction = Instruction::measure;
      op.wires = {q};
      op.clbit = static_cast<int>(rng() % kClbits);
      measured[static_cast<std::size_t>(op.clbit)] = 1;
    } else if (kind == 2) {
      op.instruction = Instruction::reset;
      op.wires = {q};
    } else if (kind == 3 && noisy) {
      op = testing::random_channel(n, rng);
    } else {
      op = testing::random_circuit(n, 1, rng, false).ops()[0];
    }
    if (!op.is_channel() && op.instruction != Instruction::measure && rng() % 2) {
      const int bit = static_cast<int>(rng() % kClbits);
      op.condition.bits = {bit};
      if (rng() % 2) {
        const int other = (bit + 1) % kClbits;
        op.condition.bits.push_back(other);
      }
      op.condition.value = rng() % (std::uint64_t{1} << op.condition.bits.size());
      const bool self_inverse = op.gate == GateId::X || op.gate == GateId::H ||
                                op.gate == GateId::Z || op.gate == GateId::CNOT;
      op.condition.negated = self_inverse && op.controls.empty() && rng() % 2;
    }
    c.add(std::move(op));
  }
  return c;
}

// The deferred-measurement circuit: n system qubits, then one ancilla per
// measurement and reset; owner[k] is the ancilla holding classical bit k at
// the end (-1: never measured, so 0).
struct Deferred {
  Circuit circuit;
  std::vector<int> owner;
};

Deferred defer(const Circuit& c) {
  int ancillas = 0;
  for (const Operation& op : c.ops()) ancillas += op.is_instruction();
  const int n = c.num_qubits();
  Deferred d{Circuit(n + ancillas), std::vector<int>(kClbits, -1)};
  int next = n;
  for (const Operation& op : c.ops()) {
    // Controls for the condition: ancillas on |1> where the value's bit is 1;
    // where it is 0, X before and after. A bit never measured reads 0.
    std::vector<int> controls, flipped;
    bool never = false;
    for (std::size_t j = 0; j < op.condition.bits.size(); ++j) {
      const int a = d.owner[static_cast<std::size_t>(op.condition.bits[j])];
      const bool one = op.condition.value >> j & 1;
      if (a < 0) {
        never = never || one;
        continue;
      }
      controls.push_back(a);
      if (!one) flipped.push_back(a);
    }
    Operation plain = op;
    plain.condition = {};
    plain.instruction = Instruction::none;
    if (op.condition.negated) {  // U, then U again where equal (U self-inverse)
      d.circuit.add(plain);
      if (never) continue;
    } else if (never) {
      continue;
    }
    for (int a : flipped) d.circuit.add(GateId::X, {a});
    auto add_controlled = [&](Operation g) {
      g.controls.insert(g.controls.end(), controls.begin(), controls.end());
      d.circuit.add(std::move(g));
    };
    if (op.instruction == Instruction::measure) {
      plain.gate = GateId::CNOT;
      plain.wires = {op.wires[0], next};
      add_controlled(plain);
      d.owner[static_cast<std::size_t>(op.clbit)] = next++;
    } else if (op.instruction == Instruction::reset) {
      plain.gate = GateId::CNOT;
      plain.wires = {op.wires[0], next};
      add_controlled(plain);
      plain.wires = {next++, op.wires[0]};
      d.circuit.add(plain);  // q = 0 now wherever the ancilla was set
    } else {
      add_controlled(plain);
    }
    for (int a : flipped) d.circuit.add(GateId::X, {a});
  }
  return d;
}

struct Exact {
  std::vector<double> expvals;
  std::map<std::uint64_t, double> records;
  std::map<std::pair<std::uint64_t, index_t>, double> joint;
};

Exact oracle(const Circuit& c, const std::vector<PauliSum>& observables) {
  const Deferred d = defer(c);
  const int n = c.num_qubits(), total = d.circuit.num_qubits();
  const std::size_t dim = std::size_t{1} << total;
  std::vector<double> diagonal(dim);
  Exact e;
  if (c.has_channels()) {
    const Matrix rho = testing::run_dense_density(d.circuit, {});
    for (const PauliSum& h : observables)
      e.expvals.push_back(testing::expval_dense_density(h, rho, total));
    for (std::size_t i = 0; i < dim; ++i) diagonal[i] = rho[i * dim + i].real();
  } else {
    testing::State psi(dim, 0.0);
    psi[0] = 1;
    psi = testing::run_dense(d.circuit, {}, psi);
    for (const PauliSum& h : observables) e.expvals.push_back(testing::expval_dense(h, psi));
    for (std::size_t i = 0; i < dim; ++i) diagonal[i] = std::norm(psi[i]);
  }
  for (std::size_t i = 0; i < dim; ++i) {
    const double p = diagonal[i];
    std::uint64_t record = 0;
    for (int k = 0; k < kClbits; ++k)
      if (d.owner[static_cast<std::size_t>(k)] >= 0 &&
          (i >> d.owner[static_cast<std::size_t>(k)] & 1))
        record |= std::uint64_t{1} << k;
    e.records[record] += p;
    e.joint[{record, i & ((index_t{1} << n) - 1)}] += p;
  }
  return e;
}

EngineOptions options(Method method = Method::automatic, int threads = 1) {
  EngineOptions o;
  o.method = method;
  o.threads = threads;
  return o;
}

void expect_exact(const Circuit& c, const std::vector<PauliSum>& obs, const EngineOptions& o,
                  const Exact& e) {
  SimulateRequest req;
  req.observables = obs;
  const SimulateResult r = simulate_dynamic<double>(c, {}, req, o);
  for (std::size_t k = 0; k < obs.size(); ++k) EXPECT_NEAR(r.expvals[k], e.expvals[k], 1e-10);
  for (const auto& [record, p] : e.records) {
    const auto it = r.record_probabilities.find(record);
    EXPECT_NEAR(it == r.record_probabilities.end() ? 0.0 : it->second, p, 1e-10)
        << "record " << record;
  }
}

TEST(Dynamic, ExactWalkAgreesWithTheDeferredOracle) {
  std::mt19937_64 rng(90);
  for (int trial = 0; trial < 40; ++trial) {
    const int n = 1 + trial % 3;
    const Circuit c = random_dynamic(n, 12, false, rng);
    const std::vector<PauliSum> obs = {testing::random_observable(n, rng)};
    const Exact e = oracle(c, obs);
    SCOPED_TRACE(trial);
    expect_exact(c, obs, options(), e);
    expect_exact(c, obs, options(Method::density_matrix), e);  // the walk on rho
  }
}

TEST(Dynamic, NoisyExactWalksAgreeWithTheDeferredOracle) {
  std::mt19937_64 rng(91);
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 1 + trial % 2;
    const Circuit c = random_dynamic(n, 9, true, rng);
    const std::vector<PauliSum> obs = {testing::random_observable(n, rng)};
    const Exact e = oracle(c, obs);
    SCOPED_TRACE(trial);
    expect_exact(c, obs, options(), e);                     // density matrix (fits)
    expect_exact(c, obs, options(Method::statevector), e);  // Kraus branches on a state
  }
}

// The walk on the GPU (state vector and density matrix) against the
// deferred oracle, as on the CPU; skipped where there is no GPU.
TEST(Dynamic, CudaBackendAgreesWithTheDeferredOracle) {
  const cuda::DeviceStatus gpu = cuda::device_status();
  if (gpu.count == 0) GTEST_SKIP() << "no GPU here (" << gpu.error << "): CUDA walks skipped";
  cuda::select_device(0);
  std::mt19937_64 rng(92);
  for (int trial = 0; trial < 16; ++trial) {
    const int n = 1 + trial % 3;
    const Circuit c = random_dynamic(n, 10, trial % 2 == 1, rng);
    const std::vector<PauliSum> obs = {testing::random_observable(n, rng)};
    const Exact e = oracle(c, obs);
    SCOPED_TRACE(trial);
    for (Method m : {Method::automatic, Method::density_matrix, Method::statevector}) {
      EngineOptions o = options(m);
      o.backend = Backend::cuda;
      expect_exact(c, obs, o, e);
    }
  }
}

TEST(Dynamic, SamplesFollowTheJointDistribution) {
  std::mt19937_64 rng(92);
  constexpr std::int64_t kShots = 20000;
  for (int trial = 0; trial < 12; ++trial) {
    const int n = 1 + trial % 2;
    const Circuit c = random_dynamic(n, 9, trial % 2 == 1, rng);
    const Exact e = oracle(c, {});
    SimulateRequest req;
    req.shots = kShots;
    req.seed = 5 + static_cast<std::uint64_t>(trial);
    const SimulateResult r = simulate_dynamic<double>(c, {}, req, options());
    std::int64_t total = 0;
    for (const auto& [key, hits] : r.records) {
      total += hits;
      EXPECT_GT(e.joint.count(key) ? e.joint.at(key) : 0.0, 0.0) << "an impossible outcome";
    }
    EXPECT_EQ(total, kShots);
    for (const auto& [key, p] : e.joint) {
      const auto it = r.records.find(key);
      const double f = it == r.records.end() ? 0.0 : static_cast<double>(it->second) / kShots;
      EXPECT_NEAR(f, p, 5 * std::sqrt(p * (1 - p) / kShots) + 1e-9) << "trial " << trial;
    }
  }
}

TEST(Dynamic, SamplesAreTheSameOnAnyThreadCount) {
  std::mt19937_64 rng(93);
  const Circuit c = random_dynamic(3, 14, true, rng);
  SimulateRequest req;
  req.shots = 3000;
  req.seed = 11;
  const SimulateResult one = simulate_dynamic<double>(c, {}, req, options(Method::automatic, 1));
  const SimulateResult two = simulate_dynamic<double>(c, {}, req, options(Method::automatic, 2));
  EXPECT_EQ(one.records, two.records);
}

TEST(Dynamic, TrajectoryMeansAgreeWithinTheirError) {
  std::mt19937_64 rng(94);
  const Circuit c = random_dynamic(2, 12, true, rng);
  const std::vector<PauliSum> obs = {testing::random_observable(2, rng)};
  const Exact e = oracle(c, obs);
  EngineOptions o = options(Method::trajectories);
  o.trajectories = 20000;
  SimulateRequest req;
  req.observables = obs;
  const SimulateResult r = simulate_dynamic<double>(c, {}, req, o);
  double bound = 0;
  for (const PauliTerm& t : obs[0].terms) bound += std::abs(t.coeff);
  EXPECT_NEAR(r.expvals[0], e.expvals[0], 5 * bound / std::sqrt(20000.0));
}

// A noisy circuit without measurements walked for its leaves: with shots each
// leaf is a trajectory (a normalised state vector, its Kraus branches drawn),
// and the shots' mixture of their |psi><psi| is the density matrix within
// sampling error; without shots one leaf, the density matrix itself.
TEST(Dynamic, NoisyCircuitsGiveTrajectoriesAsLeaves) {
  std::mt19937_64 rng(95);
  const int n = 2;
  const Circuit c = testing::noisy_circuit(n, 10, 1, rng);
  ASSERT_FALSE(c.has_dynamic());
  const double theta[] = {0.4};
  const Matrix rho = testing::run_dense_density(c, theta);
  SimulateRequest req;
  req.leaves = true;
  req.shots = 4000;
  const SimulateResult r = simulate<double>(c, theta, req, {});
  const std::size_t d = std::size_t{1} << n;
  Matrix mean(d * d);
  std::int64_t shots = 0;
  for (const DynamicLeaf& leaf : r.leaves) {
    ASSERT_EQ(leaf.state.size(), d);
    double norm = 0;
    for (const cplx& a : leaf.state) norm += std::norm(a);
    EXPECT_NEAR(norm, 1, 1e-12);
    for (std::size_t i = 0; i < d; ++i)
      for (std::size_t j = 0; j < d; ++j)
        mean[i * d + j] += double(leaf.shots) * leaf.state[i] * std::conj(leaf.state[j]);
    shots += leaf.shots;
  }
  ASSERT_EQ(shots, 4000);
  for (std::size_t i = 0; i < d * d; ++i) EXPECT_LT(std::abs(mean[i] / 4000.0 - rho[i]), 0.05);
  req.shots = 0;
  const SimulateResult exact = simulate<double>(c, theta, req, {});
  ASSERT_EQ(exact.leaves.size(), 1u);
  for (std::size_t i = 0; i < d * d; ++i)
    EXPECT_LT(std::abs(exact.leaves[0].state[i] - rho[i]), 1e-12);
}

TEST(Dynamic, TeleportationMovesTheState) {
  // q0 in RY(0.7)|0>, teleported to q2 by measurement and feed-forward.
  Circuit c(3, 2);
  c.add(GateId::RY, {0}, std::vector<double>{0.7});
  c.add(GateId::H, {1});
  c.add(GateId::CNOT, {1, 2});
  c.add(GateId::CNOT, {0, 1});
  c.add(GateId::H, {0});
  for (int q = 0; q < 2; ++q) {
    Operation m;
    m.instruction = Instruction::measure;
    m.wires = {q};
    m.clbit = q;
    c.add(std::move(m));
  }
  Operation x, z;
  x.gate = GateId::X;
  x.wires = {2};
  x.condition = {{1}, 1, false};
  z.gate = GateId::Z;
  z.wires = {2};
  z.condition = {{0}, 1, false};
  c.add(std::move(x));
  c.add(std::move(z));
  PauliSum zz, xx;
  zz.add(1.0, 0, index_t{1} << 2);
  xx.add(1.0, index_t{1} << 2, 0);
  SimulateRequest req;
  req.observables = {zz, xx};
  const SimulateResult r = simulate_dynamic<double>(c, {}, req, options());
  EXPECT_NEAR(r.expvals[0], std::cos(0.7), 1e-12);
  EXPECT_NEAR(r.expvals[1], std::sin(0.7), 1e-12);
  EXPECT_EQ(r.record_probabilities.size(), 4u);
}

TEST(Dynamic, OpenQasm3ConditionsRunAsWritten) {
  // Four equally likely records; c == 3 flips q[2], the others rotate it by
  // 0.5, and c == 1 (c[0] set, c[1] not: the nested condition) by 0.5 more.
  const QasmProgram p = parse_qasm(R"(OPENQASM 3.0;
include "stdgates.inc";
qubit[3] q;
bit[2] c;
h q[0];
h q[1];
c[0] = measure q[0];
c[1] = measure q[1];
if (c == 3) { x q[2]; } else {
  ry(0.5) q[2];
  if ((c[0] | false) && !(c[1] != 0)) ry(0.5) q[2];
}
reset q[0];
)",
                                   "t.qasm");
  ASSERT_TRUE(p.circuit.has_dynamic());
  PauliSum z2, z0;
  z2.add(1.0, 0, 4);
  z0.add(1.0, 0, 1);
  SimulateRequest req;
  req.observables = {z2, z0};
  const SimulateResult r = simulate_dynamic<double>(p.circuit, p.angles, req, options());
  EXPECT_NEAR(r.expvals[0], (-1 + 2 * std::cos(0.5) + std::cos(1.0)) / 4, 1e-12);
  EXPECT_NEAR(r.expvals[1], 1.0, 1e-12);  // reset
  for (std::uint64_t record = 0; record < 4; ++record)
    EXPECT_NEAR(r.record_probabilities.at(record), 0.25, 1e-12);
}

TEST(Dynamic, RefusesWhatItCannotDo) {
  Circuit c(12, 12);
  for (int q = 0; q < 12; ++q) {
    c.add(GateId::H, {q});
    Operation m;
    m.instruction = Instruction::measure;
    m.wires = {q};
    m.clbit = q;
    c.add(std::move(m));
  }
  EngineOptions o = options();
  o.max_branches = 1000;
  SimulateRequest req;
  try {
    simulate_dynamic<double>(c, {}, req, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than 1000 branches"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("shots"), std::string::npos);
  }
  req.shots = 100;  // one-shot sampling walks at most one branch per shot
  EXPECT_EQ(simulate_dynamic<double>(c, {}, req, o).records.size() > 1, true);
  req.shots = 0;
  req.state = true;
  EXPECT_THROW(simulate_dynamic<double>(c, {}, req, options()), Error);
  PauliSum z;
  z.add(1.0, 0, 1);
  EXPECT_THROW(adjoint_vjp<double>(c, {}, {z}, std::vector<double>{1.0}, options()), Error);
  Operation bad;
  bad.instruction = Instruction::measure;
  bad.wires = {0};
  bad.clbit = 12;
  EXPECT_THROW(c.add(bad), Error);
  Operation cond;
  cond.gate = GateId::X;
  cond.wires = {0};
  cond.condition = {{0}, 2, false};  // 2 does not fit in one bit
  EXPECT_THROW(c.add(cond), Error);
}

// A chain of "measure, then H if the bit is 0" steps nests a branch point
// per step. The walk once recursed per branch point and overflowed the stack
// (about 10,000 steps on an 8 MiB stack); walked on a thread with a 128 KiB
// stack, 3,000 steps give the exact result, and past max_branches one Error.
// Outcome 1 at step k stays |1>, weight 2^-k: <Z> = -(1 - 2^-N), <X> = 2^-N.
TEST(Dynamic, LongMeasureAndBranchChainsAreWalkedWithoutRecursion) {
  constexpr int kSteps = 3000;
  Circuit c(1, 1);
  c.add(GateId::H, {0});
  for (int k = 0; k < kSteps; ++k) {
    Operation m;
    m.instruction = Instruction::measure;
    m.wires = {0};
    m.clbit = 0;
    c.add(std::move(m));
    Operation h;
    h.gate = GateId::H;
    h.wires = {0};
    h.condition.bits = {0};
    h.condition.value = 0;
    c.add(std::move(h));
  }
  struct Run {
    const Circuit* c;
    SimulateResult r;
    std::string error;
  } run{&c, {}, ""};
  const auto walk = [](void* arg) -> void* {
    Run& run = *static_cast<Run*>(arg);
    SimulateRequest req;
    req.observables = {parse_pauli_sum("Z0", "test"), parse_pauli_sum("X0", "test")};
    try {
      run.r = simulate_dynamic<double>(*run.c, {}, req, options());
      EngineOptions few = options();
      few.max_branches = 1000;
      simulate_dynamic<double>(*run.c, {}, req, few);
    } catch (const Error& e) {
      run.error = e.what();
    }
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, std::size_t{128} << 10);
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, &attr, walk, &run), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  ASSERT_EQ(run.r.expvals.size(), 2u);
  EXPECT_NEAR(run.r.expvals[0], -1.0, 1e-9);
  EXPECT_NEAR(run.r.expvals[1], 0.0, 1e-9);
  EXPECT_NEAR(run.r.record_probabilities.at(1), 1.0, 1e-9);  // record 0's 2^-N is 0 in double
  EXPECT_NE(run.error.find("more than 1000 branches"), std::string::npos) << run.error;
}

}  // namespace
}  // namespace qmlsim
