#!/usr/bin/env python3
"""qmlsim.cirq.DensityMatrixSimulator.simulate against cirq.DensityMatrixSimulator
on the same noisy Cirq circuit (8 qubits: 6 layers of RY, a brick wall of CZ and
depolarize(0.01)),
final density matrices checked to agree first (1e-5, complex64), then the two
timed alternately, the mean of `--reps` calls each, best of 3 rounds.

    python bench/peers/cirq_dm_simulate.py [--qubits 8] [--reps 20]
"""
import argparse
import time

import cirq
import numpy as np

from qmlsim.cirq import DensityMatrixSimulator


def circuit(n, seed=1):
    q = cirq.LineQubit.range(n)
    rng = np.random.default_rng(seed)
    c = cirq.Circuit()
    for layer in range(6):  # a brick wall: no qubits stay apart (Cirq would split them)
        c += cirq.Moment(cirq.ry(rng.uniform(0, 3)).on(x) for x in q)
        c += cirq.Moment(cirq.CZ(q[i], q[i + 1]) for i in range(layer % 2, n - 1, 2))
        c += cirq.Moment(cirq.depolarize(0.01).on(x) for x in q)
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qubits", type=int, default=8)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    c = circuit(args.qubits)
    ours, theirs = DensityMatrixSimulator(), cirq.DensityMatrixSimulator()
    a = ours.simulate(c).final_density_matrix
    b = theirs.simulate(c).final_density_matrix
    assert np.allclose(a, b, atol=1e-5), abs(a - b).max()
    best = {"qmlsim": float("inf"), "cirq": float("inf")}
    for _ in range(3):
        for name, sim in (("qmlsim", ours), ("cirq", theirs)):
            start = time.perf_counter()
            for _ in range(args.reps):
                sim.simulate(c)
            best[name] = min(best[name], (time.perf_counter() - start) / args.reps)
    print(f"{args.qubits} qubits: qmlsim {best['qmlsim'] * 1e3:.2f} ms, "
          f"cirq {best['cirq'] * 1e3:.2f} ms, cirq / qmlsim {best['cirq'] / best['qmlsim']:.1f}x")


if __name__ == "__main__":
    main()
