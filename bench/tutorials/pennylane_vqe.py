"""PennyLane's VQE demo (`tutorial_vqe`), as written but for the device line:
H2's Hamiltonian from `qml.qchem.Molecule`, a Hartree-Fock state and one
DoubleExcitation, 100 steps of gradient descent. The demo runs it on
lightning.qubit."""
SDK = "PennyLane"
TITLE = "VQE demo (`tutorial_vqe`), H2 from `qml.qchem.Molecule`, 4 qubits, 100 steps"
DEVICES = ("qmlsim.qubit", "lightning.qubit")
REQUIRES = ("pennylane", "pennylane_lightning")  # the packages it needs besides qmlsim
TOLERANCE = 1e-8


def run(device_name):
    import pennylane as qml
    from pennylane import numpy as np

    symbols = ["H", "H"]
    coordinates = np.array([[0.0, 0.0, -0.6614], [0.0, 0.0, 0.6614]])
    molecule = qml.qchem.Molecule(symbols, coordinates)
    H, qubits = qml.qchem.molecular_hamiltonian(molecule)
    dev = qml.device(device_name, wires=qubits)
    electrons = 2
    hf = qml.qchem.hf_state(electrons, qubits)

    @qml.qnode(dev)
    def circuit(param, wires):
        qml.BasisState(hf, wires=wires)
        qml.DoubleExcitation(param, wires=[0, 1, 2, 3])
        return qml.expval(H)

    def cost_fn(param):
        return circuit(param, wires=range(qubits))

    opt = qml.GradientDescentOptimizer(stepsize=0.4)
    theta = np.array(0.0, requires_grad=True)
    energy = [cost_fn(theta)]
    angle = [theta]
    for _ in range(100):
        theta, prev_energy = opt.step_and_cost(cost_fn, theta)
        energy.append(cost_fn(theta))
        angle.append(theta)
    return {"energy": energy, "angle": angle}
