"""qmlsim.qubit and qmlsim.mixed under PennyLane's TensorFlow interface
(scripts/python_test_tfq.sh runs this, in the TensorFlow environment): every
measurement the devices differentiate by the adjoint (expval, var, probs,
state, density_matrix; on qmlsim.mixed a trained channel strength too),
through tf.GradientTape, against default.qubit's and default.mixed's
backprop under autograd, with the adjoint's call counts (no parameter-shift
executions)."""
import numpy as np
import pennylane as qml
import pytest
from pennylane import numpy as pnp

tf = pytest.importorskip("tensorflow")

RNG = np.random.default_rng(3)
W8 = RNG.normal(size=8) * (1 + 0.4j)
W4 = RNG.normal(size=(4, 4)) * (1 - 0.7j)
PROBS = np.array([0.1, 0.4, -0.3, 0.8])


def gates(x):
    qml.RY(x[0], wires=0)
    qml.RX(x[1], wires=1)
    qml.CNOT(wires=[0, 1])
    qml.RZ(x[2], wires=2)
    qml.Hadamard(wires=2)
    qml.CRY(x[1], wires=[2, 0])
    qml.IsingXX(x[2], wires=[1, 2])


# name -> (the measurements, a real cost of their results)
COSTS = {
    "expval and var": (lambda: (qml.expval(qml.Z(0) @ qml.X(1)), qml.var(qml.X(2))),
                       lambda r: r[0] + 2 * r[1]),
    "probs": (lambda: qml.probs(wires=[0, 2]), lambda r: qml.math.sum(r * PROBS)),
    "state": (lambda: qml.state(), lambda r: qml.math.real(qml.math.sum(r * W8))),
    "density_matrix": (lambda: qml.density_matrix(wires=[2, 0]),
                       lambda r: qml.math.real(qml.math.sum(r * W4))),
}


def _circuit(measure):
    def circuit(x):
        gates(x)
        return measure()
    return circuit


@pytest.mark.parametrize("name", sorted(COSTS))
def test_qubit_gradients_under_tensorflow(name):
    measure, cost = COSTS[name]
    x0 = np.array([0.4, -1.1, 0.7])
    ref = qml.QNode(_circuit(measure), qml.device("default.qubit", wires=3),
                    diff_method="backprop")
    want = qml.grad(lambda x: cost(ref(x)))(pnp.array(x0, requires_grad=True))
    dev = qml.device("qmlsim.qubit", wires=3)
    ours = qml.QNode(_circuit(measure), dev, diff_method="adjoint", interface="tf")
    x = tf.Variable(x0, dtype=tf.float64)
    with qml.Tracker(dev) as tracker:
        with tf.GradientTape() as tape:
            loss = cost(ours(x))
        got = tape.gradient(loss, x)
    assert np.allclose(float(loss), cost(ref(x0)), atol=1e-12)
    assert np.allclose(got.numpy(), want, atol=1e-10)
    assert tracker.totals["executions"] <= 2  # the parameter shift would run 7


def _damped_pair(x):
    qml.RY(x[0], wires=0)
    qml.CNOT(wires=[0, 1])
    qml.AmplitudeDamping(x[2], wires=1)
    qml.RX(x[1], wires=1)
    qml.DepolarizingChannel(0.1, wires=0)


@pytest.mark.parametrize("name", ["expval", "state"])
def test_mixed_gradients_under_tensorflow(name):
    """qmlsim.mixed: a gate angle and a channel strength trained."""
    def circuit(x):
        _damped_pair(x)
        if name == "expval":
            return qml.expval(qml.Z(0) @ qml.Z(1) + 0.5 * qml.X(1))
        return qml.state()

    cost = ((lambda r: r) if name == "expval"
            else (lambda r: qml.math.real(qml.math.sum(r * W4))))
    x0 = np.array([0.3, -0.8, 0.25])
    ref = qml.QNode(circuit, qml.device("default.mixed", wires=2), diff_method="backprop")
    want = qml.grad(lambda x: cost(ref(x)))(pnp.array(x0, requires_grad=True))
    ours = qml.QNode(circuit, qml.device("qmlsim.mixed", wires=2), diff_method="adjoint",
                     interface="tf")
    x = tf.Variable(x0, dtype=tf.float64)
    with tf.GradientTape() as tape:
        loss = cost(ours(x))
    assert np.allclose(tape.gradient(loss, x).numpy(), want, atol=1e-10)
