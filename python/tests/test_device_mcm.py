"""Mid-circuit measurements on ``qmlsim.qubit``, natively: ``qml.measure``
(with reset and postselection), ``qml.cond`` on expressions of several
measurements, and statistics of measurement values, against
``default.qubit``: random circuits with 1-8 measurements analytically
(tree-traversal, and the device's own choice) to 1e-10, with shots
(one-shot) within 5 standard errors, and through PennyLane's deferral."""
import warnings

import numpy as np
import pytest

qml = pytest.importorskip("pennylane")

warnings.filterwarnings("ignore", category=DeprecationWarning)

CONDITIONS = [
    lambda a, b: a,
    lambda a, b: ~a,
    lambda a, b: a & b,
    lambda a, b: a | ~b,
    lambda a, b: a + b == 1,
    lambda a, b: 2 * a + b > 1,
]


def random_circuit(rng, n: int, mcms: int, postselect: bool = False, few: bool = False,
                   engine_readout: bool = False):
    """A function of two angles: gates, `mcms` measurements (some resetting),
    conditioned gates, and analytic measurements of wires and of measurement
    values (with `few`, the three that shots estimate; with `engine_readout`,
    only those the engine reads out itself: Pauli sums and probs of wires)."""
    steps = []
    count = 0
    while count < mcms:
        kind = rng.integers(4)
        w = int(rng.integers(n))
        if kind == 0:
            steps.append(("measure", w, bool(rng.random() < 0.4),
                          int(rng.integers(2)) if postselect and count == 0 else None))
            count += 1
        elif kind == 1 and count > 0:
            steps.append(("cond", int(rng.integers(len(CONDITIONS))), int(rng.integers(count)),
                          int(rng.integers(count)), w, float(rng.uniform(-3, 3))))
        else:
            r = int((w + 1 + rng.integers(max(n - 1, 1))) % n)
            steps.append(("gate", int(rng.integers(4)), w, r, float(rng.uniform(-3, 3))))

    def circuit(x, y):
        ms = []
        for s in steps:
            if s[0] == "measure":
                ms.append(qml.measure(s[1], reset=s[2], postselect=s[3]))
            elif s[0] == "cond":
                _, c, a, b, w, angle = s
                qml.cond(CONDITIONS[c](ms[a], ms[b]), qml.RY)(angle * x, w)
            else:
                _, g, w, r, angle = s
                if g == 0:
                    qml.RX(angle + y, w)
                elif g == 1:
                    qml.Hadamard(w)
                elif g == 2 and r != w:
                    qml.CNOT([w, r])
                else:
                    qml.RY(angle, w)
        if few:
            return qml.expval(qml.Z(0)), qml.probs(wires=list(range(n))), qml.expval(ms[0])
        if engine_readout:
            h = qml.Z(0) @ qml.X(n - 1) + 0.5 * qml.Y(0) if n > 1 else qml.Z(0) - qml.X(0)
            return (qml.expval(h), qml.probs(wires=list(range(n))[::-1]), qml.expval(ms[0]),
                    qml.probs(wires=[0]))
        return (qml.expval(qml.Z(0)), qml.probs(wires=list(range(n))), qml.expval(ms[0]),
                qml.probs(op=ms[-1]), qml.var(ms[0] + 2 * ms[-1]), qml.var(qml.X(n - 1)))

    return circuit


def run(circuit, device, shots=None, **kwargs):
    node = qml.QNode(circuit, device, **kwargs)
    if shots:
        node = qml.set_shots(node, shots)
    return node(0.4, -0.7)


@pytest.mark.parametrize("trial", range(12))
@pytest.mark.parametrize("engine_readout", [False, True])
def test_tree_traversal_agrees_with_default_qubit(trial, engine_readout):
    rng = np.random.default_rng(trial)
    n, mcms = 1 + trial % 3, 1 + trial % 8
    circuit = random_circuit(rng, n, mcms, engine_readout=engine_readout)
    ref = run(circuit, qml.device("default.qubit"), mcm_method="tree-traversal")
    for kwargs in ({"mcm_method": "tree-traversal"}, {}):  # {}: the device's choice
        got = run(circuit, qml.device("qmlsim.qubit", wires=n), **kwargs)
        for a, b in zip(ref, got):
            assert np.allclose(np.real(a), b, atol=1e-10), (kwargs, a, b)


@pytest.mark.parametrize("trial", range(4))
@pytest.mark.parametrize("postselect", [False, True])
def test_postselection_and_deferral_agree(trial, postselect):
    rng = np.random.default_rng(50 + trial)
    circuit = random_circuit(rng, 2, 3, postselect=postselect)
    ref = run(circuit, qml.device("default.qubit"), mcm_method="tree-traversal")
    # deferral adds wires (so no wires are given); its postselection needs a
    # projector, which the engine (unitary gates) does not run
    methods = ("tree-traversal",) if postselect else ("tree-traversal", "deferred")
    for method in methods:
        got = run(circuit, qml.device("qmlsim.qubit"), mcm_method=method)
        for a, b in zip(ref, got):
            assert np.allclose(np.real(a), b, atol=1e-10, equal_nan=True), (method, a, b)


@pytest.mark.parametrize("trial", range(4))
def test_one_shot_agrees_statistically(trial):
    rng = np.random.default_rng(100 + trial)
    n = 2
    circuit = random_circuit(rng, n, 2 + trial, few=True)
    shots = 20000
    exact = run(circuit, qml.device("default.qubit"), mcm_method="tree-traversal")
    got = run(circuit, qml.device("qmlsim.qubit", wires=n, seed=trial), shots=shots,
              mcm_method="one-shot")
    assert abs(got[0] - exact[0]) < 5 * np.sqrt(max(1 - exact[0] ** 2, 1e-12) / shots) + 1e-12
    p = np.asarray(exact[1])
    assert np.all(np.abs(got[1] - p) < 5 * np.sqrt(p * (1 - p) / shots) + 1e-12)
    m = exact[2]
    assert abs(got[2] - m) < 5 * np.sqrt(max(m * (1 - m), 1e-12) / shots) + 1e-12


def test_samples_of_measurement_values_pair_with_the_shot():
    dev = qml.device("qmlsim.qubit", wires=2, seed=3)

    @qml.set_shots(500)
    @qml.qnode(dev)
    def copy():
        qml.Hadamard(0)
        m = qml.measure(0)
        qml.cond(m, qml.PauliX)(1)
        return qml.sample(m), qml.sample(wires=1)

    ms, wire = copy()
    assert ms.shape == (500,) and 0 < ms.sum() < 500
    assert np.array_equal(ms, wire.reshape(-1))  # the copy agrees shot by shot


def test_mixtures_refuse_a_single_state():
    @qml.qnode(qml.device("qmlsim.qubit", wires=1))
    def state():
        qml.Hadamard(0)
        qml.measure(0)
        return qml.state()

    with pytest.raises(Exception, match="mid-circuit measurements"):
        state()

    @qml.qnode(qml.device("qmlsim.qubit", wires=1))
    def rho():
        qml.Hadamard(0)
        qml.measure(0)
        return qml.density_matrix(0)

    assert np.allclose(rho(), np.eye(2) / 2)


@pytest.mark.parametrize("trial", range(6))
@pytest.mark.parametrize("device", ["qmlsim.qubit", "qmlsim.mixed"])
def test_quantum_information_of_mixtures_agrees_with_deferral(trial, device):
    """purity, vn_entropy and mutual_info of the branches' mixture (PennyLane's
    mid-circuit-measurement introduction computes them after qml.measure),
    against default.qubit's deferred measurements, which hold the mixture on
    extra wires (its own tree-traversal refuses these)."""
    rng = np.random.default_rng(100 + trial)
    n = 3
    angles = rng.uniform(-3, 3, (4, n))
    measured = rng.integers(n, size=1 + trial % 3)

    def circuit(x, y):
        ms = []
        for layer, w in enumerate(measured):
            for q in range(n):
                qml.RY(angles[layer, q] * x, q)
            qml.CNOT([q for q in range(n) if q != w][:2])
            ms.append(qml.measure(int(w), reset=bool(layer % 2)))
            qml.cond(ms[0], qml.RX)(y, (int(w) + 1) % n)
        return (qml.purity(0), qml.vn_entropy(1), qml.mutual_info(0, 2),
                qml.purity([1, 2]), qml.vn_entropy([0, 2], log_base=2))

    ref = run(circuit, qml.device("default.qubit"), mcm_method="deferred")
    got = run(circuit, qml.device(device, wires=n))
    for a, b in zip(ref, got):
        assert np.allclose(a, b, atol=1e-10), (a, b)


def noisy_circuit(few: bool = False):
    def circuit(x):
        qml.Hadamard(0)
        qml.RX(x, 1)
        qml.CNOT([0, 2])
        qml.DepolarizingChannel(0.1, 0)
        qml.AmplitudeDamping(0.2, 1)
        m0 = qml.measure(0)
        m1 = qml.measure(1, reset=True)
        qml.cond(m0 & ~m1, qml.RY)(0.5, 2)
        qml.PhaseDamping(0.3, 2)
        m2 = qml.measure(2)
        qml.cond(m2, qml.PauliX)(0)
        if few:
            return qml.expval(qml.Z(0)), qml.probs(wires=[1, 2]), qml.expval(m0)
        return (qml.expval(qml.Z(0)), qml.probs(wires=[1, 2]), qml.expval(m0),
                qml.probs(op=m2), qml.density_matrix([0]), qml.var(m0 + m2))
    return circuit


def test_mixed_device_runs_noisy_dynamic_circuits_exactly():
    ref = qml.QNode(noisy_circuit(), qml.device("default.mixed"), mcm_method="deferred")(0.7)
    for method in ("tree-traversal", "deferred", None):
        got = qml.QNode(noisy_circuit(), qml.device("qmlsim.mixed"), mcm_method=method)(0.7)
        for a, b in zip(ref, got):
            assert np.allclose(a, b, atol=1e-10), (method, a, b)


def test_mixed_device_one_shot_agrees_statistically():
    exact = qml.QNode(noisy_circuit(True), qml.device("default.mixed"), mcm_method="deferred")(0.7)
    shots = 20000
    node = qml.QNode(noisy_circuit(True), qml.device("qmlsim.mixed", seed=4), mcm_method="one-shot")
    got = qml.set_shots(node, shots)(0.7)
    assert abs(got[0] - exact[0]) < 5 * np.sqrt((1 - exact[0] ** 2) / shots)
    p = np.asarray(exact[1])
    assert np.all(np.abs(got[1] - p) < 5 * np.sqrt(p * (1 - p) / shots) + 1e-12)
    assert abs(got[2] - exact[2]) < 5 * np.sqrt(exact[2] * (1 - exact[2]) / shots)


@pytest.mark.parametrize("method", ["tree-traversal", "deferred"])
def test_gradients_where_pennylane_defines_them(method):
    """Parameter shift through the branch walk (tree-traversal), the adjoint
    through PennyLane's deferral: both against default.qubit's parameter shift."""
    from pennylane import numpy as pnp

    def circuit(x):
        qml.RX(x, 0)
        qml.CNOT([0, 1])
        m = qml.measure(0)
        qml.cond(m, qml.RY)(0.5 * x, 1)
        return qml.expval(qml.Z(1))

    x = pnp.array(0.7, requires_grad=True)
    ref = qml.grad(qml.QNode(circuit, qml.device("default.qubit"), mcm_method=method,
                             diff_method="parameter-shift"))(x)
    got = qml.grad(qml.QNode(circuit, qml.device("qmlsim.qubit", wires=3), mcm_method=method,
                             diff_method="best"))(x)
    assert np.isclose(got, ref, atol=1e-7)
