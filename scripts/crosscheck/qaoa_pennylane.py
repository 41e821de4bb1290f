#!/usr/bin/env python3
"""Cross-check of the QAOA job against PennyLane (default.qubit).

Reads the initial parameters that `qmlsim train` wrote (run with train.steps=0),
runs the original job's loop (qml.qaoa.maxcut, cost_layer/mixer_layer, plain
gradient descent with step 0.1) and prints the cost before each step. The
numbers are the reference in src/train/train_test.cc.

  ./build/release/qmlsim train examples/qaoa_maxcut.toml --run-dir /tmp/q0 --set train.steps=0
  python3 -m venv /tmp/venv && /tmp/venv/bin/pip install pennylane networkx h5py
  /tmp/venv/bin/python scripts/crosscheck/qaoa_pennylane.py /tmp/q0/weights.h5 \
      examples/data/graphs/gnm_n18_m24_seed1967.edges 18
"""
import sys

import h5py
import networkx as nx
import pennylane as qml
from pennylane import numpy as np


def main(weights, graph_file, nodes, steps=5, stepsize=0.1):
    p0 = h5py.File(weights, "r")["params/params"][()]
    edges = [tuple(map(int, line.split())) for line in open(graph_file)
             if line.strip() and not line.startswith("#")]
    graph = nx.Graph()
    graph.add_nodes_from(range(nodes))
    graph.add_edges_from(edges)
    cost_h, mixer_h = qml.qaoa.maxcut(graph)
    dev = qml.device("default.qubit", wires=nodes)

    def layer(gamma, alpha):
        qml.qaoa.cost_layer(gamma, cost_h)
        qml.qaoa.mixer_layer(alpha, mixer_h)

    @qml.qnode(dev, diff_method="backprop")
    def cost(params):
        for w in range(nodes):
            qml.Hadamard(wires=w)
        qml.layer(layer, p0.shape[1], params[0], params[1])
        return qml.expval(cost_h)

    opt = qml.GradientDescentOptimizer(stepsize=stepsize)
    params = np.array(p0, requires_grad=True)
    for i in range(steps):
        params, c = opt.step_and_cost(cost, params)
        print(f"cost before step {i + 1}: {float(c)!r}")
    print(f"final cost: {float(cost(params))!r}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
