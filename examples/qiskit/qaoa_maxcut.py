#!/usr/bin/env python3
"""QAOA Max-Cut as a Qiskit user writes it: ``QAOAAnsatz`` on the graph's cost
operator, p = 2, the cost <H> from an Estimator and its gradient from an
estimator gradient, plain gradient descent (step 0.1, as reference job 1 in
docs/workloads.md). The estimator is an argument; only the choice changes:

    python examples/qiskit/qaoa_maxcut.py --estimator qmlsim \
        --graph examples/data/graphs/gnm_n18_m24_seed1967.edges [--steps 5]

``--estimator qmlsim``: qmlsim.qiskit.Estimator with EstimatorGradient (adjoint);
``reference``: Qiskit's StatevectorEstimator with ParamShiftEstimatorGradient;
``aer``: qiskit-aer's EstimatorV2 (exact) with ParamShiftEstimatorGradient.
"""
import argparse
import time

import numpy as np
from qiskit.circuit.library import QAOAAnsatz
from qiskit.quantum_info import SparsePauliOp
from qiskit_machine_learning.gradients import ParamShiftEstimatorGradient


def read_graph(path):
    return [tuple(map(int, line.split()[:2])) for line in open(path)
            if line.strip() and not line.startswith("#")]


def cost_operator(edges):
    """sum over edges of (Z_i Z_j - 1) / 2: minus the cut size, as PennyLane's maxcut."""
    n = 1 + max(max(e) for e in edges)
    terms = [("ZZ", [i, j], 0.5) for i, j in edges] + [("I" * n, list(range(n)), -0.5 * len(edges))]
    return SparsePauliOp.from_sparse_list(terms, num_qubits=n)


def primitives(name):
    if name == "qmlsim":
        from qmlsim.qiskit import Estimator, EstimatorGradient
        estimator = Estimator()
        return estimator, EstimatorGradient(estimator)
    if name == "aer":
        from qiskit_aer.primitives import EstimatorV2
        estimator = EstimatorV2(options={"default_precision": 0})
    else:
        from qiskit.primitives import StatevectorEstimator
        estimator = StatevectorEstimator()
    return estimator, ParamShiftEstimatorGradient(estimator)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--estimator", choices=["qmlsim", "reference", "aer"], default="qmlsim")
    ap.add_argument("--graph", required=True)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--reps", type=int, default=2, help="QAOA layers p")
    args = ap.parse_args()
    hamiltonian = cost_operator(read_graph(args.graph))
    ansatz = QAOAAnsatz(hamiltonian, reps=args.reps)
    estimator, gradient = primitives(args.estimator)
    params = 0.01 * np.random.default_rng(1967).uniform(size=ansatz.num_parameters)

    def cost(x):
        return float(estimator.run([(ansatz, hamiltonian, x)]).result()[0].data.evs)

    print(f"{ansatz.num_qubits} qubits, {ansatz.num_parameters} parameters, {args.estimator}")
    print(f"Initial cost: {cost(params):.6f}")
    for step in range(args.steps):
        start = time.perf_counter()
        value = cost(params)
        grad = gradient.run([ansatz], [hamiltonian], [params]).result().gradients[0]
        params = params - 0.1 * grad
        print(f"Cost at step {step}: {value:.6f} ({time.perf_counter() - start:.3f} s)")
    print(f"Final cost: {cost(params):.6f}")


if __name__ == "__main__":
    main()
