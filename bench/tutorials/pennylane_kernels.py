"""PennyLane's kernels demo (`tutorial_kernels_module`, "Training and evaluating
quantum kernels"), as written but for the device line: the double-cake data,
the layered ansatz and its adjoint, the initial kernel matrix, an SVM on it,
kernel-target alignment, and alignment training by gradient descent on random
subsets of four points (20 steps of the demo's 500; the decision-boundary plot
left out). default.qubit differentiates by backpropagation, qmlsim.qubit by
its adjoint (qml.probs as Z strings)."""
import numpy as onp

SDK = "PennyLane"
TITLE = "kernels demo (`tutorial_kernels_module`), 5 qubits, 6 layers, 20 training steps"
DEVICES = ("qmlsim.qubit", "default.qubit")
REQUIRES = ("pennylane", "sklearn")  # the packages it needs besides qmlsim
TOLERANCE = 1e-8
STEPS = 20


def _circular_data(num_sectors):
    center_indices = onp.array(range(0, num_sectors))
    sector_angle = 2 * onp.pi / num_sectors
    angles = (center_indices + 0.5) * sector_angle
    labels = 2 * onp.remainder(onp.floor_divide(angles, sector_angle), 2) - 1
    return 0.7 * onp.cos(angles), 0.7 * onp.sin(angles), labels


def make_double_cake_data(num_sectors):
    x1, y1, labels1 = _circular_data(num_sectors)
    x2, y2, labels2 = _circular_data(num_sectors)
    x = onp.hstack([x1, 0.5 * x2])
    y = onp.hstack([y1, 0.5 * y2])
    return onp.vstack([x, y]).T, onp.hstack([labels1, -1 * labels2]).astype(int)


def run(device_name):
    import pennylane as qml
    from pennylane import numpy as np
    from sklearn.svm import SVC

    np.random.seed(1359)
    X, Y = make_double_cake_data(3)

    def layer(x, params, wires, i0=0, inc=1):
        i = i0
        for j, wire in enumerate(wires):
            qml.Hadamard(wires=[wire])
            qml.RZ(x[i % len(x)], wires=[wire])
            i += inc
            qml.RY(params[0, j], wires=[wire])
        for j in range(len(wires)):  # the demo's qml.broadcast(CRZ, pattern="ring")
            qml.CRZ(params[1][j], wires=[wires[j], wires[(j + 1) % len(wires)]])

    def ansatz(x, params, wires):
        for j, layer_params in enumerate(params):
            layer(x, layer_params, wires, i0=j * len(wires))

    adjoint_ansatz = qml.adjoint(ansatz)

    def random_params(num_wires, num_layers):
        return np.random.uniform(0, 2 * np.pi, (num_layers, 2, num_wires), requires_grad=True)

    dev = qml.device(device_name, wires=5, shots=None)
    wires = dev.wires.tolist()

    @qml.qnode(dev)
    def kernel_circuit(x1, x2, params):
        ansatz(x1, params, wires=wires)
        adjoint_ansatz(x2, params, wires=wires)
        return qml.probs(wires=wires)

    def kernel(x1, x2, params):
        return kernel_circuit(x1, x2, params)[0]

    init_params = random_params(num_wires=5, num_layers=6)
    init_kernel = lambda x1, x2: kernel(x1, x2, init_params)  # noqa: E731
    K_init = qml.kernels.square_kernel_matrix(X, init_kernel, assume_normalized_kernel=True)
    svm = SVC(kernel=lambda X1, X2: qml.kernels.kernel_matrix(X1, X2, init_kernel)).fit(X, Y)
    accuracy_init = 1 - onp.count_nonzero(svm.predict(X) - Y) / len(Y)

    def target_alignment(X, Y, kernel, assume_normalized_kernel=False, rescale_class_labels=True):
        K = qml.kernels.square_kernel_matrix(
            X, kernel, assume_normalized_kernel=assume_normalized_kernel)
        if rescale_class_labels:
            nplus = np.count_nonzero(np.array(Y) == 1)
            nminus = len(Y) - nplus
            _Y = np.array([y / nplus if y == 1 else y / nminus for y in Y])
        else:
            _Y = np.array(Y)
        T = np.outer(_Y, _Y)
        inner_product = np.sum(K * T)
        norm = np.sqrt(np.sum(K * K) * np.sum(T * T))
        return inner_product / norm

    kta_init = qml.kernels.target_alignment(X, Y, init_kernel, assume_normalized_kernel=True)
    params = init_params
    opt = qml.GradientDescentOptimizer(0.2)
    alignments = []
    for i in range(STEPS):
        subset = np.random.choice(list(range(len(X))), 4)
        cost = lambda _params: -target_alignment(  # noqa: E731
            X[subset], Y[subset], lambda x1, x2: kernel(x1, x2, _params),
            assume_normalized_kernel=True)
        params = opt.step(cost, params)
        if (i + 1) % 10 == 0:
            alignments.append(target_alignment(
                X, Y, lambda x1, x2: kernel(x1, x2, params), assume_normalized_kernel=True))
    trained_kernel = lambda x1, x2: kernel(x1, x2, params)  # noqa: E731
    svm_trained = SVC(kernel=lambda X1, X2: qml.kernels.kernel_matrix(X1, X2, trained_kernel))
    svm_trained.fit(X, Y)
    accuracy_trained = 1 - onp.count_nonzero(svm_trained.predict(X) - Y) / len(Y)
    return {"K_init": K_init, "accuracy_init": accuracy_init, "kta_init": kta_init,
            "params": params, "alignments": alignments, "accuracy_trained": accuracy_trained}
