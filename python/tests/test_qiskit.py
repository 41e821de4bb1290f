"""qmlsim.qiskit against Qiskit's reference primitives: StatevectorEstimator
(values to 1e-10, broadcasting, precision noise from the same seed),
StatevectorSampler (the same bits for the same seed: both draw from the same
probabilities with the same generator), parameter-shift gradients, and
EstimatorQNN's forward and backward passes; bad input as ValueError."""
import numpy as np
import pytest

pytest.importorskip("qiskit")
from qiskit import QuantumCircuit  # noqa: E402
from qiskit.circuit import Parameter, ParameterVector  # noqa: E402
from qiskit.circuit.library import (get_standard_gate_name_mapping, real_amplitudes,  # noqa: E402
                                    zz_feature_map)
from qiskit.primitives import StatevectorEstimator, StatevectorSampler  # noqa: E402
from qiskit.quantum_info import SparsePauliOp  # noqa: E402

from qmlsim.qiskit import Estimator, EstimatorGradient, Sampler  # noqa: E402

GATES = {name: gate for name, gate in get_standard_gate_name_mapping().items()
         if name not in ("delay", "measure", "reset")}


def random_circuit(rng, n, depth, params):
    """Every standard gate; angles that are numbers or expressions of `params`."""
    qc = QuantumCircuit(n)
    names = sorted(GATES)
    for k in range(depth):
        proto = GATES[names[k % len(names)] if k < len(names) else names[rng.integers(len(names))]]
        if proto.num_qubits > n:
            continue
        values = []
        for _ in proto.params:
            a, b = params[rng.integers(len(params))], params[rng.integers(len(params))]
            v = float(rng.uniform(-np.pi, np.pi))
            values.append([v, a, 0.3 * a + b, a * b - v, a.sin() + 2 * b][rng.integers(5)])
        gate = type(proto)(*values) if proto.params else proto
        qc.append(gate, [int(q) for q in rng.permutation(n)[:gate.num_qubits]])
    return qc


def random_observable(rng, n, terms=3):
    labels = ["".join(rng.choice(list("IXYZ"), n)) for _ in range(terms)]
    return SparsePauliOp(labels, rng.uniform(-1, 1, terms))


@pytest.mark.parametrize("seed", range(4))
def test_estimator_agrees_with_statevector_estimator(seed):
    rng = np.random.default_rng(seed)
    theta = ParameterVector("θ", 3)
    qc = random_circuit(rng, 4, 80, list(theta) + [Parameter("phi")])
    values = rng.uniform(-2, 2, (2, 3, qc.num_parameters))  # broadcast against (2, 1)
    obs = [[random_observable(rng, 4)], [random_observable(rng, 4)]]
    pubs = [(qc, obs, values), (qc, random_observable(rng, 4), values[0, 0])]
    want = StatevectorEstimator().run(pubs).result()
    got = Estimator().run(pubs).result()
    assert got.metadata == want.metadata
    for w, g in zip(want, got):
        assert g.data.evs.shape == w.data.evs.shape
        assert np.abs(g.data.evs - w.data.evs).max() < 1e-10
        assert g.data.stds.shape == w.data.stds.shape
        assert g.metadata == w.metadata
    # precision > 0: the same seeded noise as the reference.
    want = StatevectorEstimator(seed=5).run(pubs, precision=0.1).result()
    got = Estimator(seed=5).run(pubs, precision=0.1).result()
    for w, g in zip(want, got):
        assert np.abs(g.data.evs - w.data.evs).max() < 1e-10
        assert g.metadata["target_precision"] == 0.1
    # Single precision: the same values to float32 accuracy.
    got = Estimator(precision="c64").run(pubs).result()
    assert np.abs(got[0].data.evs - StatevectorEstimator().run(pubs).result()[0].data.evs).max() < 1e-4


def test_sampler_gives_the_reference_bits_for_the_same_seed():
    rng = np.random.default_rng(7)
    a, b = Parameter("a"), Parameter("b")
    qc = random_circuit(rng, 4, 40, [a, b])
    full = QuantumCircuit(4, 3)
    full.compose(qc, inplace=True)
    full.measure([3, 0, 2], [0, 1, 2])  # a permuted, partial measurement
    second = full.copy()
    second.measure_all()  # a second register over all qubits
    values = rng.uniform(-1, 1, (2, 2))
    for circuit in (full, second):
        want = StatevectorSampler(seed=11).run([(circuit, values)], shots=500).result()[0]
        got = Sampler(seed=11).run([(circuit, values)], shots=500).result()[0]
        assert got.metadata == want.metadata
        for name in [c.name for c in circuit.cregs]:
            w, g = getattr(want.data, name), getattr(got.data, name)
            assert g.shape == w.shape and g.num_bits == w.num_bits and g.num_shots == 500
            assert np.array_equal(g.array, w.array), name


def test_gradient_agrees_with_parameter_shift():
    from qiskit_machine_learning.gradients import ParamShiftEstimatorGradient
    rng = np.random.default_rng(3)
    theta = ParameterVector("t", 4)
    qc = QuantumCircuit(3)
    for k in range(3):  # gates parameter shift supports; expressions of the parameters
        qc.rx(theta[0] * (k + 1), k)
        qc.ry(0.5 * theta[1] + theta[2], k)
    qc.cx(0, 1)
    qc.rzz(theta[3], 1, 2)
    qc.rz(theta[0] * theta[2], 2)
    obs = [random_observable(rng, 3), random_observable(rng, 3)]
    values = [rng.uniform(-2, 2, 4), rng.uniform(-2, 2, 4)]
    subset = [None, [theta[2], theta[0]]]
    want = ParamShiftEstimatorGradient(StatevectorEstimator()).run(
        [qc, qc], obs, values, parameters=subset).result().gradients
    got = EstimatorGradient().run([qc, qc], obs, values, parameters=subset).result().gradients
    assert [len(g) for g in got] == [4, 2]
    for w, g in zip(want, got):
        assert np.abs(np.asarray(g) - np.asarray(w)).max() < 1e-10


def test_estimator_qnn_forward_and_backward():
    from qiskit_machine_learning.gradients import ParamShiftEstimatorGradient
    from qiskit_machine_learning.neural_networks import EstimatorQNN
    fm, ansatz = zz_feature_map(3), real_amplitudes(3, reps=2)
    qc = fm.compose(ansatz)
    obs = [SparsePauliOp("ZZI"), SparsePauliOp(["XII", "IIY"], [0.5, 0.5])]

    def qnn(estimator, gradient):
        return EstimatorQNN(circuit=qc, observables=obs, input_params=fm.parameters,
                            weight_params=ansatz.parameters, estimator=estimator,
                            gradient=gradient, default_precision=0, input_gradients=True)

    reference = StatevectorEstimator()
    ref = qnn(reference, ParamShiftEstimatorGradient(reference))
    estimator = Estimator()
    ours = qnn(estimator, EstimatorGradient(estimator))
    rng = np.random.default_rng(0)
    x, w = rng.uniform(-1, 1, (5, 3)), rng.uniform(-1, 1, ansatz.num_parameters)
    assert np.abs(ours.forward(x, w) - ref.forward(x, w)).max() < 1e-10
    (gi_ref, gw_ref), (gi, gw) = ref.backward(x, w), ours.backward(x, w)
    assert gw.shape == gw_ref.shape and gi.shape == gi_ref.shape
    assert np.abs(gw - gw_ref).max() < 1e-10
    assert np.abs(gi - gi_ref).max() < 1e-10


def test_sampler_qnn_with_parameter_shift_gradients():
    """SamplerQNN on qmlsim's Sampler with Qiskit Machine Learning's
    ParamShiftSamplerGradient over it (qmlsim has no adjoint SamplerGradient:
    docs/python.md): the same forward and backward values as on
    StatevectorSampler for the same seed, since both draw the same bits."""
    from qiskit_machine_learning.gradients import ParamShiftSamplerGradient
    from qiskit_machine_learning.neural_networks import SamplerQNN
    fm, ansatz = zz_feature_map(3), real_amplitudes(3, reps=1)
    qc = fm.compose(ansatz)
    qc.measure_all()
    rng = np.random.default_rng(3)
    x, w = rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, ansatz.num_parameters)
    out = []
    for sampler in (Sampler(seed=9), StatevectorSampler(seed=9)):
        qnn = SamplerQNN(circuit=qc, input_params=fm.parameters, weight_params=ansatz.parameters,
                         sampler=sampler, gradient=ParamShiftSamplerGradient(sampler),
                         interpret=lambda b: b % 2, output_shape=2)
        out.append((qnn.forward(x, w), qnn.backward(x, w)[1]))
    assert out[0][0].shape == (4, 2) and np.array_equal(out[0][0], out[1][0])
    assert out[0][1].shape == (4, 2, ansatz.num_parameters)
    assert np.array_equal(out[0][1], out[1][1])


def test_bad_input_is_a_value_error():
    a = Parameter("a")
    qc = QuantumCircuit(2)
    qc.rx(a, 0)
    qc.cx(0, 1)
    est = Estimator()
    with pytest.raises(ValueError, match="number of values"):
        est.run([(qc, "ZZ")]).result()  # unbound parameter
    with pytest.raises(ValueError):
        est.run([(qc, "ZZZ", [0.1])]).result()  # an observable on a qubit the circuit lacks
    with pytest.raises(ValueError, match="not broadcastable"):
        est.run([(qc, ["ZZ", "XX", "YY"], [[0.1], [0.2]])]).result()
    # Dynamic circuits run exactly (the mixture over outcomes): a reset after
    # gates, and an if on a measured bit (OpenQASM 3 as Qiskit exports it).
    reset = qc.copy()
    reset.reset(0)
    assert np.isclose(est.run([(reset, "ZZ", [0.1])]).result()[0].data.evs, np.cos(0.1))
    ctl = QuantumCircuit(2, 1)
    ctl.h(0)
    ctl.measure(0, 0)
    with ctl.if_test((ctl.clbits[0], 1)):
        ctl.x(1)
    assert np.isclose(est.run([(ctl, "ZZ")]).result()[0].data.evs, 1.0)  # q1 copies q0
    loop = QuantumCircuit(1, 1)  # a loop on a measured value: refused by name
    loop.h(0)
    loop.measure(0, 0)
    with loop.while_loop((loop.clbits[0], 1)):
        loop.h(0)
        loop.measure(0, 0)
    with pytest.raises(ValueError, match="'while' is not supported"):
        Sampler().run([loop]).result()
    with pytest.raises(ValueError, match="precision"):
        Estimator(precision="c32")
    with pytest.raises(ValueError, match="threads"):
        Estimator(threads=0)
    # delay is an identity, as in StatevectorEstimator.
    d = qc.copy()
    d.delay(100, 1)
    assert abs(est.run([(d, "ZZ", [0.3])]).result()[0].data.evs -
               StatevectorEstimator().run([(qc, "ZZ", [0.3])]).result()[0].data.evs) < 1e-12


def test_circuits_without_parameters():
    qc = QuantumCircuit(2)
    qc.h(0)
    qc.cx(0, 1)
    obs = ["ZZ", "XX", "ZI"]
    want = StatevectorEstimator().run([(qc, obs)]).result()[0].data.evs
    assert np.abs(Estimator().run([(qc, obs)]).result()[0].data.evs - want).max() < 1e-12
    m = qc.copy()
    m.measure_all()
    want = StatevectorSampler(seed=2).run([m], shots=50).result()[0].data.meas
    got = Sampler(seed=2).run([m], shots=50).result()[0].data.meas
    assert np.array_equal(got.array, want.array)


def test_state_preparation_as_the_first_instruction():
    from qiskit.circuit.library import StatePreparation
    rng = np.random.default_rng(5)
    amps = rng.normal(size=8) + 1j * rng.normal(size=8)
    amps /= np.linalg.norm(amps)
    t = Parameter("t")
    for first in ("initialize", "prepare"):
        qc = QuantumCircuit(3)
        if first == "initialize":
            qc.initialize(amps, [2, 0, 1])
        else:
            qc.append(StatePreparation(amps), [0, 1, 2])
        qc.rx(t, 1)
        qc.cx(1, 2)
        obs = random_observable(rng, 3)
        want = StatevectorEstimator().run([(qc, obs, [0.4])]).result()[0].data.evs
        assert abs(Estimator().run([(qc, obs, [0.4])]).result()[0].data.evs - want) < 1e-10
        eps = 1e-6
        plus, minus = (StatevectorEstimator().run([(qc, obs, [0.4 + d])]).result()[0].data.evs
                       for d in (eps, -eps))
        g = EstimatorGradient().run([qc], [obs], [[0.4]]).result().gradients[0]
        assert abs(g[0] - (plus - minus) / (2 * eps)) < 1e-7
    late = QuantumCircuit(2)
    late.h(0)
    late.initialize([0, 1, 0, 0])
    with pytest.raises(ValueError, match="initialize"):
        Estimator().run([(late, "ZZ")]).result()


def test_translation_is_cached_per_circuit():
    from qmlsim import qiskit as qq
    qc = zz_feature_map(2)
    t = qq._translate(qc)
    assert qq._translate(qc) is t
    qc.h(0)  # a changed circuit is translated again
    assert qq._translate(qc) is not t


def test_composite_gates_whose_parameters_are_reordered():
    """QAOAAnsatz: a composite gate whose parameter order differs from the
    circuit's (Qiskit's exporter scrambles such definitions; they are unrolled)."""
    from qiskit.circuit.library import QAOAAnsatz
    from qiskit_machine_learning.gradients import ParamShiftEstimatorGradient
    h = SparsePauliOp.from_sparse_list(
        [("ZZ", [0, 1], 0.5), ("ZZ", [1, 2], -1.0), ("ZZ", [2, 3], 0.7), ("Z", [3], 0.2)],
        num_qubits=4)
    ansatz = QAOAAnsatz(h, reps=2)
    x = np.random.default_rng(1).uniform(-1, 1, ansatz.num_parameters)
    want = StatevectorEstimator().run([(ansatz, h, x)]).result()[0].data.evs
    assert abs(Estimator().run([(ansatz, h, x)]).result()[0].data.evs - want) < 1e-10
    g_want = ParamShiftEstimatorGradient(StatevectorEstimator()).run(
        [ansatz], [h], [x]).result().gradients[0]
    g = EstimatorGradient().run([ansatz], [h], [x]).result().gradients[0]
    assert np.abs(g - g_want).max() < 1e-10


def test_backend_runs_transpiled_circuits_with_counts():
    from qiskit import ClassicalRegister, QuantumRegister, transpile
    from qiskit.providers.basic_provider import BasicSimulator
    from qiskit.quantum_info import Statevector
    from qmlsim.qiskit import Backend
    q, a, b = QuantumRegister(3, "q"), ClassicalRegister(2, "a"), ClassicalRegister(1, "b")
    qc = QuantumCircuit(q, a, b)
    qc.h(0)
    qc.rxx(0.7, 0, 2)
    qc.cry(1.1, 2, 1)
    qc.measure([0, 1], [1, 0])
    qc.measure(2, 2)
    backend = Backend()
    t = transpile(qc, backend, optimization_level=1, seed_transpiler=1)
    shots = 20000
    counts = backend.run(t, shots=shots, seed_simulator=3).result().get_counts()
    # The same keys as Qiskit's BasicSimulator gives ("b a", highest clbit first).
    ref = BasicSimulator().run(qc, shots=shots, seed_simulator=3).result().get_counts()
    assert set(counts) <= set(ref) | {k for k in counts if counts[k] < 50}
    assert sum(counts.values()) == shots
    # Frequencies agree with the exact distribution (within 5 standard deviations).
    probs = Statevector(qc.remove_final_measurements(inplace=False)).probabilities_dict()
    exact = {}
    for key, p in probs.items():  # key: qubit 2 qubit 1 qubit 0
        q2, q1, q0 = key
        label = f"{q2} {q0}{q1}"  # b = q2; a[1] = q0, a[0] = q1
        exact[label] = exact.get(label, 0) + p
    for label, p in exact.items():
        sigma = np.sqrt(shots * p * (1 - p)) + 1
        assert abs(counts.get(label, 0) - shots * p) < 5 * sigma, label
    # Seeded: the same counts again; memory on request.
    again = backend.run(t, shots=shots, seed_simulator=3, memory=True).result()
    assert again.get_counts() == counts
    assert len(again.get_memory()) == shots
    with pytest.raises(ValueError, match="unknown run options"):
        backend.run(t, noise_model=None)
    with pytest.raises(ValueError, match="unbound parameters"):
        unbound = QuantumCircuit(1, 1)
        unbound.rx(Parameter("x"), 0)
        unbound.measure(0, 0)
        backend.run(unbound)


def test_estimator_and_sampler_agree_with_aer():
    """Against qiskit_aer's V2 primitives: expectation values to 1e-10 (Aer's
    Estimator computes them exactly at precision 0) and counts from the same
    distribution (two-sample chi-square over the outcomes, fixed seeds). Aer
    gets its circuits with the parameters already assigned: qiskit-aer 0.18.2
    runs controlled rotations (crx, cry, crz, cp, cu1, cu3) bound through a
    PUB's parameter values at angle 0 (qiskit-aer issues 2323, 2391, 2403),
    where StatevectorEstimator and qmlsim agree."""
    aer = pytest.importorskip("qiskit_aer")
    from qiskit import transpile
    from qiskit_aer.primitives import EstimatorV2 as AerEstimator, SamplerV2 as AerSampler
    from scipy.stats import chi2_contingency

    rng = np.random.default_rng(21)
    theta = ParameterVector("θ", 3)
    for n in (3, 5):
        qc = random_circuit(rng, n, 90, list(theta))
        native = transpile(qc, aer.AerSimulator(), optimization_level=0)  # Aer's gate set
        values = rng.uniform(-2, 2, (4, qc.num_parameters))
        obs = random_observable(rng, n)
        want = [r.data.evs for r in AerEstimator().run(
            [(native.assign_parameters(v), obs) for v in values], precision=0).result()]
        got = Estimator().run([(qc, obs, values)]).result()[0].data.evs
        assert got.shape == (len(values),) and np.abs(np.array(want) - got).max() < 1e-10
        measured = qc.copy()
        measured.measure_all()
        shots = 20000
        aer_counts = AerSampler(seed=3).run([transpile(measured, aer.AerSimulator(),
                                                       optimization_level=0).assign_parameters(
            values[0])], shots=shots).result()[0].data.meas.get_counts()
        our_counts = Sampler(seed=4).run([(measured, values[0])],
                                         shots=shots).result()[0].data.meas.get_counts()
        keys = sorted(set(aer_counts) | set(our_counts))
        table = np.array([[aer_counts.get(k, 0) for k in keys], [our_counts.get(k, 0) for k in keys]])
        table = table[:, table.sum(axis=0) >= 10]  # chi-square needs expected counts >= 5
        assert chi2_contingency(table)[1] > 1e-3, (n, keys)


def _dynamic_circuits():
    """Teleportation, active reset, repeat-until-success and an if/else on a
    register: mid-circuit measure, reset, if_test on bits and registers."""
    from qiskit import ClassicalRegister, QuantumRegister
    a = Parameter("a")
    q, m, out = QuantumRegister(3, "q"), ClassicalRegister(2, "m"), ClassicalRegister(1, "out")
    tele = QuantumCircuit(q, m, out)
    tele.ry(a, 0)
    tele.h(1)
    tele.cx(1, 2)
    tele.cx(0, 1)
    tele.h(0)
    tele.measure(0, m[0])
    tele.measure(1, m[1])
    with tele.if_test((m[1], 1)):
        tele.x(2)
    with tele.if_test((m[0], 1)):
        tele.z(2)
    with tele.if_test((m, 3)) as other:
        tele.h(1)
    with other:
        tele.reset(1)
    tele.ry(-a, 2)
    tele.h(1)
    tele.measure(2, out[0])
    reset = QuantumCircuit(2, 3)
    reset.h(0)
    reset.cx(0, 1)
    reset.measure(0, 0)
    with reset.if_test((reset.clbits[0], 1)):
        reset.x(0)
    reset.ry(a, 0)
    reset.measure(0, 1)
    reset.measure(1, 2)
    rus = QuantumCircuit(2, 2)
    for _ in range(2):  # two rounds of a repeat-until-success T-gadget
        with rus.if_test((rus.clbits[0], 0)):
            rus.reset(0)
            rus.h(0)
            rus.t(0)
            rus.cx(0, 1)
            rus.h(0)
            rus.measure(0, 0)
    rus.ry(a, 1)
    rus.measure(1, 1)
    return [tele, reset, rus]


@pytest.mark.parametrize("which", range(3))
def test_dynamic_circuits_sample_as_aer_does(which):
    qiskit_aer = pytest.importorskip("qiskit_aer")
    stats = pytest.importorskip("scipy.stats")
    from qiskit_aer.primitives import SamplerV2 as AerSampler
    circuit = _dynamic_circuits()[which]
    pub = [(circuit, [0.7])]
    shots = 20000
    ours = Sampler(seed=5).run(pub, shots=shots).result()[0].join_data().get_counts()
    aer = AerSampler(seed=5).run(pub, shots=shots).result()[0].join_data().get_counts()
    keys = sorted(set(ours) | set(aer))
    table = np.array([[ours.get(k, 0) for k in keys], [aer.get(k, 0) for k in keys]])
    if len(keys) > 1:
        assert stats.chi2_contingency(table).pvalue > 1e-4, (ours, aer)
    assert qiskit_aer is not None


def test_dynamic_circuits_on_the_backend_give_counts_and_memory():
    from qiskit import transpile
    from qmlsim.qiskit import Backend
    circuit = _dynamic_circuits()[0].assign_parameters([0.7])
    backend = Backend()
    result = backend.run(transpile(circuit, backend), shots=400, seed_simulator=2,
                         memory=True).result()
    counts, memory = result.get_counts(), result.get_memory()
    assert sum(counts.values()) == 400 and len(memory) == 400
    assert all(k.startswith("0 ") for k in counts)  # out: the teleported state undone
    assert counts == {k: memory.count(k) for k in set(memory)}


def test_parametrised_state_preparations_start_each_row():
    """Qiskit ML's raw_feature_vector (a ParameterizedInitialize on 3 of 4
    qubits; its quantum-autoencoder tutorial): Sampler counts (the same seeded
    draws) and Estimator values against Qiskit's reference primitives for
    several rows, a constant `initialize` on some qubits too; the gradient by
    the weights against the parameter shift, and by a feature refused in one
    line."""
    pytest.importorskip("qiskit_machine_learning")
    from qiskit_machine_learning.circuit.library import raw_feature_vector
    features = raw_feature_vector(8)
    ansatz = real_amplitudes(4, reps=1)
    qc = QuantumCircuit(4, 1)
    qc.compose(features, [0, 1, 2], inplace=True)
    qc.compose(ansatz, inplace=True)
    measured = qc.copy()
    measured.measure(0, 0)
    rng = np.random.default_rng(4)
    values = np.concatenate([rng.uniform(-1, 1, (3, 8)), rng.uniform(-2, 2, (3, 8))], axis=1)
    want = StatevectorSampler(seed=9).run([(measured, values)], shots=4000).result()[0]
    got = Sampler(seed=9).run([(measured, values)], shots=4000).result()[0]
    for i in range(3):
        assert got.data.c.get_counts(i) == want.data.c.get_counts(i)
    obs = SparsePauliOp(["ZIII", "XXYZ"], [1.0, 0.5])
    e_want = StatevectorEstimator().run([(qc, obs, values)]).result()[0].data.evs
    e_got = Estimator().run([(qc, obs, values)]).result()[0].data.evs
    assert np.allclose(e_got, e_want, atol=1e-10)
    constant = QuantumCircuit(3)
    constant.initialize([0.6, 0.8j], [1])
    constant.compose(real_amplitudes(3, reps=1), inplace=True)
    w = rng.uniform(-2, 2, (2, 6))
    assert np.allclose(Estimator().run([(constant, "ZZY", w)]).result()[0].data.evs,
                       StatevectorEstimator().run([(constant, "ZZY", w)]).result()[0].data.evs,
                       atol=1e-10)
    weights = list(ansatz.parameters)
    grad = EstimatorGradient().run([qc], [obs], [values[0]], parameters=[weights]).result()
    # the reference: the parameter shift of RY angles by hand (Qiskit ML's own
    # gradients decompose the circuit, which its unbound preparation refuses)
    position = {p: k for k, p in enumerate(qc.parameters)}
    shifts = []
    for p in weights:
        plus, minus = values[0].copy(), values[0].copy()
        plus[position[p]] += np.pi / 2
        minus[position[p]] -= np.pi / 2
        shifts.append([plus, minus])
    evs = StatevectorEstimator().run([(qc, obs, np.array(shifts))]).result()[0].data.evs
    assert np.allclose(grad.gradients[0], (evs[:, 0] - evs[:, 1]) / 2, atol=1e-10)
    with pytest.raises(Exception, match="state preparation"):
        EstimatorGradient().run([qc], [obs], [values[0]],
                                parameters=[list(features.parameters)[:1]]).result()
