// The Python extension `qmlsim._qmlsim` (nanobind): conversions and
// definitions only. The doors hand over typed programs (Program, Op, Param:
// python/qmlsim/_program.py builds them); every run goes through the engine's
// batch entry points (grad/batch.h). Pauli-sum observables are lists of
// (coefficient, X mask, Z mask); qubit q is bit q of an amplitude index.
// Long calls release the GIL; qmlsim::Error becomes ValueError (OutOfMemory:
// MemoryError), with the same one-line message.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/complex.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <complex>
#include <cstddef>
#include <exception>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "backends/cuda/statevector.h"
#include "circuit/observable.h"
#include "circuit/program.h"
#include "circuit/qasm.h"
#include "circuit/readout.h"
#include "core/error.h"
#include "grad/adjoint.h"
#include "grad/batch.h"
#include "grad/density_matrix.h"

namespace nb = nanobind;
using namespace qmlsim;

namespace {

using TermSpec = std::tuple<double, std::uint64_t, std::uint64_t>;

struct Options {
  std::string precision = "c128";
  int threads = 1;
  int fusion = 3;
  std::string backend = "cpu";  // or "cuda": this process's GPU (a clear error without one)
  std::string method = "auto";  // statevector, density_matrix, trajectories (options.h)
  std::int64_t trajectories = 1000;
  std::uint64_t seed = 1;
  std::int64_t max_branches = 65536;  // dynamic circuits' exact walks
  bool trajectory_estimate = false;   // options.h: EngineOptions::trajectory_estimate
};

Backend backend_of(const Options& o) {
  if (o.backend == "cpu") return Backend::cpu;
  if (o.backend != "cuda") throw Error("backend: '" + o.backend + "' is not one of cpu, cuda");
  cuda::select_device(cuda::local_rank_from_env());
  return Backend::cuda;
}

std::vector<PauliSum> make_observables(const std::vector<std::vector<TermSpec>>& obs) {
  std::vector<PauliSum> out;
  for (const auto& terms : obs) {
    PauliSum h;
    for (const auto& [coeff, x, z] : terms) {
      if (!std::isfinite(coeff)) throw Error("observable: coefficient is not a finite number");
      h.add(coeff, x, z);
    }
    out.push_back(std::move(h));
  }
  return out;
}

EngineOptions engine_of(const Options& o) {
  EngineOptions e;
  e.threads = o.threads < 1 ? 1 : o.threads;
  e.fusion = o.fusion;
  e.backend = backend_of(o);
  const std::optional<Method> method = method_by_name(o.method);
  if (!method)
    throw Error("method: '" + o.method +
                "' is not one of auto, statevector, density_matrix, trajectories");
  e.method = *method;
  if (o.trajectories < 1)
    throw Error("trajectories: " + std::to_string(o.trajectories) + " is not a positive number");
  e.trajectories = o.trajectories;
  e.seed = o.seed;
  if (o.max_branches < 1)
    throw Error("max_branches: " + std::to_string(o.max_branches) + " is not a positive number");
  e.max_branches = o.max_branches;
  e.trajectory_estimate = o.trajectory_estimate;
  return e;
}

Precision precision_of(const Options& o) {
  if (o.precision != "c64" && o.precision != "c128")
    throw Error("precision: '" + o.precision + "' is not one of c64, c128");
  return o.precision == "c64" ? Precision::c64 : Precision::c128;
}

using RealArray = nb::ndarray<nb::numpy, double>;
// Rows of parameter values, one binding per row.
using Matrix2 = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

template <class T>
nb::ndarray<nb::numpy, T> to_numpy(std::vector<T>&& v, std::vector<std::size_t> shape) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(owned->data(), shape.size(), shape.data(), owner);
}

BatchItem item_of(const Program& p, const std::vector<double>& values) {
  return {&p.circuit, p.theta(values), p.initial};
}

// A batch call's arguments, converted and checked before the GIL is released.
struct ProgramBatch {
  std::vector<BatchItem> items;
  std::vector<PauliSum> observables;
  Precision precision;
  EngineOptions engine;

  ProgramBatch(const std::vector<const Program*>& programs,
               const std::vector<std::vector<double>>& values,
               const std::vector<std::vector<TermSpec>>& obs, const Options& o)
      : observables(make_observables(obs)), precision(precision_of(o)), engine(engine_of(o)) {
    if (programs.size() != values.size())
      throw Error("batch: " + std::to_string(values.size()) + " rows of parameter values for " +
                  std::to_string(programs.size()) + " programs");
    for (std::size_t i = 0; i < programs.size(); ++i)
      items.push_back(item_of(*programs[i], values[i]));
  }
};

// The final state of one item times e^{i phase} as complex128 (a density
// matrix, which no phase changes, row-major: rho[r][c] at r 2^n + c).
nb::ndarray<nb::numpy, std::complex<double>> final_state(const BatchItem& item, double phase,
                                                         const Options& o) {
  SimulateRequest req;
  req.state = true;
  std::vector<std::complex<double>> out;
  {
    const Precision precision = precision_of(o);
    const EngineOptions e = engine_of(o);
    nb::gil_scoped_release release;
    out = std::move(simulate_batch({item}, req, precision, e)[0].state);
    if (phase != 0 && !choose_method(*item.circuit, e).density_matrix()) {
      const std::complex<double> turn = std::polar(1.0, phase);
      for (std::complex<double>& amp : out) amp *= turn;
    }
  }
  const std::size_t size = out.size();
  return to_numpy(std::move(out), {size});
}

// Every item run for `shots` shots seeded with `seed` (a dynamic one
// collapsing the state at each measurement; a noisy one, by trajectories,
// each trajectory drawing its share).
std::vector<SimulateResult> shot_runs(const std::vector<BatchItem>& items, std::int64_t shots,
                                      std::uint64_t seed, const Options& o) {
  if (shots < 1) throw Error("shots: " + std::to_string(shots) + " is not positive");
  SimulateRequest req;
  req.shots = shots;
  req.seed = seed;
  const Precision precision = precision_of(o);
  const EngineOptions e = engine_of(o);
  nb::gil_scoped_release release;
  return simulate_batch(items, req, precision, e);
}

// Dynamic runs' classical records over `shots` shots for every item:
// [item] -> [(record, count)].
using RecordCounts = std::vector<std::tuple<std::uint64_t, std::int64_t>>;
std::vector<RecordCounts> record_counts(const std::vector<BatchItem>& items, std::int64_t shots,
                                        std::uint64_t seed, const Options& o) {
  std::vector<RecordCounts> out;
  for (const SimulateResult& r : shot_runs(items, shots, seed, o)) {
    std::map<std::uint64_t, std::int64_t> counts;
    for (const auto& [key, hits] : r.records) counts[key.first] += hits;
    out.emplace_back(counts.begin(), counts.end());
  }
  return out;
}

// <H_k> of many programs in one call: out[item][k].
std::vector<std::vector<double>> expvals_batch(const std::vector<const Program*>& programs,
                                               const std::vector<std::vector<double>>& values,
                                               const std::vector<std::vector<TermSpec>>& obs,
                                               const Options& o) {
  const ProgramBatch b(programs, values, obs, o);
  SimulateRequest req;
  req.observables = b.observables;
  nb::gil_scoped_release release;
  std::vector<std::vector<double>> out;
  for (SimulateResult& r : simulate_batch(b.items, req, b.precision, b.engine))
    out.push_back(std::move(r.expvals));
  return out;
}

// |amplitude|^2 (a density matrix's diagonal) of every basis state for many
// programs of one qubit count in one call: [item][2^n].
RealArray probabilities_batch(const std::vector<const Program*>& programs,
                              const std::vector<std::vector<double>>& values, const Options& o) {
  const ProgramBatch b(programs, values, {}, o);
  const int n = programs.empty() ? 0 : programs.front()->circuit.num_qubits();
  for (const Program* p : programs)
    if (p->circuit.num_qubits() != n)
      throw Error("probabilities_batch: programs of different qubit counts");
  SimulateRequest req;
  req.probabilities = true;
  nb::gil_scoped_release release;
  std::vector<double> out;
  for (const SimulateResult& r : simulate_batch(b.items, req, b.precision, b.engine))
    out.insert(out.end(), r.probabilities.begin(), r.probabilities.end());
  return to_numpy(std::move(out), {programs.size(), std::size_t{1} << n});
}

// Jacobians of many programs in one call, with their expectation values:
// out[item] = (<H_k>, [k][parameter]).
using ValuesAndRows = std::tuple<std::vector<double>, std::vector<std::vector<double>>>;
std::vector<ValuesAndRows> jacobians(const std::vector<const Program*>& programs,
                                     const std::vector<std::vector<double>>& values,
                                     const std::vector<std::vector<TermSpec>>& obs,
                                     const Options& o) {
  const ProgramBatch b(programs, values, obs, o);
  nb::gil_scoped_release release;
  std::vector<ValuesAndRows> out;
  for (JacobianResult& r : jacobian_batch(b.items, b.observables, b.precision, b.engine))
    out.emplace_back(std::move(r.expvals), std::move(r.rows));
  return out;
}

// Vector-Jacobian products of many programs in one call: out[item] = (<H_k>,
// sum_k cotangents[item][k] d<H_k>/d(parameter)), one forward and one backward
// pass per item.
using ValuesAndGradient = std::tuple<std::vector<double>, std::vector<double>>;
std::vector<ValuesAndGradient> vjps(const std::vector<const Program*>& programs,
                                    const std::vector<std::vector<double>>& values,
                                    const std::vector<std::vector<TermSpec>>& obs,
                                    const std::vector<std::vector<double>>& cotangents,
                                    const Options& o) {
  const ProgramBatch b(programs, values, obs, o);
  nb::gil_scoped_release release;
  std::vector<ValuesAndGradient> out;
  for (AdjointResult& r : vjp_batch(b.items, b.observables, cotangents, b.precision, b.engine))
    out.emplace_back(std::move(r.expvals), std::move(r.gradient));
  return out;
}

// The observables, each checked to act on the program's qubits.
std::vector<PauliSum> observables_on(int n, const std::vector<std::vector<TermSpec>>& obs) {
  std::vector<PauliSum> h = make_observables(obs);
  for (const PauliSum& s : h) check_observable_fits(s, n, "observable");
  return h;
}

// The branches of a dynamic program's walk: (classical record, probability,
// shots, final state as complex128 (empty unless `states`), <H_k>,
// probabilities (empty unless `probabilities`)), exactly (shots = 0) or of
// `shots` shots.
using Branch =
    std::tuple<std::uint64_t, double, std::int64_t, nb::ndarray<nb::numpy, std::complex<double>>,
               std::vector<double>, RealArray>;
std::vector<Branch> branches(const Program& p, const std::vector<double>& values,
                             std::int64_t shots, std::uint64_t seed, const Options& o,
                             const std::vector<std::vector<TermSpec>>& obs, bool probabilities,
                             bool states) {
  if (shots < 0) throw Error("shots: " + std::to_string(shots) + " is negative");
  SimulateRequest req;
  req.leaves = true;
  req.leaf_states = states;
  req.observables = observables_on(p.circuit.num_qubits(), obs);
  req.probabilities = probabilities;
  req.shots = shots;
  req.seed = seed;
  const BatchItem item = item_of(p, values);
  const Precision precision = precision_of(o);
  const EngineOptions e = engine_of(o);
  std::vector<DynamicLeaf> leaves;
  {
    nb::gil_scoped_release release;
    leaves = std::move(simulate_batch({item}, req, precision, e)[0].leaves);
  }
  std::vector<Branch> out;
  for (DynamicLeaf& leaf : leaves) {
    const std::size_t size = leaf.state.size(), dim = leaf.probabilities.size();
    out.emplace_back(leaf.record, leaf.probability, leaf.shots,
                     to_numpy(std::move(leaf.state), {size}), std::move(leaf.expvals),
                     to_numpy(std::move(leaf.probabilities), {dim}));
  }
  return out;
}

// <H_k> of an OpenQASM 2.0 / 3 program without inputs, read and run in this
// process: `qmlsim run` without the process start (the peers bench's warm column).
std::vector<double> expvals_qasm(const std::string& text,
                                 const std::vector<std::vector<TermSpec>>& obs, const Options& o) {
  const QasmProgram prog = parse_qasm(text, "<qasm>");
  if (!prog.inputs.empty())
    throw Error("<qasm>: a program with inputs needs their values (qmlsim run --input)");
  SimulateRequest req;
  req.observables = observables_on(prog.circuit.num_qubits(), obs);
  const Precision precision = precision_of(o);
  const EngineOptions e = engine_of(o);
  nb::gil_scoped_release release;
  return simulate_batch({{&prog.circuit, prog.angles, {}}}, req, precision, e)[0].expvals;
}

// The final state of an OpenQASM 2.0 / 3 program as complex128 (its global
// phase included), every input given by name in `inputs`.
nb::ndarray<nb::numpy, std::complex<double>> state_qasm(
    const std::string& text, const std::map<std::string, std::vector<double>>& inputs,
    const Options& o) {
  QasmProgram prog = parse_qasm(text, "<qasm>");
  prog.bind_inputs(prog.input_values(inputs));
  return final_state({&prog.circuit, prog.angles, {}}, prog.global_phase, o);
}

// An OpenQASM program parsed once and run for many bindings of its inputs (the
// engine behind qmlsim.qiskit: a circuit is exported and parsed once, then each
// call runs a whole batch of parameter bindings). Input values are columns in
// the order of inputs().
class QasmRunner {
 public:
  // `initial`: the state the program starts from (program.h:
  // check_initial_state), or empty for |0...0>.
  QasmRunner(const std::string& text, std::vector<cplx> initial)
      : prog_(parse_qasm(text, "<qasm>")), initial_(std::move(initial)) {
    check_initial_state(initial_, num_qubits());
  }

  int num_qubits() const { return prog_.circuit.num_qubits(); }
  std::vector<std::tuple<std::string, int>> inputs() const {
    std::vector<std::tuple<std::string, int>> out;
    for (const QasmInput& in : prog_.inputs) out.emplace_back(in.name, in.size);
    return out;
  }

  // <H_k> for every binding (row of x) and observable: [binding][k].
  RealArray expvals(const Matrix2& x, const std::vector<std::vector<TermSpec>>& obs,
                    const Options& o) const {
    SimulateRequest req;
    req.observables = observables_on(num_qubits(), obs);
    std::vector<double> out;
    for (const SimulateResult& r : run(x, req, o))
      out.insert(out.end(), r.expvals.begin(), r.expvals.end());
    return to_numpy(std::move(out), {x.shape(0), req.observables.size()});
  }

  // |amplitude|^2 of every basis state for every binding: [binding][2^n].
  RealArray probabilities(const Matrix2& x, const Options& o) const {
    SimulateRequest req;
    req.probabilities = true;
    std::vector<double> out;
    for (const SimulateResult& r : run(x, req, o))
      out.insert(out.end(), r.probabilities.begin(), r.probabilities.end());
    return to_numpy(std::move(out), {x.shape(0), std::size_t{1} << num_qubits()});
  }

  // d<H_{which[i]}>/d(input value) for every binding i, by the adjoint method
  // (one forward and one backward pass per binding), and <H_{which[i]}>:
  // ([binding][input value], [binding]).
  std::tuple<RealArray, RealArray> gradients(const Matrix2& x,
                                             const std::vector<std::vector<TermSpec>>& obs,
                                             const std::vector<int>& which,
                                             const Options& o) const {
    const std::vector<PauliSum> h = observables_on(num_qubits(), obs);
    if (which.size() != x.shape(0))
      throw Error("observable indices: " + std::to_string(which.size()) + " for " +
                  std::to_string(x.shape(0)) + " bindings");
    std::vector<std::vector<PauliSum>> own;  // binding i's VJP is of h[which[i]]
    for (int w : which) {
      if (w < 0 || static_cast<std::size_t>(w) >= h.size())
        throw Error("observable index " + std::to_string(w) + " is out of range");
      own.push_back({h[static_cast<std::size_t>(w)]});
    }
    const std::vector<std::vector<double>> thetas = bind(x);
    const Precision precision = precision_of(o);
    const EngineOptions e = engine_of(o);
    std::vector<double> grads, values;
    {
      nb::gil_scoped_release release;
      std::vector<BatchItem> items;
      for (std::size_t i = 0; i < thetas.size(); ++i)
        items.push_back({&prog_.circuit, thetas[i], initial_, &own[i]});
      const std::vector<std::vector<double>> ones(items.size(), {1.0});
      const std::vector<AdjointResult> r = vjp_batch(items, {}, ones, precision, e);
      for (std::size_t i = 0; i < items.size(); ++i) {
        const std::vector<double> g = prog_.input_gradient(row(x, i), r[i].gradient);
        grads.insert(grads.end(), g.begin(), g.end());
        values.push_back(r[i].expvals[0]);
      }
    }
    const auto p = static_cast<std::size_t>(prog_.num_input_values());
    return {to_numpy(std::move(grads), {x.shape(0), p}), to_numpy(std::move(values), {x.shape(0)})};
  }

  bool dynamic() const { return prog_.circuit.has_dynamic(); }
  std::vector<std::tuple<std::string, int>> registers() const {
    std::vector<std::tuple<std::string, int>> out;
    for (const auto& [name, size] : prog_.clbit_registers) out.emplace_back(name, size);
    return out;
  }

  // A dynamic program's classical records over `shots` shots for every
  // binding (each seeded with `seed`): [binding] -> [(record, count)].
  std::vector<RecordCounts> records(const Matrix2& x, std::int64_t shots, std::uint64_t seed,
                                    const Options& o) const {
    const std::vector<std::vector<double>> thetas = bind(x);
    std::vector<BatchItem> items;
    for (const std::vector<double>& theta : thetas)
      items.push_back({&prog_.circuit, theta, initial_});
    return record_counts(items, shots, seed, o);
  }

 private:
  std::span<const double> row(const Matrix2& x, std::size_t i) const {
    return {x.data() + i * x.shape(1), x.shape(1)};
  }
  // The angles of every binding; a non-finite angle is an Error located in the program.
  std::vector<std::vector<double>> bind(const Matrix2& x) const {
    std::vector<std::vector<double>> thetas;
    for (std::size_t i = 0; i < x.shape(0); ++i) thetas.push_back(prog_.angles_at(row(x, i)));
    return thetas;
  }
  // The request run at every binding of x.
  std::vector<SimulateResult> run(const Matrix2& x, const SimulateRequest& req,
                                  const Options& o) const {
    const std::vector<std::vector<double>> thetas = bind(x);
    const Precision precision = precision_of(o);
    const EngineOptions e = engine_of(o);
    nb::gil_scoped_release release;
    std::vector<BatchItem> items;
    for (const std::vector<double>& theta : thetas)
      items.push_back({&prog_.circuit, theta, initial_});
    return simulate_batch(items, req, precision, e);
  }

  QasmProgram prog_;
  std::vector<cplx> initial_;
};

}  // namespace

// The gate table for the Python doors, which derive their gate maps from it.
nb::dict gate_table() {
  nb::dict table;
  for (int i = 0; i < static_cast<int>(GateId::kCount); ++i) {
    const GateInfo& g = gate_info(static_cast<GateId>(i));
    const GateInfo& inv = gate_info(g.inverse.gate);
    nb::list from, constants;
    for (int j = 0; j < inv.num_params; ++j) {
      from.append(static_cast<int>(g.inverse.negate_from[j]));
      constants.append(g.inverse.constant[j]);
    }
    nb::dict row;
    row["wires"] = g.num_wires;
    row["params"] = g.num_params;
    row["controls"] = g.num_controls;
    row["diagonal"] = g.diagonal;
    row["shift_terms"] = g.shift_terms;
    row["inverse"] = nb::make_tuple(std::string(inv.name), from, constants, g.inverse.phase);
    table[nb::str(g.name.data(), g.name.size())] = row;
  }
  return table;
}

namespace {

// The engine's options and the typed program the doors build.
void bind_program_types(nb::module_& m) {
  nb::class_<Options>(m, "Options")
      .def(nb::init<>())
      .def_rw("precision", &Options::precision)
      .def_rw("threads", &Options::threads)
      .def_rw("fusion", &Options::fusion)
      .def_rw("backend", &Options::backend)
      .def_rw("method", &Options::method)
      .def_rw("trajectories", &Options::trajectories)
      .def_rw("seed", &Options::seed)
      .def_rw("max_branches", &Options::max_branches)
      .def_rw("trajectory_estimate", &Options::trajectory_estimate);
  m.def(
      "check_backend",
      [](const std::string& backend) {
        Options o;
        o.backend = backend;
        backend_of(o);
      },
      nb::arg("backend"), "Raises ValueError when the backend cannot be used here.");
  m.def("gate_table", &gate_table,
        "The gate table: name -> {wires, params, controls, diagonal, shift_terms, inverse}, "
        "inverse = (gate, negate_from, constants, phase) as GateInfo::inverse says.");
  nb::class_<ProgramParam>(m, "Param")
      .def(nb::init<int, double, double>(), nb::arg("slot"), nb::arg("scale") = 1.0,
           nb::arg("shift") = 0.0)
      .def_ro("slot", &ProgramParam::slot)
      .def_ro("scale", &ProgramParam::scale)
      .def_ro("shift", &ProgramParam::shift)
      .def("__repr__", [](const ProgramParam& p) {
        return "Param(" + std::to_string(p.slot) + ", " + std::to_string(p.scale) + ", " +
               std::to_string(p.shift) + ")";
      });
  nb::class_<ProgramOp>(m, "Op")
      .def(nb::init<std::string, std::vector<int>, std::vector<ProgramParamArg>, std::vector<int>,
                    std::vector<bool>, std::vector<cplx>, std::vector<std::vector<cplx>>, int,
                    std::vector<int>, std::uint64_t, bool>(),
           nb::arg("gate"), nb::arg("targets"), nb::arg("params") = std::vector<ProgramParamArg>{},
           nb::arg("controls") = std::vector<int>{},
           nb::arg("control_values") = std::vector<bool>{}, nb::arg("matrix") = std::vector<cplx>{},
           nb::arg("kraus") = std::vector<std::vector<cplx>>{}, nb::arg("clbit") = -1,
           nb::arg("condition_bits") = std::vector<int>{}, nb::arg("condition_value") = 0,
           nb::arg("condition_negated") = false,
           "A gate of the table on its targets (intrinsic controls first), under extra controls "
           "(on |1>, or |0> where control_values is False); parameters are literals or Param; "
           "matrix (first target most significant) for QubitUnitary only. Or a noise channel "
           "of the channel table (Braket's names: 'depolarizing', 'amplitude_damping', ...) on "
           "its targets; kraus (flat matrices, first target most significant) for 'kraus'. "
           "Or 'measure' (into classical bit clbit; -1: none) or 'reset' on one target. Any op "
           "runs only where classical bits condition_bits hold condition_value (bit j for "
           "condition_bits[j]), or where they do not with condition_negated.")
      .def(nb::init<const ProgramOp&>(), nb::arg("op"), "A copy of op.")
      .def_ro("gate", &ProgramOp::gate)
      .def_ro("targets", &ProgramOp::targets)
      .def_ro("controls", &ProgramOp::controls)
      .def_rw("clbit", &ProgramOp::clbit)
      .def_rw("condition_bits", &ProgramOp::condition_bits)
      .def_rw("condition_value", &ProgramOp::condition_value)
      .def_rw("condition_negated", &ProgramOp::condition_negated);
  nb::class_<Program>(m, "Program")
      .def(nb::init<int, const std::vector<ProgramOp>&, int, std::vector<cplx>, double, int>(),
           nb::arg("num_qubits"), nb::arg("ops"), nb::arg("num_params") = 0,
           nb::arg("initial_state") = std::vector<cplx>{}, nb::arg("global_phase") = 0.0,
           nb::arg("num_clbits") = 0,
           "Operations on num_qubits qubits over num_params parameters, checked once; runs start "
           "from initial_state (default |0...0>; 2^n amplitudes, or a density matrix as 4^n "
           "entries, row-major) and states come back times e^{i global_phase}.")
      .def_prop_ro("num_qubits", [](const Program& p) { return p.circuit.num_qubits(); })
      .def_ro("num_params", &Program::num_params)
      .def_prop_ro("dynamic", [](const Program& p) { return p.circuit.has_dynamic(); })
      .def_ro("global_phase", &Program::global_phase);
}

// Runs of programs: single and batched, values, gradients, states, branches
// and samples.
void bind_runs(nb::module_& m) {
  m.def(
      "state",
      [](const Program& p, const std::vector<double>& values, const Options& o) {
        return final_state(item_of(p, values), p.global_phase, o);
      },
      nb::arg("program"), nb::arg("values"), nb::arg("options"),
      "The final state (complex128 array, bit q of an index = qubit q).");
  m.def(
      "expvals",
      [](const Program& p, const std::vector<double>& values,
         const std::vector<std::vector<TermSpec>>& obs,
         const Options& o) { return expvals_batch({&p}, {values}, obs, o)[0]; },
      nb::arg("program"), nb::arg("values"), nb::arg("observables"), nb::arg("options"),
      "<H_k> for each Pauli sum H_k.");
  m.def(
      "jacobian",
      [](const Program& p, const std::vector<double>& values,
         const std::vector<std::vector<TermSpec>>& obs,
         const Options& o) { return jacobians({&p}, {values}, obs, o)[0]; },
      nb::arg("program"), nb::arg("values"), nb::arg("observables"), nb::arg("options"),
      "(<H_k>, d<H_k>/d(parameter) for every program parameter) by the adjoint method.");
  m.def(
      "vjp",
      [](const Program& p, const std::vector<double>& values,
         const std::vector<std::vector<TermSpec>>& obs, const std::vector<double>& cotangent,
         const Options& o) { return vjps({&p}, {values}, obs, {cotangent}, o)[0]; },
      nb::arg("program"), nb::arg("values"), nb::arg("observables"), nb::arg("cotangent"),
      nb::arg("options"),
      "(<H_k>, sum_k cotangent[k] d<H_k>/d(parameter)): one adjoint backward pass.");
  m.def(
      "state_vjp",
      [](const Program& p, const std::vector<double>& values,
         nb::ndarray<const std::complex<double>, nb::ndim<1>, nb::c_contig> cotangent,
         const Options& o) {
        std::vector<cplx> g(cotangent.data(), cotangent.data() + cotangent.shape(0));
        const BatchItem item = item_of(p, values);
        EngineOptions e = engine_of(o);
        if (!item.initial_state.empty()) e.initial_state = item.initial_state;
        if (!choose_method(*item.circuit, e)
                 .density_matrix()) {  // states: e^{i phase} the engine's
          const std::complex<double> turn = std::polar(1.0, p.global_phase);
          for (cplx& x : g) x *= turn;
        }
        const Precision precision = precision_of(o);
        nb::gil_scoped_release release;
        return precision == Precision::c64 ? state_vjp<float>(*item.circuit, item.theta, g, e)
                                           : state_vjp<double>(*item.circuit, item.theta, g, e);
      },
      nb::arg("program"), nb::arg("values"), nb::arg("cotangent"), nb::arg("options"),
      "d/d(parameter) Re sum_i cotangent[i] state[i] (the state as state() returns it, a "
      "density matrix row-major): one adjoint backward pass from the cotangent.");
  m.def("branches", &branches, nb::arg("program"), nb::arg("values"), nb::arg("shots"),
        nb::arg("seed"), nb::arg("options"),
        nb::arg("observables") = std::vector<std::vector<TermSpec>>{},
        nb::arg("probabilities") = false, nb::arg("states") = true,
        "The branches of a dynamic program (mid-circuit measurements, resets, conditions): "
        "[(classical record, probability, shots, final state, <H_k>, probabilities)], every "
        "branch of probability above 1e-14 when shots = 0 (up to options.max_branches), else "
        "the branches the shots take (each shot collapsing the state as a device would; "
        "probability = its share). The state only with states=True, the probabilities of "
        "every basis state only with probabilities=True.");
  m.def(
      "records",
      [](const Program& p, const std::vector<double>& values, std::int64_t shots,
         std::uint64_t seed,
         const Options& o) { return record_counts({item_of(p, values)}, shots, seed, o)[0]; },
      nb::arg("program"), nb::arg("values"), nb::arg("shots"), nb::arg("seed"), nb::arg("options"),
      "A dynamic program's classical records over shots shots (each collapsing the state at "
      "each measurement): [(record, count)].");
  m.def(
      "counts",
      [](const Program& p, const std::vector<double>& values, std::int64_t shots,
         std::uint64_t seed, const Options& o) {
        const SimulateResult r = shot_runs({item_of(p, values)}, shots, seed, o)[0];
        return RecordCounts(r.counts.begin(), r.counts.end());
      },
      nb::arg("program"), nb::arg("values"), nb::arg("shots"), nb::arg("seed"), nb::arg("options"),
      "Basis-state outcomes over shots shots as the engine samples them (a noisy program by "
      "the method the options choose; by trajectories each draws its share): [(outcome, "
      "count)], bit q of an outcome = qubit q.");
  m.def("expvals_qasm", &expvals_qasm, nb::arg("text"), nb::arg("observables"), nb::arg("options"),
        "<H_k> of an OpenQASM 2.0 / 3 program (no inputs).");
  m.def("state_qasm", &state_qasm, nb::arg("text"), nb::arg("inputs"), nb::arg("options"),
        "The final state of an OpenQASM 2.0 / 3 program, its global phase included.");
  m.def("expvals_batch", &expvals_batch, nb::arg("programs"), nb::arg("values"),
        nb::arg("observables"), nb::arg("options"),
        "<H_k> for many programs in one call (threads across items when states are small).");
  m.def("probabilities_batch", &probabilities_batch, nb::arg("programs"), nb::arg("values"),
        nb::arg("options"),
        "|amplitude|^2 of every basis state for many programs of one qubit count in one call: "
        "[item][2^n] (a density matrix's diagonal for noisy programs).");
  m.def("jacobian_batch", &jacobians, nb::arg("programs"), nb::arg("values"),
        nb::arg("observables"), nb::arg("options"),
        "Adjoint Jacobians of many programs in one call, with their expectation values: "
        "[item] = (<H_k>, [observable][parameter]).");
  m.def("vjp_batch", &vjps, nb::arg("programs"), nb::arg("values"), nb::arg("observables"),
        nb::arg("cotangents"), nb::arg("options"),
        "Adjoint VJPs of many programs in one call: [item] = (<H_k>, sum_k cotangents[item][k] "
        "d<H_k>/d(parameter)).");
}

// OpenQASM runners, tables and helpers the doors use.
void bind_tools(nb::module_& m) {
  nb::class_<QasmRunner>(m, "QasmRunner")
      .def(nb::init<const std::string&, std::vector<cplx>>(), nb::arg("text"),
           nb::arg("initial") = std::vector<cplx>{})
      .def_prop_ro("num_qubits", &QasmRunner::num_qubits)
      .def("inputs", &QasmRunner::inputs, "(name, number of values) of every input, in order.")
      .def("expvals", &QasmRunner::expvals, nb::arg("x"), nb::arg("observables"),
           nb::arg("options"), "<H_k> for every binding (row of x): [binding][k].")
      .def("gradients", &QasmRunner::gradients, nb::arg("x"), nb::arg("observables"),
           nb::arg("which"), nb::arg("options"),
           "(d<H_which[i]>/d(input value) [binding][value], <H_which[i]> [binding]) by the "
           "adjoint method.")
      .def("probabilities", &QasmRunner::probabilities, nb::arg("x"), nb::arg("options"),
           "|amplitude|^2 of every basis state: [binding][2^n].")
      .def_prop_ro("dynamic", &QasmRunner::dynamic,
                   "Whether the program is dynamic (mid-circuit measurement, reset, if).")
      .def("registers", &QasmRunner::registers,
           "(name, size) of every classical register in declaration order; a record's bits "
           "are numbered across them in that order.")
      .def("records", &QasmRunner::records, nb::arg("x"), nb::arg("shots"), nb::arg("seed"),
           nb::arg("options"),
           "A dynamic program's classical records over shots shots (each collapsing the state "
           "at each measurement) for every binding: [binding] -> [(record, count)].");
  m.def(
      "read_through",
      [](const std::vector<TermSpec>& terms,
         const std::vector<std::optional<std::pair<double, double>>>& flips) {
        ReadoutError e;
        for (std::size_t q = 0; q < flips.size(); ++q) {
          if (!flips[q]) {
            e.qubits.emplace_back();
            continue;
          }
          const ReadoutFlip f{flips[q]->first, flips[q]->second};
          check_readout_flip(f, "readout error of qubit " + std::to_string(q));
          e.qubits.emplace_back(f);
        }
        std::vector<TermSpec> out;
        for (const PauliTerm& t : read_through(make_observables({terms})[0], e).terms)
          out.emplace_back(t.coeff, t.xmask, t.zmask);
        return out;
      },
      nb::arg("terms"), nb::arg("flips"),
      "Terms (coefficient, X mask, Z mask) whose expectation value is what `terms` reads through "
      "readout errors: per qubit (P(1|0), P(0|1)) or None.");
  m.def("max_qubits", [] { return kMaxQubits; });
  m.def(
      "method",
      [](const Program& p, const Options& o) {
        EngineOptions e = engine_of(o);
        e.initial_state = p.initial;
        return std::string(choose_method(p.circuit, e).name());
      },
      nb::arg("program"), nb::arg("options"),
      "How the engine runs the program under these options: 'statevector', 'density_matrix' or "
      "'trajectories' (the engine's one choice, grad/method.h).");
  m.def(
      "parse_pauli_sum",
      [](const std::string& text) {
        std::vector<TermSpec> out;
        for (const PauliTerm& t : parse_pauli_sum(text, "observable").terms)
          out.emplace_back(t.coeff, t.xmask, t.zmask);
        return out;
      },
      nb::arg("text"), "Terms (coefficient, X mask, Z mask) of a sum such as \"0.5*Z0*Z1 - X2\".");
}

}  // namespace

NB_MODULE(_qmlsim, m) {
  m.doc() = "qmlsim's C++ state-vector engine (see the qmlsim package for the Python API)";
  // The doors cache translated programs (Op and Program instances) in module
  // state that Python may not free before nanobind's exit-time check; this
  // binding takes and releases no references by hand, so that check would
  // only report those caches.
  nb::set_leak_warnings(false);
  // Errors users cause keep their one-line message; a state too large for
  // memory is a MemoryError naming its size.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const OutOfMemory& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  bind_program_types(m);
  bind_runs(m);
  bind_tools(m);
}
