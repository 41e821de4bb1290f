"""The one translation layer of the Python doors: what every door (the
package's own ``Circuit``, PennyLane, Cirq, TensorFlow Quantum; Qiskit through
OpenQASM 3) hands the engine, built one way.

- ``Builder``: a door's circuit as the engine's typed ``Program``. It owns the
  wire map (a door's wire i is engine qubit n-1-i when the door's first wire is
  the most significant bit of a state index, as in PennyLane and Cirq), the
  global phase, and the parameters: an engine parameter is a literal or
  ``Param(slot, scale, shift)`` of the program's parameter values, so gradients
  come back per door parameter and linear chain rules need no code in the door.
- ``engine_options``: the one validation of precision, threads, fusion and
  backend, with one message style and one default for threads
  (``OMP_NUM_THREADS``, else every core).
- ``pauli_terms``: the one Pauli-sum builder: (coefficient, [(wire, letter)])
  terms as the engine's (coefficient, X mask, Z mask) terms.
"""
from __future__ import annotations

import os

from . import _qmlsim

Op, Param, Program = _qmlsim.Op, _qmlsim.Param, _qmlsim.Program


def default_threads() -> int:
    """OMP_NUM_THREADS when set to a positive whole number, else every core."""
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return os.cpu_count() or 1


def _whole(value, name: str, low: int, high: int, who: str) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__") or not low <= int(value) <= high:
        raise ValueError(f"{who}{name} must be a whole number from {low} to {high}, got {value!r}")
    return int(value)


METHODS = ("auto", "statevector", "density_matrix", "trajectories")


def engine_options(precision: str = "c128", threads=None, fusion=3, backend: str = "cpu",
                   who: str = "", method: str = "auto", trajectories=1000, seed=1) -> tuple:
    """The engine's options, checked, as a tuple for ``options``: a ValueError
    names the option (``who``, e.g. "qmlsim.cirq: ", starts the message).
    method: how noise channels run (a density matrix or trajectories; auto:
    the density matrix while it fits in memory); trajectories and seed: for
    the trajectory method."""
    if precision not in ("c64", "c128"):
        raise ValueError(f"{who}precision must be 'c64' or 'c128', got {precision!r}")
    threads = default_threads() if threads is None else _whole(threads, "threads", 1, 1 << 16, who)
    fusion = _whole(fusion, "fusion", 0, 10, who)
    if method not in METHODS:
        raise ValueError(f"{who}method must be one of {', '.join(METHODS)}, got {method!r}")
    trajectories = _whole(trajectories, "trajectories", 1, 1 << 40, who)
    seed = _whole(seed, "seed", 0, (1 << 64) - 1, who)
    try:
        _qmlsim.check_backend(backend)
    except ValueError as e:
        raise ValueError(f"{who}backend {backend!r}: {e}") from None
    return precision, threads, fusion, backend, method, trajectories, seed


def options(checked: tuple) -> "_qmlsim.Options":
    """The engine's Options object for a call, from engine_options' tuple (held
    for no longer than the call: the doors keep the tuple)."""
    o = _qmlsim.Options()
    (o.precision, o.threads, o.fusion, o.backend, o.method, o.trajectories,
     o.seed) = checked
    return o


def pauli_terms(terms, n: int, flip: bool = True) -> list:
    """[(coefficient, [(wire, "X" | "Y" | "Z" | "I"), ...]), ...] as engine terms
    (coefficient, X mask, Z mask); wire w is engine qubit n-1-w when ``flip``.
    Coefficients must be real numbers (the caller names what it refuses)."""
    out = []
    for coefficient, letters in terms:
        x = z = 0
        for w, p in letters:
            bit = 1 << (n - 1 - w if flip else w)
            if p in ("X", "Y"):
                x |= bit
            if p in ("Z", "Y"):
                z |= bit
        out.append((float(coefficient), x, z))
    return out or [(0.0, 0, 0)]


class Builder:
    """Engine operations for a program on n qubits, in the door's wire order.

    ``gate(name, wires, params, ...)``: a gate of the table on door wires;
    each parameter a number (a literal) or ``Param(slot, scale, shift)``.
    ``program(num_params, initial_state)`` checks everything once, in C++."""

    __slots__ = ("n", "flip", "ops", "phase")

    def __init__(self, n: int, flip: bool = True):
        self.n, self.flip, self.ops, self.phase = n, flip, [], 0.0

    def qubit(self, wire) -> int:
        return self.n - 1 - int(wire) if self.flip else int(wire)

    def qubits(self, wires) -> list:
        n1 = self.n - 1
        return [n1 - int(w) for w in wires] if self.flip else [int(w) for w in wires]

    def gate(self, name: str, wires, params=(), controls=(), control_values=(), matrix=()):
        """Appends a table gate on door wires (intrinsic controls first), under
        extra door-wire controls (on |1>, or |0> where control_values is False)."""
        self.ops.append(Op(name, self.qubits(wires), list(params), self.qubits(controls),
                           [bool(v) for v in control_values], matrix))
        return self

    def channel(self, name: str, wires, params=(), kraus=()):
        """Appends a noise channel of the channel table (Braket's names:
        "depolarizing", "amplitude_damping", ..., "kraus" with its flat
        matrices, the first wire most significant) on door wires."""
        self.ops.append(Op(name, self.qubits(wires), list(params), [], [], [],
                           [list(k) for k in kraus]))
        return self

    def measure(self, wire, clbit: int = -1):
        """Appends a measurement of a door wire into classical bit `clbit`
        (-1: the outcome is not kept)."""
        self.ops.append(Op("measure", [self.qubit(wire)], clbit=clbit))
        return self

    def reset(self, wire):
        """Appends a reset of a door wire to |0>."""
        self.ops.append(Op("reset", [self.qubit(wire)]))
        return self

    def condition(self, start: int, bits, alternatives):
        """Puts the ops appended since index `start` under classical control:
        once per alternative (value, negated) over classical bits `bits`
        (bit j of a value for bits[j]); the alternatives must be mutually
        exclusive, so exactly one copy runs where any holds."""
        body = self.ops[start:]
        del self.ops[start:]
        for value, negated in alternatives:
            for op in body:
                if op.condition_bits:
                    raise ValueError("a classical condition on an operation that already has one")
                c = Op(op)
                c.condition_bits, c.condition_value, c.condition_negated = list(bits), value, negated
                self.ops.append(c)
        return self

    def engine_gate(self, name: str, qubits, params=(), matrix=()):
        """Appends a table gate on engine qubits (no wire map)."""
        self.ops.append(Op(name, list(qubits), list(params), [], [], matrix))
        return self

    def program(self, num_params: int = 0, initial_state=(), num_clbits: int = 0
                ) -> "_qmlsim.Program":
        return Program(self.n, self.ops, num_params, list(initial_state), self.phase, num_clbits)


def alternatives(k: int, holds) -> list:
    """The (value, negated) alternatives of a condition on k classical bits
    that holds(bits) decides (bits[j] = bit j of an assignment): one value,
    all values but one (negated), or each satisfying value."""
    if k > 12:
        raise ValueError(f"a condition on {k} mid-circuit measurements: at most 12 are supported")
    yes = [a for a in range(1 << k) if holds([(a >> j) & 1 for j in range(k)])]
    if len(yes) == 1:
        return [(yes[0], False)]
    if k > 0 and len(yes) == (1 << k) - 1:
        return [(next(a for a in range(1 << k) if a not in yes), True)]
    return [(a, False) for a in yes]
