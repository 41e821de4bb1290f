#!/usr/bin/env python3
"""qmlsim.qiskit against Qiskit Aer on the Qiskit Machine Learning workloads.

Rows: an EstimatorQNN (zz_feature_map + real_amplitudes(reps=3), one <Z...Z>
readout) forward pass and weight gradient for a batch of 32 inputs at 8, 12,
16 and 20 qubits (--qubits), its forward pass alone (--forward), and a QAOA
Max-Cut cost and gradient at 18 nodes (QAOAAnsatz, p = 2, the graph of
reference job 1; --graph "" leaves it out). Columns: qmlsim's Estimator with its
adjoint EstimatorGradient; Aer's EstimatorV2 (exact, default_precision 0) with
ParamShiftEstimatorGradient and with LinCombEstimatorGradient. Agreement first
(values and gradients to 1e-8), then timed runs alternating between the
columns; medians, and each peer's time over qmlsim's (above 1: qmlsim is faster).

    python bench/peers/qiskit_workloads.py [--reps 3] [--qubits 8,12,16,20] [--forward 8,12,16,20]
        [--batch 32] [--skip "Aer + lin comb"]

The environment needs qmlsim (pip install .), qiskit, qiskit-aer and
qiskit-machine-learning (bench/peers/requirements.txt).
"""
import argparse
import statistics
import sys
import time

import numpy as np
from qiskit import transpile
from qiskit.circuit.library import QAOAAnsatz, real_amplitudes, zz_feature_map
from qiskit.quantum_info import SparsePauliOp
from qiskit_aer.primitives import EstimatorV2 as AerEstimator
from qiskit_machine_learning.gradients import (LinCombEstimatorGradient,
                                               ParamShiftEstimatorGradient)
from qiskit_machine_learning.neural_networks import EstimatorQNN

from qmlsim.qiskit import Estimator, EstimatorGradient


def peers():
    """name -> (estimator, gradient)."""
    ours = Estimator()
    aer = AerEstimator(options={"default_precision": 0})
    return {
        "qmlsim (adjoint)": (ours, EstimatorGradient(ours)),
        "Aer + param shift": (aer, ParamShiftEstimatorGradient(aer)),
        "Aer + lin comb": (aer, LinCombEstimatorGradient(aer)),
    }


def qnn_row(n, batch, backward=True):
    fm, ansatz = zz_feature_map(n), real_amplitudes(n, reps=3)
    circuit = fm.compose(ansatz)
    observable = SparsePauliOp("Z" * n)
    rng = np.random.default_rng(n)
    x = rng.uniform(0, np.pi, (batch, n))
    w = rng.uniform(-np.pi, np.pi, ansatz.num_parameters)

    def make(estimator, gradient):
        qnn = EstimatorQNN(circuit=circuit, observables=observable, input_params=fm.parameters,
                           weight_params=ansatz.parameters, estimator=estimator,
                           gradient=gradient, default_precision=0)
        if backward:
            return lambda: (qnn.forward(x, w), qnn.backward(x, w)[1])
        return lambda: qnn.forward(x, w)

    what = "forward + weight gradient" if backward else "forward only"
    return f"EstimatorQNN {what}, {n} qubits, batch {batch}", make


def qaoa_row(graph_path):
    edges = [tuple(map(int, line.split()[:2])) for line in open(graph_path)
             if line.strip() and not line.startswith("#")]
    n = 1 + max(max(e) for e in edges)
    h = SparsePauliOp.from_sparse_list([("ZZ", [i, j], 0.5) for i, j in edges], num_qubits=n)
    # Unrolled to gates Aer and parameter shift know (qmlsim takes either form).
    ansatz = transpile(QAOAAnsatz(h, reps=2), basis_gates=["h", "rx", "rzz"], optimization_level=0)
    p = np.random.default_rng(1).uniform(0, 0.01, ansatz.num_parameters)

    def make(estimator, gradient):
        def run():
            value = estimator.run([(ansatz, h, p)]).result()[0].data.evs
            return value, gradient.run([ansatz], [h], [p]).result().gradients[0]
        return run

    return f"QAOA Max-Cut cost + gradient, {n} nodes", make


def flat(x):
    if isinstance(x, (tuple, list)):
        return np.concatenate([flat(v) for v in x])
    return np.asarray(x, dtype=float).reshape(-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--qubits", default="8,12,16,20")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--graph", default="examples/data/graphs/gnm_n18_m24_seed1967.edges")
    ap.add_argument("--forward", default="8,12,16,20", help="qubits of the forward-only rows")
    ap.add_argument("--skip", default="", help="columns to leave out, comma-separated")
    args = ap.parse_args()
    columns = {k: v for k, v in peers().items() if k not in args.skip.split(",")}
    rows = [qnn_row(int(n), args.batch) for n in args.qubits.split(",") if n]
    rows += [qnn_row(int(n), args.batch, False) for n in args.forward.split(",") if n]
    if args.graph:
        rows.append(qaoa_row(args.graph))
    names = list(columns)
    print("| workload | " + " | ".join(f"{c} (s)" for c in names) + " | " +
          " | ".join(f"{c} / qmlsim" for c in names[1:]) + " |")
    print("| --- " * (2 * len(names)) + "|")
    for title, make in rows:
        runs = {c: make(*columns[c]) for c in names}
        first = {}
        for c in names:  # agreement, and a warm-up; a peer that cannot run the row is noted
            try:
                first[c] = flat(runs[c]())
            except Exception as e:
                print(f"  ({title}: {c} fails: {type(e).__name__}: {str(e)[:120]})", file=sys.stderr)
        ran = [c for c in names if c in first]
        ref = first[names[0]]
        for c in ran[1:]:
            err = np.abs(first[c] - ref).max()
            if not err < 1e-8:
                sys.exit(f"{title}: {c} differs from qmlsim by {err:.2e}")
        times = {c: [] for c in ran}
        for _ in range(args.reps):
            for c in ran:
                t0 = time.perf_counter()
                runs[c]()
                times[c].append(time.perf_counter() - t0)
        med = {c: statistics.median(times[c]) for c in ran}
        show = [f"{med[c]:.3f}" if c in med else "fails" for c in names]
        ratio = [f"{med[c] / med[names[0]]:.1f}x" if c in med else "-" for c in names[1:]]
        print(f"| {title} | " + " | ".join(show) + " | " + " | ".join(ratio) + " |", flush=True)


if __name__ == "__main__":
    main()
