#!/usr/bin/env python3
"""One gradient of kernel-target alignment, as PennyLane's kernels demo
computes it: a 6x6 kernel matrix of a 5-qubit circuit (AngleEmbedding and
StronglyEntanglingLayers, two layers, and their adjoint) returning qml.probs.
qmlsim.qubit by the adjoint (probs as the Z strings over its wires) against
default.qubit's backprop and the parameter shift qmlsim.qubit used before;
the gradients agree (printed), then one timed gradient each.

    python bench/peers/pennylane_kernel_probs.py
"""
import time, pennylane as qml
from pennylane import numpy as pnp
import numpy as np
n, layers = 5, 2
def kernel_circuit(dev, diff):
    @qml.qnode(dev, diff_method=diff)
    def k(x1, x2, params):
        for l in range(layers):
            qml.AngleEmbedding(x1, wires=range(n)); qml.StronglyEntanglingLayers(params[l:l+1], wires=range(n))
        for l in reversed(range(layers)):
            qml.adjoint(qml.StronglyEntanglingLayers)(params[l:l+1], wires=range(n)); qml.adjoint(qml.AngleEmbedding)(x2, wires=range(n))
        return qml.probs(wires=range(n))
    return k
rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, (6, n)); Y = np.array([1, -1, 1, -1, 1, -1])
params = pnp.array(rng.uniform(0, 2 * np.pi, (layers, n, 3)), requires_grad=True)
def alignment(k):
    def f(p):
        K = pnp.stack([pnp.stack([k(X[i], X[j], p)[0] for j in range(len(X))]) for i in range(len(X))])
        return pnp.sum(K * np.outer(Y, Y)) / pnp.sqrt(pnp.sum(K * K))
    return f
for name, diff in (("qmlsim.qubit", "adjoint"), ("default.qubit", "backprop"), ("qmlsim.qubit", "parameter-shift")):
    dev = qml.device(name, wires=n)
    f = alignment(kernel_circuit(dev, diff))
    g = qml.grad(f)(params)
    t = time.perf_counter(); g = qml.grad(f)(params); dt = time.perf_counter() - t
    print(f"{name:14s} {diff:16s} {dt:.3f} s", np.round(g.reshape(-1)[:3], 8))
