#!/usr/bin/env python3
"""Reference job 1 (QAOA Max-Cut) as a PennyLane user writes it, on any device.

qml.qaoa.maxcut on the graph, p = 2 layers, parameters 0.01 * U(0, 1) from a
seeded generator, plain gradient descent with step 0.1 (docs/workloads.md), the cost
and its adjoint gradient per iteration.

    python examples/pennylane/qaoa_maxcut.py --device qmlsim.qubit \
        --graph examples/data/graphs/gnm_n18_m24_seed1967.edges [--steps 5]
"""
import argparse
import time

import networkx as nx
import pennylane as qml
from pennylane import numpy as np


def read_graph(path):
    edges = [tuple(map(int, line.split()[:2])) for line in open(path)
             if line.strip() and not line.startswith("#")]
    graph = nx.Graph()
    graph.add_nodes_from(range(1 + max(max(e) for e in edges)))
    graph.add_edges_from(edges)
    return graph


def build(device_name, graph, depth=2, seed=1967, **device_options):
    """(cost QNode with the adjoint method, initial parameters of shape [2, depth])."""
    cost_h, mixer_h = qml.qaoa.maxcut(graph)
    wires = graph.number_of_nodes()
    dev = qml.device(device_name, wires=wires, **device_options)

    @qml.qnode(dev, diff_method="adjoint")
    def cost(params):
        for w in range(wires):
            qml.Hadamard(wires=w)
        for k in range(depth):
            qml.qaoa.cost_layer(params[0][k], cost_h)
            qml.qaoa.mixer_layer(params[1][k], mixer_h)
        return qml.expval(cost_h)

    rng = np.random.default_rng(seed)
    params = np.array(0.01 * rng.uniform(size=(2, depth)), requires_grad=True)
    return cost, params


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="qmlsim.qubit")
    ap.add_argument("--graph", required=True)
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    cost, params = build(args.device, read_graph(args.graph))
    opt = qml.GradientDescentOptimizer(stepsize=0.1)
    print(f"Initial cost: {cost(params)}")
    for step in range(args.steps):
        start = time.perf_counter()
        params, before = opt.step_and_cost(cost, params)
        print(f"Cost at step {step}: {before}")
        print(f"Completed iteration {step + 1}")
        print(f"Time to complete iteration: {time.perf_counter() - start:.3f} seconds")
    print(f"Final cost: {cost(params)}")


if __name__ == "__main__":
    main()
