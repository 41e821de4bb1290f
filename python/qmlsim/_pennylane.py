"""The PennyLane door's translation (a visitor over PennyLane's operations and
observables): which operations the engine runs natively (``_native``,
``_adjoint_native``), and a tape's operations as the engine's typed
``Program`` (``_program``) and its observables as Pauli terms
(``_pauli_terms``), through the one translation layer (``_program.py``).
The device (``device.py``) holds PennyLane's device API around it.
"""
from __future__ import annotations

import math
import weakref

import numpy as np
import pennylane as qml
from pennylane.measurements import MidMeasureMP
from pennylane.operation import StatePrepBase
from pennylane.ops import Conditional

from . import _qmlsim
from ._program import Builder, Op, Param, alternatives, pauli_terms

try:
    from pennylane.exceptions import DeviceError
except ImportError:  # older PennyLane
    from pennylane import DeviceError

# PennyLane operation name -> gate-table name.
_GATES = {
    "Identity": "I", "PauliX": "X", "PauliY": "Y", "PauliZ": "Z", "Hadamard": "H",
    "S": "S", "Adjoint(S)": "Sdg", "T": "T", "Adjoint(T)": "Tdg", "SX": "SX",
    "RX": "RX", "RY": "RY", "RZ": "RZ", "PhaseShift": "PhaseShift", "Rot": "Rot",
    "U1": "U1", "U2": "U2", "U3": "U3",
    "CNOT": "CNOT", "CY": "CY", "CZ": "CZ", "CH": "CH", "SWAP": "SWAP", "ISWAP": "ISWAP",
    "CRX": "CRX", "CRY": "CRY", "CRZ": "CRZ", "CRot": "CRot",
    "ControlledPhaseShift": "ControlledPhaseShift", "IsingXX": "IsingXX",
    "IsingYY": "IsingYY", "IsingZZ": "IsingZZ", "IsingXY": "IsingXY", "MultiRZ": "MultiRZ",
    "Toffoli": "Toffoli", "CSWAP": "CSWAP", "QubitUnitary": "QubitUnitary",
    "SingleExcitation": "SingleExcitation", "SingleExcitationPlus": "SingleExcitationPlus",
    "SingleExcitationMinus": "SingleExcitationMinus", "DoubleExcitation": "DoubleExcitation",
    "DoubleExcitationPlus": "DoubleExcitationPlus",
    "DoubleExcitationMinus": "DoubleExcitationMinus", "PSWAP": "PSWAP", "ECR": "ECR",
    "SISWAP": "SISWAP", "SQISW": "SISWAP",
}
class ConstantSpecialUnitary(qml.SpecialUnitary):
    """The copy of a trainable SpecialUnitary at its detached parameter in
    PennyLane's decomposition of it (Pauli rotations at zero carry its
    derivative): runs as its matrix and is never differentiated. PennyLane
    would decompose the copy again under jax.jit, where a detached tracer
    still looks trainable, without end (_adjoint_decomposition)."""


# Fixed gates that run as their matrix (QubitUnitary), though PennyLane could
# decompose them: one engine gate instead of several.
_MATRIX_OPS = {"DiagonalQubitUnitary", "QubitCarry", "QubitSum", "BlockEncode",
               "SpecialUnitary", "ConstantSpecialUnitary"}
# Kept in Python: a global phase multiplies the returned state.
_PYTHON_OPS = {"GlobalPhase"}
# Run as several engine gates sharing their parameter (_ops).
_COMPOSED_OPS = {"OrbitalRotation", "PCPhase", "FermionicSingleExcitation",
                 "FermionicDoubleExcitation"}
_NATIVE = frozenset(_GATES) | _PYTHON_OPS | _MATRIX_OPS | _COMPOSED_OPS
# The bases b whose "Adjoint(b)" is itself native (by name).
_NATIVE_ADJOINTS = frozenset(n[len("Adjoint("):-1] for n in _NATIVE if n.startswith("Adjoint("))
_Adjoint = qml.ops.op_math.Adjoint
# Operations the adjoint differentiates as they are, whatever their parameters.
_DIFFERENTIABLE = frozenset(_GATES) - {"QubitUnitary"}
_MAX_CONTROLS = 40


_MAX_MATRIX_WIRES = 10


def _by_matrix(op) -> bool:
    """An operation with no decomposition but a matrix runs as QubitUnitary."""
    return (op.name not in _NATIVE and not op.has_decomposition and op.has_matrix
            and 0 < len(op.wires) <= _MAX_MATRIX_WIRES)


def _pauli_rot_gate(op):
    """How a PauliRot (or SpecialUnitary's TmpPauliRot) runs: Z/I words as
    MultiRZ on the Z wires (all-I is a global phase), single X or Y as RX, RY,
    other words as MultiRZ between basis changes (``"MultiRZBasis"``). None
    for anything else."""
    if op.name not in ("PauliRot", "TmpPauliRot"):
        return None
    word = op.hyperparameters["pauli_word"]
    if not set(word) <= {"X", "Y", "Z", "I"}:
        return None
    if set(word) <= {"Z", "I"}:
        return "MultiRZ" if "Z" in word else "GlobalPhaseHalf"
    if len(word) == 1:
        return {"X": "RX", "Y": "RY"}[word]
    return "MultiRZBasis"


# exp(-i t/2 P) = V^dagger MultiRZ(t) V with V P V^dagger = Z: V = H for X,
# RX(pi/2) for Y. Each: (gate, parameters) before, and after.
_TO_Z = {"X": (("H", []), ("H", [])), "Y": (("RX", [np.pi / 2]), ("RX", [-np.pi / 2]))}


def _controlled_base(op):
    """For a controlled operation (``qml.ctrl``, ``C(RX)``, ``MultiControlledX``,
    ``ControlledQubitUnitary``) that the table has no row for: its base, when the
    base is a table gate or a matrix the engine runs under extra controls. Else None."""
    if op.name in _NATIVE or not isinstance(op, qml.ops.op_math.Controlled):
        return None
    base = op.base
    if len(op.control_wires) > _MAX_CONTROLS or base.name in _PYTHON_OPS:
        return None
    if base.name in _GATES or base.name in _MATRIX_OPS or _by_matrix(base):
        return base
    return None


# The engine's gate table (name -> row): inverse rules come from it.
_TABLE = _qmlsim.gate_table()


def _adjoint_base(op):
    """For ``qml.adjoint(op)`` of a table gate: its base, when the engine runs the
    inverse directly (the gate table's inverse rule, or a fixed gate's matrix).
    Else None."""
    if not isinstance(op, _Adjoint):
        return None
    base = op.base
    if base.name in _NATIVE_ADJOINTS:  # Adjoint(S), Adjoint(T), ...: table gates of their own
        return None
    if base.name in _GATES and _GATES[base.name] != "QubitUnitary":
        return base
    if base.num_params == 0 and base.name in _MATRIX_OPS:
        return base  # its matrix's inverse
    return None


# Templates the device builds itself when their parameters are data (not
# trainable: a trainable one is decomposed for the adjoint, whose tape parameters
# must be scalars): PennyLane's decomposition creates an operator object per
# gate, which costs more than running the gates (a kernel matrix's embeddings).
# Each builder: (template, its parameter as a float array, the engine qubits of
# its wires in order) -> [(table gate, engine qubits, literal angles)].
def _angle_embedding(op, x, q):
    _expect_shape(op, x, (len(q),))
    rot = op.hyperparameters["rotation"].__name__
    return [(rot, [q[i]], [float(x[i])]) for i in range(len(q))]


def _iqp_embedding(op, x, q):
    _expect_shape(op, x, (len(q),))
    pos = {w: i for i, w in enumerate(op.wires.labels)}
    pairs = [(pos[a], pos[b]) for a, b in op.hyperparameters["pattern"]]
    layer = []
    for i in range(len(q)):
        layer += [("H", [q[i]], []), ("RZ", [q[i]], [float(x[i])])]
    layer += [("MultiRZ", [q[i], q[j]], [float(x[i] * x[j])]) for i, j in pairs]
    return layer * op.hyperparameters["n_repeats"]


def _strongly_entangling(op, w, q):
    k = len(q)
    _expect_shape(op, w, (w.shape[0] if w.ndim else 0, k, 3))
    entangler = _GATES[op.hyperparameters["imprimitive"].__name__]
    ops = []
    for layer, r in enumerate(op.hyperparameters["ranges"]):
        ops += [("Rot", [q[i]], [float(a) for a in w[layer, i]]) for i in range(k)]
        if k > 1:
            ops += [(entangler, [q[i], q[(i + r) % k]], []) for i in range(k)]
    return ops


def _basic_entangler(op, w, q):
    k = len(q)
    _expect_shape(op, w, (w.shape[0] if w.ndim else 0, k))
    rot = op.hyperparameters["rotation"].__name__
    ring = [] if k < 2 else [("CNOT", [q[0], q[1]], [])] if k == 2 else [
        ("CNOT", [q[i], q[(i + 1) % k]], []) for i in range(k)]
    ops = []
    for layer in range(w.shape[0]):
        ops += [(rot, [q[i]], [float(w[layer, i])]) for i in range(k)] + ring
    return ops


def _expect_shape(op, x, shape):
    if x.shape != shape:  # broadcast_expand splits batches before execution
        raise DeviceError(f"qmlsim.qubit: {op.name} parameter of shape {x.shape}, "
                          f"expected {shape}")


_TEMPLATES = {"AngleEmbedding": _angle_embedding, "IQPEmbedding": _iqp_embedding,
              "StronglyEntanglingLayers": _strongly_entangling,
              "BasicEntanglerLayers": _basic_entangler}
_TEMPLATE_ROTATIONS = {"RX", "RY", "RZ"}
_TEMPLATE_ENTANGLERS = {"CNOT", "CY", "CZ", "CH", "SWAP"}  # self-inverse: adjoints invert


def _template(op):
    """The builder of a template the device builds itself, or None."""
    build = _TEMPLATES.get(op.name)
    if build is None or len(op.data) != 1:
        return None
    h = op.hyperparameters
    if "rotation" in h and getattr(h["rotation"], "__name__", None) not in _TEMPLATE_ROTATIONS:
        return None
    if "imprimitive" in h and getattr(h["imprimitive"], "__name__", None) not in \
            _TEMPLATE_ENTANGLERS:
        return None
    return build


def _adjoint_template(op):
    """For qml.adjoint of such a template: its base, else None."""
    if not isinstance(op, qml.ops.op_math.Adjoint):
        return None
    return op.base if _template(op.base) is not None else None


def _inverse_rule(name, params):
    """(gate, parameters, global phase e^{i phase}) of the inverse of table gate
    `name` at literal `params`, by the gate table's rule."""
    gate, negate_from, constants, phase = _TABLE[name]["inverse"]
    return gate, [c if k < 0 else -params[k] for k, c in zip(negate_from, constants)], phase


def _inverted(ops):
    """A template's gates inverted: reversed, each by its table rule (the
    templates' gates carry no phase in their rules)."""
    return [(gate, wires, params) for name, wires, p in reversed(ops)
            for gate, params, _ in (_inverse_rule(name, p),)]


def _template_ops(op, b):
    """Engine operations of a template or of its adjoint (see _TEMPLATES), or None."""
    base = _adjoint_template(op)
    target = base if base is not None else op
    build = _template(target)
    if build is None:
        return None
    x = np.asarray(qml.math.unwrap(target.data[0]), dtype=float)
    if not np.all(np.isfinite(x)):
        raise DeviceError(f"qmlsim.qubit: a parameter of {target.name} is not a finite number")
    ops = build(target, x, b.qubits(target.wires.labels))
    return _inverted(ops) if base is not None else ops


def _native(op) -> bool:
    return (op.name in _NATIVE or _by_matrix(op) or _pauli_rot_gate(op) is not None
            or _controlled_base(op) is not None or _adjoint_base(op) is not None
            or _template(op) is not None or _adjoint_template(op) is not None)


def _adjoint_decomposition(op) -> list:
    """The adjoint's decomposition of op: PennyLane's, but for a trainable
    SpecialUnitary's detached copy, kept whole (ConstantSpecialUnitary)."""
    ops = op.decomposition()
    if op.name == "SpecialUnitary" and ops and ops[-1].name == "SpecialUnitary":
        ops[-1] = ConstantSpecialUnitary(ops[-1].data[0], wires=ops[-1].wires)
    return ops


def _table_gate_or_inverse(op) -> bool:
    """A table gate the adjoint differentiates, or qml.adjoint of one (its
    inverse rule): native and differentiable whatever its parameters."""
    if isinstance(op, qml.ops.op_math.Adjoint):
        op = op.base
    return op.name in _DIFFERENTIABLE


def _adjoint_native(op) -> bool:
    """Native, and differentiable by the C++ adjoint when trainable. A state
    preparation (only the first operation remains one) is the starting state:
    it may not be trainable."""
    if _table_gate_or_inverse(op) or isinstance(op, ConstantSpecialUnitary):
        return True  # the common case first; the constant: no derivative by construction
    if isinstance(op, StatePrepBase) or _template(op) or _adjoint_template(op):
        return not qml.operation.is_trainable(op)
    if not _native(op):
        return False
    base = _controlled_base(op) or op
    fixed_matrix = (base.name in ("QubitUnitary", *_MATRIX_OPS) or _by_matrix(base))
    return not (fixed_matrix and qml.operation.is_trainable(op))


# Observables given by a matrix (Hermitian, Projector, SparseHamiltonian, sums
# and products with them) on at most this many wires run as the Pauli sum of
# their matrix (4^k terms at most).
_MAX_MATRIX_OBSERVABLE_WIRES = 6
# (matrix bytes, wires) -> PauliSentence, by content: a demo that builds the
# same matrix in every call decomposes it once.
_MATRIX_REPS = {}
# The expectation value of a Hermitian on more wires than this is one dense
# product with the final state (and its adjoint starts from it), never a Pauli
# sum: 4^k terms cost more than the 2^k x 2^k matrix.
_DENSE_HERMITIAN_WIRES = 3


def _dense_hermitian(obs) -> bool:
    return (obs is not None and obs.name == "Hermitian"
            and len(obs.wires) > _DENSE_HERMITIAN_WIRES)


def _observable_rep(obs):
    """obs as a PauliSentence: its own pauli_rep, else the Pauli decomposition
    of its matrix (at most _MAX_MATRIX_OBSERVABLE_WIRES wires), else None."""
    rep = getattr(obs, "pauli_rep", None)
    if rep is not None or obs is None or len(obs.wires) > _MAX_MATRIX_OBSERVABLE_WIRES:
        return rep
    try:  # the matrix itself is checked: its array may have been edited in place
        matrix = np.asarray(qml.math.unwrap(qml.matrix(obs, wire_order=obs.wires)))
    except Exception:  # noqa: BLE001 - no matrix: not an observable the engine takes
        return None
    key = (matrix.dtype.str, matrix.shape, matrix.tobytes(), tuple(obs.wires.labels))
    hit = _MATRIX_REPS.get(key)
    if hit is not None:
        return hit
    try:
        rep = qml.pauli_decompose(matrix, wire_order=obs.wires, pauli=True)
    except Exception:  # noqa: BLE001 - not Hermitian: not an observable the engine takes
        return None
    if len(_MATRIX_REPS) >= 64:
        _MATRIX_REPS.clear()
    _MATRIX_REPS[key] = rep
    return rep


def _pauli_terms(obs, n: int):
    """The observable as (coefficient, X mask, Z mask) terms on the engine's
    qubits (wire w -> qubit n-1-w), or None if it is not a real Pauli sum."""
    rep = _observable_rep(obs)
    if rep is None:
        return None
    return _per_sentence(_TERMS_CACHE, rep, n, lambda: _convert_terms(rep, n))


def _squared_terms(obs, n: int):
    """obs @ obs as _pauli_terms gives them (a variance's second moment)."""
    rep = _observable_rep(obs)
    if rep is None:
        return None

    def square():
        sq = rep @ rep
        sq.simplify()  # in place: products of anticommuting words cancel
        return _convert_terms(sq, n)

    return _per_sentence(_SQUARES_CACHE, rep, n, square)


# PennyLane's tape copies share the observable's PauliSentence, so what is
# derived from it is derived once, not at every execution of a large Hamiltonian.
_TERMS_CACHE = {}  # (id of a PauliSentence, wires) -> (weak reference to it, terms)
_REAL_CACHE = {}  # (id of a PauliSentence, None) -> (weak reference to it, coefficients real)
_SQUARES_CACHE = {}  # (id of a PauliSentence, wires) -> (weak reference to it, terms of its square)


def _per_sentence(cache, rep, extra, compute):
    """compute() for the PauliSentence rep (and `extra`), remembered while rep lives."""
    key = (id(rep), extra)
    hit = cache.get(key)
    if hit is not None and hit[0]() is rep:
        return hit[1]
    value = compute()
    if len(cache) >= 64:
        cache.clear()
    cache[key] = (weakref.ref(rep), value)
    return value


def _convert_terms(rep, n: int):
    terms = []
    for word, coeff in rep.items():
        c = complex(qml.math.unwrap(coeff))
        if abs(c.imag) > 1e-12 or not np.isfinite(c.real):
            return None
        terms.append((c.real, [(int(wire), pauli) for wire, pauli in word.items()]))
    return pauli_terms(terms, n)


def _real_pauli_sum(obs) -> bool:
    rep = _observable_rep(obs)
    if rep is None:
        return False
    return _per_sentence(_REAL_CACHE, rep, None, lambda: all(
        abs(complex(qml.math.unwrap(c)).imag) <= 1e-12 for c in rep.values()))


def _value(p) -> float:
    if isinstance(p, float):  # Python and NumPy floats: the common case, fast
        if not math.isfinite(p):
            raise DeviceError("qmlsim.qubit: a gate parameter is not a finite number")
        return float(p)
    v = qml.math.unwrap(p)
    v = np.asarray(v)
    if v.ndim != 0:
        raise DeviceError(f"qmlsim.qubit: expected a scalar gate parameter, got shape {v.shape}")
    f = float(np.real(v))
    if not np.isfinite(f):
        raise DeviceError("qmlsim.qubit: a gate parameter is not a finite number")
    return f


_Controlled = qml.ops.op_math.Controlled


def _labels(op):
    """op.wires.labels; for a controlled gate (CNOT, CRX, ...) from its parts,
    which costs a thirtieth of building op.wires."""
    if isinstance(op, _Controlled):
        return op.control_wires.labels + op.base.wires.labels
    return op.wires.labels


# Per operator class: (gate-table name, controlled) for a class whose instances
# are all that table gate (PennyLane's RX, CNOT, ...), else None.
_TABLE_KINDS = {}


def _table_kind(op):
    cls = type(op)
    try:
        return _TABLE_KINDS[cls]
    except KeyError:
        pass
    name = _GATES.get(op.name)
    kind = None
    if name is not None and name != "QubitUnitary" and op.name == cls.__name__ and \
            cls.__name__ not in ("Adjoint", "Controlled", "ControlledOp"):
        kind = (name, isinstance(op, _Controlled))
    _TABLE_KINDS[cls] = kind
    return kind


def _standard_wires(circuit):
    """(the tape on wires 0..n-1, n): the tape itself when it already is on them,
    found from its operations' and measurements' wire labels (the tape's own
    wires property builds a Wires object per controlled gate: 43 ms for the
    5,000 gates of UCCSD on H4 decomposed), else map_to_standard_wires."""
    labels = set()
    for op in circuit.operations:
        labels.update(_labels(op))
    for m in circuit.measurements:
        labels.update(m.wires.labels)
    n = len(labels)
    if all(type(w) is int and 0 <= w < n for w in labels):
        return circuit, n
    circuit = circuit.map_to_standard_wires()
    return circuit, len(circuit.wires)


# FermionicSWAP(pi): OrbitalRotation's basis change (PennyLane's decomposition).
_FSWAP_PI = np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, -1]], dtype=complex)


def _mcm_key(m):
    """A mid-circuit measurement's identity across tape copies and wire maps."""
    uid = getattr(m, "meas_uid", None)
    return uid if uid is not None else m.hash


# Translated programs by structure (_structure_key), least recently used
# last: a tape whose operations are table gates (every parameter a Param,
# see _add_gate) and parameterless operations is translated once per
# structure; its values are read again at every call.
_TRANSLATIONS = {}
_MAX_TRANSLATIONS = 64
TRANSLATION_COUNT = [0]  # translations made (tests count them)


def _structure_key(operations, n: int):
    """The tape's structure, or None when some operation's parameters may be
    literals of the Program (matrices, templates, channels, phases) or it
    measures mid-circuit: per operation its class, wires and
    hyperparameters; the wire count."""
    key = [n]
    for op in operations:
        table = _table_kind(op) is not None
        if op.num_params and not table:
            return None
        if isinstance(op, (MidMeasureMP, Conditional)):
            return None
        # a table gate's hyperparameters follow from its class and wires
        hyper = None if table else op.hyperparameters
        key.append((type(op), _labels(op), repr(hyper) if hyper else None))
    return tuple(key)


def _values(operations) -> list:
    """Every operation's parameters as _value reads them (floats at once)."""
    raw = [p for op in operations for p in op.data]
    if all(type(p) is float or type(p) is np.float64 or (
            type(p) is np.ndarray and p.ndim == 0 and p.dtype.kind == "f") for p in raw):
        values = np.array(raw, dtype=float)
        if not np.all(np.isfinite(values)):
            raise DeviceError("qmlsim.qubit: a gate parameter is not a finite number")
        return values.tolist()
    return [_value(p) for p in raw]


def _program(operations, n: int, mcms: dict | None = None, trainable=None):
    """_translate(...), served from _TRANSLATIONS when only the tape's
    parameter values differ from a translated one's."""
    key = _structure_key(operations, n) if mcms is None else None
    if key is None:
        return _translate(operations, n, mcms, trainable)
    program = _TRANSLATIONS.pop(key, None)
    if program is None:
        program, values = _translate(operations, n, None, trainable)
        if len(_TRANSLATIONS) >= _MAX_TRANSLATIONS:
            del _TRANSLATIONS[next(iter(_TRANSLATIONS))]
    else:
        values = _values(operations)
    _TRANSLATIONS[key] = program
    return program, values


def _translate(operations, n: int, mcms: dict | None = None, trainable=None):
    """The tape's operations as the engine's Program and its parameter values:
    tape parameter t (every operation's parameters, in order) is program
    parameter t; one that is not a scalar angle (a matrix, a state, a
    template's data) keeps a value of 0 and no gate reads it, so its gradient
    is 0, as is a global phase's. Mid-circuit measurements (``qml.measure``)
    write classical bits in order of appearance (mcms: _mcm_key -> bit, filled
    in), and ``qml.cond`` puts its operation under classical control.
    trainable: the tape parameters to differentiate, when known; a channel's
    other parameters are then literals (the engine differentiates every
    channel Param, at one more read of two states each)."""
    TRANSLATION_COUNT[0] += 1
    b, values, initial = Builder(n), [], ()
    mcms = {} if mcms is None else mcms
    for index, op in enumerate(operations):
        if _add_gate(b, op, values):  # the common case, first
            continue
        if isinstance(op, StatePrepBase):  # the starting state, applied directly
            if index != 0:
                raise DeviceError(f"qmlsim.qubit: {op.name} is supported only as the first operation")
            amps = np.asarray(qml.math.unwrap(op.state_vector(wire_order=list(range(n)))),
                              dtype=np.complex128).reshape(-1)
            values.extend([0.0] * op.num_params)
            initial = amps.tolist()
            continue
        if op.name == "QubitDensityMatrix":  # qmlsim.mixed: a mixed start, or a replacement
            values.extend([0.0] * op.num_params)
            if index == 0:
                initial = _mixed_start(op, n).reshape(-1).tolist()
            else:
                b.channel("kraus", op.wires.labels, (), _replacement_kraus(op))
            continue
        if isinstance(op, MidMeasureMP):
            bit = mcms.setdefault(_mcm_key(op), len(mcms))
            b.measure(op.wires.labels[0], bit)
            if op.reset:
                b.reset(op.wires.labels[0])
            continue
        if isinstance(op, Conditional):
            _add_conditional(b, op, values, mcms, trainable)
            continue
        _add_operation(b, op, values, trainable)
    return b.program(len(values), initial, len(mcms)), values


def _on_wires(matrix, wires, n: int, rest):
    """matrix on `wires` (its first wire most significant) times rest(d) on
    the other wires (d = their dimension), as one 2^n x 2^n matrix (wire 0
    most significant)."""
    wires = [int(w) for w in wires]
    others = [w for w in range(n) if w not in wires]
    full = np.kron(matrix, rest(1 << len(others))).reshape((2,) * (2 * n))
    order = wires + others  # the axes of full, rows then columns
    perm = [order.index(w) for w in range(n)]
    return full.transpose(perm + [n + p for p in perm]).reshape(1 << n, 1 << n)


def _mixed_start(op, n: int):
    """QubitDensityMatrix(sigma, wires) as the first operation: sigma on its
    wires and |0><0| on the others."""
    def zero(d):
        z = np.zeros((d, d))
        z[0, 0] = 1
        return z
    sigma = np.asarray(qml.math.unwrap(op.data[0]), dtype=np.complex128)
    return _on_wires(sigma, op.wires.labels, n, zero)


def _replacement_kraus(op) -> list:
    """QubitDensityMatrix(sigma, wires) after other operations: the channel
    rho -> Tr_wires(rho) (x) sigma, as Kraus operators sqrt(l_i) |v_i><j| over
    sigma's eigenpairs (l_i, v_i) and the wires' basis states j (at most 2
    wires: 16 operators)."""
    if len(op.wires) > 2:
        raise DeviceError("qmlsim.mixed: QubitDensityMatrix on more than 2 wires is supported "
                          "only as the first operation")
    sigma = np.asarray(qml.math.unwrap(op.data[0]), dtype=np.complex128)
    values, vectors = np.linalg.eigh(sigma)
    d = len(values)
    return [(np.sqrt(max(l, 0.0)) * np.outer(vectors[:, i], np.eye(d)[j])).reshape(-1).tolist()
            for i, l in enumerate(values) if l > 1e-14 for j in range(d)]


def _add_gate(b, op, values) -> bool:
    """A table gate, qml.adjoint of one or of a fixed gate (see _adjoint_base),
    or Adjoint(S), Adjoint(T), appended to b, its tape parameters to values;
    False for any other operation."""
    kind = _table_kind(op)
    if kind is not None:
        name, controlled = kind
        wires = (op.control_wires.labels + op.base.wires.labels if controlled
                 else op.wires.labels)
        params = []
        for p in op.data:
            params.append(Param(len(values)))
            values.append(_value(p))
        b.ops.append(Op(name, b.qubits(wires), params))
        return True
    inverse = _adjoint_base(op)  # qml.adjoint of a table gate: common in kernels and ansatze
    if inverse is not None:
        _inverse(inverse, b, values)
        return True
    name = _GATES.get(op.name)
    if name is not None and name != "QubitUnitary":
        b.ops.append(Op(name, b.qubits(_labels(op))))
        return True
    return False


def _add_conditional(b, op, values, mcms, trainable=None):
    """``qml.cond(condition, op)``: op's engine operations under the classical
    bits of the measurements the condition reads, once per assignment of
    them that satisfies it (or one negated condition)."""
    mv = op.meas_val
    try:
        bits = [mcms[_mcm_key(m)] for m in mv.measurements]
    except KeyError:
        raise DeviceError("qmlsim: qml.cond on a mid-circuit measurement that comes after it") \
            from None
    start, phase = len(b.ops), b.phase
    base = op.base
    if isinstance(base, MidMeasureMP) or isinstance(base, Conditional):
        raise DeviceError("qmlsim: qml.cond of a measurement or of another qml.cond")
    if not _add_gate(b, base, values):
        _add_operation(b, base, values, trainable)
    b.phase = phase  # a phase of one branch changes nothing observable
    b.condition(start, bits, alternatives(len(bits), lambda v: bool(mv.processing_fn(*v))))


# PennyLane's channels with a row in the engine's channel table, each
# parameter as (tape parameter index, scale, shift) of the row's parameter:
# GeneralizedAmplitudeDamping's p weighs excitation (the table's 1 - p),
# ThermalRelaxationError(pe, t1, t2, tq) is the table's (t1, t2, tq, pe).
# These are differentiated by the engine; other channels run as their Kraus
# matrices, with constant parameters.
_CHANNELS = {
    "DepolarizingChannel": ("depolarizing", ((0, 1, 0),)),
    "BitFlip": ("bit_flip", ((0, 1, 0),)),
    "PhaseFlip": ("phase_flip", ((0, 1, 0),)),
    "AmplitudeDamping": ("amplitude_damping", ((0, 1, 0),)),
    "GeneralizedAmplitudeDamping": ("generalized_amplitude_damping", ((0, 1, 0), (1, -1, 1))),
    "PhaseDamping": ("phase_damping", ((0, 1, 0),)),
    "ThermalRelaxationError": ("thermal_relaxation",
                               ((1, 1, 0), (2, 1, 0), (3, 1, 0), (0, 1, 0))),
}
# PauliError on one wire: the table's pauli_channel with one probability.
_PAULI_SLOT = {"X": 0, "Y": 1, "Z": 2}


def _is_channel(op) -> bool:
    return isinstance(op, qml.operation.Channel)


def _table_channel(op):
    """(row name, parameters as (tape index, scale, shift)) of a channel the
    engine's table has, or None."""
    if op.name in _CHANNELS:
        return _CHANNELS[op.name]
    if op.name == "PauliError" and len(op.wires) == 1:
        params = [(None, 0, 0.0)] * 3
        params[_PAULI_SLOT[op.hyperparameters["operators"]]] = (0, 1, 0)
        return "pauli_channel", tuple(params)
    return None


def _differentiable_channel(op) -> bool:
    """Whether the engine differentiates the channel's parameters."""
    return _table_channel(op) is not None


def _add_channel(b, op, values, trainable=None):
    """A noise channel, appended to b, its tape parameters to values: a table
    row reads them as Params (literals where `trainable`, the tape parameters
    to differentiate, leaves them out), any other channel runs as its Kraus
    matrices (its parameters then constants)."""
    t = len(values)
    row = _table_channel(op)
    if row is not None:
        values.extend(_value(p) for p in op.parameters)
        name, params = row
        b.channel(name, op.wires.labels,
                  [shift if i is None else
                   Param(t + i, scale, shift) if trainable is None or t + i in trainable else
                   scale * values[t + i] + shift for i, scale, shift in params])
        return
    values.extend([0.0] * op.num_params)
    kraus = [np.asarray(qml.math.unwrap(k), dtype=np.complex128).reshape(-1).tolist()
             for k in op.kraus_matrices()]
    b.channel("kraus", op.wires.labels, (), kraus)


def _add_operation(b, op, values, trainable=None):
    """The engine gates of any other native operation, appended to b; its tape
    parameters appended to values."""
    t = len(values)
    if _is_channel(op):
        _add_channel(b, op, values, trainable)
        return
    if op.name in _PYTHON_OPS:  # GlobalPhase(x) = e^{-i x}
        values.append(_value(op.parameters[0]))
        b.phase -= values[t]
        return
    if op.name == "OrbitalRotation":  # FSWAP(pi) SE(t) SE(t) FSWAP(pi), as PennyLane's
        w = b.qubits(op.wires)
        values.append(_value(op.parameters[0]))
        fswap = _FSWAP_PI.reshape(-1).tolist()
        b.engine_gate("QubitUnitary", [w[1], w[2]], matrix=fswap)
        b.engine_gate("SingleExcitation", [w[0], w[1]], [Param(t)])
        b.engine_gate("SingleExcitation", [w[2], w[3]], [Param(t)])
        b.engine_gate("QubitUnitary", [w[1], w[2]], matrix=fswap)
        return
    if op.name in _FERMIONIC:
        values.append(_value(op.parameters[0]))
        _fermionic(op, b, t)
        return
    if op.name == "PCPhase":
        values.append(_value(op.parameters[0]))
        _pc_phase(op, b, t, values[t])
        return
    built = _template_ops(op, b)
    if built is not None:  # data, not trainable: literal angles
        values.extend([0.0] * op.num_params)
        for name, qubits, params in built:
            b.engine_gate(name, qubits, params)
        return
    controls, control_values = (), ()
    base = _controlled_base(op)
    if base is not None:
        controls, control_values = op.control_wires, op.control_values
        op = base
    name = _GATES.get(op.name)
    wire_list = list(op.wires)
    rot = _pauli_rot_gate(op)
    if rot == "GlobalPhaseHalf":  # exp(-i t/2 I...I)
        values.append(_value(op.parameters[0]))
        b.phase -= values[t] / 2
        return
    if rot is not None:
        word = op.hyperparameters["pauli_word"]
        wire_list = [w for w, p in zip(op.wires, word) if p != "I"]
        if rot == "MultiRZBasis":
            values.append(_value(op.parameters[0]))
            letters = [(b.qubit(w), p) for w, p in zip(op.wires, word) if p != "I"]
            _pauli_word(b, letters, Param(t))
            return
        name = rot
    if name is None and (op.name in _MATRIX_OPS or _by_matrix(op)):
        name = "QubitUnitary"
    if name is None:
        raise DeviceError(f"qmlsim.qubit: operation {op.name} is not supported")
    if name == "QubitUnitary":
        m = np.asarray(qml.math.unwrap(op.matrix()), dtype=np.complex128).reshape(-1)
        values.extend([0.0] * op.num_params)
        b.gate(name, wire_list, (), controls, control_values, m.tolist())
        return
    params = []
    for p in op.parameters:
        params.append(Param(len(values)))
        values.append(_value(p))
    b.gate(name, wire_list, params, controls, control_values)


def _pauli_word(b, letters, angle):
    """exp(-i angle/2 P), P the word [(engine qubit, "X" | "Y" | "Z"), ...]:
    MultiRZ between basis changes (literal angles), appended to b."""
    changes = [(q, _TO_Z[p]) for q, p in letters if p in _TO_Z]
    for q, (before, _) in changes:
        b.engine_gate(before[0], [q], before[1])
    b.engine_gate("MultiRZ", [q for q, _ in letters], [angle])
    for q, (_, after) in changes:
        b.engine_gate(after[0], [q], after[1])


# UCCSD's excitations as commuting Pauli rotations (Jordan-Wigner: Z on the
# wires strictly inside each range): FermionicSingleExcitation(t) on wires r..p
# is exp(-i t/4 X..Y) exp(+i t/4 Y..X); FermionicDoubleExcitation(t) is the
# product of exp(-i sign t/16 P) over the eight words P of letters on
# (r, s, q, p) = the ends of wires1 and wires2 below. Both checked against
# PennyLane's matrices (python/tests/test_device.py).
_FERMIONIC = {"FermionicSingleExcitation", "FermionicDoubleExcitation"}
_DOUBLE_WORDS = (("XXXY", -1), ("XXYX", -1), ("XYXX", 1), ("XYYY", -1), ("YXXX", 1),
                 ("YXYY", -1), ("YYXY", 1), ("YYYX", 1))


def _fermionic(op, b, t):
    """The engine gates of a fermionic excitation of tape parameter t."""
    if op.name == "FermionicSingleExcitation":
        w = b.qubits(op.wires)
        ends, inner, words = (w[0], w[-1]), w[1:-1], (("XY", 0.5), ("YX", -0.5))
    else:
        w1 = b.qubits(op.hyperparameters["wires1"])
        w2 = b.qubits(op.hyperparameters["wires2"])
        ends, inner = (w1[0], w1[-1], w2[0], w2[-1]), w1[1:-1] + w2[1:-1]
        words = tuple((word, sign / 8) for word, sign in _DOUBLE_WORDS)
    for word, factor in words:
        letters = list(zip(ends, word)) + [(q, "Z") for q in inner]
        _pauli_word(b, letters, Param(t, factor))


def _inverse(base, b, values):
    """The engine gates of adjoint(base) (see _adjoint_base) by the gate table's
    inverse rule: tape parameter k feeds the inverse's angles that read it,
    negated; the rule's phase joins the global phase."""
    wires = b.qubits(base.wires)
    name = _GATES.get(base.name)
    if name is None:  # a fixed gate: its inverse's matrix
        m = np.asarray(qml.math.unwrap(base.matrix()), dtype=np.complex128).conj().T
        b.engine_gate("QubitUnitary", wires, matrix=m.reshape(-1).tolist())
        return
    gate, negate_from, constants, phase = _TABLE[name]["inverse"]
    t = len(values)
    values.extend(_value(p) for p in base.parameters)
    b.engine_gate(gate, wires, [c if k < 0 else Param(t + k, -1.0)
                                for k, c in zip(negate_from, constants)])
    b.phase += phase


def _pc_phase(op, b, t, x):
    """PCPhase(x, dim) = e^{ix} on the first dim basis states of its wires, e^{-ix}
    on the others: the global phase e^{-ix} times e^{2ix} on the first dim states,
    one controlled PhaseShift(2x) per set bit j of dim (the states whose higher
    bits equal dim's and whose bit j is 0)."""
    k = len(op.wires)
    dim = int(op.hyperparameters["dimension"][0])
    w = b.qubits(op.wires)
    if dim >= 1 << k:
        b.phase += x
        return
    b.phase -= x
    for j in range(k):  # j = 0: the most significant wire
        if not dim >> (k - 1 - j) & 1:
            continue
        higher = [(w[i], dim >> (k - 1 - i) & 1) for i in range(j)]
        b.engine_gate("X", [w[j]])  # the phase on |0> of wire j
        b.ops.append(Op("PhaseShift", [w[j]], [Param(t, 2.0)], [q for q, _ in higher],
                        [bool(v) for _, v in higher]))
        b.engine_gate("X", [w[j]])
