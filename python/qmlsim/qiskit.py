"""Qiskit on qmlsim's engine: V2 primitives and an adjoint gradient.

- ``Estimator``: a ``BaseEstimatorV2`` (PUBs of circuit, observables, parameter
  values, precision, with Qiskit's broadcasting rules), results as
  ``StatevectorEstimator`` gives them. All bindings of one circuit in one
  ``run`` go to the C++ engine as one batch.
- ``Sampler``: a ``BaseSamplerV2`` (shots, seeded; classical registers and
  final ``measure`` into them, bits ordered as ``StatevectorSampler`` orders them).
- ``EstimatorGradient``: a ``qiskit_machine_learning`` ``BaseEstimatorGradient``
  computing exact gradients by the adjoint method (one forward and one backward
  pass per binding), for ``EstimatorQNN(..., gradient=EstimatorGradient())``.
- ``Backend``: a ``BackendV2`` for ``transpile`` + ``backend.run`` scripts, with
  counts as ``AerSimulator`` gives them.

A circuit is translated once (cached per circuit object): exported with
``qiskit.qasm3.dumps`` (every standard gate, ``UnitaryGate`` and
``PauliEvolutionGate`` through their definitions; an Aer noise model's errors
as noise channels, ``_qiskit_noise``) and read by qmlsim's OpenQASM 3 reader,
whose ``input`` angles carry the circuit's parameters: parameter expressions
(``0.3*theta + phi``, ``ParameterVector`` elements, ``sin``) are evaluated in
C++ and differentiated by the chain rule. Qubit q of the circuit
is qubit q of the observables (Qiskit's order: the rightmost Pauli letter acts
on qubit 0). ``delay`` and ``barrier`` are identities. ``Estimator`` runs
dynamic circuits (``reset`` after a gate, ``measure`` then gates, ``if_test``
on measured bits) exactly, as the mixture over outcomes; gradients of them,
and ``Sampler``/``Backend`` runs of mid-circuit measurements, are not
supported yet (a ``ValueError``). Instructions the engine cannot run
(``while_loop``, ``switch``, ``initialize`` anywhere but first on every
qubit) are a ``ValueError`` naming the instruction and its line in the
exported program. An ``initialize`` or
``StatePreparation`` on every qubit as the first instruction is the engine's
starting state. ``PauliEvolutionGate`` runs through its definition (its
synthesis: Lie-Trotter by default), as transpiled for hardware; for commuting
terms (QAOA, ``QAOAAnsatz``) that is exact, for non-commuting ones it differs
from ``StatevectorEstimator``, which exponentiates the operator exactly.

Qiskit is an optional dependency: ``pip install qiskit`` (and
``qiskit-machine-learning`` for ``EstimatorGradient``).
"""
from __future__ import annotations

import atexit
import time
import uuid
import weakref
from collections import Counter
from typing import Iterable

import numpy as np
from qiskit import QuantumCircuit, QuantumRegister, qasm3
from qiskit.circuit import Parameter, ParameterExpression
from qiskit.primitives import (BaseEstimatorV2, BaseSamplerV2, BitArray, DataBin, PrimitiveJob,
                               PrimitiveResult, PubResult, SamplerPubResult)
from qiskit.primitives.containers.estimator_pub import EstimatorPub
from qiskit.primitives.containers.sampler_pub import SamplerPub
from qiskit.providers import BackendV2, JobStatus, JobV1, Options
from qiskit.quantum_info import SparsePauliOp
from qiskit.result import Result

from . import _qmlsim
from ._program import engine_options, options
from ._qiskit_noise import (check_noise_model, mark_channels, pragmas, readout_bits,
                            readout_matrices, readout_terms, with_noise)

__all__ = ["Estimator", "Sampler", "EstimatorGradient", "Backend"]


_WHO = "qmlsim.qiskit: "
# Aer's simulation methods as the engine's: with noise, Aer's statevector
# method samples trajectories.
_METHODS = {"automatic": "auto", "auto": "auto", "density_matrix": "density_matrix",
            "statevector": "trajectories", "trajectories": "trajectories"}


class _Settings:
    """A primitive's engine options and noise model, from qmlsim's keywords and
    Aer's ``options`` dict (``backend_options``: noise_model, method,
    precision ("single"/"double"), seed_simulator, max_parallel_threads;
    ``run_options``: shots (trajectories of a noisy run by trajectories),
    seed; ``default_precision``/``default_shots``)."""

    def __init__(self, precision, threads, fusion, noise_model, method, trajectories, seed,
                 aer_options, defaults: dict):
        aer = dict(aer_options or {})
        backend = dict(aer.pop("backend_options", None) or {})
        run = dict(aer.pop("run_options", None) or {})
        self.defaults = {k: aer.pop(k) for k in list(aer) if k in defaults}
        if aer:
            raise ValueError(f"{_WHO}unknown options: {', '.join(sorted(aer))} (backend_options, "
                             f"run_options, {', '.join(defaults)})")
        known = {"noise_model", "method", "precision", "seed_simulator", "max_parallel_threads"}
        unknown = sorted(set(backend) - known)
        if unknown:
            raise ValueError(f"{_WHO}unknown backend_options: {', '.join(unknown)} "
                             f"({', '.join(sorted(known))})")
        if set(run) - {"shots", "seed"}:
            raise ValueError(f"{_WHO}unknown run_options: "
                             f"{', '.join(sorted(set(run) - {'shots', 'seed'}))} (shots, seed)")
        noise_model = backend.get("noise_model", noise_model)
        method = backend.get("method", method)
        if method not in _METHODS:
            raise ValueError(f"{_WHO}method must be one of {', '.join(_METHODS)}, got {method!r}")
        if "precision" in backend:
            if backend["precision"] not in ("single", "double"):
                raise ValueError(f"{_WHO}backend_options precision must be 'single' or 'double'")
            precision = "c64" if backend["precision"] == "single" else "c128"
        if "max_parallel_threads" in backend:  # Aer's 0: every core
            threads = backend["max_parallel_threads"] or None
        seed = backend.get("seed_simulator", run.get("seed", seed))
        trajectories = run.get("shots", None) or trajectories
        self.noise_model = check_noise_model(noise_model, _WHO)
        self.checked = engine_options(precision, threads, fusion, who=_WHO,
                                      method=_METHODS[method], trajectories=trajectories,
                                      seed=1 if seed is None else seed)
        self.engine = options(self.checked)


def _registers_partition(circuit: QuantumCircuit) -> bool:
    """Whether every clbit is in exactly one of the circuit's registers."""
    bits = [b for r in circuit.cregs for b in r]
    return len(bits) == circuit.num_clbits == len(set(bits)) and circuit.num_clbits > 0


class _Translation:
    """A circuit as the engine runs it: the parsed program, and for each of its
    input values the index of the circuit parameter it carries. With a noise
    model, its errors (and `measure` errors on the `measured` qubits) are
    channels of the program (_qiskit_noise)."""

    def __init__(self, circuit: QuantumCircuit, noise_model=None, measured: tuple = ()):
        self.parameters = list(circuit.parameters)
        flat = QuantumCircuit(circuit.num_qubits, circuit.num_clbits)  # one register each
        if _registers_partition(circuit):  # the circuit's own, which conditions may name
            flat = QuantumCircuit(QuantumRegister(circuit.num_qubits, "q"), *circuit.cregs)
        flat.compose(circuit, inplace=True)
        flat = with_noise(flat, noise_model, measured)  # Aer's delay noise needs the delays
        flat.data = [i for i in flat.data if i.operation.name != "delay"]  # identity here
        self._preparation = _parametrised_preparation(flat)  # a start that varies per row
        initial = [] if self._preparation else _initial_state(flat)
        if len(initial) or self._preparation:
            flat.data = flat.data[1:]
        flat, kraus = mark_channels(flat)
        flat = _standard_gates_only(flat)
        flat.global_phase = 0  # unobservable here, and possibly a parameter expression
        if self.parameters:
            flat = flat.assign_parameters(  # a preparation's parameters left with it
                {p: Parameter(f"qmlsim_p{i}") for i, p in enumerate(self.parameters)},
                strict=False)
        try:
            text = pragmas(qasm3.dumps(flat), kraus)
        except Exception as e:  # the exporter's own refusal, e.g. an opaque instruction
            raise ValueError(f"cannot translate the circuit: {e}") from e
        try:
            self.runner = _qmlsim.QasmRunner(text, initial)
        except ValueError as e:
            line = _line_of(str(e), text)
            raise ValueError(f"the circuit is not supported: {e}{line}") from None
        self._text = text
        self.columns = np.array([int(name[len("qmlsim_p"):]) for name, _ in self.runner.inputs()],
                                dtype=np.int64)
        self.num_qubits = circuit.num_qubits
        self.readout = readout_matrices(noise_model, circuit.num_qubits)
        self._index = {p: k for k, p in enumerate(self.parameters)}

    def rows(self, parameter_values: np.ndarray) -> np.ndarray:
        """Parameter values of any shape (..., parameters) as rows."""
        x = np.asarray(parameter_values, dtype=np.float64)
        return x.reshape(int(np.prod(x.shape[:-1], dtype=np.int64)), len(self.parameters))

    def values(self, parameter_values: np.ndarray) -> np.ndarray:
        """Rows of input values from rows of circuit parameter values."""
        x = self.rows(parameter_values)
        return np.ascontiguousarray(x[:, self.columns]) if len(self.columns) else \
            np.zeros((x.shape[0], 0))

    @property
    def preparation_parameters(self) -> set:
        """The parameters of a parametrised state preparation (the start)."""
        if not self._preparation:
            return set()
        return set().union(*(p.parameters for p in self._preparation.operation.params
                             if isinstance(p, ParameterExpression)))

    def call(self, method: str, parameter_values, *args):
        """runner.<method>(input rows, *args) for rows of circuit parameter
        values: one call; with a parametrised state preparation (Qiskit ML's
        raw_feature_vector) one per row from that row's starting state, the
        results joined row by row."""
        x = self.values(parameter_values)
        if not self._preparation:
            return getattr(self.runner, method)(x, *args)
        per_row = [getattr(_qmlsim.QasmRunner(self._text, self._start(row)), method)(
            x[i:i + 1], *args) for i, row in enumerate(self.rows(parameter_values))]
        if isinstance(per_row[0], tuple):
            return tuple(np.concatenate(parts) for parts in zip(*per_row))
        if isinstance(per_row[0], list):
            return [r for rows in per_row for r in rows]
        return np.concatenate(per_row)

    def _start(self, row: np.ndarray) -> list:
        """The state the parametrised preparation prepares at a row of values
        (its amplitudes normalised, as ParameterizedInitialize does), |0> on
        the other qubits."""
        op = self._preparation.operation
        bound = [complex(p.bind({q: row[self._index[q]] for q in p.parameters}))
                 if isinstance(p, ParameterExpression) else complex(p) for p in op.params]
        return _prepared(self.num_qubits, bound, self._preparation.qubits)


_KEPT = {"measure", "barrier", "reset", "initialize"}  # exported as they are (or refused)


# A circuit's first instruction that sets its starting state.
_PREPARATIONS = ("initialize", "state_preparation", "ParameterizedInitialize")


def _parametrised_preparation(circuit: QuantumCircuit):
    """The circuit's first instruction when it is an `initialize` or state
    preparation with parameters (on any of the qubits, nothing before it),
    else None: its starting state is made per row of values."""
    if not circuit.data:
        return None
    first = circuit.data[0]
    op = first.operation
    if op.name not in _PREPARATIONS:
        return None
    if not any(isinstance(p, ParameterExpression) for p in op.params):
        return None
    return first


def _initial_state(circuit: QuantumCircuit) -> list:
    """The state an `initialize` or state preparation on any of the qubits, as
    the circuit's first instruction, prepares (|0> on the others; Qiskit
    computes it), or [] if the circuit does not start so. Elsewhere they are
    refused when exported."""
    if not circuit.data:
        return []
    first = circuit.data[0]
    op = first.operation
    if op.name not in _PREPARATIONS or any(isinstance(p, ParameterExpression) for p in op.params):
        return []
    return _prepared(circuit.num_qubits, op.params, first.qubits)


def _prepared(n: int, params, qubits) -> list:
    """The n-qubit state a state preparation with these parameters on these
    qubits makes from |0...0>: amplitudes normalised (as Qiskit ML's
    ParameterizedInitialize does), or a label or integer as Qiskit reads it."""
    from qiskit.circuit.library import StatePreparation
    from qiskit.quantum_info import Statevector
    if all(isinstance(p, (int, float, complex, np.number)) for p in params) and len(params) > 1:
        amplitudes = np.asarray(params, dtype=complex)
        params = amplitudes / np.linalg.norm(amplitudes)
    prep = QuantumCircuit(n)
    prep.append(StatePreparation(params), qubits)
    return list(Statevector(prep).data)


def _standard_gates_only(circuit: QuantumCircuit) -> QuantumCircuit:
    """`circuit` with every instruction outside Qiskit's standard gate library
    replaced by its definition, recursively. (Qiskit's exporter names the
    parameters of a composite gate's definition after the circuit parameters in
    its body but passes them in the instruction's order, which scrambles them
    when the orders differ, as in QAOAAnsatz: only standard gates are exported.)"""
    from qiskit.circuit.library import get_standard_gate_name_mapping
    standard = set(get_standard_gate_name_mapping()) | _KEPT
    for _ in range(64):
        others = {i.operation.name for i in circuit.data} - standard
        if not others:
            break
        unrolled = circuit.decompose(gates_to_decompose=sorted(others))
        if len(unrolled.data) == len(circuit.data) and all(
                a.operation.name == b.operation.name for a, b in zip(unrolled.data, circuit.data)):
            break  # nothing has a definition: the exporter or the reader says why
        circuit = unrolled
    return circuit


def _line_of(message: str, text: str) -> str:
    """The exported line an error of the reader points at ("<qasm>:L:C: ...")."""
    parts = message.split(":")
    if len(parts) > 2 and parts[0] == "<qasm>" and parts[1].isdigit():
        lines = text.splitlines()
        k = int(parts[1]) - 1
        if 0 <= k < len(lines):
            return f" (in `{lines[k].strip()}`)"
    return ""


_CACHE: dict = {}  # id(circuit) -> (weak reference, fingerprint, noise model, translation)
atexit.register(_CACHE.clear)  # engine objects go before the extension module does


def _value_key(p):
    """A hashable stand-in for an instruction parameter, equal exactly when the
    values are (numbers, expressions, matrices, a control-flow block)."""
    if isinstance(p, QuantumCircuit):
        return _content_key(p)
    if isinstance(p, np.ndarray):
        return (p.dtype.str, p.shape, p.tobytes())
    try:
        hash(p)
        return p
    except TypeError:
        return repr(p)


def _content_key(circuit: QuantumCircuit) -> tuple:
    """The circuit's content: each instruction's name, qubits, classical bits,
    parameters and condition (control-flow blocks within), and the global
    phase. A circuit edited in place (cleared and rebuilt, an instruction
    replaced, a parameter changed) gets another key, whatever its length."""
    qubit = {q: i for i, q in enumerate(circuit.qubits)}
    clbit = {c: i for i, c in enumerate(circuit.clbits)}
    ops = []
    for item in circuit.data:
        op = item.operation
        condition = getattr(op, "condition", None)
        ops.append((op.name, tuple(qubit[q] for q in item.qubits),
                    tuple(clbit[c] for c in item.clbits),
                    tuple(_value_key(p) for p in op.params),
                    None if condition is None else repr(condition)))
    return (circuit.num_qubits, circuit.num_clbits, _value_key(circuit.global_phase), tuple(ops))


def _noise_key(noise_model) -> tuple | None:
    """The noise model's errors by instruction and qubits (each error object by
    identity: they are not edited in place), so an error added later counts."""
    if noise_model is None:
        return None
    local = tuple(sorted((name, tuple(sorted((qs, id(e)) for qs, e in by_qubits.items())))
                         for name, by_qubits in noise_model._local_quantum_errors.items()))
    default = tuple(sorted((name, id(e))
                           for name, e in noise_model._default_quantum_errors.items()))
    readout = tuple(sorted((qs, id(e)) for qs, e in noise_model._local_readout_errors.items()))
    return (id(noise_model), local, default, readout, id(noise_model._default_readout_error))


def _translate(circuit: QuantumCircuit, noise_model=None, measured: tuple = ()) -> _Translation:
    """The cached translation of `circuit` under `noise_model`, made again
    whenever the circuit's content or the noise model's errors changed
    (circuits are not hashable, so the cache is keyed by identity, checked
    against the content, and an entry leaves with its circuit)."""
    key = (_content_key(circuit), _noise_key(noise_model), measured)
    hit = _CACHE.get(id(circuit))
    if hit is not None and hit[0]() is circuit and hit[1] == key and hit[2] is noise_model:
        return hit[3]
    t = _Translation(circuit, noise_model, measured)
    k = id(circuit)
    _CACHE[k] = (weakref.ref(circuit, lambda _, k=k: _CACHE.pop(k, None)), key, noise_model, t)
    return t


def _terms(observable, num_qubits: int) -> list:
    """(coefficient, X mask, Z mask) terms of a Pauli sum: a {label: coeff}
    mapping (an ObservablesArray element) or anything SparsePauliOp accepts."""
    if isinstance(observable, dict):
        items = observable.items()
    else:
        op = observable if isinstance(observable, SparsePauliOp) else SparsePauliOp(observable)
        items = zip(op.paulis.to_labels(), op.coeffs)
    terms = []
    for label, coeff in items:
        c = complex(coeff)
        if abs(c.imag) > 1e-12 * max(1.0, abs(c.real)):
            raise ValueError(f"observable: the coefficient {coeff} of {label} is not real "
                             "(observables must be Hermitian)")
        if len(label) != num_qubits:
            raise ValueError(f"observable: {label} acts on {len(label)} qubits, the circuit has "
                             f"{num_qubits}")
        x = z = 0
        for q, ch in enumerate(reversed(label)):
            if ch in "XY":
                x |= 1 << q
            if ch in "ZY":
                z |= 1 << q
            if ch not in "IXYZ":
                raise ValueError(f"observable: {label} is not a Pauli string")
        terms.append((c.real, x, z))
    return terms


class Estimator(BaseEstimatorV2):
    """``BaseEstimatorV2`` on qmlsim's engine. ``default_precision`` and ``seed``
    behave as in Qiskit's ``StatevectorEstimator`` (precision > 0 adds seeded
    Gaussian noise of that width to exact values; ``EstimatorQNN`` asks for 1/64
    unless given ``default_precision=0``). ``precision`` ("c64" or "c128") is
    the amplitudes' precision; ``threads`` (default: all cores) and ``fusion``
    (gate fusion width, 0 = off) as in the rest of qmlsim.

    Noise as Aer's ``EstimatorV2`` takes it: ``noise_model`` (an Aer
    ``NoiseModel``), or ``options={"backend_options": {"noise_model": nm,
    "method": ...}, "run_options": {...}}``; exact values on the density matrix
    (method "automatic" or "density_matrix"), or the mean of ``trajectories``
    (run_options ``shots``) with method "statevector". Readout errors count
    (Aer's ignores them): see ``qmlsim._qiskit_noise``."""

    def __init__(self, *, default_precision: float = 0.0, seed=None, precision: str = "c128",
                 threads: int | None = None, fusion: int = 3, noise_model=None,
                 method: str = "automatic", trajectories: int = 1000, options: dict | None = None):
        s = _Settings(precision, threads, fusion, noise_model, method, trajectories, seed, options,
                      {"default_precision": default_precision})
        self._default_precision = s.defaults.get("default_precision", default_precision)
        self._seed = seed
        self._engine = s.engine
        self._noise_model = s.noise_model

    @property
    def default_precision(self) -> float:
        return self._default_precision

    @property
    def engine_options(self) -> "_qmlsim.Options":
        return self._engine

    @property
    def noise_model(self):
        return self._noise_model

    def run(self, pubs: Iterable, *, precision: float | None = None) -> PrimitiveJob:
        if precision is None:
            precision = self._default_precision
        coerced = [EstimatorPub.coerce(pub, precision) for pub in pubs]
        job = PrimitiveJob(self._run, coerced)
        job._submit()
        return job

    def _run(self, pubs: list) -> PrimitiveResult:
        # Bindings of PUBs that share a circuit run as one batch.
        exact = self._exact_values(pubs)
        return PrimitiveResult([self._result(pub, evs) for pub, evs in zip(pubs, exact)],
                               metadata={"version": 2})

    def _exact_values(self, pubs: list) -> list:
        groups: dict = {}
        for i, pub in enumerate(pubs):
            groups.setdefault(id(pub.circuit), []).append(i)
        out = [None] * len(pubs)
        for members in groups.values():
            t = _translate(pubs[members[0]].circuit, self._noise_model)
            rows, observables, plan = [], [], []
            for i in members:
                pub = pubs[i]
                pv = pub.parameter_values
                x = pv.as_array(t.parameters) if t.parameters else np.zeros(pv.shape + (0,))
                obs = pub.observables
                first_row, first_obs = len(rows), len(observables)
                rows.extend(t.rows(x))
                for o in obs.ravel().tolist():
                    observables.append(readout_terms(_terms(o, t.num_qubits), t.readout))
                plan.append((i, first_row, pv.shape, first_obs, obs.shape))
            x = np.array(rows, dtype=np.float64).reshape(len(rows), len(t.parameters))
            values = t.call("expvals", x, observables, self._engine)  # [row][observable]
            for i, first_row, pv_shape, first_obs, obs_shape in plan:
                row = first_row + np.arange(int(np.prod(pv_shape, dtype=int))).reshape(pv_shape)
                col = first_obs + np.arange(int(np.prod(obs_shape, dtype=int))).reshape(obs_shape)
                row, col = np.broadcast_arrays(row, col)
                out[i] = values[row, col]
        return out

    def _result(self, pub, evs: np.ndarray) -> PubResult:
        precision = pub.precision
        evs = np.array(evs, dtype=np.float64)
        if precision != 0:
            rng = np.random.default_rng(self._seed)
            for index in np.ndindex(*evs.shape):
                evs[index] = rng.normal(evs[index], precision)
        data = DataBin(evs=evs, stds=np.zeros_like(evs), shape=evs.shape)
        return PubResult(data, metadata={"target_precision": precision,
                                         "circuit_metadata": pub.circuit.metadata})


def _final_measurements(circuit: QuantumCircuit):
    """{clbit index: qubit} of the final measurements, and the circuit without
    them; a measurement followed by a gate on its qubit is a ValueError
    (mid-circuit measurement)."""
    mapping, done = {}, set()
    kept = []
    for item in reversed(circuit.data):
        name = item.operation.name
        if name == "measure":
            q = circuit.find_bit(item.qubits[0]).index
            if q in done:
                raise ValueError(f"qubit {q} is measured and then used again: mid-circuit "
                                 "measurement is not supported")
            mapping.setdefault(circuit.find_bit(item.clbits[0]).index, q)
            continue
        if name not in ("barrier", "delay"):
            done.update(circuit.find_bit(b).index for b in item.qubits)
        kept.append(item)
    stripped = circuit.copy_empty_like()
    for item in reversed(kept):
        stripped.append(item)
    return mapping, stripped


_CONTROL_FLOW = {"if_else", "while_loop", "for_loop", "switch_case", "box"}


def _dynamic(circuit: QuantumCircuit) -> bool:
    """Whether a circuit is dynamic: control flow, a reset after a gate, or an
    operation on a qubit after its measurement."""
    touched, measured = set(), set()
    for item in circuit.data:
        name = item.operation.name
        qubits = {circuit.find_bit(q).index for q in item.qubits}
        if name in _CONTROL_FLOW or (name == "reset" and qubits & touched):
            return True
        if name == "measure":
            measured |= qubits
        elif name not in ("barrier", "delay") and qubits & measured:
            return True
        touched |= qubits
    return False


def _engine_seed(seed) -> int:
    """An int seed for the engine from a Sampler's seed (int, Generator or None)."""
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(1 << 62))
    if seed is None:
        return int(np.random.default_rng().integers(1 << 62))
    return int(seed) & ((1 << 64) - 1)


def _sample_dynamic(circuit: QuantumCircuit, bindings, shots: int, seed, engine,
                    noise_model=None) -> np.ndarray:
    """_sample for a dynamic circuit: every shot collapses the state at each
    mid-circuit measurement (the engine splits the shots over the outcome
    branches); bits [binding][shot][clbit] in a seeded random order."""
    t = _translate(circuit, noise_model, ())
    if any(m is not None for m in t.readout):
        raise ValueError("qmlsim.qiskit: readout errors of a noise model on a dynamic circuit "
                         "are not supported")
    if bindings is None:
        x = np.zeros((1, len(t.parameters)))
    else:
        x = bindings.as_array(t.parameters) if t.parameters else np.zeros(bindings.shape + (0,))
    where = []  # the circuit clbit of each record bit
    for name, size in t.runner.registers():
        reg = next((r for r in circuit.cregs if r.name == name), None)
        if reg is None or len(reg) != size:
            raise ValueError(f"qmlsim.qiskit: classical register {name!r} of the exported "
                             "program is not one of the circuit's")
        where.extend(circuit.find_bit(b).index for b in reg)
    records = t.call("records", x, shots, _engine_seed(seed), engine)
    rng = np.random.default_rng(seed)
    bits = np.zeros((len(records), shots, circuit.num_clbits), dtype=bool)
    for b, counts in enumerate(records):
        per_shot = np.repeat([r for r, _ in counts], [c for _, c in counts])
        per_shot = per_shot[rng.permutation(shots)]
        for k, clbit in enumerate(where):
            bits[b, :, clbit] = (per_shot >> k) & 1
    return bits


def _sample(circuit: QuantumCircuit, bindings, shots: int, seed, engine,
            noise_model=None) -> np.ndarray:
    """Classical bits [binding][shot][clbit] of `shots` runs of `circuit` for
    every binding (a BindingsArray, or None for a circuit without parameters).
    Outcomes over the measured qubits in ascending order are drawn as
    StatevectorSampler draws them: each binding from a generator seeded afresh
    with `seed`; unmeasured clbits are 0. With a noise model, the outcomes of
    its noisy circuit, read through its readout errors."""
    if _dynamic(circuit):
        return _sample_dynamic(circuit, bindings, shots, seed, engine, noise_model)
    mapping, stripped = _final_measurements(circuit)
    t = _translate(stripped, noise_model, tuple(sorted(set(mapping.values()))))
    if bindings is None:
        x = np.zeros((1, len(t.parameters)))
    else:
        x = bindings.as_array(t.parameters) if t.parameters else np.zeros(bindings.shape + (0,))
    probs = t.call("probabilities", x, engine)
    n = t.num_qubits
    qargs = sorted(set(mapping.values()))
    position = {q: k for k, q in enumerate(qargs)}
    others = tuple(n - 1 - q for q in range(n) if q not in position)
    outcomes = np.zeros((probs.shape[0], shots), dtype=np.int64)
    for b in range(probs.shape[0]):
        if not qargs:
            continue
        p = np.clip(probs[b], 0, None).reshape([2] * n).sum(axis=others).ravel()
        rng = np.random.default_rng(seed)
        outcomes[b] = rng.choice(p.size, size=shots, p=p / p.sum())
    bits = np.zeros((probs.shape[0], shots, circuit.num_clbits), dtype=bool)
    for clbit, q in mapping.items():
        bits[:, :, clbit] = (outcomes >> position[q]) & 1
    readout_seed = seed if seed is None or isinstance(seed, np.random.Generator) else [seed, 1]
    return readout_bits(bits, mapping, t.readout, readout_seed)


class Sampler(BaseSamplerV2):
    """``BaseSamplerV2`` on qmlsim's engine: ``default_shots`` (1024, as
    ``StatevectorSampler``) and ``seed`` (an int or a Generator): outcomes are
    drawn as ``StatevectorSampler`` draws them, so the same seed gives the same
    bits as it does. Each binding's final state is computed once in C++;
    results are ``BitArray``s per classical register, bit j of a register being
    its clbit j. Noise as ``Estimator`` takes it (and Aer's ``SamplerV2``):
    outcomes from the noisy circuit's exact distribution, read through the
    noise model's readout errors."""

    def __init__(self, *, default_shots: int = 1024, seed=None, precision: str = "c128",
                 threads: int | None = None, fusion: int = 3, noise_model=None,
                 method: str = "automatic", options: dict | None = None):
        s = _Settings(precision, threads, fusion, noise_model, method, 1000, None, options,
                      {"default_shots": default_shots})
        self._default_shots = s.defaults.get("default_shots", default_shots)
        self._seed = seed
        self._engine = s.engine
        self._noise_model = s.noise_model

    @property
    def default_shots(self) -> int:
        return self._default_shots

    def run(self, pubs: Iterable, *, shots: int | None = None) -> PrimitiveJob:
        if shots is None:
            shots = self._default_shots
        coerced = [SamplerPub.coerce(pub, shots) for pub in pubs]
        job = PrimitiveJob(self._run, coerced)
        job._submit()
        return job

    def _run(self, pubs: list) -> PrimitiveResult:
        return PrimitiveResult([self._run_pub(pub) for pub in pubs], metadata={"version": 2})

    def _run_pub(self, pub) -> SamplerPubResult:
        circuit = pub.circuit
        pv = pub.parameter_values
        shape, shots = pv.shape, pub.shots
        bits = _sample(circuit, pv, shots, self._seed, self._engine,
                       self._noise_model)  # [binding][shot][clbit]
        meas = {}
        for creg in circuit.cregs:
            columns = [circuit.find_bit(b).index for b in creg]
            reg = bits[:, :, columns].reshape(shape + (shots, creg.size))
            meas[creg.name] = BitArray.from_bool_array(reg[..., ::-1], order="big")
        return SamplerPubResult(DataBin(**meas, shape=shape),
                                metadata={"shots": shots, "circuit_metadata": circuit.metadata})


def _estimator_gradient_base():
    try:
        from qiskit_machine_learning.gradients import BaseEstimatorGradient
    except ImportError:  # qiskit-machine-learning not installed: a stand-in base
        return object
    return BaseEstimatorGradient


class EstimatorGradient(_estimator_gradient_base()):
    """Exact gradients of expectation values by the adjoint method, as a
    ``qiskit_machine_learning`` ``BaseEstimatorGradient``: one forward and one
    backward pass per (circuit, observable, binding), all bindings of a circuit
    in one C++ call. Real derivatives only (``DerivativeType.REAL``, the
    default, which ``EstimatorQNN`` uses). ``estimator`` may be a qmlsim
    ``Estimator`` (its engine options are used) or omitted."""

    def __init__(self, estimator: Estimator | None = None, options=None, derivative_type=None,
                 pass_manager=None, *, precision: str = "c128", threads: int | None = None,
                 fusion: int = 3):
        from qiskit_machine_learning.gradients import BaseEstimatorGradient, DerivativeType
        if derivative_type is None:
            derivative_type = DerivativeType.REAL
        if derivative_type != DerivativeType.REAL:
            raise ValueError("EstimatorGradient computes real derivatives (DerivativeType.REAL)")
        if pass_manager is not None:
            raise ValueError("EstimatorGradient runs circuits as they are: no pass_manager")
        estimator = estimator if estimator is not None else Estimator(
            precision=precision, threads=threads, fusion=fusion)
        if not isinstance(estimator, Estimator):
            raise ValueError("EstimatorGradient runs on qmlsim's engine: give it a "
                             "qmlsim.qiskit.Estimator (or none)")
        BaseEstimatorGradient.__init__(self, estimator, options, derivative_type)
        self._engine = estimator.engine_options
        self._noise_model = estimator.noise_model

    def _run(self, circuits, observables, parameter_values, parameters, **options):
        from qiskit_machine_learning.gradients import EstimatorGradientResult
        groups: dict = {}
        for i, c in enumerate(circuits):
            groups.setdefault(id(c), []).append(i)
        gradients = [None] * len(circuits)
        for members in groups.values():
            t = _translate(circuits[members[0]], self._noise_model)
            index = {p: k for k, p in enumerate(t.parameters)}
            observable_terms, which, rows = [], [], []
            for i in members:
                prepared = t.preparation_parameters & set(parameters[i])
                if prepared:
                    raise ValueError("qmlsim.qiskit: the gradient by a parameter of a state "
                                     f"preparation ({sorted(p.name for p in prepared)[0]}, ...) "
                                     "is not supported")
                observable_terms.append(readout_terms(_terms(observables[i], t.num_qubits),
                                                      t.readout))
                which.append(len(observable_terms) - 1)
                rows.append(t.rows(np.asarray(parameter_values[i], dtype=np.float64))[0])
            x = np.array(rows, dtype=np.float64).reshape(len(rows), len(t.parameters))
            d_inputs, _ = t.call("gradients", x, observable_terms, which, self._engine)
            for row, i in enumerate(members):
                full = np.zeros(len(t.parameters))
                np.add.at(full, t.columns, d_inputs[row])  # an input per parameter it carries
                gradients[i] = np.array([full[index[p]] for p in parameters[i]])
        opts = Options(**options)
        return EstimatorGradientResult(gradients=gradients,
                                       metadata=[{"parameters": p} for p in parameters],
                                       options=opts)


class _Job(JobV1):
    """A job that ran when it was made (as Qiskit's BasicSimulator's do)."""

    def __init__(self, backend, job_id: str, result: Result):
        super().__init__(backend, job_id)
        self._result = result

    def submit(self):
        return None

    def result(self) -> Result:
        return self._result

    def status(self) -> JobStatus:
        return JobStatus.DONE


class Backend(BackendV2):
    """A ``BackendV2`` on qmlsim's engine, for ``transpile`` + ``backend.run``
    scripts: its ``Target`` holds Qiskit's standard gates (any number of qubits,
    no coupling map), and ``run(circuits, shots=1024, seed_simulator=None,
    memory=False)`` returns a ``Result`` whose counts and memory read as
    ``AerSimulator``'s (``result.get_counts(circuit)``). Outcomes are drawn as
    ``Sampler`` draws them; ``precision``, ``threads`` and ``fusion`` as
    elsewhere in qmlsim."""

    def __init__(self, *, precision: str = "c128", threads: int | None = None, fusion: int = 3,
                 noise_model=None, method: str = "automatic"):
        super().__init__(name="qmlsim_statevector", backend_version="0.1.0",
                         description="qmlsim state-vector simulator")
        s = _Settings(precision, threads, fusion, noise_model, method, 1000, None, None, {})
        self._engine = s.engine
        self._noise_model = s.noise_model
        from qiskit.circuit.library import get_standard_gate_name_mapping
        from qiskit.transpiler import Target
        self._target = Target(description="qmlsim", num_qubits=None)
        for name, gate in get_standard_gate_name_mapping().items():
            self._target.add_instruction(gate, properties=None, name=name)
        from qiskit.circuit import IfElseOp
        self._target.add_instruction(IfElseOp, name="if_else")  # dynamic circuits

    @property
    def target(self):
        return self._target

    @property
    def max_circuits(self):
        return None

    @classmethod
    def _default_options(cls) -> Options:
        return Options(shots=1024, seed_simulator=None, memory=False)

    def run(self, run_input, **options) -> _Job:
        unknown = set(options) - {"shots", "seed_simulator", "memory"}
        if unknown:
            raise ValueError(f"unknown run options: {', '.join(sorted(unknown))} "
                             "(shots, seed_simulator, memory)")
        opts = {**self.options.__dict__, **options}
        shots = opts["shots"]
        if not isinstance(shots, (int, np.integer)) or shots < 1:
            raise ValueError(f"shots: {shots!r} is not a positive integer")
        circuits = [run_input] if isinstance(run_input, QuantumCircuit) else list(run_input)
        results = []
        for circuit in circuits:
            if circuit.num_parameters:
                raise ValueError(f"circuit {circuit.name!r} has unbound parameters: "
                                 f"{', '.join(p.name for p in circuit.parameters)}")
            start = time.perf_counter()
            bits = _sample(circuit, None, int(shots), opts["seed_simulator"], self._engine,
                           self._noise_model)[0]
            weights = 1 << np.arange(circuit.num_clbits, dtype=np.int64)
            values = bits.astype(np.int64) @ weights if circuit.num_clbits else \
                np.zeros(int(shots), dtype=np.int64)
            memory = [hex(int(v)) for v in values]
            data = {"counts": dict(Counter(memory))}
            if opts["memory"]:
                data["memory"] = memory
            header = {
                "name": circuit.name,
                "n_qubits": circuit.num_qubits,
                "qreg_sizes": [[r.name, r.size] for r in circuit.qregs],
                "creg_sizes": [[r.name, r.size] for r in circuit.cregs],
                "memory_slots": circuit.num_clbits,
                "global_phase": float(circuit.global_phase),
                "metadata": circuit.metadata or {},
            }
            results.append({"name": circuit.name, "shots": int(shots), "success": True,
                            "status": "DONE", "seed_simulator": opts["seed_simulator"],
                            "data": data, "header": header,
                            "time_taken": time.perf_counter() - start})
        job_id = str(uuid.uuid4())
        result = Result.from_dict({"backend_name": self.name, "backend_version": "0.1.0",
                                   "job_id": job_id, "results": results, "status": "COMPLETED",
                                   "success": True})
        return _Job(self, job_id, result)
