"""qmlsim.cirq.Simulator against cirq.Simulator: final states (global phase
included) and expectation values to 1e-10 in complex128 on random circuits over
Cirq's common gates with symbols in exponents and sympy expressions of them,
parameter sweeps, LineQubit and GridQubit; sampled distributions by a
two-sample chi-square test; seeded runs repeat; bad input is a ValueError."""
import collections

import numpy as np
import pytest

cirq = pytest.importorskip("cirq")
import sympy  # noqa: E402

import qmlsim.cirq  # noqa: E402
from qmlsim.cirq import Simulator  # noqa: E402

A, B = sympy.Symbol("a"), sympy.Symbol("b")


def gate_menu(rng):
    """Cirq's common gates, some with symbols or expressions in the exponent."""
    e = lambda: float(rng.uniform(-2, 2))  # noqa: E731
    sym = [A, B, 0.5 * A + B, A * B - 0.3][rng.integers(4)]
    return [
        (1, cirq.X ** e()), (1, cirq.Y ** sym), (1, cirq.Z ** e()), (1, cirq.H),
        (1, cirq.H ** e()), (1, cirq.S), (1, cirq.T),
        (1, cirq.XPowGate(exponent=e(), global_shift=e())),
        (1, cirq.YPowGate(exponent=sym, global_shift=0.25)),
        (1, cirq.ZPowGate(exponent=e(), global_shift=-0.5)),
        (1, cirq.rx(e())), (1, cirq.ry(sym)), (1, cirq.rz(e())),
        (1, cirq.PhasedXPowGate(phase_exponent=e(), exponent=sym)),
        (1, cirq.PhasedXZGate(x_exponent=e(), z_exponent=e(), axis_phase_exponent=e())),
        (1, cirq.MatrixGate(cirq.testing.random_unitary(2, random_state=int(rng.integers(1e6))))),
        (2, cirq.CZ ** e()), (2, cirq.CZPowGate(exponent=sym, global_shift=0.3)),
        (2, cirq.CNOT), (2, cirq.CNOT ** e()), (2, cirq.SWAP), (2, cirq.SWAP ** e()),
        (2, cirq.ISWAP ** e()), (2, cirq.FSimGate(theta=e(), phi=e())),
        (2, cirq.PhasedISwapPowGate(phase_exponent=e(), exponent=e())),
        (2, cirq.XX ** e()), (2, cirq.YY ** sym), (2, cirq.ZZ ** e()),
        (2, cirq.ZZPowGate(exponent=e(), global_shift=0.1)),
        (2, cirq.ControlledGate(cirq.rx(e()))),
        (3, cirq.CCZ), (3, cirq.CCX ** e()), (3, cirq.CSWAP),
    ]


def random_circuit(rng, qubits, depth):
    c = cirq.Circuit()
    for _ in range(depth):
        menu = gate_menu(rng)
        k, gate = menu[rng.integers(len(menu))]
        if k > len(qubits):
            continue
        picked = [qubits[i] for i in rng.permutation(len(qubits))[:k]]
        c.append(gate.on(*picked))
    c.append(cirq.GlobalPhaseGate(np.exp(0.3j)).on())
    return c


SWEEP = cirq.Zip(cirq.Linspace("a", -1.0, 1.5, 3), cirq.Points("b", [0.2, -0.7, 2.0]))


@pytest.mark.parametrize("seed", range(3))
def test_final_states_and_expectation_values_match_cirq(seed):
    rng = np.random.default_rng(seed)
    qubits = cirq.LineQubit.range(4) if seed % 2 else cirq.GridQubit.rect(2, 2)
    circuit = random_circuit(rng, qubits, 60)
    ours, ref = Simulator(), cirq.Simulator(dtype=np.complex128)
    for got, want in zip(ours.simulate_sweep(circuit, SWEEP), ref.simulate_sweep(circuit, SWEEP)):
        assert got.final_state_vector.dtype == np.complex128
        assert np.abs(got.final_state_vector - want.final_state_vector).max() < 1e-10
        assert got.params == want.params
    observables = [cirq.Z(qubits[0]) * cirq.Z(qubits[1]),
                   0.5 * cirq.X(qubits[2]) - 0.3 * cirq.Y(qubits[3]) * cirq.X(qubits[0]) + 0.1,
                   cirq.PauliSum.from_pauli_strings([cirq.Y(qubits[1])])]
    got = ours.simulate_expectation_values_sweep(circuit, observables, SWEEP)
    want = ref.simulate_expectation_values_sweep(circuit, observables, SWEEP)
    assert np.abs(np.array(got) - np.real(np.array(want))).max() < 1e-10
    # A qubit order of the caller's, and single precision.
    order = list(reversed(qubits))
    got = Simulator(precision="c64").simulate(circuit, {"a": 0.4, "b": -1.1}, qubit_order=order)
    want = ref.simulate(circuit, {"a": 0.4, "b": -1.1}, qubit_order=order)
    assert got.final_state_vector.dtype == np.complex64
    assert np.abs(got.final_state_vector - want.final_state_vector).max() < 1e-5


def test_initial_states_and_observables_on_idle_qubits():
    q = cirq.LineQubit.range(3)
    circuit = cirq.Circuit(cirq.H(q[0]), cirq.CNOT(q[0], q[1]))
    ref = cirq.Simulator(dtype=np.complex128)
    for initial in (0, 5, cirq.testing.random_superposition(8, random_state=3)):
        got = Simulator().simulate(circuit, initial_state=initial, qubit_order=q)
        want = ref.simulate(circuit, initial_state=initial, qubit_order=q)
        assert np.abs(got.final_state_vector - want.final_state_vector).max() < 1e-10
    # An observable on a qubit the circuit never touches counts that qubit in,
    # in |0> (cirq.Simulator refuses such an observable: its qubit map is incomplete).
    idle = cirq.LineQubit(7)
    got = Simulator().simulate_expectation_values(
        circuit, [cirq.Z(idle), cirq.Z(q[0]) * cirq.Z(q[1]) * cirq.Z(idle), cirq.X(idle)])
    assert np.allclose(got, [1.0, 1.0, 0.0], atol=1e-12)


def test_samples_follow_the_distribution_and_repeat_with_a_seed():
    from scipy.stats import chi2_contingency

    rng = np.random.default_rng(5)
    q = cirq.LineQubit.range(4)
    circuit = random_circuit(rng, q, 40)
    circuit.append([cirq.measure(q[2], q[0], key="m", invert_mask=(True, False)),
                    cirq.measure(q[3], key="last")])
    params = {"a": 0.3, "b": -0.4}
    ours = Simulator(seed=11).run(circuit, params, repetitions=20000)
    again = Simulator(seed=11).run(circuit, params, repetitions=20000)
    ref = cirq.Simulator(seed=12).run(circuit, params, repetitions=20000)
    assert ours.records["m"].shape == (20000, 1, 2) and ours.records["last"].shape == (20000, 1, 1)
    assert ours.params == ref.params
    for key in ("m", "last"):
        assert np.array_equal(ours.records[key], again.records[key])
    counts = [r.multi_measurement_histogram(keys=["m", "last"]) for r in (ours, ref)]
    keys = sorted(set(counts[0]) | set(counts[1]))
    table = np.array([[c.get(k, 0) for k in keys] for c in counts])
    table = table[:, table.sum(axis=0) >= 10]
    assert chi2_contingency(table)[1] > 1e-3
    # run_sweep gives one result per point.
    assert len(Simulator(seed=1).run_sweep(circuit, SWEEP, repetitions=5)) == 3
    # simulate() samples terminal measurements once and collapses the state.
    result = Simulator(seed=2).simulate(circuit, params)
    bits = result.measurements["m"]
    state = result.final_state_vector.reshape((2,) * 4)
    assert np.isclose(np.linalg.norm(state), 1)
    other = np.take(state, 1 - (bits[0] ^ 1), axis=2)  # q2 measured with inverted bit
    assert np.allclose(other, 0)


def test_a_mutated_circuit_is_translated_again():
    q = cirq.LineQubit.range(2)
    sim = Simulator()
    circuit = cirq.Circuit(cirq.H(q[0]), cirq.CNOT(q[0], q[1]))
    first = sim.simulate(circuit).final_state_vector
    assert np.allclose(sim.simulate(circuit).final_state_vector, first)  # translation reused
    circuit.append(cirq.X(q[1]))
    circuit[0] = cirq.Moment([cirq.H(q[0]), cirq.Y(q[1])])
    want = cirq.Simulator(dtype=np.complex128).simulate(circuit).final_state_vector
    assert np.abs(sim.simulate(circuit).final_state_vector - want).max() < 1e-12


def test_bad_input_is_a_value_error():
    q = cirq.LineQubit.range(2)
    with pytest.raises(ValueError, match="unresolved parameters"):
        Simulator().simulate(cirq.Circuit(cirq.rx(A).on(q[0])))
    with pytest.raises(ValueError, match="used twice in a dynamic circuit"):
        Simulator().run(cirq.Circuit(cirq.measure(q[0], key="x"), cirq.H(q[0]),
                                     cirq.measure(q[0], key="x")))
    with pytest.raises(ValueError, match="which no earlier measurement writes"):
        Simulator().run(cirq.Circuit(cirq.X(q[0]).with_classical_controls("z"),
                                     cirq.measure(q[0], key="z")))
    with pytest.raises(ValueError, match="terminal measurements"):
        Simulator().simulate_expectation_values(
            cirq.Circuit(cirq.H(q[0]), cirq.measure(q[0], key="x")), cirq.Z(q[0]))
    with pytest.raises(ValueError, match="complex coefficient"):
        Simulator().simulate_expectation_values(cirq.Circuit(cirq.H(q[0])), 1j * cirq.Z(q[0]))
    with pytest.raises(ValueError, match="precision"):
        Simulator(precision="c32")
    with pytest.raises(ValueError, match="threads"):
        Simulator(threads=0)
    with pytest.raises(ValueError, match=r"Rx\(rads=nan\).*angle is not a finite number"):
        Simulator().simulate(cirq.Circuit(cirq.rx(float("nan")).on(q[0])))


def noisy_circuit(rng, qubits, depth):
    """random_circuit with one of Cirq's channels after every few operations."""
    channels = [lambda: cirq.depolarize(rng.uniform(0, 0.3)),
                lambda: cirq.amplitude_damp(rng.uniform(0, 1)),
                lambda: cirq.phase_damp(rng.uniform(0, 1)),
                lambda: cirq.generalized_amplitude_damp(rng.uniform(0, 1), rng.uniform(0, 1)),
                lambda: cirq.asymmetric_depolarize(0.1, 0.05, rng.uniform(0, 0.2)),
                lambda: cirq.bit_flip(rng.uniform(0, 1)), lambda: cirq.ResetChannel()]
    c = cirq.Circuit()
    for op in random_circuit(rng, qubits, depth).all_operations():
        if isinstance(op.gate, cirq.GlobalPhaseGate):
            continue  # cirq.DensityMatrixSimulator fails on it (its buffers' ValueError)
        c.append(op)
        if rng.uniform() < 0.4:
            channel = channels[rng.integers(len(channels))]()
            c.append(channel.on(qubits[rng.integers(len(qubits))]))
    return c


@pytest.mark.parametrize("seed", range(5))
def test_noisy_circuits_match_the_density_matrix_simulator(seed):
    rng = np.random.default_rng(seed)
    q = cirq.LineQubit.range(1 + seed % 4)
    c = noisy_circuit(rng, q, 14).with_noise(cirq.depolarize(0.02))
    obs = [cirq.Z(q[0]), cirq.X(q[-1]) * cirq.Z(q[0]) + 0.5 * cirq.Y(q[-1])] if len(q) > 1 \
        else [cirq.Z(q[0]), cirq.X(q[0]) - 0.5 * cirq.Y(q[0])]
    r = cirq.ParamResolver({"a": 0.3, "b": -0.7})
    dm = cirq.DensityMatrixSimulator(dtype=np.complex128)
    want = dm.simulate_expectation_values(c, obs, param_resolver=r)
    got = Simulator().simulate_expectation_values(c, obs, param_resolver=r)
    assert np.allclose(got, np.real(want), atol=1e-10)
    m = c + cirq.Circuit(cirq.measure(*q, key="m"))
    probs = np.real(np.diag(dm.simulate(c, param_resolver=r, qubit_order=q).final_density_matrix))
    counts = Simulator(seed=seed).run(m, param_resolver=r, repetitions=20000).histogram(key="m")
    for outcome, p in enumerate(probs):
        assert abs(counts.get(outcome, 0) / 20000 - p) < 0.03


def test_simulate_with_noise_follows_one_trajectory_as_cirq_simulator_does():
    """Simulator(noise=...).simulate, as cirq.Simulator: each call one
    trajectory (a normalised state vector, each Kraus operator drawn with its
    probability); the mean of |psi><psi| over calls approaches
    cirq.DensityMatrixSimulator's matrix; seeded."""
    rng = np.random.default_rng(11)
    q = cirq.LineQubit.range(3)
    c = noisy_circuit(rng, q, 12)
    c = cirq.Circuit(op for op in c.all_operations() if not cirq.is_parameterized(op))
    noise = cirq.ConstantQubitNoiseModel(cirq.amplitude_damp(0.1))
    want = cirq.DensityMatrixSimulator(noise=noise, dtype=np.complex128).simulate(
        c, qubit_order=q).final_density_matrix
    sim = Simulator(noise=noise, seed=5)
    runs = 1500
    mean = np.zeros((8, 8), dtype=complex)
    states = []
    for _ in range(runs):
        psi = sim.simulate(c, qubit_order=q).final_state_vector
        assert abs(np.linalg.norm(psi) - 1) < 1e-5
        states.append(psi)
        mean += np.outer(psi, psi.conj()) / runs
    assert np.abs(mean - want).max() < 0.06  # about 4 standard errors
    assert len({tuple(np.round(s, 6)) for s in states}) > 1  # branches differ
    again = Simulator(noise=noise, seed=5).simulate(c, qubit_order=q).final_state_vector
    assert np.allclose(again, states[0])  # the same seed, the same trajectory


def _feed_forward_circuit():
    """Teleportation with measurement and classical feed-forward (sympy and key
    conditions), a reset, and measurements of every register."""
    q = cirq.LineQubit.range(3)
    a = sympy.Symbol("a")
    return cirq.Circuit(
        cirq.ry(a)(q[0]), cirq.H(q[1]), cirq.CNOT(q[1], q[2]), cirq.CNOT(q[0], q[1]),
        cirq.H(q[0]), cirq.measure(q[0], q[1], key="m"),
        cirq.X(q[2]).with_classical_controls(cirq.SympyCondition(sympy.Symbol("m") % 2 > 0)),
        cirq.Z(q[2]).with_classical_controls(cirq.SympyCondition(sympy.Symbol("m") >= 2)),
        cirq.ResetChannel()(q[1]), cirq.ry(-a)(q[2]), cirq.H(q[1]).with_classical_controls("m"),
        cirq.measure(q[2], key="out"), cirq.measure(q[1], key="r", invert_mask=(True,)))


def test_dynamic_circuits_run_as_cirq_runs_them():
    stats = pytest.importorskip("scipy.stats")
    circuit, resolver = _feed_forward_circuit(), cirq.ParamResolver({"a": 0.7})
    reps = 20000
    ours = Simulator(seed=1).run(circuit, resolver, repetitions=reps)
    ref = cirq.Simulator(seed=1).run(circuit, resolver, repetitions=reps)
    assert set(ours.histogram(key="out")) == {0}  # the teleported rotation undone
    for key in ("m", "r"):
        a, b = ours.histogram(key=key), ref.histogram(key=key)
        keys = sorted(set(a) | set(b))
        table = np.array([[a.get(k, 0) for k in keys], [b.get(k, 0) for k in keys]])
        assert stats.chi2_contingency(table).pvalue > 1e-4, (key, a, b)
    # simulate: one trajectory, its record and final state
    result = Simulator(seed=2).simulate(circuit, resolver)
    assert set(result.measurements) == {"m", "out", "r"}
    assert np.isclose(np.linalg.norm(result.final_state_vector), 1)


def test_textbook_teleportation_moves_the_message():
    # As Cirq's teleportation example writes it: measurements, then the
    # measured qubits as controls.
    msg, alice, bob = cirq.LineQubit.range(3)
    circuit = cirq.Circuit(
        cirq.H(alice), cirq.CNOT(alice, bob), cirq.X(msg) ** 0.3, cirq.Y(msg) ** 0.6,
        cirq.CNOT(msg, alice), cirq.H(msg), cirq.measure(msg, alice),
        cirq.CNOT(alice, bob), cirq.CZ(msg, bob))
    message = cirq.Circuit(cirq.X(msg) ** 0.3, cirq.Y(msg) ** 0.6)
    expected = cirq.bloch_vector_from_state_vector(
        cirq.Simulator().simulate(message).final_state_vector, 0)
    for seed in range(4):
        final = Simulator(seed=seed).simulate(circuit).final_state_vector
        got = cirq.bloch_vector_from_state_vector(final.astype(np.complex128), 2)
        assert np.allclose(got, expected, atol=1e-6)


def test_moment_steps_match_cirq():
    # Cirq's simulation guide steps through a circuit moment by moment.
    rng = np.random.default_rng(11)
    qubits = cirq.LineQubit.range(4)
    circuit = cirq.resolve_parameters(random_circuit(rng, qubits, 30), {"a": 0.4, "b": -1.1})
    ours = [s.state_vector(copy=True) for s in Simulator().simulate_moment_steps(
        circuit, initial_state=5)]
    ref = [s.state_vector(copy=True) for s in cirq.Simulator(dtype=np.complex128)
           .simulate_moment_steps(circuit, initial_state=5)]
    single = list(Simulator(dtype=np.complex64).simulate_moment_steps(circuit, initial_state=5))
    assert single[-1].state_vector().dtype == np.complex64
    assert len(ours) == len(ref) == len(circuit)
    for a, b in zip(ours, ref):
        assert np.allclose(a, b, atol=1e-10)
    # symbols resolved per call; an empty circuit is one step, the initial state
    steps = list(Simulator().simulate_moment_steps(cirq.Circuit(cirq.rx(A).on(qubits[0])),
                                                   {"a": 0.5}))
    want = cirq.final_state_vector(cirq.Circuit(cirq.rx(0.5).on(qubits[0])))
    assert np.allclose(steps[0].state_vector(), want, atol=1e-7)
    (empty,) = Simulator().simulate_moment_steps(cirq.Circuit(), qubit_order=qubits[:2],
                                                 initial_state=2)
    assert np.allclose(empty.state_vector(), [0, 0, 1, 0])
    with pytest.raises(ValueError, match="symbols without values: a"):
        list(Simulator().simulate_moment_steps(cirq.Circuit(cirq.rx(A).on(qubits[0]))))


def test_moment_steps_measure_collapse_and_feed_forward():
    q = cirq.LineQubit.range(3)
    circuit = cirq.Circuit(cirq.H(q[0]), cirq.CNOT(q[0], q[1]), cirq.measure(q[0], key="m"),
                           cirq.X(q[2]).with_classical_controls("m"))
    seen = set()
    for seed in range(12):
        steps = list(Simulator(seed=seed).simulate_moment_steps(circuit))
        assert steps[1].measurements == {}
        m = steps[2].measurements["m"][0]
        seen.add(m)
        assert steps[3].measurements == {"m": [m]}
        # after the measurement both measured and entangled qubits read m; q2 follows it
        assert steps[3].sample(q, repetitions=5).tolist() == [[m, m, m]] * 5
        assert np.isclose(abs(steps[3].state_vector()[m * 0b111]), 1)
    assert seen == {0, 1}


@pytest.mark.parametrize("seed", range(3))
def test_density_matrix_simulator_matches_cirq(seed):
    from qmlsim.cirq import DensityMatrixSimulator
    rng = np.random.default_rng(40 + seed)
    qubits = cirq.LineQubit.range(3)
    circuit = cirq.resolve_parameters(random_circuit(rng, qubits, 20), {"a": 0.3, "b": 1.2})
    circuit.append(cirq.amplitude_damp(0.15).on(qubits[1]))
    observables = [cirq.Z(qubits[0]) * cirq.Y(qubits[2]), 0.5 * cirq.X(qubits[1]) + cirq.Z(qubits[2])]
    for noise in (None, cirq.depolarize(0.03),
                  cirq.ConstantQubitNoiseModel(cirq.generalized_amplitude_damp(0.2, 0.1))):
        ours = DensityMatrixSimulator(noise=noise, dtype=np.complex128)
        ref = cirq.DensityMatrixSimulator(noise=noise, dtype=np.complex128,
                                          split_untangled_states=False)
        assert np.allclose(ours.simulate(circuit).final_density_matrix,
                           ref.simulate(circuit).final_density_matrix, atol=1e-10)
        assert np.allclose(ours.simulate_expectation_values(circuit, observables),
                           ref.simulate_expectation_values(circuit, observables), atol=1e-10)
        # the same noise model on the state-vector door: the exact mixture too
        assert np.allclose(Simulator(noise=noise).simulate_expectation_values(circuit, observables),
                           ref.simulate_expectation_values(circuit, observables), atol=1e-10)
    # terminal measurements: sampled once, the density matrix collapsed onto the outcome
    # (without a noise model: Cirq's would put noise after them)
    measured = circuit + cirq.Circuit(cirq.measure(qubits[0], qubits[2], key="m"))
    result = DensityMatrixSimulator(seed=seed).simulate(measured)
    m = result.measurements["m"]
    rho = result.final_density_matrix
    assert np.isclose(np.trace(rho).real, 1, atol=1e-6)
    for i in range(8):
        if ((i >> 2) & 1, i & 1) != tuple(m):
            assert np.allclose(rho[i], 0, atol=1e-7)
    with pytest.raises(ValueError, match="density matrix"):
        DensityMatrixSimulator().simulate(circuit, initial_state=np.eye(8) / 8)


def test_density_matrix_simulator_simulates_mid_circuit_measurements_as_cirq():
    """simulate() through mid-circuit measurements, a classical control and
    noise after them: each record's final density matrix is Cirq's for the
    same record (1e-10), and records come as often as Cirq draws them."""
    stats = pytest.importorskip("scipy.stats")
    from qmlsim.cirq import DensityMatrixSimulator
    q = cirq.LineQubit.range(3)
    circuit = cirq.Circuit(
        cirq.H(q[0]), cirq.CNOT(q[0], q[1]), cirq.amplitude_damp(0.3).on(q[1]),
        cirq.measure(q[0], key="a"), cirq.H(q[0]), cirq.rx(0.7).on(q[2]),
        cirq.measure(q[1], key="b"), cirq.X(q[2]).with_classical_controls("b"),
        cirq.ry(0.4).on(q[1]), cirq.measure(q[2], key="c"))
    noise = cirq.depolarize(0.05)
    ours = DensityMatrixSimulator(seed=5, noise=noise, dtype=np.complex128)
    ref = cirq.DensityMatrixSimulator(seed=5, noise=noise, dtype=np.complex128,
                                      split_untangled_states=False)

    def record(result):
        return tuple(int(result.measurements[k][0]) for k in "abc")

    want, seen_ref, seen_ours = {}, collections.Counter(), collections.Counter()
    for _ in range(300):
        r = ref.simulate(circuit)
        want.setdefault(record(r), r.final_density_matrix)
        seen_ref[record(r)] += 1
    for _ in range(300):
        r = ours.simulate(circuit)
        rho = r.final_density_matrix
        assert np.isclose(np.trace(rho).real, 1, atol=1e-10)
        if record(r) in want:
            assert np.allclose(rho, want[record(r)], atol=1e-10), record(r)
        seen_ours[record(r)] += 1
    assert len(set(seen_ours) & set(want)) >= 3
    keys = sorted(set(seen_ours) | set(seen_ref))
    table = np.array([[seen_ours[k] for k in keys], [seen_ref[k] for k in keys]])
    assert stats.chi2_contingency(table).pvalue > 1e-4, (seen_ours, seen_ref)


def test_density_matrix_simulator_samples_as_cirq():
    stats = pytest.importorskip("scipy.stats")
    from qmlsim.cirq import DensityMatrixSimulator
    q = cirq.LineQubit.range(2)
    circuit = cirq.Circuit(cirq.H(q[0]), cirq.CNOT(*q), cirq.rx(0.4).on(q[1]),
                           cirq.measure(*q, key="m"))
    noise = cirq.ConstantQubitNoiseModel(cirq.bit_flip(0.1))
    ours = DensityMatrixSimulator(seed=3, noise=noise).run(circuit, repetitions=20000)
    ref = cirq.DensityMatrixSimulator(seed=3, noise=noise).run(circuit, repetitions=20000)
    a, b = ours.histogram(key="m"), ref.histogram(key="m")
    keys = sorted(set(a) | set(b))
    table = np.array([[a.get(k, 0) for k in keys], [b.get(k, 0) for k in keys]])
    assert stats.chi2_contingency(table).pvalue > 1e-4, (a, b)


def test_measurement_confusion_maps_as_cirq_applies_them():
    """cirq.measure(..., confusion_map=...): the recorded bits are the true
    outcome's confused by the map's rows (the state is not), then inverted, as
    MeasurementGate documents it; run's histograms against that exact
    distribution, and against cirq.Simulator's without an invert mask
    (cirq.Simulator's terminal-measurement sampling inverts before it
    confuses, unlike its own docs and its SimulationState.measure)."""
    stats = pytest.importorskip("scipy.stats")
    q = cirq.LineQubit.range(3)
    one = np.array([[0.9, 0.1], [0.25, 0.75]])
    two = np.array([[0.7, 0.1, 0.1, 0.1], [0.05, 0.85, 0.05, 0.05],
                    [0.0, 0.1, 0.9, 0.0], [0.2, 0.2, 0.2, 0.4]])
    c = cirq.Circuit(cirq.ry(0.9).on(q[0]), cirq.H(q[1]), cirq.CNOT(q[1], q[2]),
                     cirq.measure(*q, key="m", invert_mask=(False, True, False),
                                  confusion_map={(0,): one, (2, 1): two}))
    reps = 20000
    ours = Simulator(seed=3).run(c, repetitions=reps).histogram(key="m")
    # the exact distribution of the recorded value (q0 most significant)
    p0 = np.sin(0.45) ** 2
    want = np.zeros(8)
    for b0 in (0, 1):
        for b12 in (0, 3):  # q1 = q2 from the Bell pair; (2, 1) reads q2 then q1
            p_true = (p0 if b0 else 1 - p0) * 0.5
            for c0 in (0, 1):
                for v in range(4):  # the confused value of (q2, q1)
                    q2, q1 = v >> 1, v & 1
                    record = (c0 << 2) | ((q1 ^ 1) << 1) | q2
                    want[record] += p_true * one[b0, c0] * two[b12, v]
    for outcome, p in enumerate(want):
        assert abs(ours.get(outcome, 0) / reps - p) < 0.015, (outcome, ours, want)
    plain = c[:-1] + cirq.Circuit(
        cirq.measure(*q, key="m", confusion_map={(0,): one, (2, 1): two}))
    ours = Simulator(seed=4).run(plain, repetitions=reps).histogram(key="m")
    theirs = cirq.Simulator(seed=4).run(plain, repetitions=reps).histogram(key="m")
    keys = sorted(set(ours) | set(theirs))
    table = np.array([[ours.get(k, 0) for k in keys], [theirs.get(k, 0) for k in keys]])
    assert stats.chi2_contingency(table).pvalue > 1e-4
    dynamic = cirq.Circuit(cirq.measure(q[0], key="a", confusion_map={(0,): one}),
                           cirq.X(q[1]).with_classical_controls("a"))
    with pytest.raises(ValueError, match="confusion_map in a dynamic circuit"):
        Simulator().run(dynamic)


def test_noisy_runs_beyond_the_density_matrix_follow_trajectories(monkeypatch):
    """method="trajectories" (and "auto" where the density matrix does not
    fit): run samples each shot along its own trajectory, expectation values
    are trajectory means; against the exact distribution."""
    rng = np.random.default_rng(21)
    q = cirq.LineQubit.range(3)
    c = noisy_circuit(rng, q, 10)
    c = cirq.Circuit(op for op in c.all_operations() if not cirq.is_parameterized(op))
    exact = np.real(np.diag(cirq.DensityMatrixSimulator(dtype=np.complex128).simulate(
        c, qubit_order=q).final_density_matrix))
    reps = 20000
    got = Simulator(method="trajectories", seed=4).run(
        c + cirq.measure(*q, key="m"), repetitions=reps).histogram(key="m")
    for outcome, p in enumerate(exact):
        assert abs(got.get(outcome, 0) / reps - p) < 0.015, (outcome, got, exact)
    obs = cirq.Z(q[0]) * cirq.Z(q[1]) + 0.5 * cirq.X(q[2])
    want = np.real(cirq.DensityMatrixSimulator(dtype=np.complex128).simulate_expectation_values(
        c, obs)[0])
    mean = Simulator(method="trajectories", trajectories=4000, seed=2).simulate_expectation_values(
        c, obs)[0]
    assert abs(mean - want) < 0.06
    with pytest.raises(ValueError, match="method must be one of"):
        Simulator(method="mps")
    # "auto" where the density matrix would not fit (as for 16 qubits on 24 GiB)
    monkeypatch.setattr(qmlsim.cirq._qmlsim, "method", lambda program, options: "trajectories")
    auto = Simulator(seed=6).run(c + cirq.measure(*q, key="m"), repetitions=reps)
    for outcome, p in enumerate(exact):
        assert abs(auto.histogram(key="m").get(outcome, 0) / reps - p) < 0.015


def test_making_a_simulator_draws_nothing_from_numpys_global_generator():
    """cirq.Simulator() and cirq.DensityMatrixSimulator() leave NumPy's
    global generator alone, so unseeded upstream code sees the same random
    data after the swap; a noisy expectation value by trajectories is still
    seeded by the simulator's own seed."""
    from qmlsim.cirq import DensityMatrixSimulator, Simulator
    for make in (Simulator, DensityMatrixSimulator, cirq.Simulator):
        np.random.seed(3)
        make()
        after = np.random.rand()
        np.random.seed(3)
        assert np.random.rand() == after, make
    q = cirq.LineQubit.range(2)
    c = cirq.Circuit(cirq.H(q[0]), cirq.CNOT(*q), cirq.depolarize(0.2).on_each(*q))
    values = [Simulator(seed=5, method="trajectories", trajectories=50)
              .simulate_expectation_values(c, [cirq.Z(q[0]) * cirq.Z(q[1])])[0]
              for _ in range(2)]
    assert values[0] == values[1]


def test_symbolic_angles_resolve_as_cirq_resolves_them():
    """Sweeps over formulas of symbols (compiled once, _cirq_ops._compiled_value)
    and resolvers Cirq resolves its own way (a symbol whose value is another
    symbol, a missing one refused): expectation values as cirq.Simulator's."""
    import sympy
    from qmlsim.cirq import Simulator
    a, b = sympy.Symbol("a"), sympy.Symbol("b")
    q = cirq.LineQubit.range(2)
    c = cirq.Circuit(cirq.ry(2 * a + b / 3).on(q[0]), cirq.rx(a * b - 0.5).on(q[1]),
                     cirq.CZ(*q), cirq.rz(sympy.cos(a) ** 2).on(q[0]), cirq.H(q[0]))
    obs = [cirq.Z(q[0]), cirq.X(q[1]) * cirq.Z(q[0])]
    sweep = [cirq.ParamResolver({"a": x, "b": y}) for x, y in [(0.1, 2.0), (-1.3, 0.7)]]
    sweep.append(cirq.ParamResolver({a: 0.4, b: "a"}))  # b's value is a symbol: Cirq's way
    sweep.append(cirq.ParamResolver({"a": np.float32(0.25), "b": 3}))
    got = Simulator().simulate_expectation_values_sweep(c, obs, sweep)
    want = cirq.Simulator().simulate_expectation_values_sweep(c, obs, sweep)
    assert np.allclose(np.real(got), np.real(want), atol=1e-6)
    with pytest.raises(ValueError, match="unresolved"):
        Simulator().simulate_expectation_values(c, obs, cirq.ParamResolver({"a": 0.1}))
