"""Cirq on qmlsim's engine: ``Simulator``, in the manner of ``qsimcirq.QSimSimulator``.

    sim = qmlsim.cirq.Simulator(seed=7)
    sim.simulate(circuit).final_state_vector
    sim.simulate_expectation_values_sweep(circuit, cirq.Z(q0) * cirq.Z(q1), sweep)
    sim.run(circuit_with_measurements, repetitions=1000)

- ``cirq.SimulatesFinalState`` (``simulate``, ``simulate_sweep``): a
  ``cirq.StateVectorTrialResult`` per parameter point, the state in Cirq's qubit
  order (the first qubit of ``qubit_order`` is the most significant bit), its
  global phase included. Terminal measurements are sampled once and the state
  collapsed onto the outcome, as ``cirq.Simulator`` does.
- ``cirq.SimulatesExpectationValues``: ``cirq.PauliSum`` observables (real
  coefficients) evaluated in C++; every parameter point of a sweep in one C++
  batch (threads across points for small states).
- ``cirq.SimulatesSamples`` (``run``, ``run_sweep``): measurement keys,
  repetitions, invert masks, confusion maps (readout error: each recorded
  value drawn from its true value's row, before the invert mask, as
  ``MeasurementGate`` documents it; not in dynamic circuits); seeded by
  ``seed``.
- Gates: the ``XPowGate`` family (``rx``, ``ry``, ``rz``, any exponent and
  global shift), ``HPowGate``, ``CZPowGate``, ``CXPowGate``, ``SwapPowGate`` and
  ``XX/YY/ZZPowGate`` become the engine's parametric gates; every other gate
  with a unitary on at most 10 qubits (``ISwapPowGate``, ``FSimGate``,
  ``PhasedXPowGate``, ``PhasedXZGate``, ``PhasedISwapPowGate``, ``MatrixGate``,
  controlled operations) runs as its matrix; anything else through
  ``cirq.decompose``. Symbols in exponents and ``sympy`` expressions of them are
  resolved by Cirq per parameter point. ``LineQubit``, ``GridQubit`` and any
  other qubit type.
- Dynamic circuits: measurements before other operations, ``cirq.ResetChannel``
  and ``with_classical_controls`` (measurement keys and ``sympy`` conditions,
  resolved by Cirq for every assignment of the bits they read): ``run`` splits
  the repetitions over the outcome branches (each simulated once),
  ``simulate`` follows one trajectory (its record and final state), and
  expectation values are the exact mixture over outcomes. A key measured twice
  is a ``ValueError``.
- Noise (``cirq.depolarize``, ``amplitude_damp``, ``circuit.with_noise(...)``,
  any channel with Kraus operators on one or two qubits, and a simulator's
  ``noise=`` model applied as Cirq applies it): expectation values and
  ``run`` on the engine's density matrix, exactly, as
  ``cirq.DensityMatrixSimulator`` gives them (by trajectories beyond memory,
  or with ``method="trajectories"``: their mean, and ``run``'s shots each
  along its own trajectory); ``Simulator.simulate`` follows
  one trajectory, as ``cirq.Simulator`` does (each channel's Kraus operator
  drawn with its probability; the final state vector, normalised).
  ``DensityMatrixSimulator`` is the drop-in for
  ``cirq.DensityMatrixSimulator``: ``simulate`` gives
  ``final_density_matrix``.

Cirq is an optional dependency: ``pip install cirq-core``.
"""
from __future__ import annotations

import collections

import cirq
import numpy as np

from . import _qmlsim
from ._cirq_ops import evaluate, observable_terms, step_of, steps
from ._program import Op, Program, alternatives, engine_options, options

_WHO = "qmlsim.cirq: "


class _Program:
    """A circuit translated once for a sweep: per operation either a fixed
    engine operation or one evaluated at each parameter point. Cirq qubit i is
    engine qubit n-1-i, so the engine's state index is Cirq's. Terminal
    measurements as (key, qubit indices, invert mask). A dynamic circuit
    (measurements before other operations, classically controlled
    operations) keeps its measurements in the program, each qubit's outcome in
    a classical bit (`bits`: key -> its bits, first qubit first)."""

    def __init__(self, circuit, qubits, initial_state):
        self.n = len(qubits)
        index = {q: i for i, q in enumerate(qubits)}
        self.initial, self.steps, self.measurements = [], [], []
        self.confusion = {}  # key -> confusion_map
        self.noisy = False
        self.dynamic = not circuit.are_all_measurements_terminal() or any(
            isinstance(op, cirq.ClassicallyControlledOperation) for op in circuit.all_operations())
        self.bits = {}  # measurement key -> classical bits (dynamic circuits)
        if initial_state is not None and not (isinstance(initial_state, (int, np.integer))
                                              and int(initial_state) == 0):
            try:
                amps = cirq.to_valid_state_vector(initial_state, self.n, dtype=np.complex128)
            except ValueError as e:
                raise ValueError(f"qmlsim.cirq: initial_state: {e}") from e
            self.initial = amps.tolist()
        for step in steps(circuit, qubits, _WHO, resolve_later=True):
            self._add(step, index)

    def _add(self, step, index):
        if step.kind == "measure":
            gate = step.op.gate
            if not isinstance(gate, cirq.MeasurementGate):
                raise ValueError(f"qmlsim.cirq: measurement {step.op!r} is not supported")
            if gate.confusion_map:
                if self.dynamic:  # its classical controls would read the confused bits
                    raise ValueError(f"qmlsim.cirq: {step.op!r}: a confusion_map in a dynamic "
                                     "circuit is not supported")
                self.confusion[str(gate.key)] = gate.confusion_map
            self.measurements.append((gate.key, [index[q] for q in step.op.qubits],
                                      gate.full_invert_mask()))
            if self.dynamic:
                key = str(gate.key)
                if key in self.bits:
                    raise ValueError(f"qmlsim.cirq: measurement key {key!r} is used twice in a "
                                     "dynamic circuit (repeated keys are not supported)")
                first = sum(len(b) for b in self.bits.values())
                self.bits[key] = list(range(first, first + len(step.op.qubits)))
                ops = [Op("measure", [w], clbit=b) for w, b in zip(step.wires, self.bits[key])]
                self.steps.append(lambda resolver, ops=ops: (ops, 0.0))
        elif step.kind == "controlled":
            self.steps.append(self._controlled(step))
        elif step.kind == "channel" and not cirq.is_parameterized(step.op):
            self.noisy = True
            fixed = evaluate(step, cirq.ParamResolver(), _WHO)
            self.steps.append(lambda resolver, fixed=fixed: fixed)
        elif not cirq.is_parameterized(step.op):
            fixed = evaluate(step, cirq.ParamResolver(), _WHO)
            self.steps.append(lambda resolver, fixed=fixed: fixed)
        else:
            self.steps.append(lambda resolver, step=step: evaluate(step, resolver, _WHO))

    def _controlled(self, step):
        """A classically controlled operation: its operation once per
        assignment of the bits its conditions read that satisfies them all
        (Cirq's own resolution of each condition), evaluated per point."""
        op = step.op
        keys = sorted({k for c in op.classical_controls for k in c.keys}, key=str)
        missing = [str(k) for k in keys if str(k) not in self.bits]
        if missing:
            raise ValueError(f"qmlsim.cirq: {op!r} is controlled by {missing}, which no earlier "
                             "measurement writes")
        bits = [b for k in keys for b in self.bits[str(k)]]

        def holds(values):
            records, at = {}, 0
            for k in keys:
                size = len(self.bits[str(k)])
                records[k] = [tuple(values[at:at + size])]
                at += size
            store = cirq.ClassicalDataDictionaryStore(_records=records)
            return all(c.resolve(store) for c in op.classical_controls)

        alts = alternatives(len(bits), holds)
        inner = step_of(op.without_classical_controls(), step.wires)
        if inner.kind in ("measure", "phase"):
            raise ValueError(f"qmlsim.cirq: a classically controlled {inner.kind} ({op!r}) is "
                             "not supported")

        def at(resolver):
            engine_op, _ = evaluate(inner, resolver, _WHO)  # a branch's phase is unobservable
            out = []
            for value, negated in alts:
                c = Op(engine_op)
                c.condition_bits, c.condition_value, c.condition_negated = bits, value, negated
                out.append(c)
            return out, 0.0
        return at

    def at(self, resolver):
        """The engine's program at one parameter point (angles as literals)."""
        ops, phase = [], 0.0
        for step in self.steps:
            op, p = step(resolver)
            if isinstance(op, list):
                ops.extend(op)
            elif op is not None:
                ops.append(op)
            phase += p
        num_clbits = sum(len(b) for b in self.bits.values())
        return Program(self.n, ops, 0, self.initial, phase, num_clbits)

    def observed(self, bits, key: str, invert, prng) -> np.ndarray:
        """A key's recorded bits [repetition][qubit] from its true outcomes: the
        confusion map's rows drawn (its qubit indices read as a big-endian
        value, as Cirq reads them), then the invert mask."""
        bits = np.array(bits, dtype=np.uint8).reshape(-1, len(invert))
        for indices, confusion in self.confusion.get(key, {}).items():
            cols = list(indices)
            weights = 1 << np.arange(len(cols))[::-1]
            values = bits[:, cols] @ weights
            drawn = values.copy()
            for v in np.unique(values):
                rows = values == v
                drawn[rows] = prng.choice(len(confusion), size=int(rows.sum()), p=confusion[v])
            bits[:, cols] = (drawn[:, None] >> np.arange(len(cols))[::-1]) & 1
        return bits ^ np.array(invert, dtype=np.uint8)

    def records(self, outcome_bits: np.ndarray, key: str, invert) -> np.ndarray:
        """One key's bits [repetition][qubit] from records (bit k = clbit k)."""
        bits = np.array([(outcome_bits >> b) & 1 for b in self.bits[key]], dtype=np.uint8).T
        return bits ^ np.array(invert, dtype=np.uint8)


class Simulator(cirq.SimulatesSamples, cirq.SimulatesExpectationValues,
                cirq.SimulatesFinalState):
    """qmlsim's state-vector engine as a Cirq simulator.

    Args:
        seed: the random state for sampling (``cirq.RANDOM_STATE_OR_SEED_LIKE``).
        precision: "c128" (default; states come back as complex128) or "c64".
        threads: engine threads (default: ``OMP_NUM_THREADS`` or all cores).
        fusion: largest fused gate block in qubits (0: no fusion; default 3).
        noise: a ``cirq.NOISE_MODEL_LIKE``, applied as Cirq's simulators apply it.
        dtype: Cirq's way to set the precision (``np.complex64``: "c64").
        method: how noisy circuits run: "auto" (the density matrix while it
            fits in memory, trajectories beyond), "density_matrix" or
            "trajectories".
        trajectories: trajectories per expectation value by trajectories
            (qsimcirq's ``ev_noisy_repetitions``); seeded once from ``seed``.
    """

    def __init__(self, *, seed=None, precision: str = "c128", threads: int | None = None,
                 fusion: int = 3, noise=None, dtype=None, split_untangled_states: bool = True,
                 method: str = "auto", trajectories: int = 1000):
        del split_untangled_states  # Cirq's argument; one state over all qubits here
        if dtype is not None:  # Cirq's way to ask for a precision
            if dtype not in (np.complex64, np.complex128):
                raise ValueError(f"qmlsim.cirq: dtype must be np.complex64 or np.complex128, "
                                 f"got {dtype}")
            precision = "c64" if dtype == np.complex64 else "c128"
        self.noise = cirq.NoiseModel.from_noise_model_like(noise)
        self._prng = cirq.value.parse_random_state(seed)
        self._options = engine_options(precision, threads, fusion, who="qmlsim.cirq: ",
                                       method=method, trajectories=trajectories)
        self._trajectories_seeded = False  # see _engine
        self._dtype = np.complex64 if precision == "c64" else np.complex128
        self._cache = collections.OrderedDict()  # see _translated

    # -- helpers
    def _programs(self, program, params, qubit_order, initial_state, extra_qubits=(),
                  sampled_last=False):
        """(qubits, resolvers, translated program, the engine's Program per point);
        sampled_last: as _with_noise."""
        qubits = cirq.QubitOrder.as_qubit_order(qubit_order).order_for(
            set(program.all_qubits()) | set(extra_qubits))
        if not qubits:
            raise ValueError("qmlsim.cirq: the circuit acts on no qubit")
        resolvers = list(cirq.to_resolvers(params))
        prog = self._translated(program, qubits, initial_state, sampled_last)
        return qubits, resolvers, prog, [prog.at(r) for r in resolvers]

    def _translated(self, program, qubits, initial_state, sampled_last=False):
        """The program's translation, remembered for the same moments (Cirq's
        moments are immutable and a circuit's mutations replace them, so their
        identities pin the content), qubits and a basis-state start: running a
        circuit again (a training loop, a benchmark) does not translate it again."""
        if initial_state is not None and not isinstance(initial_state, (int, np.integer)):
            return _Program(self._with_noise(program, sampled_last), qubits, initial_state)
        moments = tuple(program.moments)
        key = (tuple(map(id, moments)), tuple(qubits), initial_state, sampled_last)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit[1]
        prog = _Program(self._with_noise(program, sampled_last), qubits, initial_state)
        self._cache[key] = (moments, prog)  # the moments held: their ids stay theirs
        if len(self._cache) > 32:
            self._cache.popitem(last=False)
        return prog

    def _with_noise(self, program, sampled_last=False):
        """The circuit with the simulator's noise model applied, as Cirq's
        simulators apply it (noisy_moments over the circuit's sorted qubits).
        sampled_last (run): where every measurement is terminal, Cirq samples
        them from the final state, after the noise the model puts after them;
        so they move behind it here."""
        if self.noise == cirq.NO_NOISE:
            return program
        noisy = cirq.Circuit(self.noise.noisy_moments(program, sorted(program.all_qubits())))
        if not (sampled_last and program.has_measurements()
                and program.are_all_measurements_terminal()):
            return noisy
        measurements = [op for op in noisy.all_operations() if cirq.is_measurement(op)]
        body = cirq.Circuit(cirq.Moment(op for op in m if not cirq.is_measurement(op))
                            for m in noisy)
        return body + cirq.Circuit(cirq.Moment(measurements))

    def _engine(self, prog=None):
        """The engine's options for a call. The seed of its trajectories
        (noisy expectation values by trajectories) is drawn from the
        simulator's random state when a noisy program first needs it, never
        at construction: cirq.Simulator() draws nothing from NumPy's global
        generator, which is the random state of an unseeded simulator."""
        if prog is not None and prog.noisy and not self._trajectories_seeded:
            self._options = self._options[:-1] + (int(self._prng.randint(1 << 62)),)
            self._trajectories_seeded = True
        return options(self._options)

    def _state(self, point):
        return _qmlsim.state(point, [], self._engine())

    def _probabilities(self, point, n):
        """|amplitude|^2, or a noisy circuit's density-matrix diagonal."""
        out = self._state(point)
        d = 1 << n
        if out.size == d * d:
            return np.real(np.diag(out.reshape(d, d))).copy()
        return np.abs(out) ** 2

    # -- cirq.SimulatesSamples
    def _seed(self) -> int:
        return int(self._prng.randint(1 << 62))

    def _run(self, circuit, param_resolver, repetitions):
        _, _, prog, (point,) = self._programs(circuit, param_resolver, cirq.QubitOrder.DEFAULT,
                                               None, sampled_last=True)
        if prog.dynamic:  # every repetition collapses the state at each measurement
            counts = _qmlsim.records(point, [], repetitions, self._seed(), self._engine())
            per_shot = np.repeat([r for r, _ in counts], [c for _, c in counts]).astype(np.int64)
            per_shot = per_shot[self._prng.permutation(repetitions)]
            return {str(key): prog.records(per_shot, str(key), invert).reshape(
                repetitions, 1, len(qubits)) for key, qubits, invert in prog.measurements}
        if prog.noisy and _qmlsim.method(point, self._engine(prog)) == "trajectories":
            outcomes = self._trajectory_outcomes(point, repetitions)
        else:
            probs = self._probabilities(point, prog.n)
            probs /= probs.sum()
            outcomes = self._prng.choice(len(probs), size=repetitions, p=probs)
        records = {}
        for key, qubits, invert in prog.measurements:
            bits = np.array([(outcomes >> (prog.n - 1 - i)) & 1 for i in qubits]).T
            records[str(key)] = prog.observed(bits, str(key), invert, self._prng).reshape(
                repetitions, 1, len(qubits))
        return records

    def _sample_terminal(self, prog, probs, measurements: dict) -> np.ndarray:
        """One outcome of the terminal measurements drawn from `probs` (every
        basis state's), each key's recorded bits put in `measurements`; the
        mask of the basis states consistent with it (to collapse onto)."""
        outcome = int(self._prng.choice(len(probs), p=probs / probs.sum()))
        keep = np.ones(len(probs), dtype=bool)
        indices = np.arange(len(probs))
        for key, measured, invert in prog.measurements:
            bits = [(outcome >> (prog.n - 1 - i)) & 1 for i in measured]
            for i, b in zip(measured, bits):
                keep &= ((indices >> (prog.n - 1 - i)) & 1) == b
            measurements[str(key)] = prog.observed(bits, str(key), invert, self._prng).reshape(-1)
        return keep

    def _trajectory_outcomes(self, point, repetitions: int) -> np.ndarray:
        """Basis-state outcomes of `repetitions` shots of a noisy circuit, each
        shot along its own trajectory: the engine's trajectories, one shot each
        (shared prefixes run once), as `qmlsim run --shots` samples one; in
        random order."""
        o = self._engine()
        o.method, o.trajectories, o.seed = "trajectories", repetitions, self._seed()
        counts = _qmlsim.counts(point, [], repetitions, self._seed(), o)
        outcomes = np.repeat([k for k, _ in counts], [c for _, c in counts]).astype(np.int64)
        return outcomes[self._prng.permutation(repetitions)]

    # -- cirq.SimulatesExpectationValues
    def simulate_expectation_values_sweep_iter(self, program, observables, params,
                                               qubit_order=cirq.QubitOrder.DEFAULT,
                                               initial_state=None,
                                               permit_terminal_measurements=False):
        if not permit_terminal_measurements and program.are_any_measurements_terminal():
            raise ValueError("qmlsim.cirq: the circuit has terminal measurements; pass "
                             "permit_terminal_measurements=True to ignore them")
        obs = observables if isinstance(observables, list) else [observables]
        wrapped = [cirq.PauliSum.wrap(o) for o in obs]
        extra = set().union(*(o.qubits for o in wrapped)) if wrapped else set()
        no_measure = cirq.drop_terminal_measurements(program) if \
            program.are_any_measurements_terminal() else program
        qubits, _, prog, points = self._programs(no_measure, params, qubit_order,
                                                 initial_state, extra)
        index = {q: i for i, q in enumerate(qubits)}
        terms = [observable_terms(o, index, len(qubits), _WHO) for o in wrapped]
        values = _qmlsim.expvals_batch(points, [[]] * len(points), terms, self._engine(prog))
        for v in values:
            yield [float(x) for x in v]

    # -- cirq.SimulatesIntermediateState's entry point
    def simulate_moment_steps(self, circuit, param_resolver=None,
                              qubit_order=cirq.QubitOrder.DEFAULT, initial_state=None):
        """A step result per moment, as ``cirq.Simulator`` yields them
        (``cirq.SparseSimulatorStep``: ``state_vector``, ``measurements`` so
        far, ``sample``, ``dirac_notation``, ``density_matrix``,
        ``bloch_vector_of``). Each moment runs on the engine from the state
        the step before left; its measurements sample and collapse that state,
        and classical controls read the outcomes recorded so far. An empty
        circuit gives one step: the initial state."""
        resolved = cirq.resolve_parameters(circuit, cirq.ParamResolver(param_resolver))
        unresolved = sorted(str(s) for s in cirq.parameter_names(resolved))
        if unresolved:
            raise ValueError(f"qmlsim.cirq: symbols without values: {', '.join(unresolved)}")
        qubits = cirq.QubitOrder.as_qubit_order(qubit_order).order_for(circuit.all_qubits())
        state = cirq.to_valid_state_vector(0 if initial_state is None else initial_state,
                                           len(qubits), dtype=self._dtype)
        records = cirq.ClassicalDataDictionaryStore()

        def step():
            sim_state = cirq.StateVectorSimulationState(
                qubits=qubits, initial_state=state, dtype=self._dtype,
                classical_data=records.copy())
            return cirq.SparseSimulatorStep(sim_state=sim_state, dtype=self._dtype)

        if len(resolved) == 0:
            yield step()
            return
        for moment in resolved:
            ops = []
            for op in moment:
                if isinstance(op, cirq.ClassicallyControlledOperation):
                    if not all(c.resolve(records) for c in op.classical_controls):
                        continue
                    op = op.without_classical_controls()
                ops.append(op)
            result = self.simulate(cirq.Circuit(cirq.Moment(ops)), qubit_order=list(qubits),
                                   initial_state=state)
            state = result.final_state_vector
            for op in ops:
                if cirq.is_measurement(op):
                    key = cirq.measurement_key_obj(op)
                    bits = [int(b) for b in result.measurements[str(key)]]
                    records.record_measurement(key, bits, op.qubits)
            yield step()

    # -- cirq.SimulatesFinalState
    def simulate_sweep_iter(self, program, params, qubit_order=cirq.QubitOrder.DEFAULT,
                            initial_state=None):
        qubits, resolvers, prog, points = self._programs(program, params, qubit_order,
                                                         initial_state)
        for resolver, point in zip(resolvers, points):
            measurements = {}
            if prog.dynamic or prog.noisy:  # one trajectory: its outcomes and final state
                ((record, _, _, state, _, _),) = _qmlsim.branches(point, [], 1, self._seed(),
                                                                  self._engine())
                for key, _, invert in prog.measurements if prog.dynamic else ():
                    measurements[str(key)] = prog.records(np.array([record]), str(key),
                                                          invert).reshape(-1)
            else:
                state = self._state(point)
            if prog.measurements and not prog.dynamic:  # sampled once, the state collapsed
                keep = self._sample_terminal(prog, np.abs(state) ** 2, measurements)
                state = np.where(keep, state, 0)
                state /= np.linalg.norm(state)
            sim_state = cirq.StateVectorSimulationState(
                qubits=qubits, initial_state=state.astype(self._dtype), dtype=self._dtype)
            yield cirq.StateVectorTrialResult(params=resolver, measurements=measurements,
                                              final_simulator_state=sim_state)


def _simulation_state(rho: np.ndarray, qubits, dtype) -> cirq.DensityMatrixSimulationState:
    """Cirq's simulation state holding `rho` as the engine gave it. The engine's
    density matrix is exact (trace 1, Hermitian, positive to rounding), so
    Cirq's check of a given matrix (an eigendecomposition, most of a small
    simulate's time) is skipped: the state starts as |0..0>, whose check is
    cheap, and its matrix is then replaced."""
    state = cirq.DensityMatrixSimulationState(qubits=qubits, initial_state=0, dtype=dtype)
    state._state._density_matrix = np.ascontiguousarray(rho, dtype=dtype).reshape(
        (2,) * (2 * len(qubits)))
    return state


class DensityMatrixSimulator(Simulator):
    """qmlsim's density-matrix engine as ``cirq.DensityMatrixSimulator``:
    ``run``, ``sample``, ``simulate_expectation_values`` (exact, channels and
    the ``noise`` model included) and ``simulate``, whose
    ``final_density_matrix`` is the engine's density matrix, in Cirq's qubit
    order; measurements sample it and collapse it onto the outcome, as Cirq's
    do (mid-circuit ones through the engine's exact branches, one drawn per
    run; the engine caps the number of records).

    Args:
        noise: a ``cirq.NOISE_MODEL_LIKE`` (a noise model, or a channel applied
            after every moment), as Cirq's.
        seed: the random state for sampling.
        dtype: ``np.complex64`` (Cirq's default) or ``np.complex128``: the
            engine's precision and the dtype results come back in.
        threads: engine threads (default: ``OMP_NUM_THREADS`` or all cores).
    """

    def __init__(self, *, dtype=np.complex64, noise=None, seed=None, threads: int | None = None,
                 split_untangled_states: bool = True):
        super().__init__(seed=seed, threads=threads, noise=noise, dtype=dtype,
                         split_untangled_states=split_untangled_states)

    def _sampled_branch(self, prog, point, measurements: dict) -> np.ndarray:
        """A dynamic circuit as Cirq's density-matrix simulation runs it, each
        measurement sampled and the density matrix projected onto the outcome:
        the engine's exact branches (one per classical record, with its
        probability and normalised final state), one drawn by probability;
        its record into measurements, its final state returned."""
        branches = _qmlsim.branches(point, [], 0, 0, self._engine())
        weights = np.array([b[1] for b in branches])
        record, _, _, state, _, _ = branches[self._prng.choice(len(branches),
                                                               p=weights / weights.sum())]
        for key, _, invert in prog.measurements:
            measurements[str(key)] = prog.records(np.array([record]), str(key),
                                                  invert).reshape(-1)
        return np.asarray(state)

    def simulate_sweep_iter(self, program, params, qubit_order=cirq.QubitOrder.DEFAULT,
                            initial_state=None):
        if initial_state is not None and np.ndim(initial_state) == 2:
            raise ValueError("qmlsim.cirq: DensityMatrixSimulator starts from a basis state "
                             "or a state vector, not a density matrix")
        qubits, resolvers, prog, points = self._programs(program, params, qubit_order,
                                                         initial_state)
        d = 1 << prog.n
        for resolver, point in zip(resolvers, points):
            measurements = {}
            if prog.dynamic:  # mid-circuit measurements (or noise after them): one record
                out = self._sampled_branch(prog, point, measurements)
            else:
                out = self._state(point)
            rho = out.reshape(d, d) if out.size == d * d else np.outer(out, out.conj())
            if prog.measurements and not prog.dynamic:  # sampled once, rho projected onto it
                keep = self._sample_terminal(prog, np.clip(np.real(np.diag(rho)), 0, None),
                                             measurements)
                rho = rho * np.outer(keep, keep)
                rho /= np.trace(rho).real
            sim_state = _simulation_state(rho, qubits, self._dtype)
            yield cirq.DensityMatrixTrialResult(params=resolver, measurements=measurements,
                                                final_simulator_state=sim_state)
