"""Aer noise models through qmlsim.qiskit, against Aer itself: EstimatorV2 on the
density matrix (values to 1e-10 on random circuits and noise models, a backend's
noise with delays), SamplerV2's distributions (with readout errors), readout
errors in expectation values against the exact read-out distribution, the
adjoint gradient of noisy circuits against finite differences, trajectories
against the exact value; bad settings as ValueError."""
import numpy as np
import pytest

pytest.importorskip("qiskit_aer")
from qiskit import QuantumCircuit, transpile  # noqa: E402
from qiskit.circuit import Parameter  # noqa: E402
from qiskit.providers.fake_provider import GenericBackendV2  # noqa: E402
from qiskit.quantum_info import DensityMatrix, SparsePauliOp  # noqa: E402
from qiskit_aer.noise import (NoiseModel, ReadoutError, amplitude_damping_error,  # noqa: E402
                              depolarizing_error, pauli_error, phase_damping_error,
                              thermal_relaxation_error)
from qiskit_aer.primitives import EstimatorV2 as AerEstimator  # noqa: E402
from qiskit_aer.primitives import SamplerV2 as AerSampler  # noqa: E402

from qmlsim.qiskit import Backend, Estimator, EstimatorGradient, Sampler  # noqa: E402

ONE_QUBIT = ["h", "sx", "rx", "ry", "rz", "x"]


def random_noise_model(rng, n):
    """All-qubit and qubit-specific errors of every kind Aer builds, composed."""
    nm = NoiseModel()
    kinds = [lambda: depolarizing_error(rng.uniform(0, 0.1), 1),
             lambda: amplitude_damping_error(rng.uniform(0, 0.3)),
             lambda: phase_damping_error(rng.uniform(0, 0.3)),
             lambda: pauli_error([("X", 0.05), ("Y", 0.02), ("I", 0.93)]),
             lambda: thermal_relaxation_error(50, 30, rng.uniform(1, 10))]
    for name in ONE_QUBIT:
        nm.add_all_qubit_quantum_error(kinds[rng.integers(len(kinds))](), [name])
    nm.add_quantum_error(kinds[rng.integers(len(kinds))]().compose(kinds[0]()), ["h"], [0])
    nm.add_all_qubit_quantum_error(depolarizing_error(rng.uniform(0, 0.1), 2), ["cx"])
    two = thermal_relaxation_error(40, 20, 8).expand(amplitude_damping_error(0.1))
    nm.add_quantum_error(two, ["cx"], [1, 0])
    return nm


def random_circuit(rng, n, depth, t):
    qc = QuantumCircuit(n)
    for _ in range(depth):
        g = rng.choice(ONE_QUBIT + (["cx", "cz"] if n > 1 else []))
        q = [int(x) for x in rng.permutation(n)[:2]]
        if g in ("cx", "cz"):
            getattr(qc, g)(q[0], q[1])
        elif g in ("rx", "ry", "rz"):
            getattr(qc, g)(rng.uniform(-1, 1) * t + rng.uniform(-3, 3), q[0])
        else:
            getattr(qc, g)(q[0])
    return qc


def aer_values(circuit, obs, values, noise_model):
    aer = AerEstimator(options={"backend_options": {"noise_model": noise_model,
                                                    "method": "density_matrix"}})
    return aer.run([(circuit, obs, values)]).result()[0].data.evs


@pytest.mark.filterwarnings("ignore")
def test_estimator_equals_aer_density_matrix_on_random_noisy_circuits():
    rng = np.random.default_rng(11)
    t = Parameter("t")
    for n in (1, 2, 3, 4):
        nm = random_noise_model(rng, n)
        qc = random_circuit(rng, n, 14, t)
        labels = ["".join(rng.choice(list("IXYZ"), n)) for _ in range(3)]
        obs = SparsePauliOp.from_list([(label, rng.uniform(-1, 1)) for label in labels])
        values = [[0.3], [-1.1]]
        mine = Estimator(noise_model=nm).run([(qc, obs, values)]).result()[0].data.evs
        np.testing.assert_allclose(mine, aer_values(qc, obs, values, nm), atol=1e-10)


@pytest.mark.filterwarnings("ignore")
def test_a_backends_noise_with_delays_is_aers_and_readout_errors_count():
    backend = GenericBackendV2(3, seed=5)
    nm = NoiseModel.from_backend(backend)
    t = Parameter("t")
    qc = QuantumCircuit(3)
    qc.h(0)
    qc.rx(t, 1)
    qc.cx(0, 1)
    qc.delay(200, 2, unit="dt")
    qc.cx(1, 2)
    qc.ry(t, 2)
    tq = transpile(qc, backend, optimization_level=0, scheduling_method="asap")
    obs = SparsePauliOp("IZZ").apply_layout(tq.layout)
    quiet = NoiseModel.from_backend(backend)
    quiet._local_readout_errors, quiet._default_readout_error = {}, None
    mine = Estimator(noise_model=quiet).run([(tq, obs, [0.4])]).result()[0].data.evs
    np.testing.assert_allclose(mine, aer_values(tq, obs, [0.4], quiet), atol=1e-10)
    # With readout errors: the parity of the exact distribution read through them.
    noisy = Estimator(noise_model=nm).run([(tq, obs, [0.4])]).result()[0].data.evs
    probs = DensityMatrix(np.asarray(_density_matrix(tq.assign_parameters([0.4]), quiet))) \
        .probabilities()
    n = tq.num_qubits
    read = probs.reshape([2] * n)
    for q in range(n):
        e = nm._local_readout_errors.get((q,), nm._default_readout_error)
        axis = n - 1 - q
        read = np.moveaxis(np.tensordot(read, np.asarray(e.probabilities), axes=([axis], [0])),
                           -1, axis)
    parity = sum(p * (-1) ** bin(i & _mask(obs)).count("1")
                 for i, p in enumerate(read.reshape(-1)))
    np.testing.assert_allclose(noisy, parity, atol=1e-10)
    assert abs(noisy - mine) > 1e-3  # the readout errors changed the value


def _mask(obs):
    label = obs.paulis.to_labels()[0]
    return sum(1 << q for q, ch in enumerate(reversed(label)) if ch == "Z")


def _density_matrix(circuit, noise_model):
    from qiskit_aer import AerSimulator
    qc = circuit.copy()
    qc.save_density_matrix()
    sim = AerSimulator(method="density_matrix", noise_model=noise_model)
    return sim.run(qc).result().data()["density_matrix"]


@pytest.mark.filterwarnings("ignore")
def test_sampler_and_backend_draw_aers_noisy_distribution():
    rng = np.random.default_rng(5)
    t = Parameter("t")
    nm = random_noise_model(rng, 3)
    nm.add_readout_error(ReadoutError([[0.9, 0.1], [0.25, 0.75]]), [0])
    nm.add_all_qubit_readout_error(ReadoutError([[0.97, 0.03], [0.05, 0.95]]))
    nm.add_all_qubit_quantum_error(depolarizing_error(0.2, 1), ["measure"])
    qc = random_circuit(rng, 3, 12, t)
    qc.measure_all()
    shots = 100000
    mine = Sampler(noise_model=nm, seed=3, default_shots=shots).run([(qc, [0.4])]).result()
    aer = AerSampler(options={"backend_options": {"noise_model": nm}, "run_options": {"seed": 3}},
                     default_shots=shots).run([(qc, [0.4])]).result()
    a, b = mine[0].data.meas.get_counts(), aer[0].data.meas.get_counts()
    tv = sum(abs(a.get(k, 0) - b.get(k, 0)) for k in set(a) | set(b)) / (2 * shots)
    assert tv < 0.01, (a, b)
    bound = qc.assign_parameters([0.4])
    counts = Backend(noise_model=nm).run(bound, shots=shots, seed_simulator=4).result() \
        .get_counts()
    tv = sum(abs(counts.get(k, 0) - b.get(k, 0)) for k in set(counts) | set(b)) / (2 * shots)
    assert tv < 0.01, (counts, b)


@pytest.mark.filterwarnings("ignore")
def test_noisy_gradients_are_exact_and_trajectories_approach_the_density_matrix():
    rng = np.random.default_rng(8)
    t = Parameter("t")
    nm = random_noise_model(rng, 3)
    nm.add_all_qubit_readout_error(ReadoutError([[0.95, 0.05], [0.1, 0.9]]))
    qc = random_circuit(rng, 3, 16, t)
    obs = SparsePauliOp.from_list([("ZZI", 0.7), ("XIY", 0.2), ("IIZ", -0.5)])
    est = Estimator(noise_model=nm)
    grad = EstimatorGradient(est).run([qc], [obs], [[0.4]]).result().gradients[0]
    h = 1e-5
    hi, lo = (est.run([(qc, obs, [0.4 + d])]).result()[0].data.evs for d in (h, -h))
    np.testing.assert_allclose(grad, (hi - lo) / (2 * h), atol=1e-7)
    exact = est.run([(qc, obs, [0.4])]).result()[0].data.evs
    by_trajectories = Estimator(options={
        "backend_options": {"noise_model": nm, "method": "statevector"},
        "run_options": {"shots": 4000, "seed": 7}}).run([(qc, obs, [0.4])]).result()[0].data.evs
    assert abs(by_trajectories - exact) < 0.05


def test_bad_noise_settings_are_errors():
    with pytest.raises(ValueError, match="noise_model must be a qiskit_aer.noise.NoiseModel"):
        Estimator(noise_model="depolarizing")
    with pytest.raises(ValueError, match="unknown backend_options: device"):
        Estimator(options={"backend_options": {"device": "GPU"}})
    with pytest.raises(ValueError, match="unknown options: shots"):
        Sampler(options={"shots": 5})
    with pytest.raises(ValueError, match="method must be one of"):
        Estimator(method="mps")
    nm = NoiseModel()
    nm.add_readout_error(ReadoutError([[0.9, 0.1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0],
                                       [0, 0, 0, 1]]), [0, 1])
    with pytest.raises(ValueError, match="correlated"):
        Sampler(noise_model=nm)


def test_noise_inside_control_flow_is_applied_as_aer_applies_it():
    # insert_noise does not enter if_test bodies; Aer's simulator applies the model there.
    from qiskit_aer import AerSimulator
    nm = NoiseModel()
    nm.add_all_qubit_quantum_error(depolarizing_error(0.6, 1), ["x"])
    qc = QuantumCircuit(2, 1)
    qc.h(0)
    qc.measure(0, 0)
    with qc.if_test((qc.clbits[0], 1)):
        qc.x(1)
    with qc.if_test((qc.clbits[0], 0)) as orelse:
        qc.h(1)
    with orelse:
        qc.x(1)
        qc.x(1)
    got = Estimator(noise_model=nm).run([(qc, SparsePauliOp("ZI"))]).result()[0].data.evs
    # c = 0 (1/2): h, no error: <Z1> = 0. c = 1 (1/2): x + depolarizing(0.6), then the
    # else body's x + error twice: <Z1> = -(0.4 ** 3). Aer's simulator samples the
    # measurement per shot (1024 by default): it agrees to its shot noise.
    assert abs(got - 0.5 * -(0.4 ** 3)) < 1e-12
    ref_qc = qc.copy()
    ref_qc.save_expectation_value(SparsePauliOp("ZI"), [0, 1])
    aer = AerSimulator(method="density_matrix", noise_model=nm).run(
        ref_qc, shots=4000, seed_simulator=5).result().data()["expectation_value"]
    assert abs(got - aer) < 0.01, (got, aer)
    one = QuantumCircuit(2, 2)  # the circuit: exact <Z1> = 0.5 * (1 - 0.4) = 0.3
    one.h(0)
    one.measure(0, 0)
    with one.if_test((one.clbits[0], 1)):
        one.x(1)
    assert abs(Estimator(noise_model=nm).run([(one, SparsePauliOp("ZI"))]).result()[0].data.evs
               - 0.3) < 1e-12


def test_a_circuit_edited_in_place_is_translated_again():
    est = Estimator()
    qc = QuantumCircuit(1)
    values = []
    for a in (0.1, 1.0, 2.0, 3.0):  # same object, same length, other content
        qc.clear()
        qc.ry(a, 0)
        values.append(est.run([(qc, SparsePauliOp("Z"))]).result()[0].data.evs)
    assert np.allclose(values, np.cos([0.1, 1.0, 2.0, 3.0]), atol=1e-12)
    qc.data[0] = qc.data[0].replace(operation=qc.data[0].operation.__class__(0.5))
    assert abs(est.run([(qc, SparsePauliOp("Z"))]).result()[0].data.evs - np.cos(0.5)) < 1e-12
    nm = NoiseModel()
    bell = QuantumCircuit(1)
    bell.x(0)
    noisy = Estimator(noise_model=nm)
    assert abs(noisy.run([(bell, SparsePauliOp("Z"))]).result()[0].data.evs + 1) < 1e-12
    nm.add_all_qubit_quantum_error(depolarizing_error(0.5, 1), ["x"])  # added after a first run
    assert abs(noisy.run([(bell, SparsePauliOp("Z"))]).result()[0].data.evs + 0.5) < 1e-12
