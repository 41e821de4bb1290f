"""The one Cirq visitor of the Cirq and TensorFlow Quantum doors: a Cirq
circuit decomposed into what the engine runs, as ``Step``s each door turns
into engine operations (the Cirq simulator at each parameter point, TFQ with
symbols kept as program parameters).

Gate families become the engine's gates: U(t, s) = e^{i pi t (s + phase)} x
the engine gate at angle pi t (X**t = e^{i pi t/2} RX(pi t), Z**t = diag(1,
e^{i pi t}) = PhaseShift(pi t), CZ**t = ControlledPhaseShift(pi t), XX**t =
e^{i pi t/2} IsingXX(pi t)); H, CNOT and SWAP at exponent 1 are the engine's
fixed gates (U = e^{i pi s} G). Every other gate with a unitary on at most 10
qubits runs as its matrix; anything else through ``cirq.decompose``. Cirq
qubit i (the first the most significant) is engine qubit n-1-i, so the
engine's state index is Cirq's.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import cirq
import numpy as np
import sympy

from ._program import Op, pauli_terms

MAX_MATRIX_QUBITS = 10

# (class, engine gate, global phase of exponent 1 without shift)
_ROTATIONS = ((cirq.XPowGate, "RX", 0.5), (cirq.YPowGate, "RY", 0.5),
              (cirq.ZPowGate, "PhaseShift", 0.0), (cirq.CZPowGate, "ControlledPhaseShift", 0.0),
              (cirq.XXPowGate, "IsingXX", 0.5), (cirq.YYPowGate, "IsingYY", 0.5),
              (cirq.ZZPowGate, "IsingZZ", 0.5))
_FIXED = ((cirq.HPowGate, "H"), (cirq.CXPowGate, "CNOT"), (cirq.SwapPowGate, "SWAP"))


class Step(NamedTuple):
    """One operation as the engine takes it. kind: "measure", "phase" (a
    cirq.GlobalPhaseGate), "rotation" (a rotation family: engine gate `name`,
    `phase` of exponent 1), "fixed" (H, CNOT, SWAP families), "matrix",
    "channel" (a noise channel on at most 2 qubits, run as its Kraus set), or
    "controlled" (a cirq.ClassicallyControlledOperation of one of these)."""
    kind: str
    op: cirq.Operation
    wires: list
    name: str | None = None
    phase: float = 0.0


def _family(gate):
    """(kind, engine gate, phase) of a family gate, else None."""
    for cls, name, phase in _ROTATIONS:
        if isinstance(gate, cls):
            return "rotation", name, phase
    for cls, name in _FIXED:
        if isinstance(gate, cls):
            return "fixed", name, 0.0
    return None


def steps(circuit, qubits, who: str, resolve_later: bool):
    """The circuit's Steps over `qubits` (their order: the first the most
    significant). resolve_later: gates with symbols are kept whole, to be
    resolved at each parameter point (``evaluate``); otherwise symbols must
    end up in rotation exponents (other gates with symbols are decomposed)."""
    index = {q: i for i, q in enumerate(qubits)}
    n = len(qubits)

    def keep(op) -> bool:
        if isinstance(op, cirq.ClassicallyControlledOperation):
            return keep(op.without_classical_controls())
        if cirq.is_measurement(op) or isinstance(op.gate, cirq.GlobalPhaseGate):
            return True
        family = _family(op.gate) if op.gate is not None else None
        if family is not None and (resolve_later or family[0] == "rotation"
                                   or not cirq.is_parameterized(op)):
            return True
        if len(op.qubits) > MAX_MATRIX_QUBITS:
            return False
        if cirq.is_parameterized(op):
            return resolve_later and isinstance(op, cirq.GateOperation)
        return cirq.has_unitary(op) or _is_channel(op)

    def stuck(op):
        return ValueError(f"{who}operation {op!r} has no unitary or decomposition qmlsim can run")

    for op in cirq.decompose(circuit, keep=keep, on_stuck_raise=stuck):
        wires = [n - 1 - index[q] for q in op.qubits]
        if isinstance(op, cirq.ClassicallyControlledOperation):
            yield Step("controlled", op, wires)
        else:
            yield step_of(op, wires)


def step_of(op, wires) -> Step:
    """The Step of one operation that needs no decomposition."""
    if cirq.is_measurement(op):
        return Step("measure", op, wires)
    if isinstance(op.gate, cirq.GlobalPhaseGate):
        return Step("phase", op, wires)
    if _is_channel(op):
        return Step("channel", op, wires)
    family = _family(op.gate) if op.gate is not None else None
    kind, name, phase = family if family else ("matrix", None, 0.0)
    return Step(kind, op, wires, name, phase)


def _is_channel(op) -> bool:
    """A noise channel the engine runs as its Kraus set (one or two qubits)."""
    return (len(op.qubits) <= 2 and not cirq.is_parameterized(op) and not cirq.is_measurement(op)
            and not cirq.has_unitary(op) and cirq.has_kraus(op))


# A symbolic parameter compiled once (its free symbols, a function of their
# values): a sweep of 1,000 points spent 85% of its time in Cirq's
# ParamResolver.value_of.
_COMPILED = {}


def _compiled_value(value, resolver):
    """value (a sympy expression) at the resolver's real values by its
    compiled function, or None where Cirq's own resolution is needed (a value
    that is itself symbolic or complex, a symbol not in the resolver)."""
    hit = _COMPILED.get(value)
    if hit is None:
        symbols = sorted(value.free_symbols, key=lambda sym: sym.name)
        try:
            hit = (symbols, sympy.lambdify(symbols, value, "math"))
        except Exception:  # noqa: BLE001 - a formula lambdify cannot print: Cirq's way
            hit = (symbols, None)
        if len(_COMPILED) >= 1024:
            _COMPILED.clear()
        _COMPILED[value] = hit
    symbols, fn = hit
    if fn is None:
        return None
    values = resolver.param_dict
    args = []
    for sym in symbols:
        v = values.get(sym, values.get(sym.name))
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer,
                                                                 np.floating)):
            return None
        args.append(float(v))
    try:
        return float(fn(*args))
    except (ArithmeticError, ValueError, TypeError):  # e.g. a complex intermediate
        return None


def _resolved(value, resolver, who: str):
    """A parameter at the resolver's values, or a ValueError naming the symbols left unresolved."""
    if isinstance(value, sympy.Expr):
        fast = _compiled_value(value, resolver)
        if fast is not None:
            return fast
    v = resolver.value_of(value)
    if cirq.is_parameterized(v):
        raise ValueError(f"{who}unresolved parameters {sorted(cirq.parameter_names(v))}")
    return v


def _number(value, resolver, who: str) -> float:
    return float(np.real(complex(_resolved(value, resolver, who))))


def evaluate(step: Step, resolver, who: str):
    """(engine operation or None, global phase in radians) of a step other
    than a measurement at the resolver's values."""
    op, gate = step.op, step.op.gate
    if step.kind == "channel":
        kraus = [np.asarray(k, dtype=np.complex128).reshape(-1).tolist()
                 for k in cirq.kraus(cirq.resolve_parameters(op, resolver))]
        return Op("kraus", step.wires, [], [], [], [], kraus), 0.0
    if step.kind == "phase":
        return None, float(np.angle(complex(_resolved(gate.coefficient, resolver, who))))
    if step.kind in ("rotation", "fixed"):
        t, s = _number(gate.exponent, resolver, who), _number(gate.global_shift, resolver, who)
        if not (math.isfinite(t) and math.isfinite(s)):  # said of the gate, not the phase
            raise ValueError(f"{who}{op!r}: its angle is not a finite number (exponent {t}, "
                             f"global shift {s})")
        if step.kind == "rotation":
            return Op(step.name, step.wires, [math.pi * t]), math.pi * t * (s + step.phase)
        if t == 1:
            return Op(step.name, step.wires), math.pi * s
    if cirq.is_parameterized(op):
        op = cirq.resolve_parameters(op, resolver)
        if cirq.is_parameterized(op):
            raise ValueError(f"{who}unresolved parameters {sorted(cirq.parameter_names(op))}")
    if not cirq.has_unitary(op):
        raise ValueError(f"{who}operation {op!r} has no unitary qmlsim can run")
    return Op("QubitUnitary", step.wires, [], [], [], matrix(op)), 0.0


_MATRICES = {}  # gate -> its unitary as a flat list (gates are immutable values)


def matrix(op):
    """op's unitary as a flat list (first qubit most significant), per gate once."""
    gate = op.gate
    if type(op) is not cirq.GateOperation:
        return np.asarray(cirq.unitary(op), dtype=np.complex128).reshape(-1).tolist()
    try:
        return _MATRICES[gate]
    except (KeyError, TypeError):  # TypeError: an unhashable gate
        pass
    m = np.asarray(cirq.unitary(gate), dtype=np.complex128).reshape(-1).tolist()
    try:
        if len(_MATRICES) > 4096:
            _MATRICES.clear()
        _MATRICES[gate] = m
    except TypeError:
        pass
    return m


def observable_terms(observable, index, n, who: str):
    """A Pauli sum over Cirq qubits (`index`: qubit -> position, the first the
    most significant) as the engine's terms."""
    terms = []
    for ps in cirq.PauliSum.wrap(observable):
        c = complex(ps.coefficient)
        if abs(c.imag) > 1e-12:
            raise ValueError(f"{who}observable {observable} has a complex coefficient "
                             "(not Hermitian)")
        terms.append((c.real, [(index[q], str(pauli)) for q, pauli in ps.items()]))
    return pauli_terms(terms, n)
