"""Peak resident memory and wall time of one batch of density-matrix VJP items,
to check the engine's memory accounting (docs/design/noise.md): n qubits, a
layer of RY, depolarizing noise and a CNOT chain, twice; one vjp_batch call.

    python bench/batch_memory.py --qubits 11 --items 4 --threads 2
"""
import argparse
import resource
import time

import numpy as np

import qmlsim


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qubits", type=int, default=11)
    ap.add_argument("--items", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    programs = []
    for _ in range(args.items):
        c = qmlsim.Circuit(args.qubits)
        for _ in range(2):
            for q in range(args.qubits):
                c.add("RY", [q], [float(rng.uniform(-3, 3))])
                c.channel("depolarizing", [q], [0.01])
            for q in range(args.qubits - 1):
                c.add("CNOT", [q, q + 1])
        programs.append(c._program())
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    qmlsim._qmlsim.vjp_batch([p for p, _ in programs], [v for _, v in programs],
                             qmlsim._observables(["Z0"]), [[1.0]] * args.items,
                             qmlsim._options("c128", args.threads, 3))
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{args.items} items, {args.qubits} qubits, {args.threads} thread(s): peak resident "
          f"{peak / 1024:.0f} MiB (before the call {base / 1024:.0f} MiB), {wall:.2f} s")


if __name__ == "__main__":
    main()
