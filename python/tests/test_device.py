"""The PennyLane device qmlsim.qubit against default.qubit: values, adjoint
Jacobians and VJPs through autograd, many observables, shots, bad input."""
import numpy as np
import pennylane as qml
import pytest
from pennylane import numpy as pnp


def gates(x):
    qml.RX(x[0], wires=0)
    qml.RY(x[1], wires=1)
    qml.CNOT(wires=[0, 2])
    qml.Rot(x[2], x[0], x[1], wires=2)
    qml.IsingZZ(x[1], wires=[1, 2])
    qml.MultiRZ(x[2], wires=[0, 1, 2])
    qml.S(wires=0)
    qml.adjoint(qml.T)(wires=1)
    qml.Toffoli(wires=[0, 1, 2])
    qml.QFT(wires=[0, 1])  # decomposed by PennyLane


def circuit(x):
    gates(x)
    return (qml.expval(qml.PauliZ(0) @ qml.PauliX(2)),
            qml.expval(qml.Hamiltonian([0.5, -0.3], [qml.PauliY(1), qml.PauliZ(2)])),
            qml.expval(qml.sum(qml.s_prod(0.2, qml.PauliX(0)), qml.prod(qml.PauliZ(1), qml.PauliZ(2)))))


X = pnp.array([0.1, -0.4, 0.7], requires_grad=True)


@pytest.mark.parametrize("diff_method", ["adjoint", "device", "parameter-shift"])
@pytest.mark.parametrize("c_dtype,tol", [(np.complex128, 1e-10), ("complex64", 1e-5)])
def test_values_and_jacobians_match_default_qubit(diff_method, c_dtype, tol):
    dev = qml.device("qmlsim.qubit", wires=3, c_dtype=c_dtype, threads=2)
    ref = qml.QNode(circuit, qml.device("default.qubit", wires=3), diff_method="backprop")
    q = qml.QNode(circuit, dev, diff_method=diff_method)
    assert np.allclose(q(X), ref(X), atol=tol)
    stack = lambda f: (lambda v: qml.math.stack(f(v)))  # noqa: E731
    assert np.allclose(qml.jacobian(stack(q))(X), qml.jacobian(stack(ref))(X), atol=tol * 10)


def test_vjp_path_and_cost_gradient():
    dev = qml.device("qmlsim.qubit", wires=3)

    @qml.qnode(dev, diff_method="adjoint", device_vjp=True)
    def cost(x):
        gates(x)
        return qml.expval(qml.Hamiltonian([1.0, 0.5], [qml.PauliZ(0) @ qml.PauliZ(1), qml.PauliX(2)]))

    @qml.qnode(qml.device("default.qubit", wires=3), diff_method="backprop")
    def ref(x):
        gates(x)
        return qml.expval(qml.Hamiltonian([1.0, 0.5], [qml.PauliZ(0) @ qml.PauliZ(1), qml.PauliX(2)]))

    assert np.allclose(qml.grad(cost)(X), qml.grad(ref)(X), atol=1e-10)


def _probs_and_expval(x):
    gates(x)
    return qml.probs(wires=[2, 0]), qml.expval(qml.PauliZ(1) @ qml.PauliX(0))


def test_probabilities_differentiate_by_the_adjoint():
    """probs (alone, or beside an expectation value) by the adjoint: the VJP
    one backward pass, the Jacobian against default.qubit; no shifted runs."""
    dev = qml.device("qmlsim.qubit", wires=3)
    q = qml.QNode(_probs_and_expval, dev, diff_method="adjoint")
    ref = qml.QNode(_probs_and_expval, qml.device("default.qubit", wires=3), diff_method="backprop")
    weights = pnp.array([0.3, -1.0, 2.0, 0.5])

    def cost(f):
        return lambda x: pnp.sum(f(x)[0] * weights) + 0.7 * f(x)[1]

    with qml.Tracker(dev) as tracker:
        grad = qml.grad(cost(q))(X)
    assert np.allclose(grad, qml.grad(cost(ref))(X), atol=1e-10)
    assert tracker.totals.get("derivatives", 0) > 0 and tracker.totals["executions"] <= 2
    probs_only = qml.QNode(lambda x: (gates(x), qml.probs(wires=[0, 1, 2]))[1], dev,
                           diff_method="adjoint")
    probs_ref = qml.QNode(lambda x: (gates(x), qml.probs(wires=[0, 1, 2]))[1],
                          qml.device("default.qubit", wires=3), diff_method="backprop")
    assert np.allclose(qml.jacobian(probs_only)(X), qml.jacobian(probs_ref)(X), atol=1e-10)
    both = lambda f: (lambda x: qml.math.hstack([f(x)[0], qml.math.reshape(f(x)[1], (1,))]))  # noqa: E731,E501
    assert np.allclose(qml.jacobian(both(q))(X), qml.jacobian(both(ref))(X), atol=1e-10)


HERMITIAN = np.array([[1.0, 0.3 - 0.2j, 0, 0.1], [0.3 + 0.2j, -0.5, 0.4j, 0],
                      [0, -0.4j, 0.2, 0.6], [0.1, 0, 0.6, 0.7]])


def _variances_and_matrices(x):
    gates(x)
    return (qml.var(qml.PauliZ(0) @ qml.PauliX(2) + 0.5 * qml.PauliY(1)),
            qml.expval(qml.Hermitian(HERMITIAN, wires=[2, 0])),
            qml.var(qml.Hermitian(HERMITIAN, wires=[1, 2])),
            qml.expval(qml.Projector([1, 0], wires=[0, 1]) + 0.3 * qml.PauliX(2)))


def test_variances_and_matrix_observables_differentiate_by_the_adjoint():
    """var (<H^2> - <H>^2) and Hermitian / Projector expectations by the
    adjoint: values, Jacobians and a VJP against default.qubit's backprop; the
    gradient of a cost in one execution (one forward for <H>, one VJP)."""
    dev = qml.device("qmlsim.qubit", wires=3)
    q = qml.QNode(_variances_and_matrices, dev, diff_method="adjoint")
    ref = qml.QNode(_variances_and_matrices, qml.device("default.qubit", wires=3),
                    diff_method="backprop")
    assert np.allclose(q(X), ref(X), atol=1e-10)
    stack = lambda f: (lambda v: qml.math.stack(f(v)))  # noqa: E731
    assert np.allclose(qml.jacobian(stack(q))(X), qml.jacobian(stack(ref))(X), atol=1e-10)
    weights = pnp.array([0.4, -1.3, 0.8, 2.0])

    def cost(f):
        return lambda x: pnp.sum(stack(f)(x) * weights)

    with qml.Tracker(dev) as tracker:
        grad = qml.grad(cost(q))(X)
    assert np.allclose(grad, qml.grad(cost(ref))(X), atol=1e-10)
    assert tracker.totals.get("derivatives", 0) > 0 and tracker.totals["executions"] <= 2
    q_vjp = qml.QNode(_variances_and_matrices, dev, diff_method="adjoint", device_vjp=True)
    with qml.Tracker(dev) as tracker:
        assert np.allclose(qml.grad(cost(q_vjp))(X), grad, atol=1e-10)
    assert tracker.totals.get("vjp_batches", 0) > 0
    # and on the density-matrix device
    mixed = qml.QNode(_variances_and_matrices, qml.device("qmlsim.mixed", wires=3),
                      diff_method="adjoint")
    assert np.allclose(qml.grad(cost(mixed))(X), grad, atol=1e-10)


def _state_circuit(x, measure):
    gates(x)
    qml.IsingXY(x[0] * 0.7, wires=[0, 2])
    qml.GlobalPhase(0.3)
    return measure()


STATE_COSTS = {  # measurements of the state, and a real cost of them (numpy-like module m)
    "state": (lambda: qml.state(), lambda s, m: m.real(m.sum(
        np.linspace(-1, 1, 8) * (1 + 0.5j) * s)) + m.sum(m.abs(s[:3]) ** 2)),
    "density_matrix": (lambda: qml.density_matrix(wires=[2, 0]),
                       lambda r, m: m.real(m.sum(HERMITIAN * r)) + m.imag(r[1, 2])),
    "state, expval, probs": (
        lambda: (qml.state(), qml.expval(qml.PauliZ(0) @ qml.PauliX(1)), qml.probs(wires=[1])),
        lambda o, m: m.imag(m.sum(np.arange(8) * o[0])) + 2 * o[1] + o[2][0]),
}


@pytest.mark.parametrize("name", sorted(STATE_COSTS))
def test_states_and_density_matrices_differentiate_by_one_backward_pass(name):
    """qml.state() and qml.density_matrix(wires) (alone or beside other
    measurements) by the adjoint: the gradient of a cost of them against
    default.qubit's backprop, with autograd and JAX (also under jax.jit),
    the device's VJP taken (one backward pass from the state's cotangent,
    one more for the other measurements); the Jacobian of the state's real
    part too."""
    measure, cost = STATE_COSTS[name]
    dev = qml.device("qmlsim.qubit", wires=3)
    ours = qml.QNode(_state_circuit, dev, diff_method="adjoint")
    ref = qml.QNode(_state_circuit, qml.device("default.qubit", wires=3), diff_method="backprop")
    with qml.Tracker(dev) as tracker:
        grad = qml.grad(lambda x: cost(ours(x, measure), pnp))(X)
    assert np.allclose(grad, qml.grad(lambda x: cost(ref(x, measure), pnp))(X), atol=1e-10)
    assert tracker.totals.get("vjps", 0) == 1 and tracker.totals["executions"] <= 2
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    xj = jnp.array(np.asarray(X))
    ours_j = qml.QNode(_state_circuit, dev, diff_method="adjoint", interface="jax")
    f = lambda x: cost(ours_j(x, measure), jnp)  # noqa: E731
    assert np.allclose(jax.grad(f)(xj), grad, atol=1e-10)
    assert np.allclose(jax.jit(jax.grad(f))(xj), grad, atol=1e-10)
    if name == "state":
        real = lambda q: (lambda x: qml.math.real(q(x, measure)))  # noqa: E731
        assert np.allclose(qml.jacobian(real(ours))(X), qml.jacobian(real(ref))(X), atol=1e-10)


@pytest.mark.parametrize("name", ["state", "density_matrix"])
def test_states_differentiate_by_the_adjoint_under_torch(name):
    """qml.state() and qml.density_matrix(wires) by the adjoint under torch
    (scripts/python_test_torch.sh runs it): a complex-weighted cost's
    gradient through loss.backward() against default.qubit's backprop."""
    torch = pytest.importorskip("torch")
    measure = STATE_COSTS[name][0]
    weights = {"state": np.linspace(-1, 1, 8) * (1 + 0.5j), "density_matrix": HERMITIAN}[name]
    ref = qml.QNode(_state_circuit, qml.device("default.qubit", wires=3), diff_method="backprop")
    want = qml.grad(lambda x: pnp.real(pnp.sum(weights * ref(x, measure))))(X)
    ours = qml.QNode(_state_circuit, qml.device("qmlsim.qubit", wires=3), diff_method="adjoint",
                     interface="torch")
    x = torch.tensor(np.asarray(X), requires_grad=True)
    torch.real(torch.sum(torch.tensor(weights) * ours(x, measure))).backward()
    assert np.allclose(x.grad.numpy(), want, atol=1e-10)


def _two_readouts(x):
    gates(x)
    return qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliX(1) @ qml.PauliY(2))


def _cost(fn):
    return lambda x: fn(x)[0] + 2 * fn(x)[1] ** 2


def test_derivatives_come_with_the_forward_pass_only_when_asked_for():
    """Inside qml.grad (autograd tracing), one device call gives values and
    Jacobian; a forward pass no one differentiates (a plain call) computes no
    derivative. The same under torch: the next test."""
    dev = qml.device("qmlsim.qubit", wires=3)
    ref = qml.QNode(_two_readouts, qml.device("default.qubit", wires=3), diff_method="backprop")
    q = qml.QNode(_two_readouts, dev, diff_method="adjoint")
    with qml.Tracker(dev) as tracker:
        got = qml.grad(_cost(q))(X)
    assert np.allclose(got, qml.grad(_cost(ref))(X), atol=1e-10)
    assert tracker.totals.get("execute_and_derivative_batches", 0) > 0
    assert "derivative_batches" not in tracker.totals
    with qml.Tracker(dev) as tracker:
        values = q(X)
    assert np.allclose(values, ref(X), atol=1e-12)
    assert tracker.totals["executions"] == 1
    assert not {"derivatives", "execute_and_derivative_batches"} & set(tracker.totals)


def test_derivatives_come_with_the_forward_pass_only_under_torch_grad():
    """torch.no_grad(): no derivative work; gradients enabled: values and
    Jacobian in one device call. Skipped without torch."""
    torch = pytest.importorskip("torch")
    dev = qml.device("qmlsim.qubit", wires=3)
    ref = qml.QNode(_two_readouts, qml.device("default.qubit", wires=3), diff_method="backprop")
    x = torch.tensor(np.asarray(X), requires_grad=True)
    qt = qml.QNode(_two_readouts, dev, interface="torch", diff_method="adjoint")
    with qml.Tracker(dev) as tracker:
        with torch.no_grad():
            qt(x)
    assert not {"derivatives", "execute_and_derivative_batches"} & set(tracker.totals)
    with qml.Tracker(dev) as tracker:
        loss = _cost(qt)(x)
        loss.backward()
    assert tracker.totals.get("execute_and_derivative_batches", 0) > 0
    assert "derivative_batches" not in tracker.totals
    assert np.allclose(x.grad.numpy(), qml.grad(_cost(ref))(X), atol=1e-10)


def test_many_observables_and_other_measurements():
    dev = qml.device("qmlsim.qubit", wires=4)
    ref = qml.device("default.qubit", wires=4)

    def f(x):
        for w in range(4):
            qml.RY(x[w % 3], wires=w)
        qml.CNOT([0, 3])
        qml.CZ([1, 2])
        return ([qml.expval(qml.PauliZ(w)) for w in range(4)]
                + [qml.var(qml.PauliX(1)), qml.probs(wires=[0, 2]), qml.state(),
                   qml.expval(qml.Hermitian(np.array([[1, 2j], [-2j, 0]]), wires=3)),
                   qml.expval(qml.Projector([1, 0], wires=[1, 2]))])

    got, want = qml.QNode(f, dev)(X), qml.QNode(f, ref)(X)
    for g, w in zip(got, want):
        assert np.allclose(g, w, atol=1e-10)


def test_shots_are_seeded():
    def f():
        qml.Hadamard(0)
        qml.CNOT([0, 1])
        return qml.sample(wires=[0, 1]), qml.counts(qml.PauliZ(0))

    a = qml.set_shots(qml.QNode(f, qml.device("qmlsim.qubit", wires=2, seed=7)), 100)()
    b = qml.set_shots(qml.QNode(f, qml.device("qmlsim.qubit", wires=2, seed=7)), 100)()
    assert np.array_equal(a[0], b[0])
    assert np.all(a[0][:, 0] == a[0][:, 1])  # Bell pairs agree


def test_wire_labels_and_broadcasting():
    dev = qml.device("qmlsim.qubit", wires=["a", "b"])

    @qml.qnode(dev)
    def f(x):
        qml.RX(x, wires="b")
        qml.CNOT(wires=["b", "a"])
        return qml.expval(qml.PauliZ("a"))

    assert np.allclose(f(np.array([0.0, np.pi / 2, np.pi])), [1.0, 0.0, -1.0], atol=1e-12)
    assert np.allclose(f([0.0, np.pi / 2, np.pi]), [1.0, 0.0, -1.0], atol=1e-12)  # a list
    # A trainable batch (autograd boxes), alone and beside a matrix parameter:
    # the batch is split, the Jacobian is diagonal.
    for matrix in (False, True):
        @qml.qnode(dev, diff_method="adjoint")
        def g(x, matrix=matrix):
            if matrix:
                qml.QubitUnitary(np.eye(2), wires="a")
            qml.RX(x, wires="b")
            qml.CNOT(wires=["b", "a"])
            return qml.expval(qml.PauliZ("a"))

        x = pnp.array([0.1, 0.7, 2.0], requires_grad=True)
        assert np.allclose(g(x), np.cos(x), atol=1e-12)
        assert np.allclose(qml.jacobian(g)(x), np.diag(-np.sin(x)), atol=1e-12)


def test_bad_input_gives_clear_errors():
    dev = qml.device("qmlsim.qubit", wires=2)

    @qml.qnode(dev)
    def unknown_wire():
        qml.RX(0.1, wires=5)
        return qml.expval(qml.PauliZ(0))

    with pytest.raises(qml.exceptions.WireError):
        unknown_wire()

    @qml.qnode(dev)
    def nan_param():
        qml.RX(float("nan"), wires=0)
        return qml.expval(qml.PauliZ(0))

    with pytest.raises(qml.exceptions.DeviceError, match="not a finite number"):
        nan_param()
    with pytest.raises(qml.exceptions.DeviceError, match="c_dtype"):
        qml.device("qmlsim.qubit", wires=1, c_dtype=np.float32)
    with pytest.raises(qml.exceptions.DeviceError, match="backend 'tpu'"):
        qml.device("qmlsim.qubit", wires=1, backend="tpu")
    for bad in (-1, 0, 2.5, "2", True):
        with pytest.raises(qml.exceptions.DeviceError, match="threads must be a whole number"):
            qml.device("qmlsim.qubit", wires=1, threads=bad)
    for bad in (-1, 11, 1.5):
        with pytest.raises(qml.exceptions.DeviceError, match="fusion must be a whole number"):
            qml.device("qmlsim.qubit", wires=1, fusion=bad)
    assert qml.device("qmlsim.qubit", wires=1, threads=np.int64(2))._options[1] == 2

    @qml.qnode(qml.device("qmlsim.qubit", wires=40))
    def too_big():
        qml.RX(0.1, wires=0)
        return qml.state()  # all 40 wires

    with pytest.raises(MemoryError, match="40-qubit state"):
        too_big()


def test_one_openmp_runtime_beside_torch():
    """The engine links the system's libgomp.so.1; torch ships a libgomp.so.1 of
    its own. Loaded in either order they resolve to one runtime (two runtimes
    side by side made training steps many times slower). Skipped without torch."""
    import subprocess
    import sys

    pytest.importorskip("torch")
    for first, second in (("qmlsim", "torch"), ("torch", "qmlsim")):
        code = (f"import {first}, {second}, re; print(len({{l.split()[-1] for l in "
                "open('/proc/self/maps') if re.search(r'gomp|iomp|libomp', l)}))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "1", (first, second, out.stdout)


def test_state_preparations_start_the_state():
    """StatePrep, AmplitudeEmbedding and BasisState as the first operation are
    the engine's starting state (not decomposed); values and adjoint Jacobians
    against default.qubit."""
    v = np.array([0.1, 0.5j, -0.3, 0.2, 0.4, 0.1 + 0.2j, 0.6, -0.1])
    v = v / np.linalg.norm(v)

    def f(x):
        qml.StatePrep(v, wires=[0, 1, 2])
        qml.RX(x[0], 0)
        qml.CNOT([0, 2])
        qml.RY(x[1], 1)
        return qml.expval(qml.PauliZ(0) @ qml.PauliY(2)), qml.expval(qml.PauliX(1))

    def g(x):
        qml.AmplitudeEmbedding(np.arange(1.0, 5.0), wires=[1, 2], normalize=True)
        qml.RX(x[0], 0)
        qml.CNOT([1, 0])
        return qml.state()

    def b(x):
        qml.BasisState(np.array([1, 0, 1]), wires=[0, 1, 2])
        qml.RY(x[1], 1)
        return qml.probs(wires=[0, 1, 2])

    x = pnp.array([0.3, -0.6], requires_grad=True)
    dev = qml.device("qmlsim.qubit", wires=3)
    ref = qml.device("default.qubit", wires=3)
    tape = qml.workflow.construct_tape(qml.QNode(f, dev))(x)
    (t,), _ = dev.preprocess_transforms()((tape,))
    assert t.operations[0].name == "StatePrep"
    for fn in (g, b):
        assert np.allclose(qml.QNode(fn, dev)(x), qml.QNode(fn, ref)(x), atol=1e-12)
    stack = lambda h: (lambda y: qml.math.stack(h(y)))  # noqa: E731
    q = qml.QNode(f, dev, diff_method="adjoint")
    r = qml.QNode(f, ref, diff_method="backprop")
    assert np.allclose(stack(q)(x), stack(r)(x), atol=1e-12)
    assert np.allclose(qml.jacobian(stack(q))(x), qml.jacobian(stack(r))(x), atol=1e-10)


# lightning.qubit's native operations, run natively here (no PennyLane
# decomposition), each with trainable parameters where PennyLane has them.
def lightning_gates(x):
    qml.BasisState(np.array([1, 1, 0, 0, 1]), wires=range(5))
    qml.Hadamard(wires=2)
    qml.SingleExcitation(x[0], wires=[0, 2])
    qml.SingleExcitationPlus(x[1], wires=[1, 3])
    qml.SingleExcitationMinus(x[2], wires=[2, 4])
    qml.DoubleExcitation(x[0], wires=[0, 1, 2, 3])
    qml.DoubleExcitationPlus(x[1], wires=[1, 2, 3, 4])
    qml.DoubleExcitationMinus(x[2], wires=[4, 0, 3, 1])
    qml.PSWAP(x[1], wires=[0, 4])
    qml.ECR(wires=[1, 2])
    qml.SISWAP(wires=[3, 0])
    qml.SQISW(wires=[2, 4])
    qml.ctrl(qml.RX(x[0], wires=0), control=[1, 3], control_values=[True, False])
    qml.ctrl(qml.Rot(x[1], x[2], x[0], wires=4), control=2)
    qml.ctrl(qml.IsingXX(x[2], wires=[0, 1]), control=[2, 3, 4], control_values=[0, 1, 0])
    qml.ctrl(qml.DoubleExcitation(x[1], wires=[0, 1, 2, 3]), control=4)
    qml.MultiControlledX(wires=[0, 1, 2, 3], control_values=[1, 0, 1])
    qml.ControlledQubitUnitary(qml.matrix(qml.Hadamard(0) @ qml.S(1)), wires=[4, 0, 2],
                               control_values=[0])
    qml.DiagonalQubitUnitary(np.exp(1j * np.arange(4) * 0.3), wires=[3, 1])
    qml.QubitCarry(wires=[0, 1, 2, 3])
    qml.QubitSum(wires=[4, 1, 2])
    qml.BlockEncode(np.array([[0.1, 0.2], [0.3, 0.4]]), wires=[0, 1])
    qml.PauliRot(x[2], "XIYZ", wires=[4, 0, 1, 3])
    qml.OrbitalRotation(x[0], wires=[3, 1, 4, 0])
    qml.PCPhase(x[1], dim=5, wires=[2, 0, 3])
    qml.PCPhase(x[2], dim=2, wires=[1, 4])
    # Inverses run directly: negated (and for Rot reversed) angles, or the matrix.
    qml.adjoint(qml.RX(x[0], wires=3))
    qml.adjoint(qml.Rot(x[0], x[1], x[2], wires=1))
    qml.adjoint(qml.DoubleExcitation(x[1], wires=[4, 3, 2, 1]))
    qml.adjoint(qml.IsingXY(x[2], wires=[0, 2]))
    qml.adjoint(qml.CRZ(x[1], wires=[3, 0]))  # a controlled table gate (the kernels demo's)
    qml.adjoint(qml.SX(wires=2))
    qml.adjoint(qml.ECR(wires=[4, 1]))
    qml.adjoint(qml.Hadamard(wires=0))


def lightning_circuit(x):
    lightning_gates(x)
    return (qml.expval(qml.PauliZ(0) @ qml.PauliX(2)),
            qml.expval(qml.Hamiltonian([0.5, -0.3, 0.2], [qml.PauliY(1), qml.PauliZ(4),
                                                          qml.PauliX(3) @ qml.PauliY(0)])))


XL = pnp.array([0.3, -1.1, 0.8], requires_grad=True)


def test_lightning_operations_are_native():
    """Every operation above reaches the engine as one gate: none is decomposed."""
    from qmlsim._pennylane import _adjoint_native, _native

    tape = qml.tape.make_qscript(lightning_gates)(XL)
    for op in tape.operations[1:]:
        assert _native(op), op.name
        assert _adjoint_native(op) or not qml.operation.is_trainable(op), op.name


@pytest.mark.parametrize("c_dtype,tol", [(np.complex128, 1e-10), ("complex64", 1e-5)])
def test_lightning_operations_match_default_qubit(c_dtype, tol):
    dev = qml.device("qmlsim.qubit", wires=5, c_dtype=c_dtype)
    ref_dev = qml.device("default.qubit", wires=5)

    def state(x):
        lightning_gates(x)
        return qml.state()

    assert np.allclose(qml.QNode(state, dev)(XL), qml.QNode(state, ref_dev)(XL), atol=tol)

    def probs(x, wires):
        lightning_gates(x)
        return qml.probs(wires=wires)

    for wires in ([0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [1, 3]):  # all in order: |amplitude|^2
        got = qml.QNode(probs, dev)(XL, wires)
        assert np.allclose(got, qml.QNode(probs, ref_dev)(XL, wires), atol=tol), wires
    q = qml.QNode(lightning_circuit, dev, diff_method="adjoint")
    ref = qml.QNode(lightning_circuit, ref_dev, diff_method="backprop")
    assert np.allclose(q(XL), ref(XL), atol=tol)
    stack = lambda f: (lambda v: qml.math.stack(f(v)))  # noqa: E731
    assert np.allclose(qml.jacobian(stack(q))(XL), qml.jacobian(stack(ref))(XL), atol=tol * 10)


def test_every_lightning_qubit_operation_is_native():
    """Every operation of lightning.qubit's TOML (the installed lightning package,
    both sections) runs natively in qmlsim.qubit."""
    import importlib.resources
    import tomllib

    from qmlsim._pennylane import _native

    toml = importlib.resources.files("pennylane_lightning") / "lightning_qubit" / "lightning_qubit.toml"
    spec = tomllib.loads(toml.read_text())
    ops = {**spec["operators"]["gates"], **spec["pennylane"]["operators"]["gates"]}
    missing = []
    for name in ops:
        op_class = getattr(qml, name, None)
        if op_class is None:
            missing.append(name)
            continue
        wires = op_class.num_wires if isinstance(op_class.num_wires, int) else 3
        try:
            op = qml.tape.make_qscript(lambda: qml.apply(_instance(op_class, wires)))().operations[0]
        except Exception:  # noqa: BLE001 - an operation this test cannot build
            missing.append(name + " (not built)")
            continue
        if not _native(op):
            missing.append(name)
    assert not missing, missing


def _instance(op_class, wires):
    name = op_class.__name__
    if name == "QubitUnitary":
        return op_class(np.eye(2), wires=0)
    if name == "DiagonalQubitUnitary":
        return op_class(np.ones(2), wires=0)
    if name == "BlockEncode":
        return op_class(np.array([[0.1]]), wires=[0, 1])
    if name == "MultiControlledX":
        return op_class(wires=[0, 1, 2])
    if name == "PauliRot":
        return op_class(0.1, "XY", wires=[0, 1])
    if name == "PCPhase":
        return op_class(0.1, dim=2, wires=[0, 1])
    if name in ("ControlledQubitUnitary",):
        return op_class(np.eye(2), wires=[0, 1])
    if name == "MultiRZ":
        return op_class(0.1, wires=[0, 1])
    return op_class(*([0.1] * op_class.num_params), wires=list(range(wires)))


def template_gates(data, w):
    """Data-fed templates (built by the device), their adjoints, and trainable
    gates and templates around them (decomposed for the adjoint)."""
    qml.AngleEmbedding(data[:3], wires=[3, 0, 2], rotation="Y")
    qml.IQPEmbedding(data, wires=range(4), n_repeats=2)
    qml.RX(w[0, 0, 0], wires=1)
    qml.StronglyEntanglingLayers(data.reshape(1, 4, 1) * np.ones(3), wires=[1, 3, 0, 2],
                                 ranges=[3], imprimitive=qml.CZ)
    qml.BasicEntanglerLayers(data.reshape(2, 2)[:, ::-1] - 0.2, wires=[2, 1], rotation=qml.RZ)
    qml.BasicEntanglerLayers(data.reshape(1, 4), wires=range(4))
    qml.StronglyEntanglingLayers(w, wires=range(4))  # trainable
    qml.adjoint(qml.IQPEmbedding)(data[::-1], wires=[1, 2, 3, 0], pattern=[[1, 3], [0, 2]])
    qml.adjoint(qml.AngleEmbedding)(data, wires=range(4))
    qml.adjoint(qml.StronglyEntanglingLayers(data.reshape(1, 4, 1) * np.array([1, -0.5, 0.3]),
                                             wires=range(4)))


def template_circuit(data, w):
    template_gates(data, w)
    return [qml.expval(qml.Z(0) @ qml.X(1)), qml.expval(qml.Y(2)), qml.expval(qml.Z(3))]


@pytest.mark.parametrize("c_dtype,tol", [(np.complex128, 1e-10), ("complex64", 1e-5)])
def test_templates_built_by_the_device_match_default_qubit(c_dtype, tol):
    data = np.array([0.3, -1.1, 0.7, 2.0])
    w = pnp.array(np.random.default_rng(9).uniform(0, 2 * np.pi, (2, 4, 3)), requires_grad=True)
    dev = qml.device("qmlsim.qubit", wires=4, c_dtype=c_dtype)
    tape = qml.workflow.construct_tape(qml.QNode(template_circuit, dev))(data, w)
    kept = dev.preprocess_transforms()((tape,))[0][0].operations
    assert [op.name for op in kept][:6] == ["AngleEmbedding", "IQPEmbedding", "RX",
                                            "StronglyEntanglingLayers", "BasicEntanglerLayers",
                                            "BasicEntanglerLayers"]
    ref = qml.QNode(template_circuit, qml.device("default.qubit", wires=4), diff_method="backprop")
    q = qml.QNode(template_circuit, dev, diff_method="adjoint")
    assert np.allclose(q(data, w), ref(data, w), atol=tol)
    stack = lambda f: (lambda v: qml.math.stack(f(data, v)))  # noqa: E731
    assert np.allclose(qml.jacobian(stack(q))(w), qml.jacobian(stack(ref))(w), atol=tol * 10)

    def state(x):
        template_gates(x, w)
        return qml.state()

    assert np.allclose(qml.QNode(state, dev)(data), qml.QNode(state, qml.device("default.qubit",
                                                                                 wires=4))(data),
                       atol=tol)


def fermionic_circuit(w):
    qml.BasisState(np.array([1, 1, 0, 0, 0, 0]), wires=range(6))
    qml.FermionicSingleExcitation(w[0], wires=[1, 2, 3])
    qml.FermionicSingleExcitation(w[1], wires=[0, 1])
    qml.FermionicDoubleExcitation(w[2], wires1=[0, 1], wires2=[2, 3, 4, 5])
    qml.FermionicDoubleExcitation(w[3], wires1=[0, 1, 2], wires2=[4, 5])
    qml.FermionicDoubleExcitation(w[4], wires1=[1, 2], wires2=[4, 5])
    qml.UCCSD(w[5:8], wires=range(6), s_wires=[[0, 1, 2], [1, 2, 3, 4]],
              d_wires=[[[0, 1], [2, 3, 4]]], init_state=np.array([1, 1, 0, 0, 0, 0]))
    return (qml.expval(qml.Hamiltonian([0.4, -0.7, 0.2], [qml.Z(0) @ qml.Z(3), qml.X(1) @ qml.Y(4),
                                                          qml.Z(5)])),
            qml.expval(qml.Y(0) @ qml.X(2) @ qml.Z(5)))


@pytest.mark.parametrize("c_dtype,tol", [(np.complex128, 1e-10), ("complex64", 1e-5)])
def test_fermionic_excitations_are_native_and_match_default_qubit(c_dtype, tol):
    w = pnp.array(np.random.default_rng(10).uniform(-1, 1, 8), requires_grad=True)
    dev = qml.device("qmlsim.qubit", wires=6, c_dtype=c_dtype)
    for op in (qml.FermionicSingleExcitation(0.3, wires=[0, 1, 2]),
               qml.FermionicDoubleExcitation(0.3, wires1=[0, 1], wires2=[2, 3])):
        assert dev.supports_derivatives(
            qml.devices.ExecutionConfig(gradient_method="adjoint"),
            qml.tape.QuantumScript([op], [qml.expval(qml.Z(0))], trainable_params=[0]))
        tape = qml.tape.QuantumScript([op], [qml.expval(qml.Z(0))])
        assert dev.preprocess_transforms()((tape,))[0][0].operations == [op]
    ref = qml.QNode(fermionic_circuit, qml.device("default.qubit", wires=6), diff_method="backprop")
    q = qml.QNode(fermionic_circuit, dev, diff_method="adjoint")
    assert np.allclose(q(w), ref(w), atol=tol)
    stack = lambda f: (lambda v: qml.math.stack(f(v)))  # noqa: E731
    assert np.allclose(qml.jacobian(stack(q))(w), qml.jacobian(stack(ref))(w), atol=tol * 10)


def test_adjoint_of_every_table_gate_uses_its_inverse_rule():
    """qml.adjoint(gate) for every gate of the device's gate map runs as the
    gate table's inverse rule (native, not decomposed); the state, global phase
    included, and the adjoint gradient match default.qubit."""
    from qmlsim._pennylane import _GATES, _adjoint_native

    dev = qml.device("qmlsim.qubit", wires=4)
    ref_dev = qml.device("default.qubit", wires=4)
    rng = np.random.default_rng(5)
    for name, table_name in sorted(_GATES.items()):
        if table_name == "QubitUnitary" or name.startswith("Adjoint("):
            continue
        cls = getattr(qml, name)
        width = cls.num_wires if isinstance(cls.num_wires, int) else (1 if name == "Identity" else 3)
        wires = [0, 2, 3, 1][:width]
        x = pnp.array(rng.uniform(-2, 2, cls.num_params), requires_grad=True)
        assert _adjoint_native(qml.adjoint(cls(*x, wires=wires))), name
        # supports_derivatives' fast path takes it (no decomposition check per call)
        assert dev._differentiable_as_is(qml.adjoint(cls(*x, wires=wires))), name

        def circuit(x, cls=cls, wires=wires):
            for w in range(4):
                qml.RY(0.3 + w, wires=w)
                qml.RX(0.2 * w, wires=w)
            qml.adjoint(cls(*x, wires=wires))
            return qml.state()

        got = qml.QNode(circuit, dev)(x)
        want = qml.QNode(circuit, ref_dev)(x)
        assert np.allclose(got, want, atol=1e-10), name
        if cls.num_params:
            def cost(x, cls=cls, wires=wires):
                for w in range(4):
                    qml.RY(0.3 + w, wires=w)
                    qml.RX(0.2 * w, wires=w)
                qml.adjoint(cls(*x, wires=wires))
                return qml.expval(qml.PauliZ(0) @ qml.PauliX(2) + 0.5 * qml.PauliY(3))

            g = qml.grad(qml.QNode(cost, dev, diff_method="adjoint"))(x)
            g_ref = qml.grad(qml.QNode(cost, ref_dev, diff_method="backprop"))(x)
            assert np.allclose(g, g_ref, atol=1e-9), name


def test_a_hermitian_matrix_edited_in_place_is_read_again():
    # The observable's Pauli form is cached per object: an array edited in place
    # must not give the old value.
    a = np.array([[1.0, 0.0], [0.0, -1.0]])
    h = qml.Hermitian(a, wires=0)

    @qml.qnode(qml.device("qmlsim.qubit", wires=1))
    def f():
        qml.RY(0.3, 0)
        return qml.expval(h)

    assert abs(f() - np.cos(0.3)) < 1e-12
    a[:] = [[0.0, 1.0], [1.0, 0.0]]
    assert abs(f() - np.sin(0.3)) < 1e-12


def _hermitian_circuit(kind):
    def circuit(x, h):
        _hermitian_gates(x)
        obs = qml.Hermitian(h, wires=[2, 0])
        return (qml.expval(obs) if kind == "expval" else qml.var(obs)), qml.expval(qml.Z(1))
    return circuit


def _hermitian_gates(x):
    qml.RX(x, 0)
    qml.RY(0.3, 1)
    qml.CNOT([0, 2])
    qml.RY(0.5 * x, 2)
    qml.IsingXY(0.7, [1, 2])


def _hermitian_oracle(kind):
    """The cost of _hermitian_circuit from default.qubit's density matrix of
    the Hermitian's wires (default.qubit's own backprop of a variance gives
    no gradient by the matrix)."""
    @qml.qnode(qml.device("default.qubit", wires=3), diff_method="backprop")
    def readouts(x):
        _hermitian_gates(x)
        return qml.density_matrix(wires=[2, 0]), qml.expval(qml.Z(1))

    def cost(x, h):
        rho, z1 = readouts(x)
        mean = pnp.real(pnp.trace(rho @ h))
        value = mean if kind == "expval" else pnp.real(pnp.trace(rho @ h @ h)) - mean ** 2
        return value + 0.5 * z1
    return cost


@pytest.mark.parametrize("device", ["qmlsim.qubit", "qmlsim.mixed"])
@pytest.mark.parametrize("kind", ["expval", "var"])
@pytest.mark.parametrize("dtype", [float, complex])
def test_a_trainable_hermitian_matrix_is_differentiated_by_the_adjoint(device, kind, dtype):
    """A Hermitian whose matrix is trainable (expectation value or variance):
    the adjoint's gradient by the matrix (from the reduced density matrix of
    its wires) and by the gate angle against an autograd oracle, with
    autograd and JAX; before, the device fell back to the parameter shift,
    whose gradient by a matrix is wrong."""
    rng = np.random.default_rng(7)
    a = rng.normal(size=(4, 4)) + (1j * rng.normal(size=(4, 4)) if dtype is complex else 0)
    a = (a + a.conj().T).astype(dtype)
    ours = qml.QNode(_hermitian_circuit(kind), qml.device(device, wires=3), diff_method="best")

    def cost(x, h):
        values = ours(x, h)
        return values[0] + 0.5 * values[1]

    x, h = pnp.array(0.4, requires_grad=True), pnp.array(a, requires_grad=True)
    oracle = _hermitian_oracle(kind)
    want = qml.grad(oracle)(x, h)
    assert abs(cost(x, h) - oracle(x, h)) < 1e-10
    got = qml.grad(cost)(x, h)
    assert np.allclose(got[0], want[0], atol=1e-10)
    assert np.allclose(got[1], want[1], atol=1e-10) and np.any(want[1])
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    ours_j = qml.QNode(_hermitian_circuit(kind), qml.device(device, wires=3),
                       diff_method="adjoint", interface="jax")
    got_j = jax.grad(lambda h: ours_j(0.4, h)[0])(jax.numpy.array(a))
    assert np.allclose(got_j, want[1], atol=1e-10)  # as default.qubit's under JAX


def test_a_repeated_structure_is_translated_once_and_a_changed_one_again():
    """The translation cache (_pennylane._TRANSLATIONS, keyed by content):
    new values translate nothing; one changed gate, wire, observable or
    noise parameter is never served the old program (values against
    default.qubit / default.mixed each time)."""
    from qmlsim import _pennylane

    def make(gate=qml.RY, wire=1, obs=qml.Z, noise=0.0):
        def circuit(x):
            qml.RX(x[0], wires=0)
            gate(x[1], wires=wire)
            qml.CNOT([0, 2])
            qml.IsingXX(x[2], wires=[1, 2])
            if noise:
                qml.DepolarizingChannel(noise, wires=2)
            return qml.expval(obs(0) @ qml.Z(2))
        return circuit

    def check(circuit, x, mixed=False):
        name = "mixed" if mixed else "qubit"
        ours = qml.QNode(circuit, qml.device(f"qmlsim.{name}", wires=3))
        ref = qml.QNode(circuit, qml.device(f"default.{name}", wires=3))
        before = _pennylane.TRANSLATION_COUNT[0]
        assert abs(ours(x) - ref(x)) < 1e-10
        return _pennylane.TRANSLATION_COUNT[0] - before

    x = np.array([0.3, -0.9, 1.4])
    check(make(), x)
    assert check(make(), x + 0.5) == 0  # values only: nothing translated
    assert check(make(gate=qml.RX), x) == 1
    assert check(make(wire=2), x) == 1
    assert check(make(obs=qml.X), x) == 0  # observables are not in the program
    for p in (0.1, 0.3):  # programs with channels are not cached
        assert check(make(noise=p), x, mixed=True) >= 1


@pytest.mark.parametrize("device,ref", [("qmlsim.qubit", "default.qubit"),
                                        ("qmlsim.mixed", "default.mixed")])
def test_a_dense_hermitian_is_one_product_and_one_backward_pass(device, ref):
    """An expectation value of a Hermitian on more than 3 wires (a random
    dense matrix, beside a Pauli word and probabilities): read from the final
    state, never Pauli-decomposed, and differentiated by one backward pass
    from H's cotangent on the state; values and gradients against the
    reference device, with autograd and JAX."""
    rng = np.random.default_rng(5)
    a = rng.normal(size=(16, 16)) + 1j * rng.normal(size=(16, 16))
    h = a + a.conj().T

    def circuit(x):
        for w in range(5):
            qml.RY(x[w], wires=w)
        for w in range(4):
            qml.CNOT([w, w + 1])
        qml.RX(x[0] * x[1], wires=2)
        if device == "qmlsim.mixed":
            qml.DepolarizingChannel(0.1, wires=1)
        return (qml.expval(qml.Hermitian(h, wires=[3, 0, 4, 1])), qml.expval(qml.Z(2)),
                qml.probs(wires=[1]))

    dev = qml.device(device, wires=5)
    ours = qml.QNode(circuit, dev, diff_method="adjoint")
    want = qml.QNode(circuit, qml.device(ref, wires=5), diff_method="backprop")
    x = pnp.array(rng.uniform(-2, 2, 5), requires_grad=True)
    for a_, b_ in zip(ours(x), want(x)):
        assert np.allclose(a_, b_, atol=1e-10)
    def cost(q):
        def f(x):
            r = q(x)
            return r[0] + 3 * r[1] - r[2][1]
        return f

    from qmlsim import _pennylane
    decompositions = len(_pennylane._MATRIX_REPS)
    with qml.Tracker(dev) as tracker:
        got = qml.grad(cost(ours))(x)
    assert np.allclose(got, qml.grad(cost(want))(x), atol=1e-10)
    assert tracker.totals.get("vjps", 0) == 1
    assert len(_pennylane._MATRIX_REPS) == decompositions  # the 4-wire matrix: never decomposed
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    ours_j = qml.QNode(circuit, dev, diff_method="adjoint", interface="jax")
    got_j = jax.grad(lambda x: cost(ours_j)(x))(jax.numpy.array(np.asarray(x)))
    assert np.allclose(got_j, got, atol=1e-10)


def test_a_12_wire_hermitian_gradient_is_one_execution():
    """PennyLane's barren-plateaus form at 12 wires (|0><0| as a dense
    Hermitian on every wire): the gradient is one device VJP, and equals
    default.qubit's."""
    n = 12
    h = np.zeros((1 << n, 1 << n))
    h[0, 0] = 1

    def circuit(x):
        for w in range(n):
            qml.RY(np.pi / 4, wires=w)
            qml.RX(x[w], wires=w)
        for w in range(n - 1):
            qml.CZ([w, w + 1])
        return qml.expval(qml.Hermitian(h, wires=range(n)))

    dev = qml.device("qmlsim.qubit", wires=n)
    ours = qml.QNode(circuit, dev)
    x = pnp.array(np.linspace(0.1, 1.2, n), requires_grad=True)
    with qml.Tracker(dev) as tracker:
        got = qml.grad(ours)(x)
    assert tracker.totals["executions"] == 1 and tracker.totals.get("vjps", 0) == 1
    want = qml.grad(qml.QNode(circuit, qml.device("default.qubit", wires=n)))(x)
    assert np.allclose(got, want, atol=1e-10)


def test_special_unitary_runs_and_differentiates_under_jax_jit():
    """qml.SpecialUnitary (PennyLane's "here comes the SUN" demo): two SU(4)
    gates on 3 wires, cost and gradient under jax.jit against default.qubit;
    before, the first jitted call recursed without end (PennyLane decomposes
    the detached copy of a trainable SpecialUnitary again under a tracer)."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)

    def circuit(theta):
        qml.SpecialUnitary(theta[0], wires=[0, 1])
        qml.SpecialUnitary(theta[1], wires=[1, 2])
        return qml.expval(qml.Z(0) @ qml.X(2) + 0.5 * qml.Y(1))

    theta = jax.numpy.array(np.random.default_rng(2).uniform(-1, 1, (2, 15)))
    ref = qml.QNode(circuit, qml.device("default.qubit", wires=3), interface="jax")
    ours = qml.QNode(circuit, qml.device("qmlsim.qubit", wires=3), interface="jax")
    assert np.allclose(jax.jit(ours)(theta), ref(theta), atol=1e-10)
    assert np.allclose(jax.jit(jax.grad(ours))(theta), jax.jit(jax.grad(ref))(theta),
                       atol=1e-10)


@pytest.mark.parametrize("device", ["qmlsim.qubit", "qmlsim.mixed"])
def test_classical_shadows_with_shots(device):
    """qml.classical_shadow and qml.shadow_expval with finite shots (PennyLane's
    differentiable-shadows demo): PennyLane's own snapshot code on the final
    state, seeded as PennyLane seeds it (recipes by the measurement's seed,
    bits by the device's); the estimates within 5 standard
    errors of the exact values, the same seed the same snapshots, and the
    gradient by the parameter shift."""
    def circuit(x):
        qml.RY(x, 0)
        qml.CNOT([0, 1])
        qml.RX(0.3, 1)

    h = qml.Z(0) @ qml.Z(1) + qml.X(0) @ qml.X(1)
    exact = qml.QNode(lambda x: (circuit(x), qml.expval(h))[1], qml.device("default.qubit"))

    def shadow(seed):  # recipes from the measurement's seed, bits from the device's
        return qml.set_shots(qml.QNode(
            lambda x: (circuit(x), qml.classical_shadow([0, 1], seed=5))[1],
            qml.device(device, wires=2, seed=seed)), 4000)

    bits, recipes = shadow(11)(0.5)
    assert bits.shape == recipes.shape == (4000, 2) and set(np.unique(recipes)) == {0, 1, 2}
    again = shadow(11)(0.5)
    assert np.array_equal(again[0], bits) and np.array_equal(again[1], recipes)
    # a weight-2 Pauli word's estimator has variance at most 9 per snapshot
    estimate = qml.ClassicalShadow(bits, recipes).expval(h)
    assert abs(estimate - exact(0.5)) < 5 * np.sqrt(2 * 9 / 4000)
    expval = qml.set_shots(qml.QNode(lambda x: (circuit(x), qml.shadow_expval(h))[1],
                                     qml.device(device, wires=2, seed=3)), 4000)
    x = pnp.array(0.5, requires_grad=True)
    assert abs(expval(x) - exact(0.5)) < 5 * np.sqrt(2 * 9 / 4000)
    assert abs(qml.grad(expval)(x) - qml.grad(exact)(x)) < 10 * np.sqrt(2 * 9 / 4000)


def test_captured_programs_are_refused_in_one_line():
    """Program capture (PennyLane's qml.capture, which pins JAX 0.7.1; the test
    environment has 0.7.2, where it cannot be enabled) reaches eval_jaxpr:
    a DeviceError naming what to do, not a bare NotImplementedError."""
    for name in ("qmlsim.qubit", "qmlsim.mixed"):
        with pytest.raises(qml.exceptions.DeviceError, match="capture.disable"):
            qml.device(name, wires=1).eval_jaxpr(None, [])
