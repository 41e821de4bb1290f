"""Parameter broadcasting and jax.vmap on qmlsim.qubit and qmlsim.mixed as one
engine call (qmlsim/_batches.py): values and gradients against default.qubit
(default.mixed for noise), with batched and shared parameters mixed; the
broadcasts the engine does not batch (matrices, states, probabilities) still
right through PennyLane's broadcast_expand."""
import numpy as np
import pennylane as qml
import pytest
from pennylane import numpy as pnp

import qmlsim

B = 4
RNG = np.random.default_rng(11)
ANGLES = RNG.uniform(-np.pi, np.pi, (B,))

# Every parametrised gate PennyLane broadcasts that the gate table runs:
# (gate, number of parameters, wires).
GATES = [
    (qml.RX, 1, 1), (qml.RY, 1, 1), (qml.RZ, 1, 1), (qml.PhaseShift, 1, 1),
    (qml.U1, 1, 1), (qml.U2, 2, 1), (qml.U3, 3, 1), (qml.Rot, 3, 1),
    (qml.CRX, 1, 2), (qml.CRY, 1, 2), (qml.CRZ, 1, 2), (qml.CRot, 3, 2),
    (qml.ControlledPhaseShift, 1, 2), (qml.IsingXX, 1, 2), (qml.IsingYY, 1, 2),
    (qml.IsingZZ, 1, 2), (qml.IsingXY, 1, 2), (qml.SingleExcitation, 1, 2),
    (qml.SingleExcitationPlus, 1, 2), (qml.SingleExcitationMinus, 1, 2),
    (qml.PSWAP, 1, 2), (qml.CPhaseShift00, 1, 2), (qml.MultiRZ, 1, 3),
    (qml.DoubleExcitation, 1, 4), (qml.OrbitalRotation, 1, 4),
]


def _layer(gate, nparams, nwires, params):
    """A circuit on 4 wires around one gate: a batched RY in front (the data),
    the gate, a shared entangler; two expectation values."""
    def circuit(x, w):
        for k in range(4):
            qml.RY(x * (k + 1) * 0.3, wires=k)
        qml.CNOT([0, 1])
        gate(*params(w), wires=list(range(nwires)))
        qml.CRZ(w[0], wires=[3, 0])
        return qml.expval(qml.Z(0) @ qml.X(1)), qml.expval(qml.Y(2) + 0.5 * qml.Z(3))
    return circuit


@pytest.mark.parametrize("gate,nparams,nwires", GATES, ids=[g[0].__name__ for g in GATES])
@pytest.mark.parametrize("batched_gate", [False, True])
def test_broadcast_values_and_gradients_match_default_qubit(gate, nparams, nwires,
                                                            batched_gate):
    """The gate's parameters shared (the data row batched) or batched
    themselves: values, the Jacobian by the batched data and the gradient of
    a mean loss by the shared weights, one engine call per evaluation."""
    def params(w):
        if batched_gate:
            return [w[1] * ANGLES + 0.1 * k for k in range(nparams)]
        return [w[1] + 0.2 * k for k in range(nparams)]
    circuit = _layer(gate, nparams, nwires, params)
    dev = qml.device("qmlsim.qubit", wires=4)
    ours = qml.QNode(circuit, dev, diff_method="adjoint")
    ref = qml.QNode(circuit, qml.device("default.qubit", wires=4), diff_method="backprop")
    x = pnp.array(ANGLES, requires_grad=True)
    w = pnp.array([0.4, -0.7], requires_grad=True)
    assert np.allclose(ours(x, w), ref(x, w), atol=1e-10)

    def loss(qnode):
        return lambda x, w: pnp.mean(qnode(x, w)[0] + 2 * qnode(x, w)[1] ** 2)
    got, want = qml.grad(loss(ours))(x, w), qml.grad(loss(ref))(x, w)
    assert np.allclose(got[0], want[0], atol=1e-10) and np.allclose(got[1], want[1], atol=1e-10)
    calls = _count_engine_calls()
    with qml.Tracker(dev) as tracker:
        ours(x, w)
    assert calls["expvals_batch"] == 1 and tracker.totals["batches"] == 1


def _count_engine_calls():
    """Counts the engine's batch calls until the test ends (a dict by name)."""
    counts = {"expvals_batch": 0, "probabilities_batch": 0, "vjp_batch": 0}
    ext = qmlsim._qmlsim
    for name in counts:
        original = getattr(ext, name)

        def counted(*args, _name=name, _original=original, **kwargs):
            counts[_name] += 1
            return _original(*args, **kwargs)
        _PATCHES.append((name, original))
        setattr(ext, name, counted)
    return counts


_PATCHES = []


@pytest.fixture(autouse=True)
def _restore_engine():
    yield
    while _PATCHES:
        name, original = _PATCHES.pop()
        setattr(qmlsim._qmlsim, name, original)


def test_a_broadcast_gradient_is_one_backward_call():
    """The gradient of a mean over 8 rows: one forward and one VJP call."""
    dev = qml.device("qmlsim.qubit", wires=3)

    @qml.qnode(dev, diff_method="adjoint")
    def f(x, w):
        qml.AngleEmbedding(x, wires=range(3))
        qml.StronglyEntanglingLayers(w, wires=range(3))
        return qml.expval(qml.Z(0))

    x = pnp.array(RNG.uniform(0, np.pi, (8, 3)), requires_grad=False)
    w = pnp.array(RNG.uniform(0, np.pi, (2, 3, 3)), requires_grad=True)
    calls = _count_engine_calls()
    grad = qml.grad(lambda w: pnp.mean(f(x, w)))(w)
    assert calls == {"expvals_batch": 1, "probabilities_batch": 0, "vjp_batch": 1}
    ref = qml.QNode(f.func, qml.device("default.qubit", wires=3), diff_method="backprop")
    assert np.allclose(grad, qml.grad(lambda w: pnp.mean(ref(x, w)))(w), atol=1e-10)


@pytest.mark.parametrize("device,ref", [("qmlsim.qubit", "default.qubit"),
                                        ("qmlsim.mixed", "default.mixed")])
def test_broadcast_probabilities_are_one_engine_call(device, ref):
    """A kernel's overlaps, one row against every row (probs beside an
    expectation value): the forward pass one call for each; the gradient
    through the rows one by one, as default.qubit's."""
    x = RNG.uniform(0, np.pi, (5, 3))

    def overlap(a, b, w):
        qml.AngleEmbedding(a, wires=range(3))
        qml.CRX(w, wires=[0, 2])
        if device == "qmlsim.mixed":
            qml.BitFlip(0.1, wires=1)
        qml.adjoint(qml.AngleEmbedding)(b, wires=range(3))
        return qml.probs(wires=[2, 0]), qml.expval(qml.Z(1)), qml.probs(wires=range(3))

    ours = qml.QNode(overlap, qml.device(device, wires=3), diff_method="adjoint")
    want = qml.QNode(overlap, qml.device(ref, wires=3), diff_method="backprop")
    calls = _count_engine_calls()
    got = ours(x[0], x, 0.4)
    assert calls["probabilities_batch"] == 1 and calls["expvals_batch"] == 1
    for a, b in zip(got, want(x[0], x, 0.4)):
        assert np.allclose(a, b, atol=1e-10)
    cost = lambda q: (lambda w: pnp.sum(q(x[0], x, w)[0][:, 1]))  # noqa: E731
    w = pnp.array(0.4, requires_grad=True)
    assert np.allclose(qml.grad(cost(ours))(w), qml.grad(cost(want))(w), atol=1e-10)


def test_broadcasts_the_engine_does_not_batch_are_still_right():
    """A batched matrix, a batched state preparation and probabilities go
    through PennyLane's broadcast_expand: values and Jacobians as
    default.qubit's."""
    x = pnp.array([0.3, 1.1, -0.8], requires_grad=True)

    def circuit(x):
        qml.StatePrep(np.stack([np.array([np.cos(a), 0, 0, np.sin(a)]) for a in (0.1, 0.5, 0.9)]),
                      wires=[0, 1])
        qml.QubitUnitary(qml.math.stack([qml.RY.compute_matrix(a) for a in (0.2, 0.4, 0.6)]),
                         wires=0)
        qml.RX(x, wires=1)
        return qml.probs(wires=[0, 1]), qml.expval(qml.Z(0) @ qml.Z(1))

    ours = qml.QNode(circuit, qml.device("qmlsim.qubit", wires=2))
    ref = qml.QNode(circuit, qml.device("default.qubit", wires=2))
    for a, b in zip(ours(x), ref(x)):
        assert np.allclose(a, b, atol=1e-10)
    cost = lambda q: (lambda x: pnp.sum(q(x)[1]))  # noqa: E731
    assert np.allclose(qml.grad(cost(ours))(x), qml.grad(cost(ref))(x), atol=1e-10)


def test_noisy_broadcasts_on_qmlsim_mixed_match_default_mixed():
    """qmlsim.mixed: batched angles through channels in one engine call;
    values and the gradient by the shared angle and channel strength
    (PennyLane's channels do not broadcast their own parameters)."""
    def circuit(x, p, w):
        qml.RY(x, wires=0)
        qml.CNOT([0, 1])
        qml.DepolarizingChannel(p, wires=1)
        qml.AmplitudeDamping(0.1, wires=0)
        qml.RX(w, wires=1)
        return qml.expval(qml.Z(0) @ qml.Z(1)), qml.expval(qml.X(1))

    dev = qml.device("qmlsim.mixed", wires=2)
    ours = qml.QNode(circuit, dev, diff_method="adjoint")
    ref = qml.QNode(circuit, qml.device("default.mixed", wires=2), diff_method="backprop")
    x = pnp.array([0.2, 1.0, 2.5], requires_grad=False)
    p = pnp.array(0.15, requires_grad=True)
    w = pnp.array(0.7, requires_grad=True)
    calls = _count_engine_calls()
    assert np.allclose(ours(x, p, w), ref(x, p, w), atol=1e-10)
    assert calls["expvals_batch"] == 1
    cost = lambda q: (lambda p, w: pnp.sum(q(x, p, w)[0] * q(x, p, w)[1]))  # noqa: E731
    got, want = qml.grad(cost(ours))(p, w), qml.grad(cost(ref))(p, w)
    assert np.allclose(got, want, atol=1e-10)


@pytest.mark.parametrize("device_vjp", [False, True])
def test_jax_vmap_and_jit_match_default_qubit(device_vjp):
    """jax.jit(jax.vmap(qnode)): the forward pass one engine call; jax.grad
    through it (the device's VJP one call with device_vjp=True, PennyLane's
    JVP boundary row by row otherwise); a broadcast passed to a jitted QNode
    directly too."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def circuit(x, w):
        qml.AngleEmbedding(x, wires=range(3))
        qml.StronglyEntanglingLayers(w, wires=range(3))
        return qml.expval(qml.Z(0)), qml.expval(qml.X(1) @ qml.Y(2))

    ours = qml.QNode(circuit, qml.device("qmlsim.qubit", wires=3), interface="jax",
                     diff_method="adjoint", device_vjp=device_vjp)
    ref = qml.QNode(circuit, qml.device("default.qubit", wires=3), interface="jax",
                    diff_method="backprop")
    x = jnp.array(RNG.uniform(0, np.pi, (6, 3)))
    w = jnp.array(RNG.uniform(0, np.pi, (2, 3, 3)))
    calls = _count_engine_calls()
    got = jax.jit(jax.vmap(ours, in_axes=(0, None)))(x, w)
    assert calls["expvals_batch"] == 1
    want = jax.jit(jax.vmap(ref, in_axes=(0, None)))(x, w)
    assert np.allclose(np.array(got), np.array(want), atol=1e-10)

    def loss(q):
        return lambda x, w: jnp.mean(jax.vmap(q, in_axes=(0, None))(x, w)[0] ** 2
                                     + jax.vmap(q, in_axes=(0, None))(x, w)[1])
    for argnums in (0, 1):
        g = jax.jit(jax.grad(loss(ours), argnums=argnums))(x, w)
        assert np.allclose(g, jax.grad(loss(ref), argnums=argnums)(x, w), atol=1e-10)
    direct = lambda q: (lambda x, w: jnp.sum(q(x, w)[0]))  # noqa: E731
    assert np.allclose(jax.jit(jax.grad(direct(ours), argnums=1))(x, w),
                       jax.grad(direct(ref), argnums=1)(x, w), atol=1e-10)
