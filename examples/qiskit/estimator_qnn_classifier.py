#!/usr/bin/env python3
"""A Qiskit Machine Learning classifier trained with PyTorch: an EstimatorQNN
(zz_feature_map + real_amplitudes) behind a TorchConnector, on two cultivars of
the wine data set (4 features scaled into [0, 1]), Adam, binary cross-entropy on the
readout <Z0>. The estimator is an argument; only the choice changes:

    python examples/qiskit/estimator_qnn_classifier.py --estimator qmlsim \
        --data examples/data/wine.csv [--epochs 15]

``--estimator qmlsim``: qmlsim.qiskit.Estimator with EstimatorGradient (adjoint);
``reference``: Qiskit's StatevectorEstimator with ParamShiftEstimatorGradient.
"""
import argparse
import time

import numpy as np
import torch
from qiskit.circuit.library import real_amplitudes, zz_feature_map
from qiskit.quantum_info import SparsePauliOp
from qiskit_machine_learning.connectors import TorchConnector
from qiskit_machine_learning.gradients import ParamShiftEstimatorGradient
from qiskit_machine_learning.neural_networks import EstimatorQNN

FEATURES = 4


def read_wine(path):
    """Cultivars 0 and 1, the first FEATURES columns scaled into [0, 1]; labels 0/1."""
    rows = [line.strip().split(",") for line in open(path)
            if line.strip() and not line.startswith("#") and not line.startswith("alcohol")]
    rows = [r for r in rows if r[-1] in ("0", "1")]
    x = np.array([[float(v) for v in r[:FEATURES]] for r in rows])
    x = (x - x.min(axis=0)) / (x.max(axis=0) - x.min(axis=0))  # into [0, 1]
    y = np.array([float(r[-1]) for r in rows])
    return x, y


def primitives(name):
    if name == "qmlsim":
        from qmlsim.qiskit import Estimator, EstimatorGradient
        estimator = Estimator()
        return estimator, EstimatorGradient(estimator)
    from qiskit.primitives import StatevectorEstimator
    estimator = StatevectorEstimator()
    return estimator, ParamShiftEstimatorGradient(estimator)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--estimator", choices=["qmlsim", "reference"], default="qmlsim")
    ap.add_argument("--data", default="examples/data/wine.csv")
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    x, y = read_wine(args.data)
    rng = np.random.default_rng(7)
    order = rng.permutation(len(y))
    split = int(0.75 * len(y))
    train, test = order[:split], order[split:]

    fm, ansatz = zz_feature_map(FEATURES, reps=1), real_amplitudes(FEATURES, reps=2)
    estimator, gradient = primitives(args.estimator)
    qnn = EstimatorQNN(circuit=fm.compose(ansatz), observables=SparsePauliOp("I" * (FEATURES - 1) + "Z"),
                       input_params=fm.parameters, weight_params=ansatz.parameters,
                       estimator=estimator, gradient=gradient, default_precision=0)
    torch.manual_seed(7)
    model = TorchConnector(qnn, initial_weights=0.1 * rng.standard_normal(qnn.num_weights))
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    xt, yt = torch.tensor(x, dtype=torch.float64), torch.tensor(y, dtype=torch.float64)

    def probability(rows):
        return (1 - model(xt[rows]).reshape(-1)) / 2  # <Z0> = 1 - 2 P(class 1)

    for epoch in range(args.epochs):
        start = time.perf_counter()
        perm = rng.permutation(train)
        for k in range(0, len(perm), args.batch):
            rows = perm[k:k + args.batch]
            opt.zero_grad()
            p = probability(rows).clamp(1e-6, 1 - 1e-6)
            loss = torch.nn.functional.binary_cross_entropy(p, yt[rows].to(p.dtype))
            loss.backward()
            opt.step()
        with torch.no_grad():
            acc = ((probability(test) > 0.5).double() == yt[test]).double().mean().item()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}, test accuracy {acc:.3f} "
              f"({time.perf_counter() - start:.2f} s)")


if __name__ == "__main__":
    main()
