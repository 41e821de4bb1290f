"""The PennyLane device qmlsim.mixed against PennyLane's own default.mixed on
random noisy circuits: expectation values, probabilities, the density matrix,
reduced density matrices, purity and entropy; adjoint gradients against
finite differences of default.mixed (its backpropagation gives NaN through
some channels); readout error, shots, trajectories."""
import numpy as np
import pytest

qml = pytest.importorskip("pennylane")

CHANNELS = [
    lambda r, w: qml.DepolarizingChannel(r.uniform(0, 0.5), wires=w[0]),
    lambda r, w: qml.BitFlip(r.uniform(0, 1), wires=w[0]),
    lambda r, w: qml.PhaseFlip(r.uniform(0, 1), wires=w[0]),
    lambda r, w: qml.AmplitudeDamping(r.uniform(0, 1), wires=w[0]),
    lambda r, w: qml.GeneralizedAmplitudeDamping(r.uniform(0, 1), r.uniform(0, 1), wires=w[0]),
    lambda r, w: qml.PhaseDamping(r.uniform(0, 1), wires=w[0]),
    lambda r, w: qml.ThermalRelaxationError(r.uniform(0, 0.5), 2.0, 1.5, r.uniform(0, 1),
                                            wires=w[0]),
    lambda r, w: qml.PauliError("XZ"[:len(w[:2])], r.uniform(0, 0.5), wires=w[:2]),
    lambda r, w: qml.ResetError(r.uniform(0, 0.3), r.uniform(0, 0.3), wires=w[0]),
]


def random_ops(rng, n, x):
    """Gates on parameters x (each used once) with a random channel after each."""
    for k, angle in enumerate(x):
        w = [int(q) for q in rng.permutation(n)]
        kind = k % (5 if n > 1 else 3)
        [qml.RX, qml.RY, qml.RZ, qml.IsingXX, qml.CRY][kind](
            angle, wires=w[:1] if kind < 3 else w[:2])
        if n > 1:
            qml.CNOT(wires=w[:2])
        CHANNELS[rng.integers(len(CHANNELS))](rng, w)


def qnode(device, n, measure, seed, **kwargs):
    """A random circuit (the same for the same seed) on `device`."""
    def circuit(x):
        random_ops(np.random.default_rng(seed), n, x)
        return measure()
    return qml.QNode(circuit, qml.device(device, wires=n), **kwargs)


def pair(n, measure, seed):
    return qnode("qmlsim.mixed", n, measure, seed), qnode("default.mixed", n, measure, seed)


@pytest.mark.parametrize("seed", range(6))
def test_measurements_match_default_mixed(seed):
    n = 1 + seed % 3
    x = np.random.default_rng(seed).uniform(-3, 3, 6)
    h = qml.Z(0) + 0.5 * qml.X(n - 1) @ qml.Y(0) if n > 1 else qml.Z(0) - 0.3 * qml.Y(0)
    for measure in (lambda: qml.expval(h), lambda: qml.probs(wires=range(n)),
                    lambda: qml.state(), lambda: qml.density_matrix(wires=[0]),
                    lambda: qml.purity(wires=[0]), lambda: qml.vn_entropy(wires=[0]),
                    lambda: qml.var(qml.Z(0))):
        ours, theirs = pair(n, measure, seed)
        a, b = ours(x), theirs(x)
        assert np.allclose(a, b, atol=1e-10), (measure(), a, b)


@pytest.mark.parametrize("seed", range(4))
def test_adjoint_gradients_match_finite_differences_of_default_mixed(seed):
    n = 2 + seed % 2
    x = qml.numpy.array(np.random.default_rng(seed).uniform(-3, 3, 5), requires_grad=True)
    measure = lambda: qml.expval(qml.Z(0) @ qml.Z(1) - 0.7 * qml.X(1))  # noqa: E731
    theirs = qnode("default.mixed", n, measure, seed)
    fd = []
    for j in range(len(x)):
        step = np.eye(len(x))[j] * 1e-6
        fd.append((theirs(x + step) - theirs(x - step)) / 2e-6)
    ours = qnode("qmlsim.mixed", n, measure, seed, diff_method="adjoint")
    assert np.allclose(qml.grad(ours)(x), fd, atol=1e-7)
    best = qnode("qmlsim.mixed", n, measure, seed)  # "best" is the adjoint
    assert np.allclose(qml.grad(best)(x), fd, atol=1e-7)


# Channels whose parameters the engine differentiates, on parameters y.
def trainable_channels(y, wires):
    qml.DepolarizingChannel(y[0], wires=wires[0])
    qml.AmplitudeDamping(y[1], wires=wires[1])
    qml.GeneralizedAmplitudeDamping(y[2], y[3], wires=wires[0])
    qml.PhaseDamping(y[4], wires=wires[1])
    qml.BitFlip(y[5], wires=wires[0])
    qml.PhaseFlip(y[6], wires=wires[1])
    qml.PauliError("Y", y[7], wires=wires[0])
    qml.ThermalRelaxationError(y[8], y[9], y[10], y[11], wires=wires[1])


@pytest.mark.parametrize("seed", range(3))
def test_channel_parameters_are_differentiated_by_the_adjoint(seed):
    rng = np.random.default_rng(seed)
    x = qml.numpy.array(rng.uniform(-3, 3, 4), requires_grad=True)
    y = qml.numpy.array([*rng.uniform(0.05, 0.3, 8), 0.2, 2.0, 1.5, 0.4], requires_grad=True)
    if seed == 2:
        y[0] = y[5] = 0.0  # noise strengths trained from 0: the derivative is finite there

    def circuit(x, y):
        qml.RX(x[0], 0)
        qml.RY(x[1], 1)
        qml.CNOT([0, 1])
        trainable_channels(y, [0, 1])
        qml.RZ(x[2], 0)
        qml.IsingXX(x[3], [0, 1])
        trainable_channels(y, [1, 0])
        return qml.expval(qml.Z(0) @ qml.Z(1) - 0.7 * qml.X(1) + 0.3 * qml.Y(0))

    theirs = qml.QNode(circuit, qml.device("default.mixed", wires=2))
    ours = qml.QNode(circuit, qml.device("qmlsim.mixed", wires=2), diff_method="adjoint")
    assert np.isclose(ours(x, y), theirs(x, y), atol=1e-12)
    with qml.Tracker(ours.device) as tracker:
        gx, gy = qml.grad(ours)(x, y)
    assert tracker.totals.get("executions", 0) <= 1  # no shifted circuits
    h = 1e-6  # one-sided where a probability is 0
    for args, got in ((x, gx), (y, gy)):
        for j in range(len(args)):
            up = args.copy()
            up[j] += h
            if args[j] == 0:
                want = (theirs(*((up, y) if args is x else (x, up))) - theirs(x, y)) / h
            else:
                down = args.copy()
                down[j] -= h
                want = (theirs(*((up, y) if args is x else (x, up))) -
                        theirs(*((down, y) if args is x else (x, down)))) / (2 * h)
            assert np.isclose(got[j], want, atol=2e-6 if args[j] == 0 else 1e-7), (j, got, want)
    best = qml.QNode(circuit, qml.device("qmlsim.mixed", wires=2))  # "best" is the adjoint
    assert np.allclose(qml.grad(best)(x, y)[1], gy, atol=1e-12)
    # channel strengths not trained: they cross as literals, the angles' gradient unchanged
    y_fixed = qml.numpy.array(y, requires_grad=False)
    assert np.allclose(qml.grad(ours)(x, y_fixed), gx, atol=1e-12)


def test_fitting_a_damping_strength_as_the_noisy_circuits_tutorial_does():
    """tutorial_noisy_circuits' "channel gradients": gradient descent on x with
    AmplitudeDamping(sigmoid(x)) fits <ZZ> to an observed value; every step
    as default.mixed's (its backpropagation)."""
    def fit(device):
        @qml.qnode(qml.device(device, wires=2))
        def damping_circuit(x):
            qml.Hadamard(0)
            qml.CNOT([0, 1])
            qml.AmplitudeDamping(1 / (1 + qml.numpy.exp(-x)), wires=0)
            qml.AmplitudeDamping(1 / (1 + qml.numpy.exp(-x)), wires=1)
            return qml.expval(qml.Z(0) @ qml.Z(1))
        opt = qml.GradientDescentOptimizer(stepsize=10)
        x, path = qml.numpy.array(0.01, requires_grad=True), []
        for _ in range(20):
            x = opt.step(lambda x: (damping_circuit(x) - 0.7781) ** 2, x)
            path.append(float(x))
        return path, float(damping_circuit(x))
    ours, theirs = fit("qmlsim.mixed"), fit("default.mixed")
    assert np.allclose(ours[0], theirs[0], atol=1e-9)
    assert abs(ours[1] - 0.7781) < 1e-3


def test_noise_models_add_noise_as_on_default_mixed():
    """qml.NoiseModel through qml.add_noise (conditions on operations and
    wires): values and Jacobians as default.mixed gives them."""
    fcond = qml.noise.op_eq(qml.RX) | qml.noise.op_eq(qml.CNOT)
    noise = qml.NoiseModel({
        fcond: qml.noise.partial_wires(qml.AmplitudeDamping, 0.2),
        qml.noise.wires_in([1]): qml.noise.partial_wires(qml.PhaseDamping, 0.1)})

    def circuit(x):
        qml.RX(x[0], 0)
        qml.RY(x[1], 1)
        qml.CNOT([0, 1])
        qml.RX(x[2], 1)
        return qml.expval(qml.Z(0) @ qml.Z(1)), qml.expval(qml.X(1))

    x = qml.numpy.array([0.3, 1.2, -0.5], requires_grad=True)
    out = []
    for device in ("qmlsim.mixed", "default.mixed"):
        q = qml.add_noise(qml.QNode(circuit, qml.device(device, wires=2)), noise)
        out.append((np.array(q(x)), np.array(qml.jacobian(lambda x: qml.math.stack(q(x)))(x))))
    assert np.allclose(out[0][0], out[1][0], atol=1e-12)
    assert np.allclose(out[0][1], out[1][1], atol=1e-10)


def test_channels_that_run_as_kraus_matrices_are_not_differentiated():
    def circuit(p):
        qml.Hadamard(0)
        qml.ResetError(p, 0.1, wires=0)
        return qml.expval(qml.Z(0))
    ours = qml.QNode(circuit, qml.device("qmlsim.mixed", wires=1), diff_method="adjoint")
    with pytest.raises(Exception):
        qml.grad(ours)(qml.numpy.array(0.2, requires_grad=True))


def random_density(rng, k):
    a = rng.normal(size=(1 << k, 1 << k)) + 1j * rng.normal(size=(1 << k, 1 << k))
    rho = a @ a.conj().T
    return rho / np.trace(rho)


@pytest.mark.parametrize("seed", range(3))
def test_qubit_density_matrix_as_default_mixed_runs_it(seed):
    """QubitDensityMatrix first (a mixed start, on some wires) and later (the
    replacement channel Tr_wires(rho) (x) sigma, 1-2 wires): values, the state
    and the adjoint gradient against default.mixed."""
    rng = np.random.default_rng(seed)
    start, late1, late2 = random_density(rng, 2), random_density(rng, 1), random_density(rng, 2)
    h = qml.Z(0) @ qml.X(1) + 0.4 * qml.Y(2)

    def circuit(x, measure):
        qml.QubitDensityMatrix(start, wires=[2, 0])
        qml.RX(x[0], 1)
        qml.CNOT([1, 2])
        qml.DepolarizingChannel(0.1, 0)
        qml.QubitDensityMatrix(late1, wires=[1])
        qml.CRY(x[1], [0, 2])
        qml.QubitDensityMatrix(late2, wires=[0, 2])
        qml.RY(x[2], 0)
        qml.IsingXX(x[0], [0, 1])
        return measure()

    x = qml.numpy.array(rng.uniform(-3, 3, 3), requires_grad=True)
    for measure in (lambda: qml.expval(h), lambda: qml.state(), lambda: qml.probs([1, 2])):
        ours = qml.QNode(circuit, qml.device("qmlsim.mixed", wires=3))(x, measure)
        theirs = qml.QNode(circuit, qml.device("default.mixed", wires=3))(x, measure)
        assert np.allclose(ours, theirs, atol=1e-12)
    grads = [qml.grad(qml.QNode(circuit, qml.device(d, wires=3), diff_method=m))(
        x, lambda: qml.expval(h)) for d, m in (("qmlsim.mixed", "adjoint"),
                                               ("default.mixed", "backprop"))]
    assert np.allclose(grads[0], grads[1], atol=1e-10)


def test_qubit_density_matrix_on_every_wire_in_any_order():
    """sigma's first factor is the first listed wire. (default.mixed 0.45
    ignores the order when every wire is listed, unlike on fewer wires:
    compared here with the explicit permutation instead.)"""
    sigma = random_density(np.random.default_rng(7), 3)

    def circuit():
        qml.QubitDensityMatrix(sigma, wires=[1, 2, 0])
        return qml.state()
    got = qml.QNode(circuit, qml.device("qmlsim.mixed", wires=3))()
    want = sigma.reshape((2,) * 6).transpose([2, 0, 1, 5, 3, 4]).reshape(8, 8)
    assert np.allclose(got, want, atol=1e-14)

    def late():
        qml.Hadamard(0)
        qml.QubitDensityMatrix(sigma, wires=[0, 1, 2])
        return qml.state()
    with pytest.raises(Exception, match="more than 2 wires is supported only as the first"):
        qml.QNode(late, qml.device("qmlsim.mixed", wires=3))()


def _damped_pair(x):
    """Gates on wires 0 and 1 and channels, one of whose strengths is x[2]."""
    qml.RX(x[0], 0)
    qml.RY(x[1], 1)
    qml.CNOT([0, 1])
    qml.AmplitudeDamping(x[2], 1)
    qml.DepolarizingChannel(0.1, 0)


@pytest.mark.parametrize("name", ["state", "density_matrix", "with an expval"])
def test_density_matrices_differentiate_by_one_backward_pass(name):
    """qml.state() (rho) and qml.density_matrix(wires) on qmlsim.mixed by the
    adjoint, a channel strength trained too: a complex cost of them against
    default.mixed's backprop; one VJP."""
    rng = np.random.default_rng(1)
    w = rng.normal(size=(8, 8)) + 1j * rng.normal(size=(8, 8))
    m = rng.normal(size=(4, 4)) + 1j * rng.normal(size=(4, 4))
    measure, cost = {
        "state": (qml.state, lambda r: qml.math.real(qml.math.sum(w * r))),
        "density_matrix": (lambda: qml.density_matrix([2, 0]),
                           lambda r: qml.math.imag(qml.math.sum(m * r))),
        "with an expval": (lambda: (qml.density_matrix([1]), qml.expval(qml.Z(0))),
                           lambda o: qml.math.real(o[0][0, 1]) + o[1]),
    }[name]

    def circuit(x):
        _damped_pair(x)
        qml.CRZ(x[0], [1, 2])
        qml.Hadamard(2)
        qml.PhaseDamping(0.2, 2)
        return measure()

    x = qml.numpy.array([0.3, -0.8, 0.25], requires_grad=True)
    dev = qml.device("qmlsim.mixed", wires=3)
    ours = qml.QNode(circuit, dev, diff_method="adjoint")
    theirs = qml.QNode(circuit, qml.device("default.mixed", wires=3), diff_method="backprop")
    with qml.Tracker(dev) as tracker:
        grad = qml.grad(lambda x: cost(ours(x)))(x)
    assert np.allclose(grad, qml.grad(lambda x: cost(theirs(x)))(x), atol=1e-10)
    assert tracker.totals.get("vjps", 0) == 1


def test_density_matrices_differentiate_by_the_adjoint_under_torch():
    """qml.state() (rho) on qmlsim.mixed under torch, a channel strength
    trained too (scripts/python_test_torch.sh runs it): against
    default.mixed's backprop."""
    torch = pytest.importorskip("torch")
    w = np.random.default_rng(2).normal(size=(4, 4)) * (1 + 0.3j)

    def circuit(x):
        _damped_pair(x)
        return qml.state()

    x0 = np.array([0.3, -0.8, 0.25])
    theirs = qml.QNode(circuit, qml.device("default.mixed", wires=2), diff_method="backprop")
    want = qml.grad(lambda x: qml.math.real(qml.math.sum(w * theirs(x))))(
        qml.numpy.array(x0, requires_grad=True))
    ours = qml.QNode(circuit, qml.device("qmlsim.mixed", wires=2), diff_method="adjoint",
                     interface="torch")
    x = torch.tensor(x0, requires_grad=True)
    torch.real(torch.sum(torch.tensor(w) * ours(x))).backward()
    assert np.allclose(x.grad.numpy(), want, atol=1e-10)


def test_readout_error_is_applied_to_every_measurement():
    # (default.mixed's own readout_prob fails in PennyLane 0.45: "'float' object
    # is not iterable"; the expected values are a bit flip before measuring.)
    def circuit():
        qml.RX(0.4, 0)
        qml.AmplitudeDamping(0.2, 0)
        return qml.expval(qml.Z(0)), qml.probs(wires=[0])
    p = 0.1
    noisy = qml.QNode(circuit, qml.device("qmlsim.mixed", wires=1, readout_prob=p))()
    clean = qml.QNode(circuit, qml.device("default.mixed", wires=1))()
    assert np.isclose(noisy[0], (1 - 2 * p) * clean[0])
    assert np.allclose(noisy[1], (1 - p) * clean[1] + p * clean[1][::-1])


def test_shots_and_trajectories():
    def circuit():
        qml.Hadamard(0)
        qml.CNOT([0, 1])
        qml.DepolarizingChannel(0.2, 0)
        return qml.expval(qml.Z(0) @ qml.Z(1))
    exact = qml.QNode(circuit, qml.device("default.mixed", wires=2))()
    sampled = qml.QNode(circuit, qml.device("qmlsim.mixed", wires=2, shots=20000, seed=3))()
    assert abs(sampled - exact) < 0.05
    dev = qml.device("qmlsim.mixed", wires=2, method="trajectories", trajectories=4000, seed=3)
    assert abs(qml.QNode(circuit, dev)() - exact) < 0.06

    def clean():  # no channel: a state vector, its density matrix measured
        qml.Hadamard(0)
        qml.CNOT([0, 1])
        return qml.state()
    rho = qml.QNode(clean, dev)()
    assert np.allclose(rho, qml.QNode(clean, qml.device("default.mixed", wires=2))())


def test_bad_options_are_device_errors():
    with pytest.raises(Exception, match="readout_prob must be a number in"):
        qml.device("qmlsim.mixed", wires=1, readout_prob=1.5)
    with pytest.raises(Exception, match="method must be"):
        qml.device("qmlsim.mixed", wires=1, method="mps")
