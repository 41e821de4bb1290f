"""qmlsim: the C++ state-vector engine of qmlsim, from Python.

    import qmlsim
    c = qmlsim.Circuit(2)
    c.add("H", [0]).add("CNOT", [0, 1]).add("RY", [1], [0.3])
    qmlsim.expval(c, ["Z0 Z1", "X0"])          # <H> for each Pauli sum
    qmlsim.jacobian(c, ["Z0 Z1"])              # d<H>/d(parameter), adjoint method
    qmlsim.state(c)                            # numpy complex128, qubit 0 least significant

Gates are the gate table's (PennyLane's definitions and names: RX, Rot, CNOT,
IsingXX, MultiRZ, QubitUnitary, ...). Every gate parameter is one trainable
parameter, in the order the gates were added. Options: precision "c64" or
"c128", threads, fusion (largest fused block, 0 = off), backend "cpu" or
"cuda" (the GPU backend, where the package was built with the CUDA toolkit and
a GPU is present; otherwise a ValueError saying so). Errors are ValueError
(MemoryError for a state that cannot fit) with the engine's one-line message.
The PennyLane device is `qml.device("qmlsim.qubit", wires=n)` (qmlsim.device).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from . import _qmlsim
from ._program import Builder, Param, engine_options, options

__all__ = ["Circuit", "expval", "expval_batch", "expval_qasm", "state_qasm", "var", "jacobian", "vjp", "state", "probs",
           "sample", "pauli_terms", "max_qubits"]

max_qubits = _qmlsim.max_qubits()


class Circuit:
    """Gates on `num_qubits` qubits (qubit q is bit q of an amplitude index).
    Every gate parameter is one parameter of the circuit, in the order added."""

    def __init__(self, num_qubits: int):
        if not isinstance(num_qubits, int) or not 1 <= num_qubits <= max_qubits:
            raise ValueError(f"num_qubits: {num_qubits!r} is out of range (1 to {max_qubits})")
        self.num_qubits = num_qubits
        self._builder = Builder(num_qubits, flip=False)
        self._values: list = []

    def add(self, gate: str, wires: Sequence[int], params: Sequence[float] = (), matrix=None,
            controls: Sequence[int] = ()):
        """Appends a gate of the table on `wires`; `matrix` (2^k x 2^k, first
        wire most significant) only for QubitUnitary; `controls`: extra control
        qubits (on |1>), as OpenQASM 3's ``ctrl @``. Returns self."""
        flat = [] if matrix is None else np.asarray(matrix, dtype=np.complex128).reshape(-1).tolist()
        first = len(self._values)
        self._values.extend(float(p) for p in params)
        self._builder.gate(str(gate), wires, [Param(first + i) for i in range(len(params))],
                           controls, (), flat)
        return self

    def channel(self, name: str, wires: Sequence[int], params: Sequence[float] = (), kraus=None,
                trainable: bool = False):
        """Appends a noise channel (Braket's names and argument orders:
        "depolarizing", "bit_flip", "phase_flip", "pauli_channel",
        "two_qubit_depolarizing", "two_qubit_dephasing", "amplitude_damping",
        "generalized_amplitude_damping", "phase_damping", "thermal_relaxation";
        "kraus" with `kraus`, a list of 2^k x 2^k matrices, first wire most
        significant). Parameters are literals, or with ``trainable=True``
        parameters of the circuit (after those added before, in order), which
        ``jacobian`` and ``vjp`` differentiate on the density matrix.
        A circuit with channels runs on a density matrix or by trajectories
        (the ``method`` option). Returns self."""
        flat = [np.asarray(k, dtype=np.complex128).reshape(-1).tolist() for k in (kraus or [])]
        values = [float(p) for p in params]
        if trainable:
            first = len(self._values)
            self._values.extend(values)
            values = [Param(first + i) for i in range(len(values))]
        self._builder.channel(str(name), wires, values, flat)
        return self

    @property
    def num_params(self) -> int:
        return len(self._values)

    def _program(self):
        return self._builder.program(len(self._values)), self._values


def _options(precision: str, threads: int | None, fusion: int, backend: str = "cpu",
             method: str = "auto", trajectories: int = 1000, seed: int = 1):
    return options(engine_options(precision, threads, fusion, backend, method=method,
                                  trajectories=trajectories, seed=seed))


def pauli_terms(observable) -> list:
    """A Pauli sum as (coefficient, X mask, Z mask) terms; `observable` is a
    string such as "0.5*Z0*Z1 - X2" or already such a list."""
    if isinstance(observable, str):
        return _qmlsim.parse_pauli_sum(observable)
    return [(float(c), int(x), int(z)) for c, x, z in observable]


def _observables(observables) -> list:
    if isinstance(observables, (str, tuple)) or (
        isinstance(observables, list) and observables and isinstance(observables[0], tuple)
    ):
        observables = [observables]
    return [pauli_terms(h) for h in observables]


def state(circuit: Circuit, *, precision: str = "c128", threads: int | None = None,
          fusion: int = 3, backend: str = "cpu", method: str = "auto") -> np.ndarray:
    """The final state from |0...0> as a complex128 array of 2^n amplitudes; for
    a circuit with channels (or method="density_matrix") the density matrix,
    shape (2^n, 2^n), rho[r, c] with qubit q bit q of r and c."""
    out = _qmlsim.state(*circuit._program(),
                        _options(precision, threads, fusion, backend, method=method))
    d = 1 << circuit.num_qubits
    return out.reshape((d, d)) if out.size == d * d and d > 1 else out


def probs(circuit: Circuit, **options) -> np.ndarray:
    """Probabilities of the computational basis states (qubit 0 least significant)."""
    s = state(circuit, **options)
    return np.real(np.diag(s)).copy() if s.ndim == 2 else np.abs(s) ** 2


def expval(circuit: Circuit, observables, *, precision: str = "c128", threads: int | None = None,
           fusion: int = 3, backend: str = "cpu", method: str = "auto", trajectories: int = 1000,
           seed: int = 1) -> np.ndarray:
    """<H_k> for each Pauli sum H_k (strings like "0.5*Z0*Z1 - X2", or term lists).
    A circuit with channels runs on a density matrix (exact) or, with
    method="trajectories" (auto beyond memory), as the mean of `trajectories`
    seeded trajectories."""
    return np.array(_qmlsim.expvals(*circuit._program(), _observables(observables),
                                    _options(precision, threads, fusion, backend, method,
                                             trajectories, seed)))


def expval_qasm(text: str, observables, *, precision: str = "c128", threads: int | None = None,
                fusion: int = 3, backend: str = "cpu") -> np.ndarray:
    """<H_k> of an OpenQASM 2.0 or 3 program (its text; no inputs), read and run
    in this process as ``qmlsim run`` would. Qubit q of the program is qubit q
    of the observables ("Z0" is q[0] of the first register)."""
    return np.array(_qmlsim.expvals_qasm(str(text), _observables(observables),
                                         _options(precision, threads, fusion, backend)))


def state_qasm(text: str, inputs: dict | None = None, *, precision: str = "c128",
               threads: int | None = None, fusion: int = 3, backend: str = "cpu") -> np.ndarray:
    """The final state of an OpenQASM 2.0 or 3 program (its text) as complex128,
    the program's global phase (``gphase``, Qiskit's ``global_phase`` gate)
    included. ``inputs`` maps each OpenQASM 3 input's name to its value (a
    number, or a sequence for an input array). Amplitude index bit q is qubit q."""
    values = {str(k): [float(v)] if np.ndim(v) == 0 else [float(e) for e in np.ravel(v)]
              for k, v in (inputs or {}).items()}
    return _qmlsim.state_qasm(str(text), values, _options(precision, threads, fusion, backend))


def jacobian(circuit: Circuit, observables, *, precision: str = "c128",
             threads: int | None = None, fusion: int = 3, backend: str = "cpu",
             method: str = "auto", trajectories: int = 1000, seed: int = 1) -> np.ndarray:
    """d<H_k>/d(parameter) by the adjoint method: shape (observables, parameters);
    exact on a density matrix for a circuit with channels (see expval)."""
    _, rows = _qmlsim.jacobian(*circuit._program(), _observables(observables),
                               _options(precision, threads, fusion, backend, method,
                                        trajectories, seed))
    return np.array(rows).reshape(len(rows), circuit.num_params)


def vjp(circuit: Circuit, observables, cotangent, *, precision: str = "c128",
        threads: int | None = None, fusion: int = 3, backend: str = "cpu",
        method: str = "auto", trajectories: int = 1000, seed: int = 1) -> np.ndarray:
    """sum_k cotangent[k] d<H_k>/d(parameter): one adjoint backward pass."""
    _, grad = _qmlsim.vjp(*circuit._program(), _observables(observables),
                          [float(c) for c in np.ravel(cotangent)],
                          _options(precision, threads, fusion, backend, method, trajectories,
                                   seed))
    return np.array(grad)


def expval_batch(circuits: Sequence[Circuit], observables, *, precision: str = "c128",
                 threads: int | None = None, fusion: int = 3, backend: str = "cpu") -> np.ndarray:
    """<H_k> for many circuits on the same number of qubits, in one C++ call
    (one circuit per thread for small states, threads inside each otherwise):
    shape (circuits, observables)."""
    circuits = list(circuits)
    if not circuits:
        return np.zeros((0, len(_observables(observables))))
    n = circuits[0].num_qubits
    if any(c.num_qubits != n for c in circuits):
        raise ValueError("expval_batch: the circuits must have the same number of qubits")
    programs = [c._program() for c in circuits]
    return np.array(_qmlsim.expvals_batch([p for p, _ in programs], [v for _, v in programs],
                                          _observables(observables),
                                          _options(precision, threads, fusion, backend)))


def sample(circuit: Circuit, shots: int, *, seed: int = 1, **options) -> np.ndarray:
    """`shots` basis-state indices drawn from the final state (qubit q is bit q),
    with NumPy's generator seeded by `seed`: the same seed, the same samples."""
    if not isinstance(shots, (int, np.integer)) or shots < 0:
        raise ValueError(f"shots: {shots!r} is not a non-negative integer")
    p = probs(circuit, **options)
    return np.random.default_rng(seed).choice(p.size, size=int(shots), p=p / p.sum())


def _square(terms) -> list:
    """H^2 of a real Pauli sum, as terms: P(x, z) = i^|x&z| X^x Z^z (Y = iXZ), so
    P1 P2 = i^(|x1&z1| + |x2&z2| - |x3&z3|) (-1)^|z1&x2| P(x1^x2, z1^z2)."""
    out: dict = {}
    pc = lambda v: bin(v).count("1")  # noqa: E731
    for c1, x1, z1 in terms:
        for c2, x2, z2 in terms:
            x3, z3 = x1 ^ x2, z1 ^ z2
            power = (pc(x1 & z1) + pc(x2 & z2) - pc(x3 & z3)) % 4
            phase = (1j ** power) * (-1) ** pc(z1 & x2)
            out[(x3, z3)] = out.get((x3, z3), 0) + c1 * c2 * phase
    return [(float(np.real(c)), x, z) for (x, z), c in out.items()]


def var(circuit: Circuit, observables, **options) -> np.ndarray:
    """Var(H_k) = <H_k^2> - <H_k>^2 for each Pauli sum (H_k^2 formed as a Pauli sum)."""
    obs = _observables(observables)
    mean = expval(circuit, obs, **options)
    square = expval(circuit, [_square(t) for t in obs], **options)
    return square - mean ** 2
