"""Qiskit Aer noise on qmlsim's engine (for ``qmlsim.qiskit``).

An Aer ``NoiseModel`` is applied as Aer applies it: its delay passes (the
thermal relaxation ``NoiseModel.from_backend`` adds) on circuits with delays,
then as ``qiskit_aer.utils.insert_noise`` inserts errors: after each
instruction, the error for its name and qubits (a local error wins over the
all-qubit one), inside control-flow blocks too (``if_test``, ``if_else``,
``for_loop`` bodies, on their qubits in the outer circuit), as Aer's simulator
applies the model there and ``insert_noise`` does not. Every error,
and every ``QuantumError`` a circuit holds itself, crosses into the engine as
its Kraus set, a Braket noise pragma in the exported program, and runs exactly
on the density matrix (or by trajectories).

Readout errors act on measured bits: the ``Sampler`` and ``Backend`` flip
sampled bits with the error's probabilities; the ``Estimator`` takes them into
expectation values exactly (each measured Pauli eigenvalue s reads as
a s + b, a = 1 - P(1|0) - P(0|1), b = P(0|1) - P(1|0)), unlike Aer's
``EstimatorV2``, which ignores them. Readout errors on several qubits at once
(correlated) are refused.
"""
from __future__ import annotations

import numpy as np
from qiskit import QuantumCircuit
from qiskit.circuit import ControlFlowOp

from . import _qmlsim

_CHANNELS = ("quantum_channel",)  # Aer's QuantumError instructions


def _aer_noise():
    try:
        from qiskit_aer.noise import NoiseModel
    except ImportError as e:  # a noise model needs Aer, which made it
        raise ValueError("a noise model needs qiskit-aer (pip install qiskit-aer)") from e
    return NoiseModel


def _insert_errors(circuit: QuantumCircuit, noise_model, index_of: dict) -> QuantumCircuit:
    """`circuit` with each instruction followed by its error; control-flow
    blocks get theirs on the outer circuit's qubits (`index_of`: this
    circuit's qubits -> the outer circuit's indices)."""
    local = noise_model._local_quantum_errors
    default = noise_model._default_quantum_errors
    out = circuit.copy_empty_like()
    for inst in circuit.data:
        op = inst.operation
        if isinstance(op, ControlFlowOp):
            outer = [index_of[q] for q in inst.qubits]
            blocks = [_insert_errors(b, noise_model, dict(zip(b.qubits, outer))) for b in op.blocks]
            out.append(op.replace_blocks(blocks), inst.qubits, inst.clbits)
            continue
        out.append(inst)
        qubits = tuple(index_of[q] for q in inst.qubits)
        if op.name in local and qubits in local[op.name]:
            out.append(local[op.name][qubits].to_instruction(), inst.qubits)
        elif op.name in default:
            out.append(default[op.name].to_instruction(), inst.qubits)
    return out


def check_noise_model(noise_model, who: str):
    """The noise model, or a ValueError naming what qmlsim cannot run."""
    if noise_model is None:
        return None
    NoiseModel = _aer_noise()
    if not isinstance(noise_model, NoiseModel):
        raise ValueError(f"{who}noise_model must be a qiskit_aer.noise.NoiseModel, got "
                         f"{type(noise_model).__name__}")
    errors = list(noise_model._local_readout_errors.values())
    if noise_model._default_readout_error is not None:
        errors.append(noise_model._default_readout_error)
    for e in errors:
        if e.number_of_qubits != 1:
            raise ValueError(f"{who}readout errors on {e.number_of_qubits} qubits at once "
                             "(correlated) are not supported; give each qubit its own")
    return noise_model


def with_noise(circuit: QuantumCircuit, noise_model, measured: tuple = ()) -> QuantumCircuit:
    """`circuit` with the noise model's errors inserted as Aer inserts them;
    the errors of `measure` on the `measured` qubits (whose final measurements
    were taken off the circuit) at its end, where they act before the reading."""
    if noise_model is None:
        return circuit
    passes = noise_model._pass_manager()
    if passes is not None and any(i.operation.name == "delay" for i in circuit.data):
        circuit = passes.run(circuit)
    circuit = _insert_errors(circuit, noise_model, {q: i for i, q in enumerate(circuit.qubits)})
    local = noise_model._local_quantum_errors.get("measure", {})
    default = noise_model._default_quantum_errors.get("measure")
    for q in measured:
        error = local.get((q,), default)
        if error is not None:
            circuit.append(error.to_instruction(), [q])
    return circuit


def mark_channels(circuit: QuantumCircuit, kraus: list | None = None) -> tuple:
    """The circuit with each quantum channel replaced by a barrier on its
    qubits (the circuit's own barriers, identities here, are dropped), and the
    channels' Kraus sets in program order, control-flow blocks included: the
    exported program's barriers are then the places of the channels
    (``pragmas``)."""
    from qiskit.quantum_info import Kraus
    kraus = [] if kraus is None else kraus
    marked = circuit.copy_empty_like()
    for item in circuit.data:
        op = item.operation
        if op.name == "barrier":
            continue
        if op.name in _CHANNELS:
            kraus.append([np.asarray(k, dtype=complex) for k in Kraus(op).data])
            marked.barrier(*item.qubits)
        elif isinstance(op, ControlFlowOp):
            blocks = [mark_channels(b, kraus)[0] for b in op.blocks]
            marked.append(op.replace_blocks(blocks), item.qubits, item.clbits)
        else:
            marked.append(item)
    return marked, kraus


def _number(z: complex) -> str:
    re, im = float(z.real), float(z.imag)
    if im == 0:
        return repr(re)
    return f"{re!r}{'+' if im >= 0 else '-'}{abs(im)!r}im"


def pragmas(text: str, kraus: list) -> str:
    """The exported program with its k-th barrier replaced by a Kraus pragma
    of channel k on the barrier's qubits (Qiskit's matrices have the first
    qubit least significant, the pragma's most: the qubits are reversed)."""
    if not kraus:
        return text
    lines, k = [], 0
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("barrier ") and k < len(kraus):
            qubits = [q.strip() for q in stripped[len("barrier "):].rstrip(";").split(",")]
            matrices = ", ".join(
                "[" + ", ".join("[" + ", ".join(_number(v) for v in row) + "]" for row in m) + "]"
                for m in kraus[k])
            lines.append(f"#pragma braket noise kraus({matrices}) {', '.join(reversed(qubits))}")
            k += 1
        else:
            lines.append(line)
    if k != len(kraus):
        raise ValueError(f"internal: {len(kraus)} noise channels, {k} places in the program")
    return "\n".join(lines) + "\n"


def readout_matrices(noise_model, num_qubits: int) -> list:
    """Per qubit, P(read j | true i) as a 2x2 array, or None without an error."""
    if noise_model is None:
        return [None] * num_qubits
    out = []
    for q in range(num_qubits):
        e = noise_model._local_readout_errors.get((q,), noise_model._default_readout_error)
        out.append(None if e is None else np.asarray(e.probabilities, dtype=float))
    return out


def readout_terms(terms: list, readout: list) -> list:
    """Engine terms whose expectation value is what `terms` reads through the
    readout errors (the engine's read_through: each noisy qubit of a Pauli
    word reads its eigenvalue s as a s + b)."""
    if all(r is None for r in readout):
        return terms
    flips = [None if r is None else (float(r[0, 1]), float(r[1, 0])) for r in readout]
    try:
        return _qmlsim.read_through(terms, flips)
    except ValueError as e:
        raise ValueError(f"qmlsim.qiskit: {e}") from None


def readout_bits(bits: np.ndarray, qubit_of_clbit: dict, readout: list, seed) -> np.ndarray:
    """Sampled bits [binding][shot][clbit] read through the readout errors:
    a true bit t of qubit q reads 1 with probability P(1 | t)."""
    if all(r is None for r in readout):
        return bits
    rng = np.random.default_rng(seed)
    out = bits.copy()
    for clbit, q in sorted(qubit_of_clbit.items()):
        r = readout[q]
        if r is None:
            continue
        true = bits[:, :, clbit]
        p_one = np.where(true, r[1, 1], r[0, 1])
        out[:, :, clbit] = rng.random(true.shape) < p_one
    return out
