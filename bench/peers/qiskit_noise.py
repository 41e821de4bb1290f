#!/usr/bin/env python3
"""Noisy Qiskit Machine Learning workloads: qmlsim.qiskit against Aer's
density-matrix EstimatorV2, with the same Aer NoiseModel.

The circuit: zz_feature_map + real_amplitudes(reps=2) transpiled to rz, sx, x,
cx; depolarizing plus thermal relaxation on every single-qubit gate and a
two-qubit depolarizing error on every cx; one <Z...Z> readout. Rows: the
forward pass of `batch` bindings, and the weight-and-input gradient of
`grad_batch` bindings (qmlsim's adjoint EstimatorGradient against Aer with
ParamShiftEstimatorGradient). Values and gradients agree first (1e-8); then
timed runs alternate; medians, and Aer's time over qmlsim's (above 1: qmlsim
is faster).

    python bench/peers/qiskit_noise.py [--qubits 6,8] [--batch 32] [--grad-batch 4] [--reps 3]

--grad-batch 0 leaves the gradient rows out (Aer's parameter shift takes
minutes per binding at 12 qubits).
"""
import argparse
import statistics
import time
import warnings

import numpy as np
from qiskit import transpile
from qiskit.circuit.library import real_amplitudes, zz_feature_map
from qiskit.quantum_info import SparsePauliOp
from qiskit_aer.noise import NoiseModel, depolarizing_error, thermal_relaxation_error
from qiskit_aer.primitives import EstimatorV2 as AerEstimator
from qiskit_machine_learning.gradients import ParamShiftEstimatorGradient

import qmlsim.qiskit as qq

warnings.filterwarnings("ignore")


def workload(n):
    qc = transpile(zz_feature_map(n, reps=1).compose(real_amplitudes(n, reps=2)),
                   basis_gates=["rz", "sx", "x", "cx"], optimization_level=0)
    nm = NoiseModel()
    one = depolarizing_error(0.001, 1).compose(thermal_relaxation_error(50, 40, 0.05))
    nm.add_all_qubit_quantum_error(one, ["sx", "x"])
    nm.add_all_qubit_quantum_error(depolarizing_error(0.01, 2), ["cx"])
    return qc, nm, SparsePauliOp("Z" * n)


def median_time(f, reps):
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qubits", default="6,8")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--grad-batch", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    print("| qubits | ops | row | Aer density matrix (s) | qmlsim (s) | Aer / qmlsim |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n in (int(q) for q in args.qubits.split(",")):
        qc, nm, obs = workload(n)
        vals = np.random.default_rng(1).uniform(-1, 1, (args.batch, qc.num_parameters))
        aer = AerEstimator(options={"backend_options": {"noise_model": nm,
                                                        "method": "density_matrix"}})
        mine = qq.Estimator(noise_model=nm)
        a = aer.run([(qc, obs, vals)]).result()[0].data.evs
        m = mine.run([(qc, obs, vals)]).result()[0].data.evs
        assert np.max(np.abs(a - m)) < 1e-8, np.max(np.abs(a - m))
        timed = [(f"forward, {args.batch} bindings",
                  lambda: aer.run([(qc, obs, vals)]).result(),
                  lambda: mine.run([(qc, obs, vals)]).result())]
        if args.grad_batch > 0:
            ga, gm = ParamShiftEstimatorGradient(aer), qq.EstimatorGradient(mine)
            rows = list(vals[:args.grad_batch])
            circuits, observables = [qc] * len(rows), [obs] * len(rows)
            da = ga.run(circuits, observables, rows).result().gradients
            dm = gm.run(circuits, observables, rows).result().gradients
            assert max(np.max(np.abs(x - y)) for x, y in zip(da, dm)) < 1e-8
            timed.append((f"gradient ({qc.num_parameters} parameters), {args.grad_batch} bindings",
                          lambda: ga.run(circuits, observables, rows).result(),
                          lambda: gm.run(circuits, observables, rows).result()))
        for row, fa, fm in timed:
            ta = median_time(fa, args.reps)
            tm = median_time(fm, args.reps)
            print(f"| {n} | {len(qc.data)} | {row} | {ta:.3f} | {tm:.3f} | {ta / tm:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()
