"""TensorFlow Quantum's layer API on qmlsim's engine.

A TFQ script changes its import and nothing else::

    import qmlsim.tfq as tfq            # was: import tensorflow_quantum as tfq
    readout = tfq.layers.PQC(model_circuit, cirq.Z(qubits[-1]))(
        tfq.layers.AddCircuit()(data_input, prepend=cluster_state))

What is here, with TFQ 0.7.6's argument names and defaults:

- ``convert_to_tensor`` / ``from_tensor``: nested lists of ``cirq.Circuit`` and
  ``cirq.PauliSum`` (or ``cirq.PauliString``) as ``tf.string`` tensors (Cirq's
  JSON: any qubit type, not only ``GridQubit``), and back.
- ``layers.Expectation``, ``layers.PQC``, ``layers.ControlledPQC``: analytic
  expectation values of Pauli sums, a batch of circuits per C++ call (threads
  across circuits for small states). Gradients with respect to symbol values
  by the C++ adjoint method: one batched vector-Jacobian product on the
  backward pass (one forward and one backward sweep per circuit), chained
  through each gate's ``sympy`` exponent, also under ``differentiator=``
  ``Adjoint()`` or ``ParameterShift()``; the finite-difference
  differentiators and a user's own ``Differentiator`` run as TFQ runs them
  (``differentiators``). Backends other than ``'noiseless'`` and ``'noisy'``
  (and, for the ops, a Cirq simulator, whose noise model is applied) are a
  ``ValueError``.
- Noise: Cirq channels (``cirq.depolarize``, ``amplitude_damp``, ...,
  ``circuit.with_noise``) run exactly on the density matrix under either
  backend. ``backend='noisy'`` (which needs ``repetitions``, as TFQ's) and
  ``layers.NoisyPQC`` / ``NoisyControlledPQC`` with ``sample_based=False`` give
  the exact value that TFQ's ``repetitions`` trajectories estimate, except
  where that many trajectories cost less than the density matrix (R 2^n
  against 4^n, with a margin of 4: 12 qubits and 100 repetitions): there they
  estimate it from R trajectories as TFQ does (seeded from TensorFlow's
  random state; rows of a batch share the trajectories' seeds), with the
  adjoint gradient of the same trajectories (the exact gradient for channels
  such as damping, whose trajectories give none). With ``sample_based=True``,
  shots of the noisy circuit; gradients exact through the noise.
- ``layers.SampledExpectation`` (and ``PQC`` / ``ControlledPQC`` with
  ``repetitions``): each Pauli term estimated from ``repetitions`` shots in its
  basis; gradients are the exact adjoint gradient of the expectation values
  (TFQ's default, parameter shift on samples, estimates the same quantity).
- ``layers.Sample``: bit strings, a ``tf.RaggedTensor`` [batch, repetitions,
  <the circuit's qubits>] of int8, seeded by TensorFlow's random state.
- ``layers.AddCircuit``: append or prepend a circuit to every circuit of a batch.
- ``layers.State``: final state vectors (``tf.RaggedTensor`` [batch, 2**n],
  complex64, TFQ's qubit order: sorted qubits, the first most significant).

Gates: Cirq's gate families with symbolic exponents (``XPowGate``,
``YPowGate``, ``ZPowGate``, ``CZPowGate``, ``XX/YY/ZZPowGate``, ``rx/ry/rz``)
are differentiable; other gates (``HPowGate``, ``CNotPowGate``,
``PhasedXPowGate``, ``FSimGate``, ``ISwapPowGate``, ...) are decomposed by
Cirq into those where their parameters are symbols, and run as their matrix
where they are fixed.

Needs TensorFlow (TFQ 0.7.6's environment: TensorFlow 2.18 with
``TF_USE_LEGACY_KERAS=1`` and ``tf_keras``; Keras 3 works too) and cirq-core.
"""
from __future__ import annotations

import collections
import contextlib
import functools
import gc
import math
import threading
import types

import cirq
import numpy as np
import sympy
import tensorflow as tf

from . import _qmlsim
from . import _tfq_differentiators as differentiators
from ._cirq_ops import evaluate, observable_terms, steps
from ._program import Op, Param, Program, engine_options, options

__all__ = ["convert_to_tensor", "from_tensor", "layers", "get_expectation_op",
           "get_sampled_expectation_op", "differentiators", "noise"]

_WHO = "qmlsim.tfq: "
_lock = threading.Lock()
_gc_state = {"depth": 0, "was_enabled": False}  # see _no_gc


def _gc_paused(fn):
    """fn run inside _no_gc: the numpy functions behind the ops."""

    @functools.wraps(fn)
    def wrapper(*args):
        with _no_gc():
            return fn(*args)

    return wrapper


@contextlib.contextmanager
def _no_gc():
    """Python's cyclic GC paused while an op builds its engine operations
    (nested and concurrent ops share one pause): they are short-lived tuples
    and lists without cycles, which reference counting frees, and with
    TensorFlow's hundreds of thousands of live objects the collections they
    trigger cost 10x the work itself (a QCNN batch of 32: 23.5 ms against 2.3 ms)."""
    with _lock:
        if _gc_state["depth"] == 0:
            _gc_state["was_enabled"] = gc.isenabled()
            gc.disable()
        _gc_state["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _gc_state["depth"] -= 1
            if _gc_state["depth"] == 0 and _gc_state["was_enabled"]:
                gc.enable()


# -- serialization: Cirq's JSON in tf.string tensors

def _serialize(item):
    if isinstance(item, cirq.Circuit):
        return cirq.to_json(item, indent=None)
    if isinstance(item, (cirq.PauliString, cirq.PauliSum)):
        return cirq.to_json(cirq.PauliSum.wrap(item), indent=None)
    raise TypeError(f"qmlsim.tfq: expected cirq.Circuit, cirq.PauliSum or cirq.PauliString, "
                    f"got {type(item).__name__}")


def convert_to_tensor(items_to_convert, deterministic_proto_serialize=False):
    """Nested lists of circuits or Pauli sums as a ``tf.string`` tensor of the
    same shape. (``deterministic_proto_serialize`` is accepted for TFQ's
    signature; Cirq's JSON is deterministic.)"""
    del deterministic_proto_serialize

    def convert(x):
        if isinstance(x, (list, tuple, np.ndarray)):
            return [convert(i) for i in x]
        return _serialize(x)

    return tf.constant(convert(items_to_convert), dtype=tf.string)


_parsed = collections.OrderedDict()  # serialized text -> the Cirq object


def _parse(text):
    """The Cirq object of a serialized entry (bytes or str), cached by its
    bytes: tensors hand over bytes, whose hash Python keeps."""
    key = text if isinstance(text, bytes) else text.encode()
    with _lock:
        hit = _parsed.get(key)
        if hit is not None:
            _parsed.move_to_end(key)
            return hit
    if not key:
        obj = cirq.Circuit()  # TFQ's padding: an empty entry
    else:
        try:
            obj = cirq.read_json(json_text=key.decode())
        except Exception as e:  # noqa: BLE001 - any parse failure is the user's input
            raise ValueError(f"qmlsim.tfq: not a serialized circuit or Pauli sum ({e})") from e
    if isinstance(obj, cirq.PauliString):
        obj = cirq.PauliSum.wrap(obj)
    with _lock:
        _parsed[key] = obj
        if len(_parsed) > 4096:
            _parsed.popitem(last=False)
    return obj


def from_tensor(tensor_to_convert):
    """The circuits or Pauli sums of a ``tf.string`` tensor, as a numpy array
    of Cirq objects of the same shape."""
    values = np.asarray(tensor_to_convert.numpy() if hasattr(tensor_to_convert, "numpy")
                        else tensor_to_convert, dtype=object)
    out = np.empty(values.shape, dtype=object)
    for i, v in np.ndenumerate(values):
        out[i] = _parse(v)
    return out


# -- translation of a circuit with symbols into engine operations

_kinds = {}  # sympy expression -> its kind (see _kind)


def _kind(e):
    """An angle expression as ("const", value), ("linear", symbol, coefficient)
    or ("general", names, f, [(name, df)]) (lambdified), remembered per
    expression: the same ones recur in every circuit of a batch."""
    hit = _kinds.get(e)
    if hit is not None:
        return hit
    free = sorted(e.free_symbols, key=str)
    if not free:
        kind = ("const", float(e))
    else:
        kind = None
        if len(free) == 1:
            coef = sympy.diff(e, free[0])
            if coef.is_number and sympy.expand(e - coef * free[0]) == 0:
                kind = ("linear", str(free[0]), float(coef))
        if kind is None:
            kind = ("general", [str(x) for x in free], sympy.lambdify(free, e, "numpy"),
                    [(str(x), sympy.lambdify(free, sympy.diff(e, x), "numpy")) for x in free])
    with _lock:
        if len(_kinds) > 65536:
            _kinds.clear()
        _kinds[e] = kind
    return kind


class _Translation:
    """A circuit's engine program with its parameters as functions of the
    symbols. The program's parameters are the circuit's symbols that angles
    are multiples of (almost all: ``X**s``, ``rx(s)``; each gate reads its
    symbol as ``Param(symbol, pi * coefficient)``, so the engine's gradient is
    already per symbol), then one per other expression, evaluated and chained
    through ``sympy.lambdify``. ``angles`` gives every item's parameter values,
    ``chain`` maps the engine's gradient to the layer's symbols."""

    def __init__(self, circuit, extra_qubits=()):
        if any(cirq.is_measurement(op) for op in circuit.all_operations()):
            raise ValueError("qmlsim.tfq: circuits with measurements are not supported here "
                             "(TFQ's expectation layers take circuits without them)")
        self.qubits = sorted(set(circuit.all_qubits()) | set(extra_qubits))
        n = len(self.qubits)
        template = []  # engine operations (None: a rotation with symbols, filled below)
        rotations = []  # (index in template, step, engine angle as a sympy expression)
        phase = sympy.Integer(0)  # Cirq's unitary = e^{i phase} x the engine's gates
        for step in steps(circuit, self.qubits, _WHO, resolve_later=False):
            if step.kind == "rotation" and cirq.is_parameterized(step.op):
                t = sympy.sympify(step.op.gate.exponent)
                rotations.append((len(template), step, sympy.pi * t))
                template.append(None)
                phase += sympy.pi * t * (sympy.sympify(step.op.gate.global_shift) + step.phase)
                continue
            if step.kind == "phase" and cirq.is_parameterized(step.op.gate):
                raise ValueError(f"qmlsim.tfq: a global phase with symbols ({step.op!r}) is "
                                 "not supported")
            op, ph = evaluate(step, cirq.ParamResolver(), _WHO)
            if op is not None:
                template.append(op)
            phase += ph
        kinds = [_kind(e) for _, _, e in rotations]
        self._symbols = list(dict.fromkeys(k[1] for k in kinds if k[0] == "linear"))
        self._general = []  # (names, f, [(name, df)]), program parameter len(symbols) + i
        where = {name: i for i, name in enumerate(self._symbols)}
        for (at, step, _), kind in zip(rotations, kinds):
            if kind[0] == "const":
                param = kind[1]
            elif kind[0] == "linear":
                param = Param(where[kind[1]], kind[2])
            else:
                param = Param(len(self._symbols) + len(self._general))
                self._general.append(kind[1:])
            template[at] = Op(step.name, step.wires, [param])
        self.num_params = len(self._symbols) + len(self._general)
        self._template = template
        self.program = Program(n, template, self.num_params) if n else None
        self._phase_expr = phase

    @staticmethod
    def _where(names, wanted):
        where = {n: i for i, n in enumerate(names)}
        missing = sorted({n for n in wanted if n not in where})
        if missing:
            raise ValueError(f"qmlsim.tfq: symbols {missing} of a circuit have no values "
                             f"(symbol_names: {list(names)})")
        return np.array([where[n] for n in wanted], dtype=np.int64)

    def angles(self, names, values):
        """[item][program parameter] for the layer's (names, values [batch, len(names)])."""
        out = np.zeros((values.shape[0], self.num_params))
        k = len(self._symbols)
        if k:
            out[:, :k] = values[:, self._where(names, self._symbols)]
        for g, (free, f, _) in enumerate(self._general):
            out[:, k + g] = f(*(values[:, i] for i in self._where(names, free)))
        return out

    def chain(self, names, values, grads):
        """d/d(layer symbol) [batch, len(names)] from d/d(program parameter)."""
        out = np.zeros((values.shape[0], len(names)))
        k = len(self._symbols)
        if k:
            out[:, self._where(names, self._symbols)] += grads[:, :k]
        for g, (free, _, derivatives) in enumerate(self._general):
            args = [values[:, i] for i in self._where(names, free)]
            for name, df in derivatives:
                out[:, self._where(names, [name])[0]] += grads[:, k + g] * df(*args)
        return out

    def phase(self, names, values):
        """[item] global phase of Cirq's unitary over the engine's gates."""
        free = sorted(self._phase_expr.free_symbols, key=str)
        f = sympy.lambdify(free, self._phase_expr, "numpy")
        args = [values[:, i] for i in self._where(names, [str(x) for x in free])]
        return np.broadcast_to(np.asarray(f(*args), dtype=np.float64), (values.shape[0],))

    def with_ops(self, extra):
        """The program with engine operations `extra` appended."""
        return Program(len(self.qubits), self._template + extra, self.num_params)


_translations = collections.OrderedDict()


def _translation(text, extra_qubits=()):
    """The translation of a serialized circuit, over its qubits and
    `extra_qubits` (an operator's beyond the circuit's), cached."""
    key = (text if isinstance(text, bytes) else text.encode(), tuple(extra_qubits))
    with _lock:
        hit = _translations.get(key)
        if hit is not None:
            _translations.move_to_end(key)
            return hit
    circuit = _parse(text)
    if not isinstance(circuit, cirq.Circuit):
        raise ValueError("qmlsim.tfq: expected serialized circuits, got a Pauli sum")
    t = _Translation(circuit, extra_qubits)
    with _lock:
        _translations[key] = t
        if len(_translations) > 1024:
            _translations.popitem(last=False)
    return t


# -- the expectation op and its adjoint gradient

def _engine_options():
    return options(engine_options("c128", None, 3, who="qmlsim.tfq: "))


def _group_options(trajectories, seed):
    """The engine's options for a group of circuits. With trajectories (TFQ's
    noisy estimate from that many), the engine runs that many, seeded by
    `seed`, wherever they cost less than the density matrix (its
    trajectory_estimate option); otherwise exactly, on the density matrix."""
    if not trajectories:
        return _engine_options()
    o = options(engine_options("c128", None, 3, who="qmlsim.tfq: ",
                               trajectories=int(trajectories), seed=int(seed)))
    o.trajectory_estimate = True
    return o


def _groups(circuits, names, values, operators):
    """({(qubit count, observables' terms): ([item], [program], [angles])},
    [(translation, angles)] per item): items grouped for one C++ call each,
    angles computed per distinct circuit text in one go."""
    by_text = collections.defaultdict(list)
    for b, text in enumerate(circuits):
        by_text[text].append(b)
    per_item = [None] * len(circuits)
    for text, items in by_text.items():
        t = _translation(text)
        angles = t.angles(names, values[items])
        for row, b in zip(angles, items):
            per_item[b] = (t, row)
    groups = collections.OrderedDict()
    for b, (t, row) in enumerate(per_item):
        ops_row = tuple(operators[b])
        extra = _extra_qubits(ops_row, t)
        if extra:
            t = _translation(circuits[b], extra)
            row = t.angles(names, values[b:b + 1])[0]
            per_item[b] = (t, row)
        key = (len(t.qubits), _terms(ops_row, t))
        g = groups.setdefault(key, ([], [], []))
        g[0].append(b)
        g[1].append(t.program)
        g[2].append(row.tolist())
    return groups, per_item


_term_cache = {}  # (operators row, qubits) -> engine terms; (row, qubits) -> extra qubits


def _extra_qubits(ops_row, t):
    """The operators' qubits that the circuit does not touch, sorted."""
    key = ("extra", ops_row, tuple(t.qubits))
    hit = _term_cache.get(key)
    if hit is None:
        sums = [_parse(o) for o in ops_row]
        hit = tuple(sorted(set().union(*(s.qubits for s in sums)) - set(t.qubits)))
        _term_cache[key] = hit
    return hit


def _terms(ops_row, t):
    """The operators as engine terms over the translation's qubits."""
    key = ("terms", ops_row, tuple(t.qubits))
    hit = _term_cache.get(key)
    if hit is None:
        index = {q: i for i, q in enumerate(t.qubits)}
        hit = tuple(tuple(observable_terms(_parse(o), index, len(t.qubits), _WHO))
                    for o in ops_row)
        if len(_term_cache) > 8192:
            _term_cache.clear()
        _term_cache[key] = hit
    return hit


def _inputs(circuits, names, values, operators=None):
    """The names as str and the values as [batch, names] float64, or a
    ValueError for shapes that do not match."""
    names = [n.decode() if isinstance(n, bytes) else str(n) for n in names]
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape != (len(circuits), len(names)):
        raise ValueError(f"qmlsim.tfq: symbol_values has shape {list(values.shape)}: expected "
                         f"[{len(circuits)}, {len(names)}] ({len(circuits)} circuits, "
                         f"{len(names)} symbol names)")
    if operators is not None and (operators.ndim != 2 or operators.shape[0] != len(circuits)):
        raise ValueError(f"qmlsim.tfq: operators has shape {list(operators.shape)}: expected "
                         f"[{len(circuits)}, n_ops]")
    return names, values


@_gc_paused
def _forward(circuits, names, values, operators, trajectories=0, seed=0):
    names, values = _inputs(circuits, names, values, operators)
    out = np.zeros((len(circuits), operators.shape[1]), dtype=np.float32)
    if len(circuits) == 0 or operators.shape[1] == 0:
        return out
    groups, _ = _groups(circuits, names, values, operators)
    for (n, terms), (items, programs, angles) in groups.items():
        if n == 0:
            raise ValueError("qmlsim.tfq: a circuit and its operators act on no qubit")
        res = _qmlsim.expvals_batch(programs, angles, [list(t) for t in terms],
                                    _group_options(trajectories, seed))
        out[items] = np.asarray(res, dtype=np.float64)
    return out


@_gc_paused
def _backward(circuits, names, values, operators, dy, trajectories=0, seed=0):
    names, values = _inputs(circuits, names, values, operators)
    out = np.zeros((len(circuits), len(names)), dtype=np.float32)
    if len(circuits) == 0 or operators.shape[1] == 0 or len(names) == 0:
        return out
    groups, per_item = _groups(circuits, names, values, operators)
    for (n, terms), (items, programs, angles) in groups.items():
        cot = np.asarray(dy, dtype=np.float64)[items].tolist()
        terms = [list(t) for t in terms]
        try:  # the same trajectories as the values: the derivative of that estimate
            res = _qmlsim.vjp_batch(programs, angles, terms, cot,
                                    _group_options(trajectories, seed))
        except ValueError as e:  # damping: trajectories take no gradient; the exact one
            if "trajector" not in str(e):
                raise
            res = _qmlsim.vjp_batch(programs, angles, terms, cot, _engine_options())
        for b, (_, grad) in zip(items, res):
            t, _ = per_item[b]
            out[b] = t.chain(names, values[b:b + 1], np.asarray(grad)[None, :])[0]
    return out


def _with_adjoint_gradient(forward, args, stateful, circuits, names, symbol_values, operators,
                           backward_args=()):
    """forward(circuits, names, values, operators, *args) -> [batch, n_ops]
    float32 as an op differentiable in the values, its gradient the adjoint
    VJP of the expectation values (_backward, with backward_args)."""

    @tf.custom_gradient
    def run(values):
        out = tf.numpy_function(forward, [circuits, names, values, operators, *args], tf.float32,
                                stateful=stateful)
        out.set_shape([circuits.shape[0], operators.shape[1]])

        def grad(dy):
            g = tf.numpy_function(_backward, [circuits, names, values, operators, dy,
                                              *backward_args], tf.float32, stateful=False)
            g.set_shape(values.shape)
            return g

        return out, grad

    return run(tf.cast(symbol_values, tf.float32))


def _expectation(circuits, symbol_names, symbol_values, operators, trajectories=None):
    """<operators[b][k]> of circuits[b] at symbol_values[b]: [batch, n_ops]
    float32, differentiable with respect to symbol_values. trajectories (TFQ's
    noisy estimate: NoisyPQC, backend='noisy'): circuits whose trajectories
    cost less than their density matrix run that many (_group_options), seeded
    from TensorFlow's random state, the gradient from the same trajectories."""
    if trajectories is None:
        return _with_adjoint_gradient(_forward, [], False, circuits, symbol_names, symbol_values,
                                      operators)
    args = [np.int64(trajectories), tf.random.uniform([], 0, 1 << 62, dtype=tf.int64)]
    return _with_adjoint_gradient(_forward, args, True, circuits, symbol_names, symbol_values,
                                  operators, backward_args=args)


def _estimating(op, repetitions):
    """A noisy analytic op that estimates from `repetitions` trajectories
    where those are cheaper (_expectation's trajectories); other ops (a
    user's differentiator) as they are."""
    if op is not _expectation:
        return op
    return functools.partial(_expectation, trajectories=repetitions)


def _backend_noise(backend):
    """The noise model of a Cirq simulator given as a backend (None without
    one); checks the backend as TFQ's ops take it: None, 'noiseless',
    'noisy', or a cirq.Simulator / cirq.DensityMatrixSimulator."""
    if isinstance(backend, (cirq.Simulator, cirq.DensityMatrixSimulator)):
        noise = backend.noise
        return None if noise is cirq.NO_NOISE or noise == cirq.NO_NOISE else noise
    _check_backend(backend)
    return None


_noisy_texts = collections.OrderedDict()  # (serialized circuit, noise model's repr) -> noisy text


def _with_noise(programs, noise):
    """The serialized circuits with the backend's noise model applied (Cirq's
    with_noise), as the Cirq simulator would run them."""
    out = []
    for text in programs:
        key = (bytes(text), repr(noise))  # by value: an id is reused once its model is freed
        with _lock:
            hit = _noisy_texts.get(key)
        if hit is None:
            hit = _serialize(_parse(text).with_noise(noise)).encode()
            with _lock:
                _noisy_texts[key] = hit
                if len(_noisy_texts) > 4096:
                    _noisy_texts.popitem(last=False)
        out.append(hit)
    return np.array(out, dtype=object)


def _expectation_ops(noise):
    """TFQ's op signatures over the engine: (analytic op, sampled op), each
    with ``_qmlsim_vjp``, the engine's exact VJP, for the Adjoint and
    ParameterShift differentiators."""

    def prepare(programs):
        programs = tf.convert_to_tensor(programs, dtype=tf.string)
        if noise is None:
            return programs
        out = tf.numpy_function(lambda p: _with_noise(p, noise), [programs], tf.string,
                                stateful=False)
        out.set_shape(programs.shape)
        return out

    def expectation(programs, symbol_names, symbol_values, pauli_sums):
        return _expectation(prepare(programs), _symbol_names(symbol_names), symbol_values,
                            tf.convert_to_tensor(pauli_sums, dtype=tf.string))

    def sampled_expectation(programs, symbol_names, symbol_values, pauli_sums, num_samples):
        return _sampled_expectation(prepare(programs), _symbol_names(symbol_names),
                                    symbol_values,
                                    tf.convert_to_tensor(pauli_sums, dtype=tf.string),
                                    num_samples)

    def vjp(programs, symbol_names, symbol_values, pauli_sums, grad):
        values = tf.cast(symbol_values, tf.float32)
        g = tf.numpy_function(_backward, [prepare(programs), _symbol_names(symbol_names),
                                          values, pauli_sums, grad], tf.float32, stateful=False)
        g.set_shape(values.shape)
        return g

    expectation._qmlsim_vjp = vjp
    sampled_expectation._qmlsim_vjp = vjp
    return expectation, sampled_expectation


def get_expectation_op(backend=None, *, quantum_concurrency=True):
    """TFQ's ``get_expectation_op``: a callable (programs, symbol_names,
    symbol_values, pauli_sums) -> [batch, n_ops], differentiable in the values
    by the adjoint. A Cirq simulator as backend adds its noise model (exact
    values on the density matrix)."""
    del quantum_concurrency
    return _expectation_ops(_backend_noise(backend))[0]


def get_sampled_expectation_op(backend=None, *, quantum_concurrency=True):
    """TFQ's ``get_sampled_expectation_op``: (programs, symbol_names,
    symbol_values, pauli_sums, num_samples) -> [batch, n_ops], each Pauli term
    from num_samples[b][k] shots, differentiable by the exact adjoint."""
    del quantum_concurrency
    return _expectation_ops(_backend_noise(backend))[1]


def _layer_op(differentiator, sampled, who):
    """What a layer runs: (circuits, names, values, ops[, repetitions]). None,
    Adjoint and ParameterShift: the engine's ops and exact gradient; any other
    differentiator is attached to them as TFQ's layers attach it."""
    if differentiator is None or type(differentiator) in (differentiators.Adjoint,
                                                          differentiators.ParameterShift):
        if sampled and isinstance(differentiator, differentiators.Adjoint):
            raise ValueError(f"{who}: the Adjoint differentiator does not take sampled "
                             "expectation values")
        return _sampled_expectation if sampled else _expectation
    if not isinstance(differentiator, differentiators.Differentiator):
        raise TypeError(f"{who}: differentiator must inherit from "
                        "tfq.differentiators.Differentiator")
    analytic_op, sampled_op = _expectation_ops(None)
    if not sampled:
        return differentiator.generate_differentiable_op(analytic_op=analytic_op)
    op = differentiator.generate_differentiable_op(sampled_op=sampled_op)

    def run(circuits, names, values, ops, repetitions):
        if isinstance(repetitions, (int, np.integer)):
            reps = tf.fill(tf.shape(ops), _repetitions(repetitions))
        else:
            reps = tf.cast(tf.broadcast_to(repetitions, tf.shape(ops)), tf.int64)
        return op(circuits, names, values, ops, reps)

    return run


def _check_repetitions(repetitions):
    """None (analytic) or a positive int, as TFQ's high-level layers take it."""
    if repetitions is None:
        return None
    if isinstance(repetitions, bool) or not isinstance(repetitions, (int, np.integer)):
        raise TypeError(f"repetitions must be a positive integer value. Given: {repetitions}")
    if repetitions <= 0:
        raise ValueError("Repetitions must be greater than zero.")
    return int(repetitions)


def _check_backend(backend) -> bool:
    """True for TFQ's 'noisy' backend, False for 'noiseless' (or None); the
    engine runs both (noise channels exactly, on the density matrix)."""
    if backend not in ("noiseless", "noisy", None):
        raise ValueError(f"qmlsim.tfq: backend {backend!r} is not supported: qmlsim's "
                         "engine is the backend ('noiseless' or 'noisy')")
    return backend == "noisy"


# -- input handling as TFQ's layers do it

def _circuit_tensor(inputs, symbol_values=None):
    """The circuits as a string tensor [batch]. One cirq.Circuit is broadcast
    over the rows of symbol_values, as TFQ's layers do (a tensor of one
    circuit is not: TFQ refuses its shapes too)."""
    if isinstance(inputs, cirq.Circuit):
        if symbol_values is not None:
            rows = tf.shape(tf.convert_to_tensor(symbol_values, dtype=tf.float32))[0]
            return tf.tile(convert_to_tensor([inputs]), [rows])
        inputs = [inputs]
    if isinstance(inputs, (list, tuple)) and inputs and isinstance(inputs[0], cirq.Circuit):
        return convert_to_tensor(list(inputs))
    return tf.convert_to_tensor(inputs, dtype=tf.string)


def _operators_tensor(operators, batch):
    if isinstance(operators, (cirq.PauliString, cirq.PauliSum)):
        operators = [operators]
    if isinstance(operators, (list, tuple)) and operators and isinstance(
            operators[0], (cirq.PauliString, cirq.PauliSum)):
        return tf.tile(convert_to_tensor([list(operators)]), [batch, 1])
    t = tf.convert_to_tensor(operators, dtype=tf.string)
    return tf.tile(t[None, :], [batch, 1]) if t.shape.rank == 1 else t


def _symbol_names(names):
    if names is None:
        return tf.constant([], dtype=tf.string)
    if isinstance(names, (list, tuple)):
        return tf.constant([str(n) for n in names], dtype=tf.string)
    return tf.convert_to_tensor(names, dtype=tf.string)


_joined = collections.OrderedDict()  # (circuit, other, prepend) -> serialized result


def _append(circuits, other, prepend):
    out = []
    for a, b in zip(circuits, other):
        key = (a, b, bool(prepend))
        with _lock:
            hit = _joined.get(key)
        if hit is None:
            ca, cb = _parse(a), _parse(b)
            joined = cb + ca if prepend else ca + cb
            hit = _serialize(joined).encode()
            with _lock:
                _joined[key] = hit
                _parsed[hit] = joined  # no need to parse what we just wrote
                if len(_joined) > 4096:
                    _joined.popitem(last=False)
        out.append(hit)
    return np.array(out, dtype=object)


class _ExpectationLayer(tf.keras.layers.Layer):
    """What Expectation and SampledExpectation share: the backend check, and
    the values the layer manages when called without symbol_values (TFQ's
    behaviour: one trainable weight per symbol name, shared by the batch)."""

    def __init__(self, backend="noiseless", differentiator=None, **kwargs):
        super().__init__(**kwargs)
        self._noisy = _check_backend(backend)
        self._values = None
        self._op = _layer_op(differentiator, self._sampled, self._layer_name)

    def _op_inputs(self, inputs, symbol_names, symbol_values, operators, initializer):
        """(circuits, symbol names, symbol values, operators) as the ops take
        them; the layer's own weights stand in for missing symbol_values."""
        if operators is None:
            raise ValueError(f"qmlsim.tfq: {self._layer_name} needs operators")
        circuits = _circuit_tensor(inputs, symbol_values)
        batch = tf.shape(circuits)[0]
        names = _symbol_names(symbol_names)
        if symbol_values is None:
            if self._values is None:
                self._values = self.add_weight(name="circuit_parameters",
                                               shape=[names.shape[0]], initializer=initializer,
                                               dtype=tf.float32, trainable=True)
            symbol_values = tf.tile(self._values[None, :], [batch, 1])
        return circuits, names, symbol_values, _operators_tensor(operators, batch)


class _Expectation(_ExpectationLayer):
    """TFQ's ``layers.Expectation``: call(inputs, *, symbol_names=None,
    symbol_values=None, operators=None, repetitions=None, initializer=...)."""

    _layer_name = "Expectation"
    _sampled = False

    def call(self, inputs, *, symbol_names=None, symbol_values=None, operators=None,
             repetitions=None, initializer=tf.keras.initializers.RandomUniform(0, 2 * np.pi)):
        if repetitions is not None and not self._noisy:  # TFQ: only for noisy backends
            raise RuntimeError("repetitions value provided for analytic expectation "
                               "calculation that is noiseless.")
        if self._noisy and repetitions is None:
            raise RuntimeError("Value for repetitions not provided. With backend='noisy' a "
                               "number of trajectory repetitions must be provided in the layer "
                               "call method.")
        # backend='noisy': what TFQ's `repetitions` trajectories estimate (_estimating).
        op = _estimating(self._op, repetitions) if self._noisy else self._op
        return op(*self._op_inputs(inputs, symbol_names, symbol_values, operators, initializer))


class _AddCircuit(tf.keras.layers.Layer):
    """TFQ's ``layers.AddCircuit``: call(inputs, *, append=None, prepend=None)."""

    def call(self, inputs, *, append=None, prepend=None):
        if (append is None) == (prepend is None):
            raise ValueError("qmlsim.tfq: AddCircuit takes exactly one of append and prepend")
        circuits = _circuit_tensor(inputs)
        other = append if append is not None else prepend
        if isinstance(other, cirq.Circuit):
            other = convert_to_tensor([other])
        other = tf.convert_to_tensor(other, dtype=tf.string)
        other = tf.broadcast_to(other, tf.shape(circuits)) if other.shape.rank == 1 else other
        out = tf.numpy_function(_append, [circuits, other, prepend is not None], tf.string,
                                stateful=False)
        out.set_shape(circuits.shape)
        return out


def _noisy_setup(repetitions, sample_based):
    """NoisyPQC's and NoisyControlledPQC's checks (TFQ's); the repetitions the
    layer samples with: None when not sample based (then its values are exact:
    what TFQ's `repetitions` trajectories estimate)."""
    if repetitions is None:
        raise ValueError("Value for repetitions must be provided when using noisy simulation.")
    _check_repetitions(repetitions)
    if sample_based is None:
        raise ValueError("Please specify sample_based=False for analytic calculations based on "
                         "monte-carlo trajectories, or sampled_based=True for measurement based "
                         "noisy estimates.")
    if not isinstance(sample_based, bool):
        raise TypeError(f"sample_based must be either True or False. received: "
                        f"{type(sample_based)}")
    return repetitions if sample_based else None


def _model_setup(layer, model_circuit, operators, repetitions, backend, differentiator):
    """What PQC and ControlledPQC keep of their model circuit: its sorted
    symbols, the circuit and operators as tensors, the repetitions, the op."""
    if not isinstance(model_circuit, cirq.Circuit):
        raise TypeError(f"model_circuit must be a cirq.Circuit object. Given: {model_circuit}")
    _check_backend(backend)
    layer._repetitions = _check_repetitions(repetitions)
    layer._op = _layer_op(differentiator, layer._repetitions is not None, type(layer).__name__[1:])
    layer._symbols_list = sorted(cirq.parameter_symbols(model_circuit), key=str)
    layer._symbols = tf.constant([str(s) for s in layer._symbols_list], dtype=tf.string)
    layer._circuit = convert_to_tensor([model_circuit])
    layer._operators = _operator_list(operators)
    layer._append_layer = _AddCircuit()


class _PQC(tf.keras.layers.Layer):
    """TFQ's ``layers.PQC``: the model circuit appended to each input circuit,
    its symbols trainable weights (sorted by name), outputs [batch, n_ops]."""

    def __init__(self, model_circuit, operators, *, repetitions=None, backend="noiseless",
                 differentiator=None, initializer=tf.keras.initializers.RandomUniform(0, 2 * np.pi),
                 regularizer=None, constraint=None, **kwargs):
        super().__init__(**kwargs)
        _model_setup(self, model_circuit, operators, repetitions, backend, differentiator)
        if not self._symbols_list:
            raise ValueError("model_circuit has no sympy.Symbols. Please provide a circuit that "
                             "contains symbols so that their values can be trained.")
        self.initializer = tf.keras.initializers.get(initializer)
        self.regularizer = tf.keras.regularizers.get(regularizer)
        self.constraint = tf.keras.constraints.get(constraint)
        self.parameters = self.add_weight(name="parameters", shape=self._symbols.shape,
                                          initializer=self.initializer,
                                          regularizer=self.regularizer,
                                          constraint=self.constraint, dtype=tf.float32,
                                          trainable=True)

    @property
    def symbols(self):
        return list(self._symbols_list)

    def symbol_values(self):
        return dict(zip(self.symbols, self.get_weights()[0]))

    def call(self, inputs):
        batch = tf.gather(tf.shape(inputs), 0)
        circuits = self._append_layer(inputs, append=tf.tile(self._circuit, [batch]))
        values = tf.tile([self.parameters], [batch, 1])
        ops = tf.tile(self._operators, [batch, 1])
        if self._repetitions is not None:
            return self._op(circuits, self._symbols, values, ops, self._repetitions)
        return self._op(circuits, self._symbols, values, ops)


class _ControlledPQC(tf.keras.layers.Layer):
    """TFQ's ``layers.ControlledPQC``: call([circuits, symbol_values]), the
    values' columns in the order of the model's sorted symbols."""

    def __init__(self, model_circuit, operators, *, repetitions=None, backend="noiseless",
                 differentiator=None, **kwargs):
        super().__init__(**kwargs)
        _model_setup(self, model_circuit, operators, repetitions, backend, differentiator)

    @property
    def symbols(self):
        return list(self._symbols_list)

    def call(self, inputs):
        batch = tf.gather(tf.shape(inputs[0]), 0)
        circuits = self._append_layer(inputs[0], append=tf.tile(self._circuit, [batch]))
        ops = tf.tile(self._operators, [batch, 1])
        if self._repetitions is not None:
            return self._op(circuits, self._symbols, inputs[1], ops, self._repetitions)
        return self._op(circuits, self._symbols, inputs[1], ops)


class _NoisyPQC(_PQC):
    """TFQ's ``layers.NoisyPQC``: PQC on noisy circuits. ``sample_based=False``
    gives exact values (TFQ averages ``repetitions`` trajectories to estimate
    them); ``True`` estimates each Pauli term from ``repetitions`` shots of the
    noisy circuit. Gradients: the exact adjoint gradient through the noise
    (TFQ's default is parameter shift over the trajectories)."""

    def __init__(self, model_circuit, operators, *, repetitions=None, sample_based=None,
                 differentiator=None, initializer=tf.keras.initializers.RandomUniform(0, 2 * np.pi),
                 regularizer=None, constraint=None, **kwargs):
        if not isinstance(model_circuit, cirq.Circuit):
            raise TypeError(f"model_circuit must be a cirq.Circuit object. Given: {model_circuit}")
        super().__init__(model_circuit, operators,
                         repetitions=_noisy_setup(repetitions, sample_based), backend="noisy",
                         differentiator=differentiator, initializer=initializer,
                         regularizer=regularizer, constraint=constraint, **kwargs)
        if not sample_based:
            self._op = _estimating(self._op, repetitions)


class _NoisyControlledPQC(_ControlledPQC):
    """TFQ's ``layers.NoisyControlledPQC``: ControlledPQC on noisy circuits,
    ``repetitions`` and ``sample_based`` as in NoisyPQC."""

    def __init__(self, model_circuit, operators, *, repetitions=None, sample_based=None,
                 differentiator=None, **kwargs):
        super().__init__(model_circuit, operators,
                         repetitions=_noisy_setup(repetitions, sample_based), backend="noisy",
                         differentiator=differentiator, **kwargs)
        if not sample_based:
            self._op = _estimating(self._op, repetitions)


def _operator_list(operators):
    if isinstance(operators, (cirq.PauliString, cirq.PauliSum)):
        operators = [operators]
    if not isinstance(operators, (list, np.ndarray, tuple)) or not all(
            isinstance(o, (cirq.PauliString, cirq.PauliSum)) for o in operators):
        raise TypeError("operators must be a cirq.PauliSum or cirq.PauliString, or a list, "
                        f"tuple, or np.array containing them. Got {type(operators)}.")
    return convert_to_tensor([list(operators)])


@_gc_paused
def _states(circuits, names, values):
    names, values = _inputs(circuits, names, values)
    rows = []
    for b, text in enumerate(circuits):
        t = _translation(text)
        if not t.qubits:
            rows.append(np.ones(1, dtype=np.complex64))
            continue
        point = values[b:b + 1]
        state = _qmlsim.state(t.program, t.angles(names, point)[0].tolist(), _engine_options())
        if len(state) != 1 << len(t.qubits):
            raise ValueError("qmlsim.tfq: State of a circuit with noise channels: its state is a "
                             "density matrix, not a state vector")
        rows.append((state * np.exp(1j * t.phase(names, point)[0])).astype(np.complex64))
    lengths = np.array([len(r) for r in rows], dtype=np.int64)
    return np.concatenate(rows), lengths


class _State(tf.keras.layers.Layer):
    """TFQ's ``layers.State``: final states as a tf.RaggedTensor [batch, 2**n]."""

    def __init__(self, backend=None, **kwargs):
        super().__init__(**kwargs)
        if backend not in (None, "noiseless"):
            raise ValueError("qmlsim.tfq: State runs on qmlsim's engine only")

    def call(self, inputs, *, symbol_names=None, symbol_values=None):
        circuits = _circuit_tensor(inputs, symbol_values)
        names = _symbol_names(symbol_names)
        if symbol_values is None:
            symbol_values = tf.zeros([tf.shape(circuits)[0], tf.shape(names)[0]])
        flat, lengths = tf.numpy_function(_states, [circuits, names, symbol_values],
                                          [tf.complex64, tf.int64], stateful=False)
        return tf.RaggedTensor.from_row_lengths(flat, lengths)


# -- sampling

def _probabilities(t, names, point, extra_ops=()):
    """|amplitude|^2 of the circuit at one point (engine qubit i = Cirq's n-1-i,
    so the index reads Cirq's sorted qubits from the most significant bit)."""
    program = t.with_ops(list(extra_ops)) if extra_ops else t.program
    angles = t.angles(names, point)[0].tolist()
    state = _qmlsim.state(program, angles, _engine_options())
    dim = 1 << program.num_qubits
    if len(state) == dim:
        p = np.abs(state) ** 2
    else:  # a noisy circuit's density matrix: its diagonal
        p = np.clip(state.reshape(dim, dim).diagonal().real, 0, None)
    return p / p.sum()


def _bits(outcomes, n):
    return ((outcomes[:, None] >> np.arange(n - 1, -1, -1)) & 1).astype(np.int8)


@_gc_paused
def _samples(circuits, names, values, repetitions, seed):
    names, values = _inputs(circuits, names, values)
    reps = int(np.asarray(repetitions).reshape(-1)[0])
    if reps < 1:
        raise ValueError(f"qmlsim.tfq: repetitions must be positive, got {reps}")
    rng = np.random.default_rng(int(seed))
    flat, widths = [], []
    for b, text in enumerate(circuits):
        t = _translation(text)
        n = len(t.qubits)
        if n == 0:
            widths.append(0)
            continue
        p = _probabilities(t, names, values[b:b + 1])
        flat.append(_bits(rng.choice(len(p), size=reps, p=p), n).reshape(-1))
        widths.append(n)
    flat = np.concatenate(flat) if flat else np.zeros(0, dtype=np.int8)
    return flat, np.array(widths, dtype=np.int64)


class _Sample(tf.keras.layers.Layer):
    """TFQ's ``layers.Sample``: call(inputs, *, symbol_names=None,
    symbol_values=None, repetitions=None) -> tf.RaggedTensor [batch,
    repetitions, <the circuit's qubits>] of int8 bits, qubits in sorted order.
    Seeded by TensorFlow's random state (``tf.random.set_seed``)."""

    def __init__(self, backend="noiseless", **kwargs):
        super().__init__(**kwargs)
        _check_backend(backend)

    def call(self, inputs, *, symbol_names=None, symbol_values=None, repetitions=None):
        reps = _repetitions(repetitions)
        circuits = _circuit_tensor(inputs, symbol_values)
        names = _symbol_names(symbol_names)
        batch = tf.shape(circuits)[0]
        if symbol_values is None:
            symbol_values = tf.zeros([batch, tf.shape(names)[0]])
        seed = tf.random.uniform([], maxval=2**31 - 1, dtype=tf.int64)
        flat, widths = tf.numpy_function(_samples, [circuits, names, symbol_values, reps, seed],
                                         [tf.int8, tf.int64], stateful=True)
        inner = tf.repeat(widths, tf.cast(reps, tf.int32))
        outer = tf.fill([batch], tf.cast(reps, tf.int64))
        return tf.RaggedTensor.from_nested_row_lengths(flat, [outer, inner])


def _repetitions(repetitions):
    if repetitions is None:
        raise ValueError("qmlsim.tfq: number of repetitions not specified")
    if isinstance(repetitions, (int, np.integer)):
        return tf.constant(_check_repetitions(repetitions), dtype=tf.int64)
    return tf.cast(tf.reshape(repetitions, [-1])[0], tf.int64)


@_gc_paused
def _sampled(circuits, names, values, operators, repetitions, seed):
    """Each operator estimated from `repetitions` shots per Pauli term in that
    term's basis (X by H, Y by RX(pi/2)): the mean parity times the coefficient."""
    names, values = _inputs(circuits, names, values, operators)
    reps = np.broadcast_to(np.asarray(repetitions, dtype=np.int64), operators.shape)
    if np.any(reps < 1):
        raise ValueError("qmlsim.tfq: repetitions must be positive")
    rng = np.random.default_rng(int(seed))
    out = np.zeros(operators.shape, dtype=np.float32)
    for b, text in enumerate(circuits):
        sums = [_parse(o) for o in operators[b]]
        t = _translation(text, _extra_qubits(tuple(operators[b]), _translation(text)))
        n = len(t.qubits)
        index = {q: i for i, q in enumerate(t.qubits)}
        for k, s in enumerate(sums):
            total = 0.0
            for term in s:
                rot, mask = [], 0
                for q, pauli in term.items():
                    w = n - 1 - index[q]
                    mask |= 1 << w
                    if pauli == cirq.X:
                        rot.append(Op("H", [w]))
                    elif pauli == cirq.Y:
                        rot.append(Op("RX", [w], [math.pi / 2]))
                if not mask:
                    total += complex(term.coefficient).real
                    continue
                p = _probabilities(t, names, values[b:b + 1], rot)
                shots = rng.choice(len(p), size=int(reps[b, k]), p=p)
                parity = np.array([bin(int(x) & mask).count("1") & 1 for x in shots])
                total += complex(term.coefficient).real * float(np.mean(1 - 2 * parity))
            out[b, k] = total
    return out


def _sampled_expectation(circuits, names, symbol_values, ops, repetitions):
    """Expectation values from `repetitions` shots per Pauli term (an int or
    a [batch, n_ops] tensor), differentiable in the values by the exact
    adjoint gradient of the expectation values."""
    if isinstance(repetitions, (int, np.integer)):
        reps = tf.fill(tf.shape(ops), _repetitions(repetitions))
    else:
        reps = tf.cast(tf.broadcast_to(repetitions, tf.shape(ops)), tf.int64)
    seed = tf.random.uniform([], maxval=2**31 - 1, dtype=tf.int64)
    return _with_adjoint_gradient(_sampled, [reps, seed], True, circuits, names, symbol_values,
                                  ops)


class _SampledExpectation(_ExpectationLayer):
    """TFQ's ``layers.SampledExpectation``: expectation values estimated from
    ``repetitions`` shots per Pauli term. Gradients: the exact adjoint
    gradient of the expectation values (TFQ's default is parameter shift on
    samples, whose mean this is)."""

    _layer_name = "SampledExpectation"
    _sampled = True

    def call(self, inputs, *, symbol_names=None, symbol_values=None, operators=None,
             repetitions=None, initializer=tf.keras.initializers.RandomUniform(0, 2 * np.pi)):
        if repetitions is None and operators is not None:
            raise ValueError("qmlsim.tfq: number of repetitions not specified")
        return self._op(*self._op_inputs(inputs, symbol_names, symbol_values, operators,
                                         initializer), repetitions)


layers = types.SimpleNamespace(Expectation=_Expectation, PQC=_PQC, ControlledPQC=_ControlledPQC,
                               NoisyPQC=_NoisyPQC, NoisyControlledPQC=_NoisyControlledPQC,
                               AddCircuit=_AddCircuit, State=_State, Sample=_Sample,
                               SampledExpectation=_SampledExpectation)


def _noisy_expectation(programs, symbol_names, symbol_values, pauli_sums, num_samples):
    """``tfq.noise.expectation``: the exact noisy expectation values (what
    TFQ's ``num_samples`` trajectories estimate), differentiable exactly."""
    del num_samples  # exact: no trajectories to count
    return _expectation(programs, symbol_names, symbol_values, pauli_sums)


def _noisy_sampled_expectation(programs, symbol_names, symbol_values, pauli_sums, num_samples):
    """``tfq.noise.sampled_expectation``: each Pauli term from ``num_samples``
    shots of the noisy circuit."""
    return _sampled_expectation(programs, symbol_names, symbol_values, pauli_sums, num_samples)


def _noisy_samples(programs, symbol_names, symbol_values, num_samples):
    """``tfq.noise.samples``: shots of the noisy circuits, a tf.RaggedTensor
    [batch, num_samples, <the circuit's qubits>]."""
    return _Sample()(programs, symbol_names=symbol_names, symbol_values=symbol_values,
                     repetitions=num_samples)


noise = types.SimpleNamespace(expectation=_noisy_expectation,
                              sampled_expectation=_noisy_sampled_expectation,
                              samples=_noisy_samples)
