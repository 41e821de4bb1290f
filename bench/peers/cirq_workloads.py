#!/usr/bin/env python3
"""qmlsim.cirq.Simulator against qsimcirq.QSimSimulator and cirq.Simulator, from
the same Cirq circuit objects, in one process (warm against warm).

    python bench/peers/cirq_workloads.py [--reps 5] [--only NAME,...]

Workloads: qsim's own benchmark family (Cirq's random rotations between grid
interaction layers, 14 cycles, fSim(pi/2, pi/6) or CZ couplers) at 16-24
qubits, <Z> of the first qubit; and expectation values of two Pauli sums over a
parameter sweep of ry/rz/fSim layers with sympy symbols (12 qubits and 32
points, 16 and 8, 20 and 2). Values agree first (1e-4: qsim runs in single
precision, as qmlsim does here with precision="c64"; cirq.Simulator in
complex64 too); then timed runs alternate, medians, and the ratios peer /
qmlsim (above 1: qmlsim is faster). Every simulator gets the circuit object
it had before (each may keep what it derived from it: qmlsim keeps its
translation per circuit content). Threads: 2 for qmlsim and qsim (cirq.Simulator
has one). The environment needs qmlsim (pip install .), qsimcirq and cirq-core
(bench/peers/requirements.txt).
"""
import argparse
import statistics
import sys
import time

import cirq
import numpy as np
import qsimcirq
import sympy

from qmlsim.cirq import Simulator
from run import grid_circuit  # the peers bench's qsim-style grid (bench/peers/run.py)

THREADS = 2


def grid(rows, cols, entangler):
    qubits, circuit = grid_circuit(rows, cols, 14, entangler, seed=rows * cols)
    return circuit, [cirq.Z(qubits[0])], None


def sweep(n, points):
    rng = np.random.default_rng(n)
    q = cirq.LineQubit.range(n)
    circuit, symbols = cirq.Circuit(), []
    for layer in range(8):
        for i in range(n):
            s = sympy.Symbol(f"t{layer}_{i}")
            symbols.append(s)
            circuit.append([cirq.ry(s).on(q[i]), cirq.rz(float(rng.uniform(-3, 3))).on(q[i])])
        for i in range(layer % 2, n - 1, 2):
            circuit.append(cirq.FSimGate(float(rng.uniform()), float(rng.uniform()))(q[i], q[i + 1]))
    resolvers = [cirq.ParamResolver(dict(zip(symbols, rng.uniform(-1, 1, len(symbols)))))
                 for _ in range(points)]
    observables = [cirq.Z(q[0]) * cirq.Z(q[1]), sum(cirq.X(x) for x in q)]
    return circuit, observables, resolvers


def workloads():
    w = {}
    for (r, c) in ((4, 4), (4, 5), (4, 6)):
        w[f"qsim-style grid, fSim, 14 cycles, {r * c} qubits"] = (grid, (r, c, "fsim"))
    w["qsim-style grid, CZ, 14 cycles, 24 qubits"] = (grid, (4, 6, "cz"))
    for n, points in ((12, 32), (16, 8), (20, 2)):
        w[f"expectation values, ry/rz/fSim layers, {n} qubits, sweep of {points}"] = \
            (sweep, (n, points))
    return w


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="timed runs per simulator (default 5)")
    ap.add_argument("--only", help="comma-separated substrings of workload names")
    args = ap.parse_args()
    sims = {"qmlsim": Simulator(precision="c64", threads=THREADS),
            "qsim": qsimcirq.QSimSimulator(qsim_options={"t": THREADS, "f": 3}),
            "cirq": cirq.Simulator(dtype=np.complex64)}
    print(f"cirq {cirq.__version__}, qsimcirq {qsimcirq.__version__}; medians of {args.reps} "
          "alternating runs after an agreement check (1e-4)\n")
    print("| workload | qmlsim.cirq | qsimcirq | cirq.Simulator | qsim / qmlsim | cirq / qmlsim |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    failed = False
    for title, (make, make_args) in workloads().items():
        if args.only and not any(s.lower() in title.lower() for s in args.only.split(",")):
            continue
        circuit, observables, resolvers = make(*make_args)
        params = resolvers if resolvers is not None else cirq.ParamResolver()

        def run(sim):
            return np.real(np.array(sim.simulate_expectation_values_sweep(
                circuit, observables, params), dtype=complex))

        values = {k: run(s) for k, s in sims.items()}  # warm-up and agreement
        diff = max(float(np.abs(values["qmlsim"] - v).max()) for v in values.values())
        if diff > 1e-4:
            print(f"| {title} | disagree: max abs diff {diff:.1e} | | | | |", flush=True)
            failed = True
            continue
        times = {k: [] for k in sims}
        for _ in range(args.reps):
            for k, s in sims.items():
                t = time.perf_counter()
                run(s)
                times[k].append(time.perf_counter() - t)
        med = {k: statistics.median(v) for k, v in times.items()}
        fmt = lambda s: f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"  # noqa: E731
        print(f"| {title} | {fmt(med['qmlsim'])} | {fmt(med['qsim'])} | {fmt(med['cirq'])} | "
              f"**{med['qsim'] / med['qmlsim']:.2f}x** | {med['cirq'] / med['qmlsim']:.1f}x |",
              flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
