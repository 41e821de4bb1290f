#!/usr/bin/env python3
"""Gradients of a noisy circuit by every trainable parameter, gates' and
channels' alike (noise-aware training, or fitting a device's noise strengths
to data): qmlsim.mixed's exact adjoint against default.mixed's
backpropagation, the only other PennyLane device that differentiates channel
parameters, in one process.

    python bench/peers/pennylane_noise_grad.py [--qubits 4,6,8] [--layers 3] [--reps 3]

The circuit: `layers` layers of RY and RZ on every qubit (trainable angles)
and a CNOT chain, then a DepolarizingChannel and an AmplitudeDamping on every
qubit with trainable strengths of their own (so 4 n parameters per layer);
<Z0 Z1> + 0.5 <X0>. The gradients agree first (1e-9); then the timed runs
alternate, medians, and the ratio default.mixed / qmlsim.mixed (above 1:
qmlsim is faster). One thread for each (default.mixed is numpy on one core;
qmlsim.mixed takes threads=1).
"""
import argparse
import statistics
import time

import numpy as np
import pennylane as qml
from pennylane import numpy as pnp


def qnode(device, n, layers, diff, **kwargs):
    @qml.qnode(qml.device(device, wires=n, **kwargs), diff_method=diff)
    def circuit(angles, noise):
        for layer in range(layers):
            for q in range(n):
                qml.RY(angles[layer, 0, q], q)
                qml.RZ(angles[layer, 1, q], q)
            for q in range(n - 1):
                qml.CNOT([q, q + 1])
            for q in range(n):
                qml.DepolarizingChannel(noise[layer, 0, q], q)
                qml.AmplitudeDamping(noise[layer, 1, q], q)
        return qml.expval(qml.Z(0) @ qml.Z(1) + 0.5 * qml.X(0))
    return circuit


def seconds(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--qubits", default="4,6,8")
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    print(f"{'qubits':>6} {'params':>6} {'qmlsim.mixed':>13} {'default.mixed':>14} {'ratio':>7}")
    for n in (int(q) for q in args.qubits.split(",")):
        rng = np.random.default_rng(n)
        angles = pnp.array(rng.uniform(-np.pi, np.pi, (args.layers, 2, n)), requires_grad=True)
        noise = pnp.array(rng.uniform(0.01, 0.05, (args.layers, 2, n)), requires_grad=True)
        ours = qnode("qmlsim.mixed", n, args.layers, "adjoint", threads=1)
        theirs = qnode("default.mixed", n, args.layers, "backprop")
        g_ours, g_theirs = qml.grad(ours)(angles, noise), qml.grad(theirs)(angles, noise)
        for a, b in zip(g_ours, g_theirs):
            assert np.allclose(a, b, atol=1e-9), (a, b)
        t_ours, t_theirs = [], []
        for _ in range(args.reps):  # alternating
            t_ours.append(seconds(lambda: qml.grad(ours)(angles, noise)))
            t_theirs.append(seconds(lambda: qml.grad(theirs)(angles, noise)))
        a, b = statistics.median(t_ours), statistics.median(t_theirs)
        print(f"{n:>6} {angles.size + noise.size:>6} {a:>12.4f}s {b:>13.4f}s {b / a:>6.1f}x")


if __name__ == "__main__":
    main()
