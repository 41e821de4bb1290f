"""The PennyLane device ``qmlsim.qubit``: PennyLane's device API over qmlsim's C++ engine.

    dev = qml.device("qmlsim.qubit", wires=4, c_dtype=np.complex64, threads=2)

- Native operations: the gate table's (PennyLane names, lightning.qubit's
  excitation gates, PSWAP, ECR, SISWAP/SQISW included), PauliRot on Z words and
  on a single X or Y, controlled versions of these with any number of controls
  and control values (``qml.ctrl``, ``C(RX)``, ``MultiControlledX``,
  ``ControlledQubitUnitary``: extra controls in the engine), fixed gates run as
  their matrix (DiagonalQubitUnitary, QubitCarry, QubitSum, BlockEncode,
  SpecialUnitary, and any operation with a matrix but no decomposition);
  PennyLane's preprocessing decomposes everything else (a trainable
  SpecialUnitary for the adjoint as PennyLane does, its detached copy kept whole).
- Expectation values of Pauli words and sums of them (``qml.Hamiltonian``,
  ``qml.sum``/``qml.prod``/``qml.s_prod`` of Paulis) run in C++ without forming
  the state in Python; every other measurement, and every finite-shot one, is
  taken by PennyLane's own measurement code on the C++ final state.
- ``diff_method="adjoint"`` (or ``"device"``): the C++ adjoint method, one
  backward pass per observable for Jacobians (memory: two states, whatever the
  number of observables) and one per tape for vector-Jacobian products.
- State preparations (StatePrep, BasisState, AmplitudeEmbedding) as the first
  operation are the engine's starting state, not decomposed.
- Wires: PennyLane's first wire is the most significant bit of a state index;
  it is mapped to the engine's highest qubit, so states come back in PennyLane's
  order without a transpose.
"""
from __future__ import annotations

import dataclasses
import sys
import warnings

import numpy as np
import pennylane as qml
from pennylane.devices import Device, ExecutionConfig
from pennylane.devices.modifiers import simulator_tracking, single_tape_support
from pennylane.devices.preprocess import (
    decompose,
    device_resolve_dynamic_wires,
    no_sampling,
    validate_adjoint_trainable_params,
    validate_device_wires,
    validate_measurements,
    validate_observables,
)
from pennylane.devices.default_qubit import accepted_sample_measurement
from pennylane.devices.qubit import measure, measure_final_state
from pennylane.math import Interface
from pennylane.measurements import (
    DensityMatrixMP,
    ExpectationMP,
    MidMeasureMP,
    MutualInfoMP,
    ProbabilityMP,
    PurityMP,
    StateMP,
    VarianceMP,
    VnEntropyMP,
)
from pennylane.operation import StatePrepBase
from pennylane.ops import Conditional
from pennylane.transforms import broadcast_expand, defer_measurements, dynamic_one_shot
from pennylane.transforms.core import CompilePipeline

from . import _qmlsim
from ._pennylane import (
    DeviceError,
    _adjoint_decomposition,
    _dense_hermitian,
    _adjoint_native,
    _mcm_key,
    _native,
    _on_wires,
    _pauli_terms,
    _program,
    _real_pauli_sum,
    _squared_terms,
    _standard_wires,
)
from ._batches import (
    batch_observables,
    batch_program,
    batched_parameters,
    per_parameter,
    runs_as_one_batch,
    stack_rows,
    with_batched_gates,
)
from ._program import engine_options, options


# A probs measurement differentiates as the 2^k Z strings over its k wires
# (|b><b| = 2^-k sum_S (-1)^{|b & S|} Z_S): one adjoint backward pass for a
# VJP, 2^k for a Jacobian.
_MAX_PROBS_WIRES = 10


# A variance differentiates as <H^2> - <H>^2: d var = d<H^2> - 2 <H> d<H>, so a
# VJP weighs H^2 by the cotangent c and H by -2 <H> c (one more forward pass
# for <H>, still one backward pass).
_VARIANCE = "var"


def _dense_expval(m) -> bool:
    """An expectation value of a Hermitian on many wires (_dense_hermitian):
    read from the final state, differentiated through _HermitianBlock."""
    return isinstance(m, ExpectationMP) and m.mv is None and _dense_hermitian(m.obs)


def _adjoint_observable(obs) -> bool:
    return _dense_hermitian(obs) or _real_pauli_sum(obs)


def _adjoint_measurement(m) -> bool:
    """What the adjoint differentiates: expectation values and variances of
    real Pauli sums (and observables given by matrices, as their Pauli sums),
    expectation values of dense Hermitians, and probs of wires; the state and
    density matrices of wires through _StateBlock."""
    if _dense_expval(m):
        return True
    if isinstance(m, (ExpectationMP, VarianceMP)):
        return m.mv is None and m.obs is not None and _real_pauli_sum(m.obs)
    return (type(m) is ProbabilityMP and m.obs is None and m.mv is None  # noqa: E721
            and 0 < len(m.wires) <= _MAX_PROBS_WIRES)


def _state_measurement(m) -> bool:
    return type(m) in (StateMP, DensityMatrixMP)  # noqa: E721


def _wires_first(psi: np.ndarray, wires, n: int):
    """(the state of 2^n amplitudes as a matrix [wires' index][the other
    wires' index], the axis order that made it: _from_wires_first undoes it)."""
    order = list(wires) + [w for w in range(n) if w not in wires]
    return psi.reshape((2,) * n).transpose(order).reshape(1 << len(wires), -1), order


def _from_wires_first(t: np.ndarray, order, n: int) -> np.ndarray:
    return t.reshape((2,) * n).transpose(np.argsort(order)).reshape(-1)


class _StateBlock:
    """A measurement of the state (wires None) or of a density matrix of
    wires: differentiated as a cotangent on the final state (no engine
    observables), by one backward pass from it."""

    def __init__(self, wires):
        self.wires = wires

    def state_cotangent(self, dy, psi, n: int):
        """The cotangent on the final state psi (2^n amplitudes, or a density
        matrix's 4^n entries, row-major) that this measurement's cotangent
        dy stands for, in autograd's convention (d L = Re sum dy * d output):
        dy itself for the state; for rho_A = Tr_B |psi><psi|,
        (G + G^dagger) conj(psi) over A's indices; for rho_A = Tr_B rho,
        G (x) I_B."""
        dy = np.asarray(qml.math.unwrap(dy), dtype=np.complex128)
        if self.wires is None:
            return dy.reshape(-1)
        if psi.size == 1 << (2 * n):
            return _on_wires(dy, self.wires, n, np.eye).reshape(-1)
        t, order = _wires_first(psi, self.wires, n)
        return _from_wires_first((dy + dy.conj().T) @ t.conj(), order, n)


class _HermitianBlock(_StateBlock):
    """<H> of a dense Hermitian H on `wires`: Tr(rho_A H), so its cotangent c
    is the cotangent c H^T on the density matrix rho_A of its wires."""

    def __init__(self, wires, matrix):
        super().__init__(wires)
        self.matrix = matrix

    def state_cotangent(self, dy, psi, n: int):
        c = complex(np.asarray(qml.math.unwrap(dy)).reshape(-1)[0])
        if psi.size == 1 << (2 * n):
            return super().state_cotangent(c * self.matrix.T, psi, n)
        # (G + G^dagger) conj(psi) over A's indices for G = c H^T: since
        # H^T = conj(H), that is 2 Re(c) conj(H psi), one product with H
        t, order = _wires_first(psi, self.wires, n)
        return _from_wires_first(2 * c.real * np.conj(_times(self.matrix, t)), order, n)


def _hermitian_matrix(obs) -> np.ndarray:
    """The Hermitian's matrix as given (a real one stays real: at 12 wires a
    complex copy alone is 256 MiB)."""
    return np.asarray(qml.math.unwrap(obs.data[0]))


def _times(h: np.ndarray, t: np.ndarray) -> np.ndarray:
    """h @ t for a complex t; a real h by two real products (no complex copy)."""
    if np.iscomplexobj(h):
        return h @ t
    return h @ t.real + 1j * (h @ t.imag)


def _dense_value(m, state: np.ndarray, n: int) -> np.float64:
    """<H> of a dense Hermitian on the final state (2^n amplitudes, or rho's
    4^n entries) on wires 0..n-1: one product with the matrix."""
    h = _hermitian_matrix(m.obs)
    wires = [int(w) for w in m.obs.wires.labels]
    rest = [w for w in range(n) if w not in wires]
    k = len(wires)
    if state.size == 1 << n:
        t, _ = _wires_first(state, wires, n)
        return np.float64(np.real(np.vdot(t, _times(h, t))))
    rho = state.reshape((2,) * (2 * n)).transpose(wires + rest + [n + w for w in wires + rest])
    rho = rho.reshape(1 << k, 1 << (n - k), 1 << k, 1 << (n - k))
    reduced = np.einsum("ajbj->ab", rho)
    return np.float64(np.real(np.trace(reduced @ h)))


def _z_strings(wires, n: int) -> list:
    """Engine terms of Z_S for every S over `wires`, S's bit k-1-j for wires[j]
    (PennyLane's outcome order: the first wire most significant)."""
    k = len(wires)
    out = []
    for s in range(1 << k):
        z = 0
        for j, w in enumerate(wires):
            if s >> (k - 1 - j) & 1:
                z |= 1 << (n - 1 - w)
        out.append([(1.0, 0, z)])
    return out


def _walsh(k: int) -> np.ndarray:
    """2^-k (-1)^{|b & S|}: probabilities from the Z strings' values."""
    h = np.array([[1.0]])
    for _ in range(k):
        h = np.kron(h, np.array([[1.0, 1.0], [1.0, -1.0]]))
    return h / (1 << k)


def _blocks_key(blocks) -> tuple:
    """A hashable key of _adjoint_inputs' blocks (their sizes and kinds)."""
    return tuple((size, kind if isinstance(kind, str) else kind is None) for size, kind in blocks)


def _derivatives_follow(interface, circuit):
    """Whether the interface will ask for the derivatives of this execution:
    torch with gradients enabled, or autograd tracing a trainable parameter
    (inside qml.grad or qml.jacobian). Unknown (no tape, other interfaces):
    False."""
    if circuit is None or not circuit.trainable_params:
        return False
    if interface == Interface.TORCH:
        torch = sys.modules.get("torch")
        return torch is not None and torch.is_grad_enabled()
    if interface == Interface.AUTOGRAD:
        tracer = sys.modules.get("autograd.tracer")
        return tracer is not None and any(
            isinstance(p, tracer.Box) for p in circuit.get_parameters(trainable_only=True))
    return False


_MCM_METHODS = ("deferred", "tree-traversal", "one-shot")


def _mcm_config(config, circuit, name: str):
    """The mid-circuit measurement method: the one asked for, or the device's
    own choice (tree-traversal analytically: each outcome branch walked once
    by the engine; one-shot with shots: the shots split over the branches)."""
    mcm = config.mcm_config
    method = mcm.mcm_method
    if method in (None, "device"):
        method = "one-shot" if getattr(circuit, "shots", None) else "tree-traversal"
    if method not in _MCM_METHODS:
        raise DeviceError(f"{name}: mcm_method={method!r} is not one of {', '.join(_MCM_METHODS)}")
    if mcm.postselect_mode == "fill-shots" and method != "deferred":
        raise DeviceError(f"{name}: postselect_mode='fill-shots' needs mcm_method='deferred'")
    return dataclasses.replace(mcm, mcm_method=method)


def _with_mcms(native):
    """The stopping condition `native` that also keeps mid-circuit
    measurements and qml.cond of native operations."""
    def stops(op):
        return (isinstance(op, MidMeasureMP) or native(op)
                or (isinstance(op, Conditional) and native(op.base)))
    return stops


@qml.transform
def _broadcast_expand(tape, native=True):
    """PennyLane's broadcast_expand where an operation may carry a batch of
    parameters (some parameter is an array or a list: a batch, or a matrix)
    and the tape does not run as one batch (_batches; native: whether the
    device runs batches); other tapes pass as they are, without its
    per-operation shape checks (8% of a 6-qubit noisy circuit's gradient
    through qmlsim.mixed)."""
    if any(isinstance(p, (list, tuple)) or getattr(p, "ndim", 0)
           for op in tape.operations for p in op.data):
        if native:
            gates = with_batched_gates(tape)
            if runs_as_one_batch(gates, probabilities=True):
                return (gates,), _only_result
        return broadcast_expand(tape)
    return (tape,), _only_result


@qml.transform
def _validate_adjoint_trainable(tape):
    """PennyLane's validate_adjoint_trainable_params without its warning for
    a Hermitian's trainable matrix, which the device differentiates."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Differentiating with respect to the input "
                                "parameters of Hermitian")
        return validate_adjoint_trainable_params(tape)


def _jax_vjp(config) -> bool:
    """Whether JAX takes the device's VJP (through PennyLane's callbacks)."""
    return (config is not None and config.use_device_jacobian_product
            and config.interface in (Interface.JAX, Interface.JAX_JIT))


def _only_result(results):
    return results[0]


def _has_mcms(circuit) -> bool:
    return any(isinstance(op, MidMeasureMP) for op in circuit.operations)


def _mcm_value(mv, record: int, bits: dict):
    """A measurement value (qml.measure's, or an expression of several) for a
    classical record."""
    return mv.processing_fn(*[(record >> bits[_mcm_key(m)]) & 1 for m in mv.measurements])


def _mixture_statistic(m, branches, bits: dict, measure_state):
    """An analytic measurement of the mixture of branches [(record, weight,
    state tensor)]: of measurement values from the records, of wires and
    observables from each branch's state (measure_state(m, state))."""
    if m.mv is not None:
        mvs = m.mv if isinstance(m.mv, list) else [m.mv]
        if isinstance(m, ProbabilityMP):
            values = [sorted({v for _, v in mv.items()}) for mv in mvs]
            shape = [len(v) for v in values]
            out = np.zeros(shape)
            for record, w, _ in branches:
                out[tuple(v.index(_mcm_value(mv, record, bits))
                          for mv, v in zip(mvs, values))] += w
            return out.reshape(-1)
        first = sum(w * _mcm_value(m.mv, r, bits) for r, w, _ in branches)
        if isinstance(m, ExpectationMP):
            return np.float64(first)
        if isinstance(m, VarianceMP):
            second = sum(w * _mcm_value(m.mv, r, bits) ** 2 for r, w, _ in branches)
            return np.float64(second - first ** 2)
    elif isinstance(m, (ExpectationMP, ProbabilityMP, DensityMatrixMP)):
        return sum(w * np.asarray(measure_state(m, s)) for _, w, s in branches)
    elif isinstance(m, (PurityMP, VnEntropyMP, MutualInfoMP)):  # of the mixture's rho
        rho = sum(w * np.asarray(measure_state(qml.density_matrix(m.wires), s))
                  for _, w, s in branches)
        local = m.map_wires({w: i for i, w in enumerate(m.wires)})  # rho's wires: 0..k-1
        return local.process_density_matrix(rho, wire_order=qml.wires.Wires(range(len(m.wires))))
    elif isinstance(m, VarianceMP):
        e = qml.expval(m.obs)
        means = [float(np.real(measure_state(e, s))) for _, _, s in branches]
        mean = sum(w * x for (_, w, _), x in zip(branches, means))
        return np.float64(sum(w * (float(np.real(measure_state(m, s))) + x * x)
                              for (_, w, s), x in zip(branches, means)) - mean * mean)
    raise DeviceError(f"qmlsim: {type(m).__name__} of a circuit with mid-circuit measurements "
                      "(a mixture of branches) is not supported; expval, var, probs, "
                      "density_matrix, purity, vn_entropy and mutual_info are")


def _marginal(p: np.ndarray, wires, n: int) -> np.ndarray:
    """Probabilities of `wires` (in their order) from those of all n wires
    (wire 0 the most significant bit)."""
    wires = list(wires) or list(range(n))
    others = tuple(w for w in range(n) if w not in wires)
    out = p.reshape((2,) * n).sum(axis=others) if others else p.reshape((2,) * n)
    ordered = sorted(wires)
    return out.transpose([ordered.index(w) for w in wires]).reshape(-1)


def _engine_readout(circuit, n: int):
    """(observables, probabilities wanted, measure function on a branch's
    (expvals, probabilities)) when every measurement of wires is a Pauli-sum
    expectation value or probs of wires, so the engine reads every branch out
    itself; else None."""
    terms, index, probabilities = [], {}, False
    for m in circuit.measurements:
        if m.mv is not None:
            continue
        if isinstance(m, ExpectationMP):
            t = _pauli_terms(m.obs, n)
            if t is None:
                return None
            index[id(m)] = len(terms)
            terms.append(t)
        elif type(m) is ProbabilityMP and m.obs is None:  # noqa: E721
            probabilities = True
        else:
            return None

    def measure_state(m, leaf):
        expvals, probs = leaf
        if isinstance(m, ExpectationMP):
            return expvals[index[id(m)]]
        return _marginal(np.asarray(probs), m.wires.labels, n)

    return terms, probabilities, measure_state


def _trainable_observables(circuit, num_op_params: int):
    """The measurement owning each trainable observable parameter (tape
    parameters past the operations', in trainable order), or None when one
    is not what the device differentiates: the matrix of a Hermitian whose
    expectation value or variance is measured."""
    owners, t = {}, num_op_params
    for i, m in enumerate(circuit.measurements):
        for _ in (m.obs.data if m.obs is not None else ()):
            owners[t] = i if (isinstance(m, (ExpectationMP, VarianceMP))
                              and m.obs.name == "Hermitian") else None
            t += 1
    out = [owners.get(t) for t in circuit.trainable_params if t >= num_op_params]
    return None if any(i is None for i in out) else out


def _has_trainable_observable(circuit) -> bool:
    num_op_params = sum(op.num_params for op in circuit.operations)
    return any(t >= num_op_params for t in circuit.trainable_params)


def _hermitian_gradient(m, rho):
    """The gradient of <H> or var(H) by the Hermitian's matrix H (entries
    d f / d H_ij, as default.qubit's backpropagation gives them), from the
    reduced density matrix rho of H's wires: rho^T for <H> = Tr(rho H), and
    (H rho + rho H - 2 <H> rho)^T for <H^2> - <H>^2; real for a real H."""
    h = np.asarray(qml.math.unwrap(m.obs.data[0]))
    g = rho
    if isinstance(m, VarianceMP):
        mean = np.trace(rho @ h).real
        g = h @ rho + rho @ h - 2 * mean * rho
    return g.T.copy() if np.iscomplexobj(h) else g.real.T.copy()


def _format_values(values):
    """A tape's expectation values as PennyLane returns them: a scalar for one
    measurement, else a tuple."""
    res = tuple(np.float64(x) for x in values)
    return res[0] if len(res) == 1 else res


@simulator_tracking
@single_tape_support
class QmlsimQubit(Device):
    """qmlsim's state-vector engine as a PennyLane device.

    Args:
        wires: number of wires or their labels.
        shots: default shots (PennyLane's own handling; ``qml.set_shots`` too).
        seed: seed for sampling (``"global"``: drawn from NumPy's global generator).
        c_dtype: ``numpy.complex128`` (default) or ``numpy.complex64`` (also the
            strings "complex128"/"complex64").
        threads: engine threads (default: ``OMP_NUM_THREADS`` or all cores).
        fusion: largest fused gate block in qubits (0: no fusion; default 3).
        backend: "cpu" or "cuda" (a DeviceError where the package has no CUDA
            build or no GPU is present).
    """

    name = "qmlsim.qubit"
    short_name = "qmlsim.qubit"
    # What runs without PennyLane's decomposition, and what the adjoint takes.
    _stops = staticmethod(_native)
    _adjoint_stops = staticmethod(_adjoint_native)
    _state_vjp = True  # qml.state() and density_matrix are differentiated (a state vector's)

    def __init__(self, wires=None, shots=None, seed="global", c_dtype=np.complex128,
                 threads=None, fusion=3, backend="cpu"):
        super().__init__(wires=wires, shots=shots)
        if isinstance(c_dtype, str):
            c_dtype = {"complex64": np.complex64, "complex128": np.complex128}.get(c_dtype)
        if c_dtype not in (np.complex64, np.complex128):
            raise DeviceError("qmlsim.qubit: c_dtype must be numpy.complex64 or numpy.complex128")
        try:
            self._options = engine_options("c64" if c_dtype == np.complex64 else "c128",
                                           threads, fusion, backend, who="qmlsim.qubit: ")
        except ValueError as e:
            raise DeviceError(str(e)) from None
        self._c_dtype = c_dtype
        seed = np.random.randint(0, high=10_000_000) if seed == "global" else seed
        self._supports_cache = {}  # supports_derivatives by circuit structure
        self._rng = np.random.default_rng(seed)

    @property
    def c_dtype(self):
        return self._c_dtype

    def _engine_options(self):
        return options(self._options)

    # -- configuration and preprocessing
    def setup_execution_config(self, config: ExecutionConfig | None = None, circuit=None):
        config = config or ExecutionConfig()
        updated = {}
        method = config.gradient_method
        if method in ("best", "device"):
            method = "adjoint"
            updated["gradient_method"] = method
        adjoint = method == "adjoint"
        if config.use_device_gradient is None:
            updated["use_device_gradient"] = adjoint
        if config.use_device_jacobian_product is None:
            updated["use_device_jacobian_product"] = adjoint
        state_vjp = adjoint and self._state_vjp and circuit is not None and any(
            _state_measurement(m) or _dense_expval(m) for m in circuit.measurements)
        if state_vjp:  # a state's Jacobian takes 2^(n+1) backward passes, its VJP one
            updated["use_device_jacobian_product"] = True
        if adjoint and circuit is not None and (_has_trainable_observable(circuit)
                                                or circuit.batch_size is not None):
            # PennyLane's VJP of a Jacobian stacks the parameters' entries
            # (a matrix among scalars), and a Jacobian cannot say that row b
            # depends on a batched parameter's entry b only (its issue
            # #4462): these take the device's own VJP
            updated["use_device_jacobian_product"] = True
        # Derivatives with the forward pass exactly when the interface will
        # ask for them (torch with gradients enabled, autograd tracing the
        # parameters): one C++ call then gives values and Jacobian from one
        # forward pass, and PennyLane converts the tape once, not twice. A
        # forward pass that no one differentiates (inference under
        # torch.no_grad(), a cost evaluated outside qml.grad, JAX, which
        # PennyLane runs with False) does no derivative work. Measured
        # (docs/performance.md): a 10-wire torch training step 33 -> 28 ms,
        # 16-wire inference 40 ms against 263 ms with derivatives.
        if config.grad_on_execution is None:
            vjp = updated.get("use_device_jacobian_product", config.use_device_jacobian_product)
            updated["grad_on_execution"] = (adjoint and not vjp
                                            and _derivatives_follow(config.interface, circuit))
        # An autograd forward pass that no one differentiates takes PennyLane's
        # numpy tensors as they are (the device unwraps every parameter and
        # coefficient itself): PennyLane's conversion rebuilds every
        # observable first, 95% of a qchem Hamiltonian's forward pass
        # (docs/performance.md). Where derivatives follow, PennyLane converts
        # on its derivative path anyway, and other interfaces (JAX's traced
        # callbacks above all) get numpy as before.
        autograd = getattr(config.interface, "value", config.interface) == "autograd"
        updated["convert_to_numpy"] = not (autograd and not _derivatives_follow(
            config.interface, circuit))
        vjp = updated.get("use_device_jacobian_product", config.use_device_jacobian_product)
        if vjp and config.interface == Interface.JAX_JIT:
            # PennyLane's JIT boundary takes the device VJP only then: with
            # device_vjp=True, the states' VJP (its JVP boundary cannot return
            # complex tangents), and jax.vmap's gradients as one call (its
            # JVP callback runs a vmapped batch row by row, the VJP callback
            # vectorised); the VJP boundary hands the device numpy inside its
            # callbacks all the same
            updated["convert_to_numpy"] = False
        updated["mcm_config"] = _mcm_config(config, circuit, self.name)
        return dataclasses.replace(config, **updated)

    def preprocess_transforms(self, execution_config: ExecutionConfig | None = None):
        config = execution_config or ExecutionConfig()
        program = CompilePipeline()
        mcm_method = config.mcm_config.mcm_method
        native_mcms = mcm_method in ("tree-traversal", "one-shot")
        if not native_mcms:
            program.add_transform(defer_measurements, allow_postselect=False)
        stops = _with_mcms(self._stops) if native_mcms else self._stops
        program.add_transform(decompose, stopping_condition=stops, device_wires=self.wires,
                              skip_initial_state_prep=True, name=self.name)
        program.add_transform(device_resolve_dynamic_wires, wires=self.wires,
                              allow_resets=native_mcms)
        program.add_transform(validate_device_wires, self.wires, name=self.name)
        program.add_transform(validate_measurements, name=self.name,
                              sample_measurements=accepted_sample_measurement)
        program.add_transform(_broadcast_expand,
                              native=self._native_batches() and not _jax_vjp(config))
        if mcm_method == "one-shot":
            program.add_transform(dynamic_one_shot,
                                  postselect_mode=config.mcm_config.postselect_mode)
        if config.gradient_method == "adjoint":
            name = "adjoint + qmlsim.qubit"
            program.add_transform(no_sampling, name=name)
            program.add_transform(decompose, stopping_condition=self._adjoint_stops,
                                  device_wires=self.wires, skip_initial_state_prep=False,
                                  decomposer=_adjoint_decomposition, name=name)
            program.add_transform(validate_observables, _adjoint_observable, name=name)
            program.add_transform(validate_measurements,
                                  analytic_measurements=self._adjoint_differentiates, name=name)
            program.add_transform(_validate_adjoint_trainable)
        return program

    def _adjoint_differentiates(self, m) -> bool:
        return _adjoint_measurement(m) or (self._state_vjp and _state_measurement(m))

    def _differentiable_as_is(self, op) -> bool:
        """Whether op runs as it is and the adjoint differentiates it (the fast
        path of supports_derivatives): the adjoint's own stopping condition
        holds, so the full check would decompose nothing, and op prepares no
        state (whose trainability the full check validates). False sends op
        to the full check."""
        return self._adjoint_stops(op) and not (isinstance(op, StatePrepBase)
                                                or op.name == "QubitDensityMatrix")

    def supports_derivatives(self, execution_config=None, circuit=None) -> bool:
        if execution_config is None:
            return True
        if execution_config.gradient_method not in ("adjoint", "device", "best"):
            return False
        if circuit is None:
            return True
        if _has_mcms(circuit) and execution_config.mcm_config.mcm_method != "deferred":
            return False  # the branches' probabilities depend on the parameters
        # The measurements are checked here and the preprocessing runs on the
        # operations alone: a tape copy in each transform would copy every term
        # of a large Hamiltonian (a third of a 12-qubit VQE gradient's time).
        if circuit.shots or not all(self._adjoint_differentiates(m)
                                    for m in circuit.measurements):
            return False
        num_op_params = sum(op.num_params for op in circuit.operations)
        if any(t >= num_op_params for t in circuit.trainable_params) and (
                _trainable_observables(circuit, num_op_params) is None
                or any(_state_measurement(m) for m in circuit.measurements)):
            return False  # a trainable observable coefficient
        if all(self._differentiable_as_is(op) for op in circuit.operations):
            return True  # nothing to decompose, every operation differentiable
        # The answer depends on the operations' kinds, wires, hyperparameters and
        # trainability only, so a training loop's repeated structure asks once.
        try:
            key = (tuple((op.name, tuple(op.wires), repr(op.hyperparameters))
                         for op in circuit.operations), tuple(circuit.trainable_params))
        except Exception:  # noqa: BLE001 - an unusual hyperparameter: no caching
            key = None
        if key is not None and key in self._supports_cache:
            return self._supports_cache[key]
        ops_only = qml.tape.QuantumScript(circuit.operations, [qml.expval(qml.Z(w)) for w in
                                                               circuit.wires[:1]],
                                          trainable_params=list(circuit.trainable_params))
        program = CompilePipeline()
        if any(isinstance(op, MidMeasureMP) for op in circuit.operations):
            program = self.preprocess_transforms(self.setup_execution_config(execution_config))
        else:  # the adjoint's own checks (the rest of the preprocessing cannot fail here)
            program.add_transform(decompose, stopping_condition=self._adjoint_stops,
                                  device_wires=self.wires, skip_initial_state_prep=False,
                                  decomposer=_adjoint_decomposition, name=self.name)
            program.add_transform(_validate_adjoint_trainable)
        try:
            program((ops_only,))
            answer = True
        except Exception:  # noqa: BLE001 - any preprocessing failure means "no"
            answer = False
        if key is not None:
            if len(self._supports_cache) > 256:
                self._supports_cache.clear()
            self._supports_cache[key] = answer
        return answer

    def eval_jaxpr(self, jaxpr, consts, *args, execution_config=None, shots=None):
        """Program capture (``qml.capture.enable()``) is not evaluated here yet:
        one clear line instead of PennyLane's bare NotImplementedError."""
        raise DeviceError(f"{self.name} does not evaluate captured programs yet; call "
                          "qml.capture.disable() before creating the QNode")

    def supports_vjp(self, execution_config=None, circuit=None) -> bool:
        return self.supports_derivatives(execution_config, circuit)

    # -- execution
    def execute(self, circuits, execution_config: ExecutionConfig | None = None):
        """Tapes whose measurements are all expectation values of Pauli sums run
        in C++ batches (one call per group of the same wires and observables,
        threads across tapes for small states); the rest one by one."""
        results = [None] * len(circuits)
        groups = {}
        for i, circuit in enumerate(circuits):
            if circuit.batch_size is not None:
                results[i] = self._execute_batch(circuit)
                continue
            if _has_mcms(circuit):
                results[i] = self._simulate_dynamic(circuit)
                continue
            fast = self._expval_inputs(circuit)
            if fast is None:
                results[i] = self._simulate(circuit)
                continue
            n, program, values, terms = fast
            groups.setdefault((n, terms), []).append((i, program, values))
        for (n, terms), items in groups.items():
            out = _qmlsim.expvals_batch([p for _, p, _ in items], [v for _, _, v in items],
                                        list(terms), self._engine_options())
            for (i, _, _), v in zip(items, out):
                results[i] = _format_values(v)
        return tuple(results)

    # -- parameter broadcasting (_batches): one engine call per broadcast tape
    def _native_batches(self) -> bool:
        return True

    def _batch_inputs(self, circuit):
        """(Program, rows, batched parameters, observables) of a tape that
        runs as one batch."""
        circuit, n = _standard_wires(circuit)
        program, rows, batched = batch_program(circuit, n)
        return program, rows, batched, list(batch_observables(circuit, n))

    def _execute_batch(self, circuit):
        """A broadcast tape's results: per measurement, an array over rows
        (probabilities: [row][outcome])."""
        if not (self._native_batches() and runs_as_one_batch(circuit, probabilities=True)):
            tapes, combine = broadcast_expand(circuit)
            return combine(self.execute(tapes))
        program, rows, _, observables = self._batch_inputs(circuit)
        circuit, n = _standard_wires(circuit)
        programs, opts = [program] * len(rows), self._engine_options()
        expvals = iter(np.asarray(_qmlsim.expvals_batch(programs, rows, observables, opts)).T
                       if observables else ())
        probs = None
        res = []
        for m in circuit.measurements:
            if isinstance(m, ExpectationMP):
                res.append(np.array(next(expvals)))
                continue
            if probs is None:
                probs = np.asarray(_qmlsim.probabilities_batch(programs, rows, opts))
            res.append(np.array([_marginal(p, list(m.wires.labels), n) for p in probs]))
        return res[0] if len(res) == 1 else tuple(res)

    def _batch_jacobian(self, circuit):
        """(results, Jacobian) of a broadcast tape: per measurement, per
        trainable parameter, an array over rows (row b's derivative by the
        parameter, or by its own entry of a batched one)."""
        if not (self._native_batches() and runs_as_one_batch(circuit)):
            tapes, _ = broadcast_expand(circuit)
            per_row = self._values_and_jacobians(tapes)
            return (stack_rows([v for v, _ in per_row]), stack_rows([j for _, j in per_row]))
        program, rows, _, observables = self._batch_inputs(circuit)
        both = _qmlsim.jacobian_batch([program] * len(rows), rows, observables,
                                      self._engine_options())
        values = np.array([v for v, _ in both])
        jac = np.array([r for _, r in both])[..., list(circuit.trainable_params)]
        res = tuple(np.array(values[:, k]) for k in range(values.shape[1]))
        jacs = []
        for k in range(values.shape[1]):
            by_param = tuple(np.array(jac[:, k, j]) for j in range(jac.shape[2]))
            jacs.append(by_param[0] if len(by_param) == 1 else by_param)
        return (res[0] if len(res) == 1 else res), (jacs[0] if len(jacs) == 1 else tuple(jacs))

    def _batch_vjp(self, circuit, cotangent, rows=False):
        """A broadcast tape's VJP: per row, the measurements' cotangents at
        that row weigh its observables, one backward pass per row, rows in
        parallel; in the parameters' shapes (_batches.per_parameter), or every
        parameter row by row (rows: JAX's vectorised VJP callback under
        jax.vmap, whose tape rows are the vmapped ones)."""
        m = len(circuit.measurements)
        parts = [np.asarray(qml.math.unwrap(c)) for c in ((cotangent,) if m == 1 else cotangent)]
        trainable = list(circuit.trainable_params)
        if not (self._native_batches() and runs_as_one_batch(circuit)):
            tapes, _ = broadcast_expand(circuit)  # a cotangent's first axis: the rows
            grads = [np.reshape(self._vjp(t, parts[0][b] if m == 1 else
                                          tuple(c[b] for c in parts)), -1)
                     for b, t in enumerate(tapes)]
            by_row = np.zeros((len(tapes), max(trainable, default=-1) + 1))
            by_row[:, trainable] = np.reshape(grads, (len(tapes), len(trainable)))
            batched = {t for t, flag in enumerate(f for op in circuit.operations
                                                 for f in batched_parameters(op)) if flag}
        else:
            program, values, batched, observables = self._batch_inputs(circuit)
            dy = np.array(parts, dtype=float).reshape(m, circuit.batch_size)
            out = _qmlsim.vjp_batch([program] * len(values), values, observables,
                                    dy.T.tolist(), self._engine_options())
            by_row = [g for _, g in out]
        # rows: JAX's vmapped callback wants every parameter row by row
        return per_parameter(by_row, trainable, set(trainable) if rows else batched)

    def _expval_inputs(self, circuit):
        """(wires, Program, parameter values, observables as hashable terms) for
        an analytic tape of Pauli-sum expectation values, else None."""
        if circuit.shots or not all(isinstance(m, ExpectationMP) and not _dense_expval(m)
                                    for m in circuit.measurements):
            return None
        circuit, n = _standard_wires(circuit)
        terms = [_pauli_terms(m.obs, n) for m in circuit.measurements]
        if n == 0 or any(t is None for t in terms):
            return None
        program, values = _program(circuit.operations, n)
        return n, program, values, tuple(tuple(t) for t in terms)

    def _final_state(self, circuit):
        """(the tape on wires 0..n-1, n, the engine's final state as c_dtype)."""
        circuit, n = _standard_wires(circuit)
        if n == 0:
            raise DeviceError(f"{self.name}: the circuit acts on no wire")
        program, values = _program(circuit.operations, n)
        state = _qmlsim.state(program, values, self._engine_options())
        return circuit, n, state.astype(self._c_dtype, copy=False)

    def _simulate(self, circuit):
        circuit, n, state = self._final_state(circuit)
        m = circuit.measurements
        if (not circuit.shots and len(m) == 1 and type(m[0]) is ProbabilityMP  # noqa: E721
                and m[0].obs is None and m[0].mv is None
                and m[0].wires.labels == tuple(range(n))):
            # probs of every wire in order (a kernel matrix's overlaps): |amplitude|^2
            return (state.real ** 2 + state.imag ** 2).astype(np.float64)
        return self._with_dense_expvals(circuit, state, n, lambda tape: measure_final_state(
            tape, state.reshape((2,) * n), False, rng=self._rng))

    @staticmethod
    def _with_dense_expvals(circuit, state, n: int, measure_rest):
        """The tape's results: dense Hermitians' expectation values from the
        final state (_dense_value), the other measurements by measure_rest
        (PennyLane's measurement code on a tape of them)."""
        dense = [not circuit.shots and _dense_expval(m) for m in circuit.measurements]
        if not any(dense):
            return measure_rest(circuit)
        rest = [m for m, d in zip(circuit.measurements, dense) if not d]
        others = iter(())
        if rest:
            r = measure_rest(circuit.copy(measurements=rest))
            others = iter((r,) if len(rest) == 1 else r)
        out = tuple(_dense_value(m, state, n) if d else next(others)
                    for m, d in zip(circuit.measurements, dense))
        return out[0] if len(out) == 1 else out

    def _simulate_dynamic(self, circuit):
        """A tape with mid-circuit measurements (qml.measure, qml.cond),
        natively: analytically as the mixture of every outcome branch
        (tree-traversal), or with shots (one-shot: dynamic_one_shot's tape,
        one partition per shot) as the branches the shots take, each branch's
        shots sampled from its final state by PennyLane's own sampling."""
        circuit, n = _standard_wires(circuit)
        bits = {}
        program, values = _program(circuit.operations, n, bits)
        mcms = [op for op in circuit.operations if isinstance(op, MidMeasureMP)]
        shots = circuit.shots.total_shots if circuit.shots else 0
        seed = int(self._rng.integers(1 << 62))
        opts = self._engine_options()
        if shots:
            branches = _qmlsim.branches(program, values, shots, seed, opts)
            return self._one_shot(circuit, n, branches, bits, mcms)
        readout = _engine_readout(circuit, n)
        if readout is None:  # PennyLane's measurement code on every branch's state
            branches = _qmlsim.branches(program, values, 0, seed, opts)
            leaves = [(r, w, self._leaf_tensor(s, n)) for r, w, _, s, _, _ in branches]
            measure_state = self._measure
        else:  # Pauli-sum expectation values and probabilities read in C++
            terms, probabilities, measure_state = readout
            branches = _qmlsim.branches(program, values, 0, seed, opts, terms, probabilities,
                                        False)
            leaves = [(r, w, (e, p)) for r, w, _, _, e, p in branches]
        kept = [(r, w, s) for r, w, s in leaves
                if all(m.postselect is None or (r >> bits[_mcm_key(m)]) & 1 == m.postselect
                       for m in mcms)]
        total = sum(w for _, w, _ in kept)
        kept = [(r, w / total if total > 0 else np.nan, s) for r, w, s in kept]
        out = tuple(_mixture_statistic(m, kept, bits, measure_state)
                    for m in circuit.measurements)
        return out[0] if len(out) == 1 else out

    def _one_shot(self, circuit, n, branches, bits, mcms):
        """dynamic_one_shot's tape (one partition per shot; the user's
        measurements of wires, then a sample of each mid-circuit measurement):
        each branch's shots sampled from its final state, in a random order."""
        terminal = circuit.measurements[:len(circuit.measurements) - len(mcms)]
        per_shot = []
        for record, _, count, state, _, _ in branches:
            outcomes = tuple(np.int64((record >> bits[_mcm_key(m)]) & 1) for m in mcms)
            rows = [()] * count
            if terminal:
                leaf = qml.tape.QuantumScript([], terminal, shots=[1] * count)
                r = self._measure_final(leaf, self._leaf_tensor(state, n), False, rng=self._rng)
                if not leaf.shots.has_partitioned_shots:
                    r = (r,)
                rows = [row if len(terminal) > 1 else (row,) for row in r]
            for row in rows:
                shot = tuple(row) + outcomes
                per_shot.append(shot if len(shot) > 1 else shot[0])
        order = self._rng.permutation(len(per_shot))
        per_shot = tuple(per_shot[i] for i in order)
        return per_shot if circuit.shots.has_partitioned_shots else per_shot[0]

    # The pure state's measurement functions; qmlsim.mixed has its own.
    _measure = staticmethod(measure)
    _measure_final = staticmethod(measure_final_state)

    def _leaf_tensor(self, state, n):
        """A branch's final state as PennyLane's measurement code takes it."""
        return state.astype(self._c_dtype, copy=False).reshape((2,) * n)

    # -- derivatives
    def _adjoint_inputs(self, circuit):
        """(n, Program, values, observables, blocks, trainable): the engine's
        observables for every measurement in order, and per measurement how
        many of them it takes and how their values make its own (None: an
        expectation value, one observable; _VARIANCE: H and H^2; a matrix: the
        probabilities' Walsh transform of their Z strings)."""
        circuit, n = _standard_wires(circuit)
        program, values = _program(circuit.operations, n, trainable=set(circuit.trainable_params))
        observables, blocks = [], []
        for m in circuit.measurements:
            if isinstance(m, VarianceMP) and _adjoint_measurement(m):
                observables.extend([_pauli_terms(m.obs, n), _squared_terms(m.obs, n)])
                blocks.append((2, _VARIANCE))
            elif _dense_expval(m):
                blocks.append((0, _HermitianBlock([int(w) for w in m.obs.wires.labels],
                                                  _hermitian_matrix(m.obs))))
            elif isinstance(m, ExpectationMP):
                terms = _pauli_terms(m.obs, n)
                if terms is None:
                    raise DeviceError("qmlsim.qubit: adjoint needs expectation values of Pauli "
                                      "sums or probabilities")
                observables.append(terms)
                blocks.append((1, None))
            elif _adjoint_measurement(m):
                wires = list(m.wires.labels)
                observables.extend(_z_strings(wires, n))
                blocks.append((1 << len(wires), _walsh(len(wires))))
            elif self._state_vjp and _state_measurement(m):
                blocks.append((0, _StateBlock(list(m.wires.labels)
                                              if type(m) is DensityMatrixMP else None)))  # noqa: E721
            else:
                raise DeviceError("qmlsim.qubit: adjoint needs expectation values of Pauli "
                                  "sums or probabilities")
        # trainable observable parameters: _observable_gradients
        trainable = [t for t in circuit.trainable_params if t < len(values)]
        return n, program, values, observables, tuple(blocks), trainable

    def _observable_gradients(self, circuit):
        """[(measurement index, gradient)] per trainable observable parameter
        (a Hermitian's matrix), from one more forward pass for the final
        state's reduced density matrices."""
        num_op_params = sum(op.num_params for op in circuit.operations)
        owners = _trainable_observables(circuit, num_op_params)
        if owners is None:
            raise DeviceError(f"{self.name}: adjoint differentiates an observable's parameters "
                              "only as the matrix of a measured Hermitian")
        if not owners:
            return []
        try:
            circuit, n, state = self._final_state(circuit)
        except ValueError as e:  # trajectories of a noisy circuit
            raise DeviceError(f"{self.name}: the gradient by a Hermitian's matrix needs the "
                              f"final state: {e}") from None
        state = state.astype(np.complex128)
        out = []
        for i in owners:
            m = circuit.measurements[i]
            wires = list(m.obs.wires.labels)
            if state.size == 1 << n:
                rho = qml.math.reduce_statevector(state, indices=wires)
            else:
                rho = qml.math.reduce_dm(state.reshape(1 << n, 1 << n), indices=wires)
            out.append((i, _hermitian_gradient(m, np.asarray(rho))))
        return out

    @staticmethod
    def _per_measurement(rows, blocks, values=None):
        """The engine's observables' values (values None) or Jacobian rows (at
        those values) as each measurement's."""
        out, at = [], 0
        for size, kind in blocks:
            block = np.asarray(rows[at:at + size], dtype=float)
            if kind is None:
                out.append(block[0])
            elif isinstance(kind, str):  # _VARIANCE: <H^2> - <H>^2 and its derivative
                out.append(block[1] - block[0] ** 2 if values is None
                           else block[1] - 2 * float(values[at]) * block[0])
            else:
                out.append(kind @ block)
            at += size
        return out

    @staticmethod
    def _format_jacobian(per_measurement, trainable, observable_gradients=()):
        """PennyLane's shape: per measurement, per trainable parameter (each
        level dropped when it has one entry); the operations' parameters,
        then the observables' (gradients of the measurement owning each,
        zeros for the others)."""
        jacs = []
        for k, jac in enumerate(per_measurement):  # [entries][parameter] or [parameter]
            jac = np.asarray(jac, dtype=float)[..., trainable]
            by_param = [np.array(jac[..., p]) for p in range(len(trainable))]
            by_param += [g if i == k else np.zeros(jac.shape[:-1] + g.shape, dtype=g.dtype)
                         for i, g in observable_gradients]
            jacs.append(by_param[0] if len(by_param) == 1 else tuple(by_param))
        return jacs[0] if len(jacs) == 1 else tuple(jacs)

    def _values_and_jacobians(self, circuits):
        """[(results as execute returns them, Jacobian)] per tape: adjoint
        Jacobians batched in C++ like execute (one call per group of the same
        wires and observables), each from one forward pass that also gives
        the expectation values, then one backward pass per observable."""
        out = [None] * len(circuits)
        groups = {}
        for i, circuit in enumerate(circuits):
            if circuit.batch_size is not None:
                out[i] = self._batch_jacobian(circuit)
                continue
            if any(_state_measurement(m) or _dense_expval(m) for m in circuit.measurements):
                out[i] = self._state_jacobian(circuit)
                continue
            n, program, values, observables, blocks, trainable = self._adjoint_inputs(circuit)
            key = (n, tuple(tuple(t) for t in observables), _blocks_key(blocks))
            groups.setdefault(key, []).append((i, program, values, trainable, blocks,
                                               self._observable_gradients(circuit)))
        for (n, observables, _), items in groups.items():
            jacs = _qmlsim.jacobian_batch([it[1] for it in items], [it[2] for it in items],
                                          list(observables), self._engine_options())
            for (i, _, _, trainable, blocks, by_obs), (values, rows) in zip(items, jacs):
                results = self._per_measurement(values, blocks)
                scalars = all(not isinstance(b[1], np.ndarray) for b in blocks)
                out[i] = (_format_values(results) if scalars
                          else (results[0] if len(results) == 1 else tuple(results)),
                          self._format_jacobian(self._per_measurement(rows, blocks, values),
                                                trainable, by_obs))
        return out

    def compute_derivatives(self, circuits, execution_config: ExecutionConfig | None = None):
        return tuple(jac for _, jac in self._values_and_jacobians(circuits))

    def execute_and_compute_derivatives(self, circuits, execution_config=None):
        both = self._values_and_jacobians(circuits)
        return tuple(v for v, _ in both), tuple(jac for _, jac in both)

    def _vjp(self, circuit, cotangent, rows=False):
        """The operations' parameters' VJP (_operations_vjp), then the
        observables' (a Hermitian matrix's gradient weighed by the cotangent
        of its measurement); a broadcast tape's by _batch_vjp."""
        if circuit.batch_size is not None:
            return self._batch_vjp(circuit, cotangent, rows)
        out = self._operations_vjp(circuit, cotangent)
        by_obs = self._observable_gradients(circuit)
        if not by_obs:
            return out
        parts = [cotangent] if len(circuit.measurements) == 1 else list(cotangent)
        more = []
        for i, g in by_obs:
            c = np.asarray(qml.math.unwrap(parts[i]))
            more.append(c[..., None, None] * g if c.ndim else c * g)  # (batch,) cotangents too
        return tuple(out) + tuple(more)

    def _operations_vjp(self, circuit, cotangent):
        """One adjoint backward pass per cotangent column: a probs
        measurement's cotangent c weighs its Z strings by the transform of c;
        the state's and density matrices' cotangents become one cotangent on
        the final state, whose backward pass is added."""
        n, program, values, observables, blocks, trainable = self._adjoint_inputs(circuit)
        if any(isinstance(kind, _StateBlock) for _, kind in blocks):
            return self._vjp_with_states(n, program, values, observables, blocks, trainable,
                                         cotangent)
        if all(kind is None for _, kind in blocks):
            cot = np.asarray(qml.math.unwrap(cotangent), dtype=float)
            if len(blocks) == 1:
                cot = cot.reshape((1,) + cot.shape)  # (1,) or (1, batch)
            columns = cot.T if cot.ndim == 2 else [cot]
        else:
            weights, _ = self._weights(program, values, observables, blocks, cotangent)
            cot, columns = np.asarray(weights), [np.asarray(weights)]
        out = []
        for column in columns:
            if not np.any(column):
                out.append(np.zeros(len(trainable)))
                continue
            _, grad = _qmlsim.vjp(program, values, observables, [float(c) for c in column],
                                  self._engine_options())
            out.append(np.asarray(grad, dtype=float)[trainable])
        result = np.array(out).T if cot.ndim == 2 else out[0]
        return tuple(np.array(r) for r in result)

    def _weights(self, program, values, observables, blocks, cotangent):
        """(the engine observables' weights, [(state block, its cotangent)])
        for one cotangent of every measurement: a variance's pair weighs H by
        -2 <H> c and H^2 by c (<H> from a forward pass), probabilities their
        Z strings by the transform of c; state blocks are set aside."""
        parts = [cotangent] if len(blocks) == 1 else list(cotangent)
        if any(isinstance(kind, str) for _, kind in blocks):  # variances: <H> first
            at, firsts = 0, []
            for size, kind in blocks:
                if isinstance(kind, str):
                    firsts.append(list(observables[at]))
                at += size
            (means,) = _qmlsim.expvals_batch([program], [values], firsts,
                                             self._engine_options())
            means = iter(means)
        weights, states = [], []
        for (_, kind), c in zip(blocks, parts):
            if isinstance(kind, _StateBlock):
                states.append((kind, c))
                continue
            c = np.asarray(qml.math.unwrap(c), dtype=float).reshape(-1)
            if isinstance(kind, str):  # _VARIANCE
                weights.extend([-2 * float(next(means)) * c[0], c[0]])
            else:
                weights.extend(c if kind is None else kind.T @ c)
        return weights, states

    def _vjp_with_states(self, n, program, values, observables, blocks, trainable, cotangent):
        """_vjp for tapes that measure the state or density matrices: their
        cotangents summed into one on the final state (one backward pass),
        the other measurements' as weights of their observables (another)."""
        weights, states = self._weights(program, values, observables, blocks, cotangent)
        psi = _qmlsim.state(program, values, self._engine_options())
        g = sum(kind.state_cotangent(c, psi, n) for kind, c in states)
        grad = np.asarray(_qmlsim.state_vjp(program, values, g, self._engine_options()))
        if np.any(weights):
            _, more = _qmlsim.vjp(program, values, observables, [float(w) for w in weights],
                                  self._engine_options())
            grad = grad + np.asarray(more)
        result = grad[trainable]
        return tuple(np.array(r) for r in result)

    def _state_jacobian(self, circuit):
        """(results, Jacobian) of a tape that measures the state or density
        matrices: each real output entry's row by one backward pass (the
        state's entries twice: real and imaginary parts), so 2^(n+1) passes
        for a state; refused above 8,192 output entries."""
        results = self.execute((circuit,))[0]
        outputs = [results] if len(circuit.measurements) == 1 else list(results)
        shapes = [np.shape(o) for o in outputs]
        flat = [np.asarray(o).reshape(-1) for o in outputs]
        if sum(f.size for f in flat) > 1 << 13:
            raise DeviceError(f"{self.name}: the Jacobian of a state of {len(circuit.wires)} wires "
                              "is too large; differentiate through a VJP (device_vjp=True)")
        per_measurement = []
        for k, f in enumerate(flat):
            complex_out = np.iscomplexobj(f)
            rows = []
            for i in range(f.size):
                row = 0
                for unit in ((1, 1j) if complex_out else (1,)):
                    dy = [np.zeros(s.size, dtype=np.complex128 if np.iscomplexobj(s) else float)
                          for s in flat]
                    dy[k][i] = unit
                    dy = [d.reshape(shape) for d, shape in zip(dy, shapes)]
                    v = np.asarray(self._vjp(circuit, dy[0] if len(dy) == 1 else tuple(dy)))
                    row = row + (v if unit == 1 else -1j * v)  # Re(i dpsi) = -Im(dpsi)
                rows.append(np.atleast_1d(row))
            jac = np.array(rows).reshape(shapes[k] + (-1,))
            by_param = [jac[..., p] for p in range(jac.shape[-1])]
            per_measurement.append(by_param[0] if len(by_param) == 1 else tuple(by_param))
        return results, per_measurement[0] if len(per_measurement) == 1 else tuple(per_measurement)

    def compute_vjp(self, circuits, cotangents, execution_config=None):
        # Under JAX, a broadcast tape reaches the VJP only from PennyLane's
        # vectorised callback under jax.vmap (preprocess_transforms expands
        # broadcasts of JAX's own there): its rows are vmapped ones.
        rows = _jax_vjp(execution_config)
        return tuple(self._vjp(c, cot, rows) for c, cot in zip(circuits, cotangents))

    def execute_and_compute_vjp(self, circuits, cotangents, execution_config=None):
        return self.execute(circuits, execution_config), self.compute_vjp(circuits, cotangents)

