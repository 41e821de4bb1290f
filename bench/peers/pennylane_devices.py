#!/usr/bin/env python3
"""qmlsim.qubit against lightning.qubit through the same PennyLane code.

QAOA (examples/pennylane/qaoa_maxcut.py: cost + adjoint gradient of
qml.qaoa.maxcut, p = 2) on the 18- and 24-node graphs, and with --sonar the
dressed Sonar classifier (examples/pennylane/sonar_dressed.py: torch and
qml.qnn.TorchLayer, forward + backward of a batch of rows) at the given wires:
agreement first (values and gradients to 1e-8, complex128), then alternating
timed runs; medians and the ratio, as a markdown table.

    python bench/peers/pennylane_devices.py [--nodes 18,24] [--sonar 16,20] [--reps 5]
(the environment needs qmlsim (pip install .), pennylane-lightning, networkx,
and torch for --sonar)
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


def sonar(wires_list, rows, reps, threads):
    import torch

    import sonar_dressed

    x, y = sonar_dressed.read_sonar(os.path.join(ROOT, "examples", "data", "sonar.all-data"))
    x, y = x[:rows], y[:rows]
    print(f"| Sonar dressed classifier, {rows} rows forward + backward (torch {torch.__version__}) "
          "| qmlsim.qubit | lightning.qubit | ratio |")
    print("| --- | --- | --- | --- |")
    for wires in wires_list:
        models = {"ours": sonar_dressed.build("qmlsim.qubit", wires, threads=threads),
                  "theirs": sonar_dressed.build("lightning.qubit", wires)}

        def step(model):
            model.zero_grad()
            loss = sonar_dressed.margin_loss(model(x), y)
            loss.backward()
            return loss.item(), [p.grad.clone() for p in model.parameters()]

        (l1, g1), (l2, g2) = step(models["ours"]), step(models["theirs"])
        assert abs(l1 - l2) < 1e-8 and all(torch.allclose(a, b, atol=1e-8) for a, b in zip(g1, g2))
        times = {"ours": [], "theirs": []}
        for _ in range(reps):
            for key, model in models.items():
                t = time.perf_counter()
                step(model)
                times[key].append(time.perf_counter() - t)
        a, b = statistics.median(times["ours"]), statistics.median(times["theirs"])
        print(f"| {wires} wires (agree to 1e-8) | {a:.3f} s | {b:.3f} s | {b / a:.2f}x |",
              flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", default="18,24")
    ap.add_argument("--sonar", default="")
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    if args.sonar:
        sonar([int(w) for w in args.sonar.split(",")], args.rows, args.reps, args.threads)
    if not args.nodes:
        return
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
