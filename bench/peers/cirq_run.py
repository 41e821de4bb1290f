#!/usr/bin/env python3
"""qmlsim.cirq.Simulator.run against cirq.Simulator.run on small circuits:
50 distinct random 6-qubit circuits (`cirq.testing.random_circuit`, 10
moments, density 0.8, every qubit measured) run once each, then one of them
run 50 times; 100 repetitions per run; the mean per run.

    python bench/peers/cirq_run.py [--qubits 6] [--moments 10]
"""
import argparse
import time

import cirq

from qmlsim.cirq import Simulator


def per_run(sim, circuits, repeats):
    start = time.perf_counter()
    for c in circuits:
        sim.run(c, repetitions=100)
    distinct = (time.perf_counter() - start) / len(circuits)
    sim.run(circuits[0], repetitions=100)
    start = time.perf_counter()
    for _ in range(repeats):
        sim.run(circuits[0], repetitions=100)
    return distinct, (time.perf_counter() - start) / repeats


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qubits", type=int, default=6)
    ap.add_argument("--moments", type=int, default=10)
    args = ap.parse_args()
    q = cirq.LineQubit.range(args.qubits)
    circuits = [cirq.testing.random_circuit(q, n_moments=args.moments, op_density=0.8,
                                            random_state=s) + cirq.measure(*q, key="m")
                for s in range(50)]
    ours = per_run(Simulator(seed=1), circuits, 50)
    theirs = per_run(cirq.Simulator(seed=1), circuits, 50)
    print(f"{args.qubits} qubits, distinct circuit: qmlsim {ours[0] * 1e3:.2f} ms, "
          f"cirq {theirs[0] * 1e3:.2f} ms ({theirs[0] / ours[0]:.1f}x); repeated: "
          f"qmlsim {ours[1] * 1e3:.2f} ms, cirq {theirs[1] * 1e3:.2f} ms "
          f"({theirs[1] / ours[1]:.1f}x)")


if __name__ == "__main__":
    main()
