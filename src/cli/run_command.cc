// qmlsim run CIRCUIT.qasm: expectation values and samples of an OpenQASM circuit.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <sstream>
#include <type_traits>

#include "backends/cpu/statevector.h"
#include "circuit/qasm.h"
#include "circuit/readout.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "comm/comm.h"
#include "core/json.h"
#include "core/memory.h"
#include "core/parallel.h"
#include "distributed/simulate.h"
#include "distributed/state.h"
#include "grad/adjoint.h"
#include "grad/density_matrix.h"
#include "grad/dynamic.h"
#include "grad/simulate.h"
#include "io/checkpoint.h"
#include "io/state_file.h"
#include "passes/fusion.h"

namespace qmlsim::cli {
namespace {

const std::vector<OptionSpec> kSpecs = {
    {"--observable", "PAULI_SUM", "observable, e.g. \"0.5*Z0*Z1 - X2 + 0.25\" or \"Z0 Z1\"", true},
    {"--precision", "c64|c128", "amplitude precision (default c128)"},
    {"--threads", "N", "threads (default: all cores, or OMP_NUM_THREADS)"},
    {"--fusion", "K", "fuse gates into blocks of up to K qubits; 0 = off (default 3)"},
    {"--backend", "cpu|cuda", "where the state vector lives (default cpu; cuda: an NVIDIA GPU)"},
    {"--method", "auto|statevector|density_matrix|trajectories",
     "how noise channels (Braket's '#pragma braket noise' lines) run: exactly on a density "
     "matrix, or as the mean of --trajectories state-vector trajectories; auto (default) picks "
     "the density matrix while it fits in memory, trajectories beyond"},
    {"--trajectories", "R", "trajectories of a noisy circuit (default 1000)"},
    {"--max-branches", "N",
     "a dynamic circuit (mid-circuit measurement, reset, if): the most outcome branches its "
     "exact expectation values may walk (default 65536); shots are sampled without a limit"},
    {"--shots", "N", "draw N samples of all qubits"},
    {"--readout-error", "P01,P10|Q:P01,P10",
     "read every qubit's (or qubit Q's) measured bit through P(1|0) = P01 and P(0|1) = P10: "
     "expectation values (and gradients) as read, and samples (repeatable; a qubit's own "
     "flag wins)",
     true},
    {"--seed", "S", "seed for sampling and trajectories (default 1)"},
    {"--input", "NAME=V[,V...]", "value of an OpenQASM 3 input (an array: its elements)", true},
    {"--gradient", "",
     "also d<obs>/d(angle) for every gate angle (and d/d(input) for every "
     "OpenQASM 3 input), by the adjoint method"},
    {"--distributed", "",
     "one state vector over all processes of an MPI launch (mpirun -np 2^g): each holds 2^(n-g) "
     "amplitudes; with --method trajectories, the trajectories shared out over any number of "
     "processes (the same results as one)"},
    {"--exchange-mib", "N", "with --distributed: exchange buffer per process (default 32)"},
    {"--state-out", "FILE.h5",
     "write the final state to an HDF5 file (dataset state: 2^n rows of re, im; a noisy "
     "circuit's density matrix: dataset density_matrix, 4^n rows, row-major); with "
     "--distributed, slice by slice in process order"},
    {"--plan-processes", "P",
     "print the distributed layout for P processes (memory per process, exchanges) without "
     "running"},
    {"--max-gates", "N", "refuse circuits that expand to more gates (default 5000000)"},
    {"--max-file-mib", "N", "refuse circuit files larger than N MiB (default 256)"},
    {"--json", "", "print exactly one JSON object on stdout"},
    {"--help", "", "show this help"},
};

constexpr const char* kUsage =
    "qmlsim run CIRCUIT.qasm --observable \"PAULI SUM\" [--observable ...] "
    "[--precision c64|c128] [--threads N] [--fusion K] [--backend cpu|cuda] [--method M] "
    "[--trajectories R] [--max-branches N] "
    "[--shots N --seed S] [--readout-error P01,P10 ...] [--input NAME=V[,V...] ...] [--gradient] "
    "[--distributed [--exchange-mib "
    "N]] "
    "[--plan-processes P] [--state-out FILE.h5] [--json] "
    "[--max-gates N] [--max-file-mib N]\n\n"
    "With --gradient, every angle of every parametric gate (after expanding user gates)\n"
    "is one parameter, in program order; an OpenQASM 3 circuit's inputs get their own\n"
    "derivatives (the chain rule through each angle's expression of the inputs).\n"
    "Qubit q of the circuit is bit q of an amplitude index (qubit 0 least significant);\n"
    "sampled bit strings are written most significant qubit first, as Qiskit does.\n"
    "A dynamic circuit (a measurement followed by operations, reset, if) reports its\n"
    "classical registers instead, as Qiskit prints them: the last register first, each\n"
    "most significant bit first, separated by spaces.";

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Outcome {
  std::vector<double> expvals;
  std::vector<double> expval_errors;          // trajectories: standard errors
  std::vector<std::vector<double>> gradient;  // [observable][angle], with --gradient
  std::map<index_t, std::int64_t> counts;
  // Dynamic circuits: counts of the classical record per shot, or (without
  // shots) the exact probability of each record.
  std::map<std::uint64_t, std::int64_t> record_counts;
  std::map<std::uint64_t, double> record_probabilities;
  std::size_t gates_after_fusion = 0;
  // --distributed: the layout and its traffic (this process's; the same on every process).
  int processes = 1, slice_qubits = 0;
  distributed::RunStats forward, total;  // after the forward pass; after everything
  std::uint64_t peak_bytes = 0;          // the largest peak resident memory among the processes
};

// Multiplies `count` interleaved (re, im) amplitudes by e^{i phase}: the
// program's global phase, which states written out include.
template <class R>
void rotate_phase(R* amps, std::uint64_t count, double phase) {
  if (phase == 0) return;
  const double c = std::cos(phase), s = std::sin(phase);
  for (std::uint64_t i = 0; i < count; ++i) {
    const double re = amps[2 * i], im = amps[2 * i + 1];
    amps[2 * i] = static_cast<R>(re * c - im * s);
    amps[2 * i + 1] = static_cast<R>(re * s + im * c);
  }
}

// Writes a final state (2^n amplitudes) or density matrix (4^n, row-major)
// as R into an HDF5 file, a block at a time.
template <class R>
void write_amplitudes(const std::vector<cplx>& amps, int n, bool density, const std::string& path) {
  constexpr std::size_t kBlock = std::size_t{1} << 20;
  io::write_atomically(path, [&](const std::string& tmp) {
    io::create_state_file(tmp, n, std::is_same_v<R, float>, density);
    std::vector<R> rows;
    for (std::size_t first = 0; first < amps.size(); first += kBlock) {
      const std::size_t count = std::min(kBlock, amps.size() - first);
      rows.resize(2 * count);
      for (std::size_t i = 0; i < count; ++i) {
        rows[2 * i] = static_cast<R>(amps[first + i].real());
        rows[2 * i + 1] = static_cast<R>(amps[first + i].imag());
      }
      io::write_state_rows(tmp, first, count, rows.data());
    }
  });
}

// The final state (a density matrix where the circuit runs on one) into an
// HDF5 file, computed once more on the engine's backend (one process). A
// state vector on the CPU is written from the engine's own buffer.
template <class R>
void write_state(const QasmProgram& prog, const EngineOptions& engine, bool density,
                 const std::string& path) {
  const int n = prog.circuit.num_qubits();
  if (engine.backend == Backend::cpu && !density) {
    cpu::StateVector<R> sv(n, engine.threads);
    sv.apply(fuse_up_to(bind_params(prog.circuit, prog.angles), engine.fusion));
    rotate_phase(sv.data(), sv.size(), prog.global_phase);
    io::write_atomically(path, [&](const std::string& tmp) {
      io::create_state_file(tmp, n, std::is_same_v<R, float>);
      io::write_state_rows(tmp, 0, sv.size(), sv.data());
    });
    return;
  }
  SimulateRequest req;
  req.state = true;
  std::vector<cplx> amps = simulate<R>(prog.circuit, prog.angles, req, engine).state;
  if (!density)
    rotate_phase(reinterpret_cast<double*>(amps.data()), amps.size(), prog.global_phase);
  write_amplitudes<R>(amps, n, density, path);
}

// The largest peak resident memory among the processes of `world`.
std::uint64_t largest_peak(const comm::Comm& world) {
  const std::vector<double> peaks =
      world.allgather(std::vector<double>{static_cast<double>(peak_resident_bytes())});
  return static_cast<std::uint64_t>(*std::max_element(peaks.begin(), peaks.end()));
}

// The same outcome from a state distributed over every process of the launch.
template <class R>
Outcome simulate_distributed(const QasmProgram& prog, const std::vector<PauliSum>& observables,
                             const distributed::Options& options, std::int64_t shots,
                             std::uint64_t seed, bool gradient, const std::string& state_out) {
  const comm::Comm& world = comm::Comm::world();
  Outcome out;
  distributed::DistState<R> state(prog.circuit.num_qubits(), world, options);
  state.apply(bind_params(prog.circuit, prog.angles));
  out.forward = state.stats();
  out.expvals = state.expvals(observables);
  if (gradient) {
    distributed::DistState<R> work(prog.circuit.num_qubits(), world, options);
    for (const PauliSum& h : observables) {
      work.copy_from(state);
      double value = 0;
      out.gradient.push_back(work.gradient(prog.circuit, prog.angles, h, &value));
    }
  }
  if (shots > 0) out.counts = state.sample(shots, seed);
  if (!state_out.empty()) {  // slice by slice into one file, in process order
    state.canonicalize();
    const std::uint64_t rows = state.local().size();
    rotate_phase(state.local().data(), rows, prog.global_phase);
    const std::string tmp = state_out + ".tmp";  // renamed when every slice is in
    for (int r = 0; r < world.size(); ++r) {
      if (r == world.rank()) {
        if (r == 0) io::create_state_file(tmp, state.num_qubits(), std::is_same_v<R, float>);
        io::write_state_rows(tmp, rows * static_cast<std::uint64_t>(r), rows, state.local().data());
      }
      world.barrier();
    }
    if (world.root()) io::commit_file(tmp, state_out);
  }
  out.processes = world.size();
  out.slice_qubits = state.slice_qubits();
  out.total = state.stats();
  out.peak_bytes = largest_peak(world);
  return out;
}

// A density matrix distributed over every process of the launch (forward only).
template <class R>
Outcome density_matrix_distributed(const QasmProgram& prog,
                                   const std::vector<PauliSum>& observables,
                                   const distributed::Options& options, std::int64_t shots,
                                   std::uint64_t seed) {
  const comm::Comm& world = comm::Comm::world();
  SimulateRequest req;
  req.observables = observables;
  req.shots = shots;
  req.seed = seed;
  Outcome out;
  SimulateResult r = distributed::simulate_density_matrix<R>(
      prog.circuit, prog.angles, req, options, world, &out.forward, &out.total);
  out.expvals = std::move(r.expvals);
  out.counts = std::move(r.counts);
  out.processes = world.size();
  const int vector_qubits = 2 * prog.circuit.num_qubits();
  out.slice_qubits = vector_qubits - distributed::slice_bits(world.size(), vector_qubits);
  out.peak_bytes = largest_peak(world);
  return out;
}

template <class R>
Outcome simulate_program(const QasmProgram& prog, const std::vector<PauliSum>& observables,
                         const EngineOptions& engine, std::int64_t shots, std::uint64_t seed,
                         bool gradient) {
  SimulateRequest req;
  req.observables = observables;
  req.shots = shots;
  req.seed = seed;
  Outcome out;
  if (gradient && shots == 0 && !prog.circuit.has_dynamic() &&
      !choose_method(prog.circuit, engine).trajectories()) {
    // Nothing sampled: the adjoint's forward state gives the expectation
    // values, with no forward pass of their own.
    out.gradient =
        adjoint_jacobian<R>(prog.circuit, prog.angles, observables, engine, &out.expvals);
    out.gates_after_fusion = gates_after_fusion(prog.circuit, prog.angles, engine);
    return out;
  }
  {  // freed before the gradient, which needs three states of its own
    SimulateResult r = simulate<R>(prog.circuit, prog.angles, req, engine);
    out.expvals = std::move(r.expvals);
    out.expval_errors = std::move(r.expval_errors);
    out.counts = std::move(r.counts);
    out.gates_after_fusion = r.gates_after_fusion;
    for (const auto& [key, hits] : r.records) out.record_counts[key.first] += hits;
    out.record_probabilities = std::move(r.record_probabilities);
  }
  if (gradient) out.gradient = adjoint_jacobian<R>(prog.circuit, prog.angles, observables, engine);
  return out;
}

// Trajectories shared out over the processes of `world` (distributed/simulate.h):
// every process gets the outcome a single process gives, bit for bit.
template <class R>
Outcome trajectories_over(const comm::Comm& world, const QasmProgram& prog,
                          const std::vector<PauliSum>& observables, const EngineOptions& engine,
                          std::int64_t shots, std::uint64_t seed, bool gradient) {
  SimulateRequest req;
  req.observables = observables;
  req.shots = shots;
  req.seed = seed;
  SimulateResult r =
      distributed::simulate_trajectories<R>(prog.circuit, prog.angles, req, engine, world);
  Outcome out;
  out.expvals = std::move(r.expvals);
  out.expval_errors = std::move(r.expval_errors);
  out.counts = std::move(r.counts);
  out.processes = world.size();
  for (std::size_t k = 0; gradient && k < observables.size(); ++k) {  // a VJP per observable
    std::vector<double> w(observables.size(), 0.0);
    w[k] = 1;
    out.gradient.push_back(
        distributed::trajectories_vjp<R>(prog.circuit, prog.angles, observables, w, engine, world)
            .gradient);
  }
  return out;
}

// The run's outcome: in this process; with `world` (--distributed), one state
// over its processes, or for trajectories each process running its share.
template <class R>
Outcome run_program(const QasmProgram& prog, const std::vector<PauliSum>& observables,
                    const EngineOptions& engine, const distributed::Options& dopts,
                    const comm::Comm* world, bool by_trajectories, bool density, std::int64_t shots,
                    std::uint64_t seed, bool gradient, const std::string& state_out) {
  if (world && by_trajectories)
    return trajectories_over<R>(*world, prog, observables, engine, shots, seed, gradient);
  if (world && density) return density_matrix_distributed<R>(prog, observables, dopts, shots, seed);
  if (world)
    return simulate_distributed<R>(prog, observables, dopts, shots, seed, gradient, state_out);
  return simulate_program<R>(prog, observables, engine, shots, seed, gradient);
}

// A density matrix is 4^n amplitudes: refused with its size when it cannot fit
// (the state vector's qubit limit over 2n, or this machine's memory).
void check_density_matrix_fits(const Circuit& c, const EngineOptions& engine, Precision prec,
                               const std::string& precision, bool gradient,
                               const std::string& path) {
  const int n = c.num_qubits();
  const std::string what = path + ": a density matrix of " + std::to_string(n) + " qubits (4^" +
                           std::to_string(n) + " " + precision + " amplitudes)";
  if (2 * n > kMaxQubits)
    throw Error(what + " is beyond the " + std::to_string(kMaxQubits / 2) +
                "-qubit limit of the density-matrix method");
  // The forward state; for the Jacobian also the adjoint's, the final state's
  // copy and the states kept before channels (GPU states report their own size).
  if (engine.backend == Backend::cpu)
    check_fits_in_memory(item_size(c, gradient ? 3 : 1, prec, engine).bytes, what);
}

// Binds every input of the program from the --input flags (all required).
std::vector<double> bind_inputs(QasmProgram& prog, const Args& args, const std::string& path) {
  std::vector<double> x(static_cast<std::size_t>(prog.num_input_values()), 0.0);
  std::vector<bool> given(prog.inputs.size(), false);
  for (const std::string& flag : args.all("--input")) {
    const auto eq = flag.find('=');
    if (eq == std::string::npos) throw Error("--input " + flag + ": expected NAME=VALUE");
    const std::string name = flag.substr(0, eq);
    const auto it = std::find_if(prog.inputs.begin(), prog.inputs.end(),
                                 [&](const QasmInput& in) { return in.name == name; });
    if (it == prog.inputs.end()) {
      throw Error("--input " + flag + ": " + path + " declares no input '" + name + "'");
    }
    const auto k = static_cast<std::size_t>(it - prog.inputs.begin());
    if (given[k]) throw Error("--input " + flag + ": input '" + name + "' is given twice");
    given[k] = true;
    std::vector<double> values;
    std::stringstream list(flag.substr(eq + 1));
    for (std::string item; std::getline(list, item, ',');) {
      char* end = nullptr;
      const double v = std::strtod(item.c_str(), &end);
      if (item.empty() || *end != '\0' || !std::isfinite(v)) {
        throw Error("--input " + flag + ": '" + item + "' is not a finite number");
      }
      values.push_back(v);
    }
    if (static_cast<int>(values.size()) != it->size) {
      throw Error("--input " + flag + ": input '" + name + "' takes " + std::to_string(it->size) +
                  " value(s), got " + std::to_string(values.size()));
    }
    std::copy(values.begin(), values.end(), x.begin() + it->offset);
  }
  for (std::size_t k = 0; k < prog.inputs.size(); ++k) {
    if (!given[k]) {
      throw Error("--input: " + path + " declares input '" + prog.inputs[k].name +
                  "'; give its value with --input " + prog.inputs[k].name + "=" +
                  (prog.inputs[k].array ? "V1,V2,..." : "VALUE"));
    }
  }
  prog.bind_inputs(x);
  return x;
}

std::string bitstring(index_t i, int n) {
  std::string s(static_cast<std::size_t>(n), '0');
  for (int q = 0; q < n; ++q)
    if (i >> q & 1) s[static_cast<std::size_t>(n - 1 - q)] = '1';
  return s;
}

// A classical record as Qiskit prints it: the last register first, each most
// significant bit first, registers separated by spaces.
std::string register_string(std::uint64_t record, const QasmProgram& prog) {
  std::vector<std::string> parts;
  int first = 0;
  for (const auto& [name, size] : prog.clbit_registers) {
    std::string s(static_cast<std::size_t>(size), '0');
    for (int j = 0; j < size; ++j)
      if (first + j < 64 && (record >> (first + j) & 1))
        s[static_cast<std::size_t>(size - 1 - j)] = '1';
    parts.push_back(std::move(s));
    first += size;
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) out += (out.empty() ? "" : " ") + *it;
  return out;
}

// What a run reports, for print_json and print_text.
struct Report {
  const std::string& path;
  const QasmProgram& prog;
  const std::vector<double>& inputs;
  const std::vector<std::string>& observable_texts;
  const Outcome& out;
  std::string precision;
  Precision prec;
  int threads;
  Backend backend;
  std::int64_t shots;
  std::uint64_t seed;
  bool gradient, distributed;
  double parse_s, sim_s, total_s;
  std::string method;         // statevector, density_matrix or trajectories
  std::int64_t trajectories;  // when method is trajectories
};

// --plan-processes: the distributed plan's exchanges and memory, as JSON. A
// density matrix is planned as the 2n-qubit vector it is.
void print_plan(const QasmProgram& prog, bool density, std::int64_t procs_flag, Precision prec,
                const std::string& precision, int states, const distributed::Options& dopts) {
  const int n = density ? 2 * prog.circuit.num_qubits() : prog.circuit.num_qubits();
  const auto procs = static_cast<int>(procs_flag);
  const int g = distributed::slice_bits(procs, n, "--plan-processes");
  EngineOptions unfused;
  unfused.fusion = 0;
  const distributed::DistPlan p =
      distributed::plan(density ? density_matrix_gates(prog.circuit, prog.angles, unfused)
                                : bind_params(prog.circuit, prog.angles),
                        n, g, distributed::QubitMap::identity(n));
  const std::uint64_t slice = cpu::state_bytes(n - g, prec);
  JsonWriter w(std::cout);
  w.begin_object().key("num_qubits").value(prog.circuit.num_qubits());
  w.key("density_matrix").value(density).key("processes").value(procs);
  w.key("slice_qubits").value(n - g).key("precision").value(precision);
  w.key("slice_bytes").value(static_cast<double>(slice));
  w.key("process_bytes").value(static_cast<double>(states * slice + dopts.buffer_bytes));
  w.key("exchanges").value(p.stats.exchanges).key("slices_moved").value(p.stats.slices_moved);
  w.key("relabels").value(p.stats.relabels);
  w.key("per_gate_exchanges").value(p.stats.naive_exchanges);
  w.key("per_gate_slices_moved").value(p.stats.naive_slices_moved);
  w.key("num_gates").value(static_cast<long long>(prog.circuit.ops().size()));
  w.end_object();
  std::cout << "\n";
}

// The run's results as one JSON object on standard output.
void print_json(const Report& r) {
  const QasmProgram& prog = r.prog;
  const Outcome& out = r.out;
  const int n = prog.circuit.num_qubits();
  const std::string& precision = r.precision;
  const Precision prec = r.prec;
  const bool gradient = r.gradient, distributed = r.distributed;
  const std::int64_t shots = r.shots;
  const std::uint64_t seed = r.seed;
  JsonWriter w(std::cout);
  w.begin_object();
  w.key("expval").value(out.expvals);
  if (gradient) {
    w.key("gradient").begin_array();
    for (const std::vector<double>& row : out.gradient) w.value(row);
    w.end_array();
    if (!prog.inputs.empty()) {
      w.key("input_gradient").begin_array();
      for (const std::vector<double>& row : out.gradient) {
        const std::vector<double> g = prog.input_gradient(r.inputs, row);
        w.begin_object();
        for (const QasmInput& in : prog.inputs) {
          w.key(in.name);
          if (in.array)
            w.value(std::vector<double>(g.begin() + in.offset, g.begin() + in.offset + in.size));
          else
            w.value(g[static_cast<std::size_t>(in.offset)]);
        }
        w.end_object();
      }
      w.end_array();
    }
  }
  const bool dynamic = prog.circuit.has_dynamic();
  if (dynamic) {
    w.key("registers").begin_array();
    for (auto it = prog.clbit_registers.rbegin(); it != prog.clbit_registers.rend(); ++it)
      w.value(it->first);
    w.end_array();
  }
  if (dynamic && shots == 0) {
    w.key("register_probabilities").begin_object();
    for (const auto& [rec, p] : out.record_probabilities)
      w.key(register_string(rec, prog)).value(p);
    w.end_object();
  }
  if (shots > 0) {
    w.key("counts").begin_object();
    if (dynamic) {
      for (const auto& [rec, c] : out.record_counts)
        w.key(register_string(rec, prog)).value(static_cast<long long>(c));
    } else {
      for (const auto& [i, c] : out.counts) w.key(bitstring(i, n)).value(static_cast<long long>(c));
    }
    w.end_object();
    w.key("shots")
        .value(static_cast<long long>(shots))
        .key("seed")
        .value(static_cast<long long>(seed));
  }
  w.key("num_qubits").value(n).key("precision").value(precision);
  w.key("num_gates").value(static_cast<long long>(prog.circuit.ops().size()));
  if (!distributed && r.method != "trajectories")  // trajectories fuse between channels
    w.key("num_gates_fused").value(static_cast<long long>(out.gates_after_fusion));
  w.key("threads").value(r.threads).key("backend").value(backend_name(r.backend));
  w.key("method").value(r.method);
  if (r.method == "trajectories") {
    w.key("trajectories").value(static_cast<long long>(r.trajectories));
    w.key("processes").value(out.processes);
    w.key("expval_error").value(out.expval_errors);
  }
  if (distributed) {
    w.key("distributed").begin_object();
    w.key("processes").value(out.processes).key("slice_qubits").value(out.slice_qubits);
    w.key("slice_bytes").value(static_cast<double>(cpu::state_bytes(out.slice_qubits, prec)));
    w.key("peak_resident_bytes").value(static_cast<double>(out.peak_bytes));
    for (const auto& [name, st] : {std::pair{"forward", &out.forward}, {"total", &out.total}}) {
      w.key(name).begin_object();
      w.key("exchanges").value(st->exchanges).key("slices_moved").value(st->slices_moved);
      w.key("bytes_sent").value(st->bytes_sent).key("relabels").value(st->relabels);
      w.key("per_gate_exchanges").value(st->per_gate_exchanges);
      w.key("per_gate_slices_moved").value(st->per_gate_slices_moved);
      w.key("exchange_s").value(st->exchange_s).key("compute_s").value(st->compute_s);
      w.end_object();
    }
    w.end_object();
  }
  w.key("kernels").value(r.backend == Backend::cpu ? cpu::best_kernels().name : "cuda");
  w.key("time_s").begin_object().key("parse").value(r.parse_s).key("simulate").value(r.sim_s);
  w.key("total").value(r.total_s).end_object();
  w.end_object();
  std::cout << "\n";
}

// The run's results as text on standard output.
void print_text(const Report& r) {
  const QasmProgram& prog = r.prog;
  const Outcome& out = r.out;
  const int n = prog.circuit.num_qubits();
  const std::string& precision = r.precision;
  const bool gradient = r.gradient, distributed = r.distributed;
  const std::int64_t shots = r.shots;
  const std::uint64_t seed = r.seed;
  std::cout << r.path << ": " << n << " qubits, " << prog.circuit.ops().size() << " operations"
            << (r.method == "trajectories" || distributed  // fused per process and segment
                    ? std::string(", ")
                    : " (" + std::to_string(out.gates_after_fusion) + " after fusion), ")
            << (r.method == "density_matrix" ? "density matrix, "
                : r.method == "trajectories"
                    ? std::to_string(r.trajectories) + " trajectories (seed " +
                          std::to_string(r.seed) + "), "
                    : std::string())
            << precision << ", " << r.threads << " thread(s), "
            << (r.backend == Backend::cpu ? cpu::best_kernels().name : "cuda") << " kernels\n";
  for (std::size_t i = 0; i < r.observable_texts.size(); ++i) {
    std::ostringstream v;
    v.precision(12);
    v << out.expvals[i];
    if (r.method == "trajectories") v << " +- " << out.expval_errors[i] << " (standard error)";
    std::string text = r.observable_texts[i];
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    std::cout << "<" << text << "> = " << v.str() << "\n";
    if (gradient) {
      std::cout << "  d/d(angle 0.." << prog.angles.size() << "):";
      for (double g : out.gradient[i]) std::cout << " " << g;
      std::cout << "\n";
      const std::vector<double> g = prog.input_gradient(r.inputs, out.gradient[i]);
      for (const QasmInput& in : prog.inputs) {
        std::cout << "  d/d(" << in.name << "):";
        for (int e = 0; e < in.size; ++e)
          std::cout << " " << g[static_cast<std::size_t>(in.offset + e)];
        std::cout << "\n";
      }
    }
  }
  std::string registers;  // as Qiskit orders them
  for (auto it = prog.clbit_registers.rbegin(); it != prog.clbit_registers.rend(); ++it)
    registers += (registers.empty() ? "" : " ") + it->first;
  if (prog.circuit.has_dynamic() && shots == 0) {
    std::cout << "classical registers (" << registers << "), exact probabilities:\n";
    for (const auto& [rec, p] : out.record_probabilities)
      std::cout << "  " << register_string(rec, prog) << " " << p << "\n";
  }
  if (shots > 0 && prog.circuit.has_dynamic()) {
    std::cout << "counts of the classical registers (" << registers << "; " << shots
              << " shots, seed " << seed << "):\n";
    for (const auto& [rec, c] : out.record_counts)
      std::cout << "  " << register_string(rec, prog) << " " << c << "\n";
  } else if (shots > 0) {
    std::cout << "counts (" << shots << " shots, seed " << seed << ", qubit 0 rightmost):\n";
    for (const auto& [i, c] : out.counts) std::cout << "  " << bitstring(i, n) << " " << c << "\n";
  }
  if (distributed) {
    std::cout << "distributed: " << out.processes << " processes, slices of 2^" << out.slice_qubits
              << " amplitudes; circuit: " << out.forward.exchanges << " exchanges ("
              << out.forward.per_gate_exchanges << " gate by gate), " << out.forward.relabels
              << " relabels; in all " << out.total.exchanges
              << " exchanges; peak memory per process " << format_gib(out.peak_bytes) << "\n";
  }
  std::cout << "time: parse " << r.parse_s << " s, simulate " << r.sim_s << " s\n";
}

// --max-branches, which only a dynamic circuit takes, and the flags it
// cannot take, each a one-line error.
void read_dynamic_flags(const Args& args, EngineOptions& engine, const std::string& path,
                        bool dynamic) {
  engine.max_branches =
      args.get_int("--max-branches", engine.max_branches, 1, std::int64_t{1} << 40);
  if (args.has("--max-branches") && !dynamic)
    throw Error("--max-branches: " + path +
                " is not a dynamic circuit (no mid-circuit measurement, reset or if)");
  if (!dynamic) return;
  const std::string what = path + " is a dynamic circuit (mid-circuit measurement, reset or if)";
  if (args.has("--gradient"))
    throw Error("--gradient: " + what + "; its gradients are not supported");
  if (args.has("--distributed")) throw Error("--distributed: " + what + ": it runs in one process");
  if (args.has("--state-out"))
    throw Error("--state-out: " + what + ": it ends in a mixture, not one state");
  if (args.has("--plan-processes"))
    throw Error("--plan-processes: " + what + ": it runs in one process");
}

// choose_method, its Error ("method M: why") as "--method M: path: why".
MethodChoice choose_method_for(const Circuit& c, const EngineOptions& engine,
                               const std::string& path) {
  try {
    return choose_method(c, engine);
  } catch (const Error& e) {
    const std::string why = e.what();
    const std::size_t colon = why.find(": ");
    if (colon == std::string::npos) throw Error("--method: " + path + ": " + why);
    throw Error("--" + why.substr(0, colon) + ": " + path + why.substr(colon));
  }
}

// The flags that depend on how a circuit runs (density matrix, trajectories),
// each refused with one line where it does not apply.
void check_method_flags(const Args& args, const Circuit& c, const std::string& path, bool density,
                        bool by_trajectories) {
  if (args.has("--trajectories") && !by_trajectories)
    throw Error("--trajectories: " + path + " does not run by trajectories here (" +
                (c.has_channels() || c.has_dynamic() ? "it runs exactly" : "it has no channels") +
                "; --method trajectories runs them)");
  const bool distributed = args.has("--distributed"), state_out = args.has("--state-out");
  if (density && distributed && args.has("--gradient"))
    throw Error(
        "--gradient: a density matrix over processes (--distributed) runs forward only; "
        "one process computes its gradient");
  if (density && distributed && state_out)
    throw Error(
        "--state-out: a density matrix over processes is not written (one process "
        "writes it)");
  if (by_trajectories && state_out)
    throw Error("--state-out: a noisy circuit run by trajectories has no single final state");
}

}  // namespace

// The --readout-error flags: "P01,P10" for every qubit, "Q:P01,P10" for qubit
// Q (which wins over a flag for every qubit, whatever their order); refused
// for dynamic circuits.
ReadoutError read_readout(const Args& args, const Circuit& c, const std::string& path) {
  const int n = c.num_qubits();
  if (args.has("--readout-error") && c.has_dynamic())
    throw Error("--readout-error: " + path +
                " is a dynamic circuit, whose conditions would read the bits (not supported)");
  ReadoutError e;
  e.qubits.resize(static_cast<std::size_t>(n));
  std::vector<char> own(static_cast<std::size_t>(n), 0);
  for (const std::string& flag : args.all("--readout-error")) {
    const std::string what = "--readout-error " + flag;
    const std::size_t colon = flag.find(':');
    std::vector<double> p;
    std::stringstream list(colon == std::string::npos ? flag : flag.substr(colon + 1));
    for (std::string item; std::getline(list, item, ',');) {
      char* end = nullptr;
      const double v = std::strtod(item.c_str(), &end);
      if (item.empty() || *end != '\0' || !std::isfinite(v))
        throw Error(what + ": '" + item + "' is not a finite number");
      p.push_back(v);
    }
    if (p.size() != 2) throw Error(what + ": expected P01,P10 or Q:P01,P10");
    const ReadoutFlip f{p[0], p[1]};
    check_readout_flip(f, what);
    if (colon == std::string::npos) {
      for (int q = 0; q < n; ++q)
        if (!own[static_cast<std::size_t>(q)]) e.qubits[static_cast<std::size_t>(q)] = f;
      continue;
    }
    const std::string qubit = flag.substr(0, colon);
    char* end = nullptr;
    const long q = std::strtol(qubit.c_str(), &end, 10);
    if (qubit.empty() || *end != '\0' || q < 0 || q >= n)
      throw Error(what + ": '" + qubit + "' is not a qubit of " + path + " (0 to " +
                  std::to_string(n - 1) + ")");
    e.qubits[static_cast<std::size_t>(q)] = f;
    own[static_cast<std::size_t>(q)] = 1;
  }
  return e;
}

// --max-gates and --max-file-mib.
QasmLimits read_limits(const Args& args) {
  QasmLimits limits;
  limits.max_gates = args.get_int("--max-gates", limits.max_gates, 1, std::int64_t{1} << 40);
  limits.max_file_bytes =
      args.get_int("--max-file-mib", limits.max_file_bytes >> 20, 1, std::int64_t{1} << 20) << 20;
  return limits;
}

// The --observable flags, each checked to act on the circuit's n qubits, as
// read through `readout`.
std::vector<PauliSum> read_observables(const Args& args, int n, const std::string& path,
                                       const ReadoutError& readout) {
  std::vector<PauliSum> observables;
  for (std::size_t i = 0; i < args.all("--observable").size(); ++i) {
    const std::string src = "--observable " + std::to_string(i + 1);
    PauliSum h = parse_pauli_sum(args.all("--observable")[i], src);
    check_observable_fits(h, n, src, path);
    observables.push_back(read_through(h, readout));
  }
  return observables;
}

int run_command(const std::vector<std::string>& argv) {
  const Args args(argv, kSpecs);
  if (args.has("--help")) {
    std::cout << format_help(kUsage, kSpecs, "docs/circuits.md");
    return 0;
  }
  if (args.positionals().size() != 1) {
    throw Error("expected exactly one circuit file (usage: " + std::string(kUsage).substr(0, 40) +
                "...; see --help)");
  }
  const std::string precision = args.get_choice("--precision", "c128", {"c64", "c128"});
  const int threads = static_cast<int>(args.get_int("--threads", default_threads(), 1, 4096));
  const int fusion = static_cast<int>(args.get_int("--fusion", 3, 0, 10));
  const std::int64_t shots = args.get_int("--shots", 0, 0, std::int64_t{1} << 32);
  const QasmLimits limits = read_limits(args);
  if (args.has("--seed") && !args.has("--shots") && args.get("--method") != "trajectories")
    throw Error("--seed: needs --shots or --method trajectories");
  const std::uint64_t seed = args.get_u64("--seed", 1);
  const bool gradient = args.has("--gradient");
  if (gradient && !args.has("--observable")) throw Error("--gradient: needs an --observable");
  if (!args.has("--observable") && shots == 0) {
    throw Error("nothing to compute: give at least one --observable or --shots");
  }

  const auto t0 = Clock::now();
  const std::string& path = args.positionals()[0];
  require_file_path(path, "circuit");
  QasmProgram prog = read_qasm_file(path, limits);
  const std::vector<double> inputs = bind_inputs(prog, args, path);
  const int n = prog.circuit.num_qubits();
  if (n == 0) throw Error(path + ": the circuit declares no qubits (add a qreg)");
  const ReadoutError readout = read_readout(args, prog.circuit, path);
  const std::vector<PauliSum> observables = read_observables(args, n, path, readout);
  const Precision prec = precision == "c64" ? Precision::c64 : Precision::c128;
  EngineOptions engine;
  engine.threads = threads;
  engine.fusion = fusion;
  engine.backend = select_backend(args);
  engine.method = *method_by_name(args.get_choice(
      "--method", "auto", std::vector<std::string>(kMethodNames.begin(), kMethodNames.end())));
  engine.trajectories = args.get_int("--trajectories", 1000, 1, std::int64_t{1} << 40);
  engine.seed = seed;
  const bool dynamic = prog.circuit.has_dynamic();
  read_dynamic_flags(args, engine, path, dynamic);
  const MethodChoice method = choose_method_for(prog.circuit, engine, path);
  const bool density = method.density_matrix(), by_trajectories = method.trajectories();
  const bool distributed = args.has("--distributed");
  const std::string state_out = args.get("--state-out").value_or("");
  check_method_flags(args, prog.circuit, path, density, by_trajectories);
  if (density && !distributed)
    check_density_matrix_fits(prog.circuit, engine, prec, precision, gradient, path);
  const int states = gradient ? 3 : 1;  // the adjoint Jacobian keeps three
  require_file_path(state_out, "--state-out");
  if (args.has("--exchange-mib") && !distributed)
    throw Error("--exchange-mib: needs --distributed");
  distributed::Options dopts;
  dopts.threads = threads;
  dopts.fusion = fusion;
  dopts.buffer_bytes = static_cast<std::size_t>(args.get_int("--exchange-mib", 32, 1, 1 << 20))
                       << 20;
  if (args.has("--plan-processes")) {
    print_plan(prog, density, args.get_int("--plan-processes", 1, 1, 1 << 30), prec, precision,
               states, dopts);
    return 0;
  }
  if (distributed && engine.backend != Backend::cpu)
    throw Error("--distributed: runs on the cpu backend");
  const comm::Comm* world = distributed ? &comm::Comm::world() : nullptr;
  if (distributed && !by_trajectories) {
    const int vector_qubits = density ? 2 * n : n;  // a density matrix is vec(rho)
    const int g = distributed::slice_bits(world->size(), vector_qubits);
    // This host's processes each hold their slices and buffers.
    check_fits_in_memory(
        static_cast<std::uint64_t>(world->local_size()) *
            (states * cpu::state_bytes(vector_qubits - g, prec) + dopts.buffer_bytes),
        path + ": " + std::to_string(world->local_size()) + " process(es) on this host, each " +
            std::to_string(states) + " slice(s) of 2^" + std::to_string(vector_qubits - g) + " " +
            precision + " amplitudes");
  } else if (engine.backend == Backend::cpu && !density) {  // GPU states report their own size
    check_fits_in_memory(states * cpu::state_bytes(n, prec),
                         path + ": " + std::to_string(states) + " " + std::to_string(n) +
                             "-qubit " + precision + " state(s)");
  }
  const double parse_s = seconds_since(t0);

  const auto t1 = Clock::now();
  Outcome out = prec == Precision::c64
                    ? run_program<float>(prog, observables, engine, dopts, world, by_trajectories,
                                         density, shots, seed, gradient, state_out)
                    : run_program<double>(prog, observables, engine, dopts, world, by_trajectories,
                                          density, shots, seed, gradient, state_out);
  // the samples' bits read through the error (its own stream: the true samples stay the same)
  out.counts = read_through(out.counts, readout, readout_seed(seed));
  if (!state_out.empty() && !distributed) {
    if (prec == Precision::c64)
      write_state<float>(prog, engine, density, state_out);
    else
      write_state<double>(prog, engine, density, state_out);
  }
  if (world && !world->root()) return 0;  // rank 0 reports
  const double sim_s = seconds_since(t1);
  const double total_s = seconds_since(t0);

  const Report report{path,
                      prog,
                      inputs,
                      args.all("--observable"),
                      out,
                      precision,
                      prec,
                      threads,
                      engine.backend,
                      shots,
                      seed,
                      gradient,
                      distributed && !by_trajectories,
                      parse_s,
                      sim_s,
                      total_s,
                      std::string(method.name()),
                      engine.trajectories};
  if (args.has("--json"))
    print_json(report);
  else
    print_text(report);
  return 0;
}

}  // namespace qmlsim::cli
