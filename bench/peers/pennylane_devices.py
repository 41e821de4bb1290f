#!/usr/bin/env python3
"""qmlsim.qubit against lightning.qubit through the same PennyLane code.

For the QAOA job (examples/pennylane/qaoa_maxcut.py: cost + adjoint gradient of
qml.qaoa.maxcut, p = 2) on the 18- and 24-node graphs: agreement first (cost
and gradient to 1e-8, complex128), then alternating timed runs of cost+gradient;
medians and the ratio, as a markdown table.

    bench/peers/.venv/bin/python bench/peers/pennylane_devices.py [--nodes 18,24] [--reps 5]
(the environment needs the qmlsim package: pip install . into it)
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import pennylane as qml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples", "pennylane"))
import qaoa_maxcut  # noqa: E402


def cost_and_grad(cost, params):
    return cost(params), qml.grad(cost)(params)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", default="18,24")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    print(f"| QAOA cost + gradient (PennyLane {qml.version()}, {args.threads} threads) "
          "| qmlsim.qubit | lightning.qubit | ratio |")
    print("| --- | --- | --- | --- |")
    for nodes in [int(n) for n in args.nodes.split(",")]:
        m = {18: 24, 24: 36}[nodes]
        graph = qaoa_maxcut.read_graph(
            os.path.join(ROOT, "examples", "data", "graphs", f"gnm_n{nodes}_m{m}_seed1967.edges"))
        ours, p0 = qaoa_maxcut.build("qmlsim.qubit", graph, threads=args.threads)
        theirs, _ = qaoa_maxcut.build("lightning.qubit", graph)
        c1, g1 = cost_and_grad(ours, p0)
        c2, g2 = cost_and_grad(theirs, p0)
        assert abs(c1 - c2) < 1e-8 and np.allclose(g1, g2, atol=1e-8), (c1, c2, g1, g2)
        times = {"ours": [], "theirs": []}
        for _ in range(args.reps):
            for key, f in (("ours", ours), ("theirs", theirs)):
                t = time.perf_counter()
                cost_and_grad(f, p0)
                times[key].append(time.perf_counter() - t)
        a, b = statistics.median(times["ours"]), statistics.median(times["theirs"])
        print(f"| {nodes} nodes (agree to 1e-8) | {a:.3f} s | {b:.3f} s | {b / a:.2f}x |",
              flush=True)


if __name__ == "__main__":
    main()
