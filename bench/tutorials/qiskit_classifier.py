"""Qiskit Machine Learning's classifier tutorial (`02_neural_network_classifier_
and_regressor`), its EstimatorQNN part, as written but for the estimator line:
20 random points in 2 dimensions labelled by the sign of their sum, a
`qnn_circuit` (ZZ feature map, real_amplitudes), a `NeuralNetworkClassifier`
trained by COBYLA (60 iterations), its score. The tutorial's estimator is
Qiskit's reference `StatevectorEstimator`, seeded here on both sides: the
QNN's default precision (1/64) adds Gaussian noise to every value. The QNN
differentiates by its default (the parameter shift); COBYLA needs no gradient."""
SDK = "Qiskit ML"
TITLE = "classifier tutorial (`02_neural_network_classifier_and_regressor`), EstimatorQNN, COBYLA 60"
DEVICES = ("qmlsim.qiskit", "qiskit.primitives")
REQUIRES = ("qiskit", "qiskit_machine_learning")  # the packages it needs besides qmlsim
TOLERANCE = 1e-8


def run(estimator_module):
    import numpy as np
    from qiskit_machine_learning.algorithms.classifiers import NeuralNetworkClassifier
    from qiskit_machine_learning.circuit.library import qnn_circuit
    from qiskit_machine_learning.neural_networks import EstimatorQNN
    from qiskit_machine_learning.optimizers import COBYLA
    from qiskit_machine_learning.utils import algorithm_globals

    if estimator_module == "qmlsim.qiskit":
        from qmlsim.qiskit import Estimator
    else:
        from qiskit.primitives import StatevectorEstimator as Estimator

    algorithm_globals.random_seed = 42
    num_inputs, num_samples = 2, 20
    X = 2 * algorithm_globals.random.random([num_samples, num_inputs]) - 1
    y01 = 1 * (np.sum(X, axis=1) >= 0)
    y = 2 * y01 - 1
    qc, input_params, weight_params = qnn_circuit(num_qubits=2)
    estimator_qnn = EstimatorQNN(circuit=qc, input_params=input_params,
                                 weight_params=weight_params, estimator=Estimator(seed=42))
    forward = estimator_qnn.forward(X[0, :], algorithm_globals.random.random(
        estimator_qnn.num_weights))
    objective = []
    classifier = NeuralNetworkClassifier(
        estimator_qnn, optimizer=COBYLA(maxiter=60),
        callback=lambda weights, value: objective.append(value))
    classifier.fit(X, y)
    # COBYLA branches on comparisons of objective values: rounding-level
    # differences (1e-16) between two exact simulators change one of its steps
    # after about 50 evaluations, and the trajectories part from there.
    return {"forward": forward, "objective (first 50)": objective[:50],
            "score": classifier.score(X, y), "predictions": classifier.predict(X)}
