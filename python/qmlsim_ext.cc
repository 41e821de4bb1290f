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
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "backends/cuda/statevector.h"
#include "circuit/circuit.h"
#include "circuit/observable.h"
#include "circuit/qasm.h"
#include "core/error.h"
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
};

Backend backend_of(const Options& o) {
  if (o.backend == "cpu") return Backend::cpu;
  if (o.backend != "cuda") throw Error("backend: '" + o.backend + "' is not one of cpu, cuda");
  cuda::select_device(cuda::local_rank_from_env());
  return Backend::cuda;
}

// A starting state: empty (|0...0>), or 2^n normalised amplitudes.
void check_initial_state(const std::vector<cplx>& initial, int n) {
  if (initial.empty()) return;
  if (initial.size() != (std::size_t{1} << n))
    throw Error("initial state: " + std::to_string(initial.size()) + " amplitudes for " +
                std::to_string(n) + " qubit(s)");
  double norm = 0;
  for (const cplx& a : initial) norm += std::norm(a);
  if (!(std::abs(norm - 1) < 1e-6)) throw Error("initial state: not normalised");
}

// The typed program the Python doors hand over (python/qmlsim/_program.py
// builds it). A parameter is a literal or value = scale * values[slot] + shift
// of the program's parameter values (the IR's ParamExpr), so gradients come
// back per program parameter, chain rules of linear maps included.
struct Param {
  int slot = 0;
  double scale = 1.0;
  double shift = 0.0;
};
using ParamArg = std::variant<double, Param>;

// One gate of the table on `targets` (its own wires, intrinsic controls first),
// under extra `controls` (on |1>, or on |0> where control_values says false);
// `matrix` (first target most significant) for QubitUnitary only. Or a noise
// channel of the channel table (circuit/channels.h) on `targets`, without
// controls; `kraus` (each first target most significant) for "kraus" only.
struct Op {
  std::string gate;
  std::vector<int> targets;
  std::vector<ParamArg> params;
  std::vector<int> controls;
  std::vector<bool> control_values;
  std::vector<cplx> matrix;
  std::vector<std::vector<cplx>> kraus;
};

// A circuit on num_qubits qubits over num_params parameters, checked and
// converted once; runs start from `initial_state` (empty: |0...0>), and
// states come back times e^{i global_phase}.
struct Program {
  Circuit circuit;
  int num_params = 0;
  std::vector<cplx> initial;
  double global_phase = 0;

  Program(int n, const std::vector<Op>& ops, int params, std::vector<cplx> initial_state,
          double phase)
      : circuit(check_qubits(n)),
        num_params(params),
        initial(std::move(initial_state)),
        global_phase(phase) {
    if (num_params < 0) throw Error("num_params: " + std::to_string(num_params) + " is negative");
    if (!std::isfinite(global_phase)) throw Error("global phase: not a finite number");
    check_initial_state(initial, n);
    for (const Op& op : ops) add(op);
  }

  // The parameter values as the engine's slots, checked.
  std::span<const double> theta(const std::vector<double>& values) const {
    if (values.size() != static_cast<std::size_t>(num_params))
      throw Error("parameter values: " + std::to_string(values.size()) + " for a program of " +
                  std::to_string(num_params) + " parameter(s)");
    for (double v : values)
      if (!std::isfinite(v)) throw Error("parameter values: not a finite number");
    return values;
  }

 private:
  static int check_qubits(int n) {
    if (n < 1 || n > kMaxQubits)
      throw Error("wires: " + std::to_string(n) + " is out of range (1 to " +
                  std::to_string(kMaxQubits) + " qubits)");
    return n;
  }

  ParamExpr param(const ParamArg& arg, const std::string& name) const {
    if (const double* v = std::get_if<double>(&arg)) {
      if (!std::isfinite(*v)) throw Error(name + ": parameter is not a finite number");
      return ParamExpr::literal(*v);
    }
    const Param& p = std::get<Param>(arg);
    if (p.slot < 0 || p.slot >= num_params)
      throw Error(name + ": parameter slot " + std::to_string(p.slot) + " is out of range (" +
                  std::to_string(num_params) + " parameters)");
    if (!std::isfinite(p.scale) || !std::isfinite(p.shift))
      throw Error(name + ": parameter scale or shift is not a finite number");
    return ParamExpr::ref(p.slot, p.scale, p.shift);
  }

  void add_channel(ChannelId id, const Op& spec) {
    if (!spec.controls.empty()) throw Error("channel " + spec.gate + ": takes no controls");
    Operation op;
    op.channel = id;
    op.wires = spec.targets;
    for (const ParamArg& arg : spec.params) op.params.push_back(param(arg, "channel " + spec.gate));
    if (id == ChannelId::kraus) {
      std::vector<Matrix> kraus(spec.kraus.begin(), spec.kraus.end());
      op.kraus = std::make_shared<const std::vector<Matrix>>(std::move(kraus));
    } else if (!spec.kraus.empty()) {
      throw Error("channel " + spec.gate + ": Kraus matrices are for the channel 'kraus' only");
    }
    circuit.add(std::move(op));
  }

  void add(const Op& spec) {
    if (const std::optional<ChannelId> ch = channel_by_name(spec.gate))
      return add_channel(*ch, spec);
    const std::optional<GateId> g = gate_by_name(spec.gate);
    if (!g) throw Error("unknown gate or channel '" + spec.gate + "'");
    if (!spec.control_values.empty() && spec.control_values.size() != spec.controls.size())
      throw Error("gate " + spec.gate + ": " + std::to_string(spec.control_values.size()) +
                  " control value(s) for " + std::to_string(spec.controls.size()) + " control(s)");
    std::vector<int> flips;  // controls on |0>: X before and after
    for (std::size_t i = 0; i < spec.control_values.size(); ++i)
      if (!spec.control_values[i]) flips.push_back(spec.controls[i]);
    for (int q : flips) circuit.add(GateId::X, {q});
    Operation op;
    op.gate = *g;
    op.wires = spec.targets;
    op.controls = spec.controls;
    for (const ParamArg& arg : spec.params) op.params.push_back(param(arg, "gate " + spec.gate));
    if (*g == GateId::QubitUnitary) op.unitary = std::make_shared<Matrix>(spec.matrix);
    circuit.add(std::move(op));
    for (int q : flips) circuit.add(GateId::X, {q});
  }
};

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

EngineOptions engine(const Options& o) {
  EngineOptions e;
  e.threads = o.threads < 1 ? 1 : o.threads;
  e.fusion = o.fusion;
  e.backend = backend_of(o);
  const std::map<std::string, Method> methods = {{"auto", Method::automatic},
                                                 {"statevector", Method::statevector},
                                                 {"density_matrix", Method::density_matrix},
                                                 {"trajectories", Method::trajectories}};
  const auto m = methods.find(o.method);
  if (m == methods.end())
    throw Error("method: '" + o.method +
                "' is not one of auto, statevector, density_matrix, trajectories");
  e.method = m->second;
  if (o.trajectories < 1)
    throw Error("trajectories: " + std::to_string(o.trajectories) + " is not a positive number");
  e.trajectories = o.trajectories;
  e.seed = o.seed;
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

std::vector<BatchItem> items_of(const std::vector<const Program*>& programs,
                                const std::vector<std::vector<double>>& values) {
  if (programs.size() != values.size())
    throw Error("batch: " + std::to_string(values.size()) + " rows of parameter values for " +
                std::to_string(programs.size()) + " programs");
  std::vector<BatchItem> items;
  for (std::size_t i = 0; i < programs.size(); ++i)
    items.push_back(item_of(*programs[i], values[i]));
  return items;
}

SimulateRequest expvals_request(const std::vector<std::vector<TermSpec>>& obs) {
  SimulateRequest req;
  req.observables = make_observables(obs);
  return req;
}

// The final state of one item times e^{i phase} as complex128 (a density
// matrix, which no phase changes, row-major: rho[r][c] at r 2^n + c).
nb::ndarray<nb::numpy, std::complex<double>> final_state(const BatchItem& item, double phase,
                                                         const Options& o) {
  SimulateRequest req;
  req.state = true;
  std::vector<std::complex<double>> out;
  {
    const Precision precision = precision_of(o);
    const EngineOptions e = engine(o);
    nb::gil_scoped_release release;
    out = std::move(simulate_batch({item}, req, precision, e)[0].state);
    if (phase != 0 && !runs_on_density_matrix(*item.circuit, e)) {
      const std::complex<double> turn = std::polar(1.0, phase);
      for (std::complex<double>& amp : out) amp *= turn;
    }
  }
  const std::size_t size = out.size();
  return to_numpy(std::move(out), {size});
}

nb::ndarray<nb::numpy, std::complex<double>> state(const Program& p,
                                                   const std::vector<double>& values,
                                                   const Options& o) {
  return final_state(item_of(p, values), p.global_phase, o);
}

// <H_k> of many programs in one call: out[item][k].
std::vector<std::vector<double>> expvals_batch(const std::vector<const Program*>& programs,
                                               const std::vector<std::vector<double>>& values,
                                               const std::vector<std::vector<TermSpec>>& obs,
                                               const Options& o) {
  const std::vector<BatchItem> items = items_of(programs, values);
  const SimulateRequest req = expvals_request(obs);
  const Precision precision = precision_of(o);
  const EngineOptions e = engine(o);
  nb::gil_scoped_release release;
  std::vector<std::vector<double>> out;
  for (SimulateResult& r : simulate_batch(items, req, precision, e))
    out.push_back(std::move(r.expvals));
  return out;
}

std::vector<double> expvals(const Program& p, const std::vector<double>& values,
                            const std::vector<std::vector<TermSpec>>& obs, const Options& o) {
  return expvals_batch({&p}, {values}, obs, o)[0];
}

// The observables, each checked to act on the program's qubits.
std::vector<PauliSum> observables_on(int n, const std::vector<std::vector<TermSpec>>& obs) {
  std::vector<PauliSum> h = make_observables(obs);
  for (const PauliSum& s : h)
    if (s.min_qubits() > n)
      throw Error("observable: names qubit " + std::to_string(s.min_qubits() - 1) +
                  ", a qubit beyond the circuit's " + std::to_string(n));
  return h;
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
  const EngineOptions e = engine(o);
  nb::gil_scoped_release release;
  return simulate_batch({{&prog.circuit, prog.angles, {}}}, req, precision, e)[0].expvals;
}

// The final state of an OpenQASM 2.0 / 3 program as complex128 (its global
// phase included), every input given by name in `inputs`.
nb::ndarray<nb::numpy, std::complex<double>> state_qasm(
    const std::string& text, const std::map<std::string, std::vector<double>>& inputs,
    const Options& o) {
  QasmProgram prog = parse_qasm(text, "<qasm>");
  std::vector<double> x(static_cast<std::size_t>(prog.num_input_values()), 0.0);
  for (const auto& [name, values] : inputs) {
    const auto it = std::find_if(prog.inputs.begin(), prog.inputs.end(),
                                 [&](const QasmInput& in) { return in.name == name; });
    if (it == prog.inputs.end())
      throw Error("inputs: the program declares no input '" + name + "'");
    if (static_cast<int>(values.size()) != it->size) {
      throw Error("inputs: input '" + name + "' takes " + std::to_string(it->size) +
                  " value(s), got " + std::to_string(values.size()));
    }
    std::copy(values.begin(), values.end(), x.begin() + it->offset);
  }
  for (const QasmInput& in : prog.inputs)
    if (!inputs.count(in.name)) throw Error("inputs: input '" + in.name + "' needs a value");
  if (!x.empty()) prog.bind_inputs(x);
  return final_state({&prog.circuit, prog.angles, {}}, prog.global_phase, o);
}

// Jacobians of many programs in one call, with their expectation values:
// out[item] = (<H_k>, [k][parameter]).
using ValuesAndRows = std::tuple<std::vector<double>, std::vector<std::vector<double>>>;
std::vector<ValuesAndRows> program_jacobians(const std::vector<const Program*>& programs,
                                             const std::vector<std::vector<double>>& values,
                                             const std::vector<std::vector<TermSpec>>& obs,
                                             const Options& o) {
  const std::vector<BatchItem> items = items_of(programs, values);
  const std::vector<PauliSum> h = make_observables(obs);
  const Precision precision = precision_of(o);
  const EngineOptions e = engine(o);
  nb::gil_scoped_release release;
  std::vector<ValuesAndRows> out;
  for (JacobianResult& r : jacobian_batch(items, h, precision, e))
    out.emplace_back(std::move(r.expvals), std::move(r.rows));
  return out;
}

ValuesAndRows jacobian(const Program& p, const std::vector<double>& values,
                       const std::vector<std::vector<TermSpec>>& obs, const Options& o) {
  return program_jacobians({&p}, {values}, obs, o)[0];
}

// Vector-Jacobian products of many programs in one call: out[item] = (<H_k>,
// sum_k cotangents[item][k] d<H_k>/d(parameter)), one forward and one backward
// pass per item.
using ValuesAndGradient = std::tuple<std::vector<double>, std::vector<double>>;
std::vector<ValuesAndGradient> program_vjps(const std::vector<const Program*>& programs,
                                            const std::vector<std::vector<double>>& values,
                                            const std::vector<std::vector<TermSpec>>& obs,
                                            const std::vector<std::vector<double>>& cotangents,
                                            const Options& o) {
  const std::vector<BatchItem> items = items_of(programs, values);
  const std::vector<PauliSum> h = make_observables(obs);
  const Precision precision = precision_of(o);
  const EngineOptions e = engine(o);
  nb::gil_scoped_release release;
  std::vector<ValuesAndGradient> out;
  for (AdjointResult& r : vjp_batch(items, h, cotangents, precision, e))
    out.emplace_back(std::move(r.expvals), std::move(r.gradient));
  return out;
}

ValuesAndGradient vjp(const Program& p, const std::vector<double>& values,
                      const std::vector<std::vector<TermSpec>>& obs,
                      const std::vector<double>& cotangent, const Options& o) {
  return program_vjps({&p}, {values}, obs, {cotangent}, o)[0];
}

// An OpenQASM program parsed once and run for many bindings of its inputs (the
// engine behind qmlsim.qiskit: a circuit is exported and parsed once, then each
// call runs a whole batch of parameter bindings). Input values are columns in
// the order of inputs().
class QasmRunner {
 public:
  // `initial`: the state the program starts from (2^n amplitudes, normalised),
  // or empty for |0...0>.
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
    const std::size_t k = req.observables.size();
    std::vector<double> out;
    for (const SimulateResult& r : run(x, req, o))
      out.insert(out.end(), r.expvals.begin(), r.expvals.end());
    const std::size_t rows = x.shape(0);
    return to_numpy(std::move(out), {rows, k});
  }

  // |amplitude|^2 of every basis state for every binding: [binding][2^n].
  RealArray probabilities(const Matrix2& x, const Options& o) const {
    SimulateRequest req;
    req.probabilities = true;
    std::vector<double> out;
    for (const SimulateResult& r : run(x, req, o))
      out.insert(out.end(), r.probabilities.begin(), r.probabilities.end());
    const std::size_t rows = x.shape(0);
    return to_numpy(std::move(out), {rows, std::size_t{1} << num_qubits()});
  }

  // d<H_{which[i]}>/d(input value) for every binding i, by the adjoint method
  // (one forward and one backward pass per binding), and <H_{which[i]}>:
  // ([binding][input value], [binding]).
  std::tuple<RealArray, RealArray> gradients(const Matrix2& x,
                                             const std::vector<std::vector<TermSpec>>& obs,
                                             const std::vector<int>& which,
                                             const Options& o) const {
    const std::vector<PauliSum> h = observables_on(num_qubits(), obs);
    const std::vector<std::vector<double>> thetas = bind(x);
    if (which.size() != thetas.size())
      throw Error("observable indices: " + std::to_string(which.size()) + " for " +
                  std::to_string(thetas.size()) + " bindings");
    for (int w : which)
      if (w < 0 || static_cast<std::size_t>(w) >= h.size())
        throw Error("observable index " + std::to_string(w) + " is out of range");
    const std::size_t p = static_cast<std::size_t>(prog_.num_input_values());
    std::vector<double> grads(thetas.size() * p), values(thetas.size());
    {
      const Precision precision = precision_of(o);
      const EngineOptions e = engine(o);
      nb::gil_scoped_release release;
      // Binding i's VJP of its own observable h[which[i]].
      std::vector<std::vector<PauliSum>> own;
      for (int w : which) own.push_back({h[static_cast<std::size_t>(w)]});
      std::vector<BatchItem> items;
      for (std::size_t i = 0; i < thetas.size(); ++i)
        items.push_back({&prog_.circuit, thetas[i], initial_, &own[i]});
      const std::vector<std::vector<double>> ones(items.size(), {1.0});
      const std::vector<AdjointResult> r = vjp_batch(items, {}, ones, precision, e);
      for (std::size_t i = 0; i < items.size(); ++i) {
        const std::vector<double> g = prog_.input_gradient(row(x, i), r[i].gradient);
        std::copy(g.begin(), g.end(), grads.begin() + static_cast<std::ptrdiff_t>(i * p));
        values[i] = r[i].expvals[0];
      }
    }
    return {to_numpy(std::move(grads), {thetas.size(), p}),
            to_numpy(std::move(values), {thetas.size()})};
  }

 private:
  std::span<const double> row(const Matrix2& x, std::size_t i) const {
    const std::size_t p = x.shape(1);
    return {x.data() + i * p, p};
  }
  // The angles of every binding; a non-finite angle is an Error located in the program.
  std::vector<std::vector<double>> bind(const Matrix2& x) const {
    const auto p = static_cast<std::size_t>(prog_.num_input_values());
    if (x.shape(1) != p)
      throw Error("parameter values: " + std::to_string(x.shape(1)) +
                  " per binding, the circuit has " + std::to_string(p));
    std::vector<std::vector<double>> thetas;
    for (std::size_t i = 0; i < x.shape(0); ++i) {
      for (double v : row(x, i))
        if (!std::isfinite(v)) throw Error("parameter values: not a finite number");
      thetas.push_back(prog_.angles_at(row(x, i)));
    }
    return thetas;
  }
  // The request run at every binding of x.
  std::vector<SimulateResult> run(const Matrix2& x, const SimulateRequest& req,
                                  const Options& o) const {
    const std::vector<std::vector<double>> thetas = bind(x);
    std::vector<BatchItem> items;
    for (const std::vector<double>& theta : thetas)
      items.push_back({&prog_.circuit, theta, initial_});
    const Precision precision = precision_of(o);
    const EngineOptions e = engine(o);
    nb::gil_scoped_release release;
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
  nb::class_<Options>(m, "Options")
      .def(nb::init<>())
      .def_rw("precision", &Options::precision)
      .def_rw("threads", &Options::threads)
      .def_rw("fusion", &Options::fusion)
      .def_rw("backend", &Options::backend)
      .def_rw("method", &Options::method)
      .def_rw("trajectories", &Options::trajectories)
      .def_rw("seed", &Options::seed);
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
  nb::class_<Param>(m, "Param")
      .def(nb::init<int, double, double>(), nb::arg("slot"), nb::arg("scale") = 1.0,
           nb::arg("shift") = 0.0)
      .def_ro("slot", &Param::slot)
      .def_ro("scale", &Param::scale)
      .def_ro("shift", &Param::shift)
      .def("__repr__", [](const Param& p) {
        return "Param(" + std::to_string(p.slot) + ", " + std::to_string(p.scale) + ", " +
               std::to_string(p.shift) + ")";
      });
  nb::class_<Op>(m, "Op")
      .def(nb::init<std::string, std::vector<int>, std::vector<ParamArg>, std::vector<int>,
                    std::vector<bool>, std::vector<cplx>, std::vector<std::vector<cplx>>>(),
           nb::arg("gate"), nb::arg("targets"), nb::arg("params") = std::vector<ParamArg>{},
           nb::arg("controls") = std::vector<int>{},
           nb::arg("control_values") = std::vector<bool>{}, nb::arg("matrix") = std::vector<cplx>{},
           nb::arg("kraus") = std::vector<std::vector<cplx>>{},
           "A gate of the table on its targets (intrinsic controls first), under extra controls "
           "(on |1>, or |0> where control_values is False); parameters are literals or Param; "
           "matrix (first target most significant) for QubitUnitary only. Or a noise channel "
           "of the channel table (Braket's names: 'depolarizing', 'amplitude_damping', ...) on "
           "its targets; kraus (flat matrices, first target most significant) for 'kraus'.")
      .def_ro("gate", &Op::gate)
      .def_ro("targets", &Op::targets)
      .def_ro("controls", &Op::controls);
  nb::class_<Program>(m, "Program")
      .def(nb::init<int, const std::vector<Op>&, int, std::vector<cplx>, double>(),
           nb::arg("num_qubits"), nb::arg("ops"), nb::arg("num_params") = 0,
           nb::arg("initial_state") = std::vector<cplx>{}, nb::arg("global_phase") = 0.0,
           "Operations on num_qubits qubits over num_params parameters, checked once; runs start "
           "from initial_state (default |0...0>) and states come back times e^{i global_phase}.")
      .def_prop_ro("num_qubits", [](const Program& p) { return p.circuit.num_qubits(); })
      .def_ro("num_params", &Program::num_params)
      .def_ro("global_phase", &Program::global_phase);
  m.def("state", &state, nb::arg("program"), nb::arg("values"), nb::arg("options"),
        "The final state (complex128 array, bit q of an index = qubit q).");
  m.def("expvals", &expvals, nb::arg("program"), nb::arg("values"), nb::arg("observables"),
        nb::arg("options"), "<H_k> for each Pauli sum H_k.");
  m.def("expvals_qasm", &expvals_qasm, nb::arg("text"), nb::arg("observables"), nb::arg("options"),
        "<H_k> of an OpenQASM 2.0 / 3 program (no inputs).");
  m.def("state_qasm", &state_qasm, nb::arg("text"), nb::arg("inputs"), nb::arg("options"),
        "The final state of an OpenQASM 2.0 / 3 program, its global phase included.");
  m.def("jacobian", &jacobian, nb::arg("program"), nb::arg("values"), nb::arg("observables"),
        nb::arg("options"),
        "(<H_k>, d<H_k>/d(parameter) for every program parameter) by the adjoint method.");
  m.def("vjp", &vjp, nb::arg("program"), nb::arg("values"), nb::arg("observables"),
        nb::arg("cotangent"), nb::arg("options"),
        "(<H_k>, sum_k cotangent[k] d<H_k>/d(parameter)): one adjoint backward pass.");
  m.def("expvals_batch", &expvals_batch, nb::arg("programs"), nb::arg("values"),
        nb::arg("observables"), nb::arg("options"),
        "<H_k> for many programs in one call (threads across items when states are small).");
  m.def("jacobian_batch", &program_jacobians, nb::arg("programs"), nb::arg("values"),
        nb::arg("observables"), nb::arg("options"),
        "Adjoint Jacobians of many programs in one call, with their expectation values: "
        "[item] = (<H_k>, [observable][parameter]).");
  m.def("vjp_batch", &program_vjps, nb::arg("programs"), nb::arg("values"), nb::arg("observables"),
        nb::arg("cotangents"), nb::arg("options"),
        "Adjoint VJPs of many programs in one call: [item] = (<H_k>, sum_k cotangents[item][k] "
        "d<H_k>/d(parameter)).");
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
           "|amplitude|^2 of every basis state: [binding][2^n].");
  m.def("max_qubits", [] { return kMaxQubits; });
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
