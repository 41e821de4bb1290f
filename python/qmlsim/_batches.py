"""PennyLane's parameter broadcasting as one engine call: a tape whose gate
angles carry a batch dimension becomes one Program (translated once, from
its first row) and one row of parameter values per batch entry.

A tape runs this way when every batched parameter is a gate angle of the
gate table (RX, Rot, CRX, IsingXX, ...: what AngleEmbedding and the layer
templates decompose to; PennyLane's channels do not broadcast), and every
measurement is an expectation value of a Pauli sum (or, forward only,
probabilities of wires), without shots or mid-circuit measurements.
Anything else (a batched matrix or state preparation, samples) is expanded
by PennyLane's broadcast_expand into one tape per row.
"""
from __future__ import annotations

import numpy as np
import pennylane as qml
from pennylane.measurements import ExpectationMP, MidMeasureMP, ProbabilityMP

from ._pennylane import (
    DeviceError,
    _pauli_terms,
    _program,
    _real_pauli_sum,
    _table_kind,
)


def batched_parameters(op) -> list:
    """Per parameter of op: whether it carries the batch dimension."""
    if op.batch_size is None:
        return [False] * op.num_params
    return [qml.math.ndim(p) > nd for p, nd in zip(op.data, op.ndim_params)]


def _probabilities(m) -> bool:
    return type(m) is ProbabilityMP and m.obs is None and m.mv is None  # noqa: E721


def runs_as_one_batch(tape, probabilities: bool = False) -> bool:
    """Whether a broadcast tape runs natively (see the module's contract);
    probabilities: probs of wires count too (its forward pass)."""
    if tape.batch_size is None or tape.shots:
        return False
    for m in tape.measurements:
        if probabilities and _probabilities(m):
            continue
        if not (isinstance(m, ExpectationMP) and m.mv is None and m.obs is not None
                and getattr(m.obs, "batch_size", None) is None and _real_pauli_sum(m.obs)):
            return False
    num_op_params = sum(op.num_params for op in tape.operations)
    if any(t >= num_op_params for t in tape.trainable_params):
        return False  # a trainable observable
    for op in tape.operations:
        if isinstance(op, MidMeasureMP):
            return False
        if any(batched_parameters(op)) and _table_kind(op) is None:
            return False
    return True


def _batched_gates(op, depth: int = 4) -> list:
    """op as operations whose batched parameters are gate angles: itself, or
    its decomposition (a template the device otherwise builds with literal
    angles, AngleEmbedding above all), to `depth` levels; [op] when that
    fails."""
    if not any(batched_parameters(op)) or _table_kind(op) is not None or depth == 0 \
            or not op.has_decomposition:
        return [op]
    try:
        parts = op.decomposition()
    except Exception:  # noqa: BLE001 - no batched decomposition: [op] (expanded by rows)
        return [op]
    return [g for part in parts for g in _batched_gates(part, depth - 1)]


def with_batched_gates(tape):
    """The broadcast tape with every operation whose batched parameters are
    not gate angles decomposed (_batched_gates); the tape itself when none."""
    if not any(any(batched_parameters(op)) and _table_kind(op) is None
               for op in tape.operations):
        return tape
    ops = [g for op in tape.operations for g in _batched_gates(op)]
    return tape.copy(operations=ops)


def _first_row(op, batched):
    """op with every batched parameter at its first row."""
    data = [qml.math.unwrap(p)[0] if b else p for p, b in zip(op.data, batched)]
    return qml.ops.functions.bind_new_parameters(op, data)


def batch_program(circuit, n: int):
    """(Program, rows, batched): the standard-wire tape's Program translated
    from its first row, the parameter values of each of its batch_size rows
    (program parameter t is tape parameter t), and the set of parameters
    that carry the batch dimension."""
    ops, columns, t = [], {}, 0
    for op in circuit.operations:
        flags = batched_parameters(op)
        if any(flags):
            for k, (p, b) in enumerate(zip(op.data, flags)):
                if b:
                    columns[t + k] = np.real(np.asarray(qml.math.unwrap(p), dtype=float))
            op = _first_row(op, flags)
        ops.append(op)
        t += len(flags)
    program, values = _program(ops, n)
    if len(values) != t:
        raise AssertionError("a program parameter per tape parameter")
    rows = np.tile(np.asarray(values, dtype=float), (circuit.batch_size, 1))
    for k, column in columns.items():
        if not np.all(np.isfinite(column)):
            raise DeviceError("qmlsim.qubit: a gate parameter is not a finite number")
        rows[:, k] = column
    return program, rows.tolist(), set(columns)


def batch_observables(circuit, n: int):
    """The engine's terms of every expectation value, hashable."""
    return tuple(tuple(_pauli_terms(m.obs, n)) for m in circuit.measurements
                 if isinstance(m, ExpectationMP))


def stack_rows(per_row):
    """Per-row results (nested tuples of arrays) as one result whose leaves
    have the rows as their first axis."""
    first = per_row[0]
    if isinstance(first, tuple):
        return tuple(stack_rows([r[k] for r in per_row]) for k in range(len(first)))
    return np.stack([np.asarray(r) for r in per_row])


def per_parameter(gradients, trainable, batched):
    """A broadcast tape's VJP in its parameters' shapes, from per-row
    gradients [row][program parameter]: a batched parameter's entries row by
    row (each row depends on its own entry only), a shared one's summed."""
    g = np.asarray(gradients, dtype=float).reshape(len(gradients), -1)
    return tuple(np.array(g[:, t]) if t in batched else np.array(g[:, t].sum())
                 for t in trainable)
