"""PennyLane's barren-plateaus demo (`tutorial_barren_plateaus`), as written but
for the device line: random RX/RY/RZ layers on 2-6 qubits after RY(pi/4), a CZ
chain, the expectation value of the dense projector |0><0| as a
`qml.Hermitian` on every wire, and the gradient's first entry over random
circuits (the demo takes 200 samples per width; 20 here, seeded). The demo
runs it on default.qubit."""
SDK = "PennyLane"
TITLE = "barren plateaus demo (`tutorial_barren_plateaus`), dense Hermitian, 2-6 qubits, 20 samples"
DEVICES = ("qmlsim.qubit", "default.qubit")
REQUIRES = ("pennylane",)
TOLERANCE = 1e-10


def run(device_name):
    import pennylane as qml
    from pennylane import numpy as np

    np.random.seed(42)
    gate_set = [qml.RX, qml.RY, qml.RZ]

    def rand_circuit(params, random_gate_sequence=None, num_qubits=None):
        for i in range(num_qubits):
            qml.RY(np.pi / 4, wires=i)
        for i in range(num_qubits):
            random_gate_sequence[i](params[i], wires=i)
        for i in range(num_qubits - 1):
            qml.CZ(wires=[i, i + 1])
        H = np.zeros((2 ** num_qubits, 2 ** num_qubits))
        H[0, 0] = 1
        wirelist = [i for i in range(num_qubits)]
        return qml.expval(qml.Hermitian(H, wirelist))

    variances, costs = [], []
    for num_qubits in [2, 3, 4, 5, 6]:
        dev = qml.device(device_name, wires=num_qubits)
        grad_vals = []
        for _ in range(20):
            gate_sequence = {i: np.random.choice(gate_set) for i in range(num_qubits)}
            qcircuit = qml.QNode(rand_circuit, dev, interface="autograd")
            grad = qml.grad(qcircuit, argnums=0)
            params = np.random.uniform(0, 2 * np.pi, size=num_qubits)
            gradient = grad(params, random_gate_sequence=gate_sequence, num_qubits=num_qubits)
            grad_vals.append(gradient[-1])
            costs.append(qcircuit(params, random_gate_sequence=gate_sequence,
                                  num_qubits=num_qubits))
        variances.append(np.var(grad_vals))
    return {"variances": np.array(variances), "costs": np.array(costs)}
