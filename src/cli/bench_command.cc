// qmlsim bench: time per gate for the kernel shapes that matter, each as a
// ratio to the memory-bandwidth bound measured in the same run (one in-place
// read-write pass over an array of the state's size, same thread count).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <numbers>
#include <random>

#include "backends/cpu/statevector.h"
#include "backends/cuda/statevector.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "core/aligned_buffer.h"
#include "core/cpu_features.h"
#include "core/json.h"
#include "core/memory.h"
#include "core/parallel.h"
#include "grad/adjoint.h"
#include "grad/simulate.h"
#include "passes/fusion.h"

namespace qmlsim::cli {
namespace {

const std::vector<OptionSpec> kSpecs = {
    {"--qubits", "LIST", "state sizes, e.g. 16,20,24 or 16:28:4 (default 16:28:4)"},
    {"--precision", "LIST", "c64, c128 or c64,c128 (default both)"},
    {"--threads", "LIST", "thread counts (default 1,2)"},
    {"--repetitions", "N", "timed repetitions per case; the median is reported (default 5)"},
    {"--circuit-qubits", "LIST", "sizes for the random-circuit fusion benchmark (default 20,24)"},
    {"--circuit-gates", "N", "gates in the random circuit (default 200)"},
    {"--gradient", "",
     "instead: adjoint-gradient time / forward time and peak memory, for five circuit "
     "families (Rot + CNOT ring, u3 + CNOT rings of strides 1 and 2, brickwork, QAOA-like, "
     "QCNN-like; default qubits 20,24)"},
    {"--layers", "N",
     "with --gradient: layers of the layered families (default: Rot enough for >= 100 "
     "parameters, brickwork 4, QAOA 3)"},
    {"--backend", "cpu|cuda",
     "cuda: the GPU kernels (against the GPU's own bandwidth pass) and, with --gradient, "
     "the GPU adjoint (default cpu)"},
    {"--json", "FILE", "also write all results to FILE as JSON"},
    {"--help", "", "show this help"},
};

constexpr const char* kUsage =
    "qmlsim bench [options]\n\n"
    "Kernel timings as ratios to a read-write pass over a state of the same size (the\n"
    "memory-bandwidth bound), measured alternately in one run; circuits with and without\n"
    "fusion and cache blocking; with --gradient, the adjoint gradient against the forward\n"
    "pass. Environment: QMLSIM_KERNELS=avx2|avx512|portable-128|portable-256|portable-512\n"
    "picks the kernel set; QMLSIM_CHUNK_KIB, QMLSIM_HUGEPAGES, QMLSIM_BUFFER_CACHE and\n"
    "QMLSIM_STREAMING_STORES switch the engine's memory settings for A/B runs. Gates on high\n"
    "qubits of large states pick a kernel form by timing their first calls (shown in brackets);\n"
    "QMLSIM_KERNEL_FORM=lockstep|tiled2|tiled4|tiled8|sequential forces one.";

using Clock = std::chrono::steady_clock;

struct Timing {
  double seconds;  // median time of one call
  double ratio;    // median of (time / time of the reference measured just before)
};

template <class Fn>
double time_once(Fn&& fn) {
  const auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Times fn and reference alternately, so that both see the same machine load
// (these machines are shared): ratio = median of per-repetition ratios.
template <class Fn, class Ref>
Timing measure(int reps, Fn&& fn, Ref&& reference, double reference_scale = 1.0) {
  fn();
  reference();
  std::vector<double> t, r;
  for (int i = 0; i < reps; ++i) {
    const double tr = time_once(reference) * reference_scale;
    const double tf = time_once(fn);
    t.push_back(tf);
    r.push_back(tf / tr);
  }
  return {median(t), median(r)};
}

// One in-place read-modify-write pass over the state's memory.
template <class R>
void bandwidth_pass(R* a, std::size_t len, int threads) {
  const std::int64_t blocks = static_cast<std::int64_t>((len + 4095) / 4096);
  parallel_for(blocks, threads, static_cast<std::int64_t>(len / 2), [&](std::int64_t b) {
    const std::size_t lo = static_cast<std::size_t>(b) * 4096;
    const std::size_t hi = std::min(len, lo + 4096);
    for (std::size_t i = lo; i < hi; ++i) a[i] = a[i] * R(0.999999);
  });
}

BoundGate dense_gate(std::vector<int> targets, std::mt19937_64& rng) {
  // A random unitary (QR of a Gaussian matrix by Gram-Schmidt).
  const std::size_t dim = std::size_t{1} << targets.size();
  std::normal_distribution<double> g;
  Matrix m(dim * dim);
  for (std::size_t c = 0; c < dim; ++c) {
    for (std::size_t r = 0; r < dim; ++r) m[r * dim + c] = {g(rng), g(rng)};
    for (std::size_t p = 0; p < c; ++p) {
      cplx dot = 0;
      for (std::size_t r = 0; r < dim; ++r) dot += std::conj(m[r * dim + p]) * m[r * dim + c];
      for (std::size_t r = 0; r < dim; ++r) m[r * dim + c] -= dot * m[r * dim + p];
    }
    double nrm = 0;
    for (std::size_t r = 0; r < dim; ++r) nrm += std::norm(m[r * dim + c]);
    for (std::size_t r = 0; r < dim; ++r) m[r * dim + c] /= std::sqrt(nrm);
  }
  std::sort(targets.begin(), targets.end());
  BoundGate b;
  b.targets = targets;
  b.matrix = std::move(m);
  return b;
}

BoundGate diag_gate(std::vector<int> targets, double phase) {
  std::sort(targets.begin(), targets.end());
  BoundGate b;
  b.targets = targets;
  b.diagonal = true;
  for (std::size_t i = 0; i < (std::size_t{1} << targets.size()); ++i)
    b.matrix.push_back(std::polar(1.0, phase * static_cast<double>(i + 1)));
  return b;
}

// A random circuit of 1- and 2-qubit gates on random qubits (half each).
std::vector<BoundGate> random_circuit(int n, int gates, std::mt19937_64& rng) {
  static const GateId one[] = {GateId::H, GateId::RX, GateId::RY, GateId::RZ,
                               GateId::T, GateId::SX, GateId::U3, GateId::S};
  static const GateId two[] = {GateId::CNOT,    GateId::CZ,  GateId::ISWAP,
                               GateId::IsingXX, GateId::CRY, GateId::IsingZZ};
  Circuit c(n);
  std::uniform_real_distribution<double> angle(-std::numbers::pi, std::numbers::pi);
  for (int i = 0; i < gates; ++i) {
    const bool is2 = rng() % 2;
    const GateId id = is2 ? two[rng() % 6] : one[rng() % 8];
    const int a = static_cast<int>(rng() % n);
    int b = static_cast<int>(rng() % (n - 1));
    if (b >= a) ++b;
    std::vector<double> p;
    for (int k = 0; k < gate_info(id).num_params; ++k) p.push_back(angle(rng));
    c.add(id, is2 ? std::vector<int>{a, b} : std::vector<int>{a}, p);
  }
  return bind_params(c, {});
}

struct Row {
  int n;
  std::string precision;
  int threads;
  std::string name;
  double seconds;
  double ratio;  // seconds / bound
};

// The kernel shapes timed on every backend, for n qubits.
std::vector<std::pair<std::string, BoundGate>> kernel_cases(int n, std::mt19937_64& rng) {
  const int h = n - 1, m = n / 2;
  BoundGate cnot;
  cnot.targets = {m};
  cnot.controls = {h};
  cnot.matrix = {0, 1, 1, 0};
  const std::vector<std::pair<std::string, BoundGate>> cases = {
      {"1q dense q0", dense_gate({0}, rng)},
      {"1q dense q" + std::to_string(h), dense_gate({h}, rng)},
      {"2q dense q0,q1", dense_gate({0, 1}, rng)},
      {"2q dense q" + std::to_string(m) + ",q" + std::to_string(h), dense_gate({m, h}, rng)},
      {"1q diagonal q0", diag_gate({0}, 0.3)},
      {"1q diagonal q" + std::to_string(h), diag_gate({h}, 0.3)},
      {"2q diagonal q0,q" + std::to_string(h), diag_gate({0, h}, 0.2)},
      {"CNOT q" + std::to_string(h) + "->q" + std::to_string(m), cnot},
      {"3q dense q0-2", dense_gate({0, 1, 2}, rng)},
      {"3q dense high", dense_gate({h - 2, h - 1, h}, rng)},
      {"4q dense q0-3", dense_gate({0, 1, 2, 3}, rng)},
      {"4q dense high", dense_gate({h - 3, h - 2, h - 1, h}, rng)},
      {"5q dense high", dense_gate({h - 4, h - 3, h - 2, h - 1, h}, rng)},
  };
  return cases;
}

// The state spread over every amplitude, so that no kernel works on zeros.
template <class SV>
void spread(SV& sv, int n, std::mt19937_64& rng) {
  std::vector<BoundGate> hs;
  for (int q = 0; q < n; ++q) hs.push_back(dense_gate({q}, rng));
  sv.apply(hs);
}

// Times `pass` alone; prints and records it as the bound.
template <class Pass>
double measure_bound(int n, const std::string& prec, int threads, const char* what, int reps,
                     Pass&& pass, std::vector<Row>& rows) {
  std::vector<double> tb;
  for (int i = 0; i < reps; ++i) tb.push_back(time_once(pass));
  const double bound = median(tb);
  const double bytes = 2.0 * static_cast<double>(cpu::state_bytes(
                                 n, prec == "c64" ? Precision::c64 : Precision::c128));
  std::printf("\n== n=%d %s threads=%d kernels=%s: bandwidth bound %.3f ms per pass (%.1f GB/s)\n",
              n, prec.c_str(), threads, what, bound * 1e3, bytes / bound / 1e9);
  rows.push_back({n, prec, threads, "bandwidth pass", bound, 1.0});
  return bound;
}

template <class R>
void bench_size_cuda(int n, int reps, std::vector<Row>& rows) {
  const std::string prec = sizeof(R) == 4 ? "c64" : "c128";
  cuda::StateVector<R> sv(n);
  std::mt19937_64 rng(42);
  spread(sv, n, rng);
  auto pass = [&] { sv.bandwidth_pass(); };
  measure_bound(n, prec, 0, "cuda", reps, pass, rows);
  std::printf("  %-26s %12s %10s\n", "kernel", "ms/gate", "x bound");
  // A list of copies per apply (returns when the device is done), as a
  // circuit's pass runs: one upload of the gate list and one synchronisation
  // for all of them, not a per-gate set-up that no circuit pays.
  constexpr int kCopies = 10;
  for (const auto& [name, g] : kernel_cases(n, rng)) {
    const std::vector<BoundGate> list(kCopies, g);
    Timing t = measure(
        reps, [&] { sv.apply(list); }, pass, kCopies);
    t.seconds /= kCopies;
    std::printf("  %-26s %12.3f %10.2f\n", name.c_str(), t.seconds * 1e3, t.ratio);
    rows.push_back({n, prec, 0, "cuda " + name, t.seconds, t.ratio});
  }
}

template <class R>
void bench_size(int n, int threads, int reps, std::vector<Row>& rows) {
  const std::string prec = sizeof(R) == 4 ? "c64" : "c128";
  cpu::StateVector<R> sv(n, threads);
  std::mt19937_64 rng(42);
  spread(sv, n, rng);
  auto pass = [&] { bandwidth_pass(sv.data(), 2 * sv.size(), threads); };
  measure_bound(n, prec, threads, sv.kernels().name, reps, pass, rows);
  std::printf("  %-34s %12s %10s\n", "kernel [form]", "ms/gate", "x bound");
  for (const auto& [name, gate] : kernel_cases(n, rng)) {
    const BoundGate& g = gate;  // a variable, not a binding, for the lambdas (C++20)
    if (g.num_targets() > 4 && n > 24) continue;  // the scalar path: minutes at 28 qubits
    // A class with kernel forms (kernels.h) is calibrated on its first calls:
    // they run before the timing, and the row names the form chosen.
    const cpu::KernelGate kg = cpu::to_kernel_gate(g);
    const cpu::PreparedGates<R> prepared(sv.kernels(), &kg, 1, n);
    for (int i = 0; i < cpu::kMaxForms * cpu::kFormTrials && prepared.form() &&
                    std::strcmp(prepared.form(), "calibrating") == 0;
         ++i)
      sv.apply(g);
    const std::string row = prepared.form() ? name + " [" + prepared.form() + "]" : name;
    const Timing t = measure(
        reps, [&] { sv.apply(g); }, pass);
    std::printf("  %-34s %12.3f %10.2f\n", row.c_str(), t.seconds * 1e3, t.ratio);
    rows.push_back({n, prec, threads, row, t.seconds, t.ratio});
  }
}

// Layers of random single-qubit rotations on every qubit, then 2-qubit gates on
// neighbouring pairs (0,1),(2,3),... and (1,2),(3,4),... alternately: the
// brickwork shape of hardware-efficient ansaetze and of qsim's benchmark circuits.
std::vector<BoundGate> brickwork_circuit(int n, int gates, std::mt19937_64& rng) {
  static const GateId one[] = {GateId::RX, GateId::RY, GateId::RZ, GateId::H, GateId::U3};
  static const GateId two[] = {GateId::CNOT, GateId::CZ, GateId::ISWAP, GateId::IsingXX};
  Circuit c(n);
  std::uniform_real_distribution<double> angle(-std::numbers::pi, std::numbers::pi);
  auto params = [&](GateId id) {
    std::vector<double> p;
    for (int k = 0; k < gate_info(id).num_params; ++k) p.push_back(angle(rng));
    return p;
  };
  for (int layer = 0; static_cast<int>(c.ops().size()) < gates; ++layer) {
    for (int q = 0; q < n && static_cast<int>(c.ops().size()) < gates; ++q) {
      const GateId id = one[rng() % 5];
      c.add(id, {q}, params(id));
    }
    for (int q = layer % 2; q + 1 < n && static_cast<int>(c.ops().size()) < gates; q += 2) {
      const GateId id = two[rng() % 4];
      c.add(id, {q, q + 1}, params(id));
    }
  }
  return bind_params(c, {});
}

// Parameterised circuit families for the gradient benchmark: every angle is its
// own slot unless the family shares them (QAOA). `slots` receives the count.
Circuit gradient_family(const std::string& family, int n, int layers, int* slots) {
  Circuit c(n);
  int slot = 0;
  auto p = [&] { return ParamExpr::ref(slot++); };
  if (family == "Rot + CNOT ring") {  // the original benchmark
    if (layers <= 0) layers = (100 + 3 * n - 1) / (3 * n);
    for (int l = 0; l < layers; ++l) {
      for (int q = 0; q < n; ++q) c.add(GateId::Rot, {q}, std::vector<ParamExpr>{p(), p(), p()});
      for (int q = 0; q < n; ++q) c.add(GateId::CNOT, {q, (q + 1) % n});
    }
  } else if (family == "u3 + CNOT rings 1, 2") {  // issue 18's example: two layers, strides 1 and 2
    for (int stride : {1, 2}) {
      for (int q = 0; q < n; ++q) c.add(GateId::U3, {q}, std::vector<ParamExpr>{p(), p(), p()});
      for (int q = 0; q < n; ++q) c.add(GateId::CNOT, {q, (q + stride) % n});
    }
  } else if (family == "brickwork RY RZ + CZ") {
    for (int l = 0; l < (layers > 0 ? layers : 4); ++l) {
      for (int q = 0; q < n; ++q) {
        c.add(GateId::RY, {q}, std::vector<ParamExpr>{p()});
        c.add(GateId::RZ, {q}, std::vector<ParamExpr>{p()});
      }
      for (int q = l % 2; q + 1 < n; q += 2) c.add(GateId::CZ, {q, q + 1});
    }
  } else if (family == "QAOA-like") {  // shared gamma and beta per layer, ring + chords
    for (int q = 0; q < n; ++q) c.add(GateId::H, {q});
    for (int l = 0; l < (layers > 0 ? layers : 3); ++l) {
      const int gamma = slot++, beta = slot++;
      for (int q = 0; q < n; ++q) {
        c.add(GateId::IsingZZ, {q, (q + 1) % n}, std::vector<ParamExpr>{ParamExpr::ref(gamma)});
        if (q % 3 == 0) {
          c.add(GateId::IsingZZ, {q, (q + n / 2) % n},
                std::vector<ParamExpr>{ParamExpr::ref(gamma)});
        }
      }
      for (int q = 0; q < n; ++q)
        c.add(GateId::RX, {q}, std::vector<ParamExpr>{ParamExpr::ref(beta)});
    }
  } else {  // "QCNN-like": convolution blocks on neighbouring pairs, then pooling CNOTs
    for (int q = 0; q < n; ++q) c.add(GateId::H, {q});
    for (int q = 0; q < n; ++q) c.add(GateId::CZ, {q, (q + 1) % n});
    for (int offset : {0, 1}) {
      for (int a = offset; a + 1 < n; a += 2) {
        for (int t : {a, a + 1}) {
          c.add(GateId::RX, {t}, std::vector<ParamExpr>{p()});
          c.add(GateId::RY, {t}, std::vector<ParamExpr>{p()});
          c.add(GateId::RZ, {t}, std::vector<ParamExpr>{p()});
        }
        c.add(GateId::IsingZZ, {a, a + 1}, std::vector<ParamExpr>{p()});
        c.add(GateId::IsingYY, {a, a + 1}, std::vector<ParamExpr>{p()});
        c.add(GateId::IsingXX, {a, a + 1}, std::vector<ParamExpr>{p()});
      }
    }
    for (int a = 0; a + n / 2 < n; ++a) c.add(GateId::CNOT, {a, a + n / 2});
  }
  *slots = slot;
  return c;
}

const char* const kGradientFamilies[] = {"Rot + CNOT ring", "u3 + CNOT rings 1, 2",
                                         "brickwork RY RZ + CZ", "QAOA-like", "QCNN-like"};

template <class R>
void bench_circuit(int n, int threads, int gates, int reps, std::vector<Row>& rows) {
  const std::string prec = sizeof(R) == 4 ? "c64" : "c128";
  cpu::StateVector<R> sv(n, threads);
  std::mt19937_64 rng(1234);
  auto pass = [&] { bandwidth_pass(sv.data(), 2 * sv.size(), threads); };
  std::vector<std::string> families = {"random pairs", "brickwork"};
  families.insert(families.end(), std::begin(kGradientFamilies), std::end(kGradientFamilies));
  for (const std::string& family : families) {
    std::vector<BoundGate> circuit;
    if (family == "brickwork") {
      circuit = brickwork_circuit(n, gates, rng);
    } else if (family == "random pairs") {
      circuit = random_circuit(n, gates, rng);
    } else {  // the gradient benchmark's families, at random angles
      int slots = 0;
      const Circuit c = gradient_family(family, n, 0, &slots);
      std::uniform_real_distribution<double> u(-3, 3);
      std::vector<double> theta(static_cast<std::size_t>(slots));
      for (double& t : theta) t = u(rng);
      circuit = bind_params(c, theta);
    }
    const int count = static_cast<int>(circuit.size());
    std::printf(
        "\n== %s circuit: n=%d %s threads=%d, %d gates; speedup = time of %d bandwidth "
        "passes / time of the circuit\n",
        family.c_str(), n, prec.c_str(), threads, count, count);
    std::printf("  %-30s %8s %12s %10s\n", "setting", "blocks", "ms/circuit", "speedup");
    for (int k : {0, 2, 3, 4}) {
      for (bool blocking : {false, true}) {
        const std::vector<BoundGate> fused = k == 0 ? circuit : fuse(circuit, {k, 10});
        sv.set_chunk_qubits(blocking ? cpu::StateVector<R>::default_chunk_qubits() : 0);
        const Timing t = measure(
            reps, [&] { sv.apply(fused); }, pass, count);
        const std::string name =
            (k == 0 ? std::string("no fusion") : "fusion " + std::to_string(k)) +
            (blocking ? " + cache blocking" : "");
        std::printf("  %-30s %8zu %12.1f %10.2f\n", name.c_str(), fused.size(), t.seconds * 1e3,
                    1.0 / t.ratio);
        rows.push_back({n, prec, threads, family + " " + std::to_string(count) + " gates, " + name,
                        t.seconds, t.ratio});
      }
    }
  }
}

// Peak resident memory of this process so far, in bytes.
std::uint64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<std::uint64_t>(u.ru_maxrss) * 1024;
}

// The gradient benchmark: forward (simulate + one expectation value) against
// forward + adjoint backward, alternately, in one run, for each circuit family.
// Sizes run in increasing order, so the peak memory after each size is that size's peak.
template <class R>
void bench_gradient(int n, int threads, int layers, int reps, Backend backend,
                    std::vector<Row>& rows) {
  const std::string prec = sizeof(R) == 4 ? "c64" : "c128";
  for (const std::string family : kGradientFamilies) {
    int slots = 0;
    const Circuit c = gradient_family(family, n, layers, &slots);
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> u(-3, 3);
    std::vector<double> theta(static_cast<std::size_t>(slots));
    for (double& t : theta) t = u(rng);
    const std::vector<PauliSum> obs = {parse_pauli_sum("Z0 Z1 + 0.5*X2", "bench")};
    const double w[] = {1.0};
    const std::uint64_t before = peak_rss_bytes();
    reset_buffer_peak();
    EngineOptions engine;
    engine.threads = threads;
    engine.backend = backend;
    SimulateRequest req;
    req.observables = obs;
    auto forward = [&] { return simulate<R>(c, theta, req, engine).expvals[0]; };
    auto gradient = [&] { adjoint_vjp<R>(c, theta, obs, w, engine); };
    const Timing t = measure(reps, gradient, forward);
    const double state = static_cast<double>(cpu::state_bytes(n, kPrecisionOf<R>));
    const double peak = static_cast<double>(peak_rss_bytes());
    const double buffers = static_cast<double>(buffer_bytes_peak());
    std::printf(
        "  %-22s n=%2d %-4s %s threads=%d gates=%4zu params=%4d: gradient %8.1f ms = %5.2f x "
        "forward; peak host buffers %.2f states (process peak RSS %.2f, before: %.2f)\n",
        family.c_str(), n, prec.c_str(), backend_name(backend), threads, c.ops().size(), slots,
        t.seconds * 1e3, t.ratio, buffers / state, peak / state,
        static_cast<double>(before) / state);
    std::fflush(stdout);
    rows.push_back({n, prec, threads,
                    std::string(backend == Backend::cuda ? "cuda " : "") +
                        "adjoint gradient / forward, " + family + ", " + std::to_string(slots) +
                        " params",
                    t.seconds, t.ratio});
  }
}

}  // namespace

int bench_command(const std::vector<std::string>& argv) {
  const Args args(argv, kSpecs);
  if (args.has("--help")) {
    std::cout << format_help(kUsage, kSpecs, "docs/performance.md");
    return 0;
  }
  if (!args.positionals().empty()) throw Error(args.positionals()[0] + ": unexpected argument");
  const std::vector<int> qubits = args.get_int_list("--qubits", {16, 20, 24, 28}, 4, kMaxQubits);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows line by line, also in a file
  const std::vector<int> threads = args.get_int_list("--threads", {1, 2}, 1, 4096);
  const std::vector<int> circuit_qubits =
      args.get_int_list("--circuit-qubits", {20, 24}, 4, kMaxQubits);
  const int reps = static_cast<int>(args.get_int("--repetitions", 5, 1, 1000));
  const int gates = static_cast<int>(args.get_int("--circuit-gates", 200, 1, 100000));
  std::vector<std::string> precs;
  const std::string p = args.get("--precision").value_or("c64,c128");
  for (const std::string& x : {std::string("c64"), std::string("c128")})
    if (p.find(x) != std::string::npos) precs.push_back(x);
  if (precs.empty() || (p != "c64" && p != "c128" && p != "c64,c128" && p != "c128,c64")) {
    throw Error("--precision: expected c64, c128 or c64,c128, got '" + p + "'");
  }
  std::ofstream json_file;
  if (auto path = args.get("--json")) {
    json_file.open(*path);
    if (!json_file) throw Error("--json: cannot write " + *path);
  }

  const Backend backend = select_backend(args);
  if (backend == Backend::cuda) {
    const cuda::DeviceStatus gpu = cuda::device_status();
    std::printf("qmlsim bench: backend cuda, %s (%.1f GiB), %d repetitions (median)\n",
                gpu.name.c_str(), gpu.memory_gib, reps);
  } else {
    std::printf(
        "qmlsim bench: %s, kernels %s, L2 %zu KiB per core, %d repetitions (median), machine "
        "memory %s\n",
        cpu_model_name().c_str(), cpu::best_kernels().name, l2_cache_bytes() >> 10, reps,
        format_gib(physical_memory_bytes()).c_str());
  }
  std::vector<Row> rows;
  const bool gradient_mode = args.has("--gradient");
  const int layers = static_cast<int>(args.get_int("--layers", 0, 1, 1000));
  if (gradient_mode) {
    std::vector<int> sizes = args.get_int_list("--qubits", {20, 24}, 4, kMaxQubits);
    std::sort(sizes.begin(), sizes.end());
    std::printf("adjoint gradient vs forward, per circuit family (forward = simulate + <H>)\n");
    for (int n : sizes)
      for (const std::string& prec : precs)
        for (int t : threads) {
          if (prec == "c64")
            bench_gradient<float>(n, t, layers, reps, backend, rows);
          else
            bench_gradient<double>(n, t, layers, reps, backend, rows);
          if (backend == Backend::cuda) break;  // threads do not apply
        }
  }
  if (backend == Backend::cuda && !gradient_mode) {
    const double gpu_bytes = cuda::device_status().memory_gib * (1 << 30);
    for (const std::string& prec : precs)
      for (int n : qubits) {
        const auto bytes = static_cast<double>(
            cpu::state_bytes(n, prec == "c64" ? Precision::c64 : Precision::c128));
        if (bytes > gpu_bytes * 0.8) {
          std::printf("\n== n=%d %s: skipped (state needs %s)\n", n, prec.c_str(),
                      format_gib(static_cast<std::uint64_t>(bytes)).c_str());
          continue;
        }
        if (prec == "c64")
          bench_size_cuda<float>(n, reps, rows);
        else
          bench_size_cuda<double>(n, reps, rows);
      }
  }
  for (const std::string& prec : precs) {
    if (gradient_mode || backend == Backend::cuda) break;
    for (int n : qubits) {
      const std::uint64_t bytes =
          cpu::state_bytes(n, prec == "c64" ? Precision::c64 : Precision::c128);
      if (bytes > physical_memory_bytes() / 10 * 6) {
        std::printf("\n== n=%d %s: skipped (state needs %s)\n", n, prec.c_str(),
                    format_gib(bytes).c_str());
        continue;
      }
      for (int t : threads) {
        if (prec == "c64")
          bench_size<float>(n, t, reps, rows);
        else
          bench_size<double>(n, t, reps, rows);
      }
    }
    for (int n : circuit_qubits) {
      for (int t : threads) {
        if (prec == "c64")
          bench_circuit<float>(n, t, gates, reps, rows);
        else
          bench_circuit<double>(n, t, gates, reps, rows);
      }
    }
  }
  if (json_file.is_open()) {
    JsonWriter w(json_file);
    w.begin_object().key("backend").value(backend_name(backend));
    w.key("kernels").value(backend == Backend::cuda ? "cuda" : cpu::best_kernels().name);
    w.key("cpu").value(cpu_model_name());
    w.key("l2_cache_bytes").value(static_cast<long long>(l2_cache_bytes()));
    w.key("results").begin_array();
    for (const Row& r : rows) {
      w.begin_object().key("qubits").value(r.n).key("precision").value(r.precision);
      w.key("threads").value(r.threads).key("case").value(r.name).key("seconds").value(r.seconds);
      w.key("ratio").value(r.ratio).end_object();
    }
    w.end_array().end_object();
    json_file << "\n";
  }
  return 0;
}

}  // namespace qmlsim::cli
