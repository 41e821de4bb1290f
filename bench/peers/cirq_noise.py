#!/usr/bin/env python3
"""qmlsim.cirq.DensityMatrixSimulator against cirq.DensityMatrixSimulator with
a noise model (depolarizing 0.01 after every moment), expectation values of a
random 20-moment circuit at 8 and 10 qubits, from the same Cirq objects; the
values agree first (1e-4: both in complex64), then the best of 3 runs (Cirq's:
one run, minutes at 10 qubits).

    python bench/peers/cirq_noise.py [--qubits 8,10]
"""
import argparse
import time

import cirq
import numpy as np

from qmlsim.cirq import DensityMatrixSimulator


def best(f, reps):
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qubits", default="8,10", help="comma-separated qubit counts")
    args = ap.parse_args()
    print(f"cirq {cirq.__version__}")
    for n in (int(x) for x in args.qubits.split(",")):
        q = cirq.LineQubit.range(n)
        circuit = cirq.testing.random_circuit(q, n_moments=20, op_density=0.8, random_state=n)
        observables = [cirq.Z(q[0]) * cirq.Z(q[1]), cirq.X(q[n - 1])]
        ours = DensityMatrixSimulator(noise=cirq.depolarize(0.01))
        ref = cirq.DensityMatrixSimulator(noise=cirq.depolarize(0.01))
        a = ours.simulate_expectation_values(circuit, observables)
        b = ref.simulate_expectation_values(circuit, observables)
        if not np.allclose(a, b, atol=1e-4):
            raise SystemExit(f"n={n}: values differ: {a} vs {b}")
        t_ours = best(lambda: ours.simulate_expectation_values(circuit, observables), 3)
        t_ref = best(lambda: ref.simulate_expectation_values(circuit, observables), 1)
        print(f"n={n}: qmlsim.cirq {t_ours * 1e3:.1f} ms, cirq.DensityMatrixSimulator "
              f"{t_ref * 1e3:.0f} ms: {t_ref / t_ours:.0f}x")


if __name__ == "__main__":
    main()
