"""PennyLane's noisy-circuits demo (`tutorial_noisy_circuits`), as written but
for the device line: a Bell pair's <ZZ> and density matrix, bit-flip and
depolarizing channels over a range of strengths, and fitting an amplitude-
damping strength to a measured <ZZ> = 0.7781 by gradient descent through the
channel (35 steps, as the demo)."""
SDK = "PennyLane"
TITLE = "noisy circuits demo (`tutorial_noisy_circuits`), 2 qubits, 35 training steps"
DEVICES = ("qmlsim.mixed", "default.mixed")
REQUIRES = ("pennylane",)  # the packages it needs besides qmlsim
TOLERANCE = 1e-10


def run(device_name):
    import pennylane as qml
    from pennylane import numpy as np

    dev = qml.device(device_name, wires=2)

    @qml.qnode(dev)
    def circuit():
        qml.Hadamard(wires=0)
        qml.CNOT(wires=[0, 1])
        return qml.expval(qml.PauliZ(0) @ qml.PauliZ(1))

    @qml.qnode(dev)
    def density_matrix():
        qml.Hadamard(wires=0)
        qml.CNOT(wires=[0, 1])
        return qml.state()

    @qml.qnode(dev)
    def bitflip_circuit(p):
        qml.Hadamard(wires=0)
        qml.CNOT(wires=[0, 1])
        qml.BitFlip(p, wires=0)
        qml.BitFlip(p, wires=1)
        return qml.expval(qml.PauliZ(0) @ qml.PauliZ(1))

    @qml.qnode(dev)
    def depolarizing_circuit(p):
        qml.Hadamard(wires=0)
        qml.CNOT(wires=[0, 1])
        qml.DepolarizingChannel(p, wires=0)
        qml.DepolarizingChannel(p, wires=1)
        return qml.expval(qml.PauliZ(0) @ qml.PauliZ(1))

    ps = [0.001, 0.01, 0.1, 0.2]
    out = {"bell": circuit(), "state": density_matrix(),
           "bitflip": [bitflip_circuit(p) for p in ps],
           "depolarizing": [depolarizing_circuit(p) for p in ps]}

    ev = np.tensor([0.7781], requires_grad=False)  # observed expectation value

    def sigmoid(x):
        return 1 / (1 + np.exp(-x))

    @qml.qnode(dev)
    def damping_circuit(x):
        qml.Hadamard(wires=0)
        qml.CNOT(wires=[0, 1])
        qml.AmplitudeDamping(sigmoid(x), wires=0)  # p = sigmoid(x)
        qml.AmplitudeDamping(sigmoid(x), wires=1)
        return qml.expval(qml.PauliZ(0) @ qml.PauliZ(1))

    def cost(x, target):
        return (damping_circuit(x) - target[0]) ** 2

    opt = qml.GradientDescentOptimizer(stepsize=10)
    x = np.tensor(0.0, requires_grad=True)
    costs = []
    for _ in range(35):
        (x, ev), cost_val = opt.step_and_cost(cost, x, ev)
        costs.append(cost_val)
    out.update(x=x, costs=costs, damping=sigmoid(x))
    return out
