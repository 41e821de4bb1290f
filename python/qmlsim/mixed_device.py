"""The PennyLane device ``qmlsim.mixed``: a drop-in for ``default.mixed`` on
qmlsim's density-matrix engine.

    dev = qml.device("qmlsim.mixed", wires=4, shots=None, seed=None, readout_prob=None)

- Noise channels run natively: ``DepolarizingChannel``, ``BitFlip``,
  ``PhaseFlip``, ``AmplitudeDamping``, ``GeneralizedAmplitudeDamping``,
  ``PhaseDamping`` and ``ThermalRelaxationError`` as rows of the engine's
  channel table; every other channel on one or two wires (``PauliError``,
  ``ResetError``, ``QubitChannel``, ...) as its Kraus matrices. Gates as on
  ``qmlsim.qubit``. ``QubitDensityMatrix``: as the first operation a mixed
  starting state (on any wires, |0><0| on the rest), later the channel that
  replaces its wires' state (1-2 wires).
- Expectation values of Pauli sums run in C++ (Tr(H rho), batched over tapes);
  every other measurement (``probs``, ``sample``, ``counts``, ``var``,
  ``state()`` as the density matrix, ``density_matrix(wires)``, ``purity``,
  ``vn_entropy``, ``mutual_info``) is taken by PennyLane's own mixed-state
  measurement code on the C++ density matrix, with ``readout_prob`` (a bit
  flip before each measured qubit) as ``default.mixed`` applies it.
- ``state()`` and ``density_matrix(wires)`` are differentiated too (one
  backward pass from their cotangent).
- ``diff_method="adjoint"`` (``"best"`` picks it): the exact density-matrix
  adjoint (O(gates), the dual channels pulled back) for gate parameters and
  for the parameters of the table's channels (the seven above and
  ``PauliError`` on one wire); a trainable parameter of any other channel is
  refused.
  With ``readout_prob`` the device gives no derivatives of its own.
- ``method="trajectories"`` (``trajectories=R``): expectation values as the
  mean of R seeded trajectories, for circuits whose density matrix does not
  fit; measurements of the state itself need the density matrix.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pennylane as qml
from pennylane.devices import ExecutionConfig
from pennylane.devices.qubit_mixed import measure_final_state
from pennylane.devices.qubit_mixed.measure import measure as measure_mixed

from ._pennylane import (DeviceError, _adjoint_native, _differentiable_channel, _is_channel,
                         _native)
from ._program import engine_options
from .device import QmlsimQubit, _has_mcms


def _mixed_native(op) -> bool:
    if _is_channel(op):  # no channel is a native gate
        return len(op.wires) <= 2
    return op.name == "QubitDensityMatrix" or _native(op)


def _mixed_adjoint_native(op) -> bool:
    if op.name == "QubitDensityMatrix":
        return True
    if _is_channel(op):
        return len(op.wires) <= 2 and (_differentiable_channel(op) or
                                       not qml.operation.is_trainable(op))
    return _adjoint_native(op)


class QmlsimMixed(QmlsimQubit):
    """qmlsim's density-matrix engine as a PennyLane device (``default.mixed``'s
    arguments, plus the engine's).

    Args:
        wires, shots, seed: as ``default.mixed``.
        readout_prob: probability of a bit flip on each measured qubit (None: none).
        c_dtype, threads, fusion: as ``qmlsim.qubit``.
        method: "density_matrix" (default, exact) or "trajectories".
        trajectories: trajectories per expectation value (method "trajectories").
    """

    name = "qmlsim.mixed"
    short_name = "qmlsim.mixed"
    _stops = staticmethod(_mixed_native)
    _adjoint_stops = staticmethod(_mixed_adjoint_native)
    _measure = staticmethod(measure_mixed)
    _measure_final = staticmethod(measure_final_state)

    def _leaf_tensor(self, state, n):
        """A branch's final rho (a pure state's, from a shot walk, as |psi><psi|)."""
        d = 1 << n
        state = state.astype(self._c_dtype, copy=False)
        rho = state.reshape((d, d)) if state.size == d * d else np.outer(state, state.conj())
        return rho.reshape((2,) * (2 * n))

    def __init__(self, wires=None, shots=None, seed="global", readout_prob=None,
                 c_dtype=np.complex128, threads=None, fusion=3, method="density_matrix",
                 trajectories=1000):
        super().__init__(wires=wires, shots=shots, seed=seed, c_dtype=c_dtype, threads=threads,
                         fusion=fusion)
        if method not in ("density_matrix", "trajectories"):
            raise DeviceError("qmlsim.mixed: method must be 'density_matrix' or 'trajectories', "
                              f"got {method!r}")
        if readout_prob is not None and (isinstance(readout_prob, bool) or not isinstance(
                readout_prob, (int, float)) or not 0 <= readout_prob <= 1):
            raise DeviceError("qmlsim.mixed: readout_prob must be a number in [0, 1], "
                              f"got {readout_prob!r}")
        self._readout = readout_prob
        precision, threads, fusion, backend = self._options[:4]
        try:
            self._options = engine_options(precision, threads, fusion, backend,
                                           who="qmlsim.mixed: ", method=method,
                                           trajectories=trajectories,
                                           seed=int(self._rng.integers(1 << 62)))
        except ValueError as e:
            raise DeviceError(str(e)) from None

    def setup_execution_config(self, config: ExecutionConfig | None = None, circuit=None):
        config = config or ExecutionConfig()
        if self._readout is not None and config.gradient_method in ("best", "device"):
            # the C++ expectation values and adjoint know no readout error
            config = dataclasses.replace(config, gradient_method="parameter-shift")
        return super().setup_execution_config(config, circuit)

    def supports_derivatives(self, execution_config=None, circuit=None) -> bool:
        if self._readout is not None and execution_config is not None:
            return False
        return super().supports_derivatives(execution_config, circuit)

    def _native_batches(self) -> bool:
        return self._readout is None  # readout errors: PennyLane's measurement code per row

    def execute(self, circuits, execution_config: ExecutionConfig | None = None):
        if self._readout is not None:  # every measurement through PennyLane's readout model
            if any(_has_mcms(c) for c in circuits):
                raise DeviceError("qmlsim.mixed: readout_prob with mid-circuit measurements is "
                                  "not supported")
            return tuple(self._simulate(c) for c in circuits)
        return super().execute(circuits, execution_config)

    def _simulate(self, circuit):
        circuit, n, flat = self._final_state(circuit)  # rho, row-major
        d = 1 << n
        # A noiseless circuit under method="trajectories" runs on a state vector.
        rho = flat.reshape((d, d)) if flat.size == d * d else np.outer(flat, flat.conj())
        readout = None if self._readout is None else [
            lambda w, p=self._readout: qml.BitFlip(p, wires=w)]
        if readout is not None:  # every measurement through PennyLane's readout model
            return measure_final_state(circuit, rho.reshape((2,) * (2 * n)), False,
                                       rng=self._rng, readout_errors=readout)
        return self._with_dense_expvals(circuit, rho.reshape(-1), n, lambda tape: (
            measure_final_state(tape, rho.reshape((2,) * (2 * n)), False, rng=self._rng)))
