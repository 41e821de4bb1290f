#!/usr/bin/env python3
"""Density-matrix simulation of noisy circuits: qmlsim against Qiskit Aer's
density_matrix method, Qulacs' DensityMatrix, cirq.DensityMatrixSimulator and
PennyLane's default.mixed, on the same circuits, in one process.

    python bench/peers/noise.py [--qubits 8,10,12] [--layers 4] [--reps 5] [--threads 2]
        [--peers aer,qulacs,cirq,mixed]

The circuit: `layers` layers of RY and RZ on every qubit and a CNOT ring, with
a depolarizing channel (p = 0.01) on every qubit after every gate layer and an
amplitude damping (gamma = 0.02) on every qubit at the end of each layer;
<Z0> of the final density matrix. Values agree first (1e-9, complex128 for
everyone); then the timed runs alternate (peers and qmlsim in turn),
medians, and the ratios peer / qmlsim (above 1: qmlsim is faster). qmlsim
reads the circuit as OpenQASM 3 with Braket's noise pragmas each time
(qmlsim.expval_qasm: parsing included). Also qmlsim's exact gradient (every
angle, qmlsim.jacobian, which gives the value too) over its forward pass
(qmlsim.expval), the same circuit built in Python, alternated, medians.
default.mixed is skipped above 10 qubits (minutes per run). Threads: 2 for
qmlsim, Aer and Qulacs (OMP_NUM_THREADS), one for cirq and default.mixed.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

DEPOL, DAMP = 0.01, 0.02


def angles(n, layers, seed=7):
    return np.random.default_rng(seed).uniform(-np.pi, np.pi, size=(layers, 2, n))


def qasm(n, a):
    lines = ["OPENQASM 3.0;", 'include "stdgates.inc";', f"qubit[{n}] q;"]
    for layer in a:
        for g, row in zip(("ry", "rz"), layer):
            lines += [f"{g}({float(t)!r}) q[{i}];" for i, t in enumerate(row)]
            lines += [f"#pragma braket noise depolarizing({DEPOL}) q"]
        lines += [f"cx q[{i}], q[{(i + 1) % n}];" for i in range(n)]
        lines += [f"#pragma braket noise amplitude_damping({DAMP}) q"]
    return "\n".join(lines) + "\n"


def run_qmlsim(n, a, threads):
    import qmlsim
    text = qasm(n, a)
    return lambda: float(qmlsim.expval_qasm(text, ["Z0"], threads=threads)[0])


def run_aer(n, a, threads):
    from qiskit import QuantumCircuit
    from qiskit.quantum_info import SparsePauliOp
    from qiskit_aer import AerSimulator
    from qiskit_aer.noise import amplitude_damping_error, depolarizing_error
    qc = QuantumCircuit(n)
    dep = depolarizing_error(DEPOL * 4 / 3, 1)  # Aer's lambda = 4 p / 3
    damp = amplitude_damping_error(DAMP)
    for layer in a:
        for g, row in zip(("ry", "rz"), layer):
            for i, t in enumerate(row):
                getattr(qc, g)(float(t), i)
            for i in range(n):
                qc.append(dep.to_instruction(), [i])
        for i in range(n):
            qc.cx(i, (i + 1) % n)
        for i in range(n):
            qc.append(damp.to_instruction(), [i])
    qc.save_expectation_value(SparsePauliOp("I" * (n - 1) + "Z"), list(range(n)), "z0")
    sim = AerSimulator(method="density_matrix", max_parallel_threads=threads)
    return lambda: float(sim.run(qc).result().data()["z0"])


def run_qulacs(n, a, threads):
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import qulacs
    from qulacs.gate import AmplitudeDampingNoise, DepolarizingNoise
    c = qulacs.QuantumCircuit(n)
    for layer in a:
        for g, row in zip(("RY", "RZ"), layer):
            for i, t in enumerate(row):
                # Qulacs' rotations are exp(+i t P / 2)
                getattr(c, f"add_{g}_gate")(i, -float(t))
            for i in range(n):
                c.add_gate(DepolarizingNoise(i, DEPOL))
        for i in range(n):
            c.add_CNOT_gate(i, (i + 1) % n)
        for i in range(n):
            c.add_gate(AmplitudeDampingNoise(i, DAMP))
    obs = qulacs.Observable(n)
    obs.add_operator(1.0, "Z 0")

    def f():
        rho = qulacs.DensityMatrix(n)
        c.update_quantum_state(rho)
        return float(obs.get_expectation_value(rho).real)
    return f


def run_cirq(n, a, threads):
    import cirq
    q = cirq.LineQubit.range(n)
    c = cirq.Circuit()
    for layer in a:
        for g, row in zip((cirq.ry, cirq.rz), layer):
            c.append(g(float(t)).on(q[i]) for i, t in enumerate(row))
            c.append(cirq.depolarize(DEPOL).on_each(*q))
        c.append(cirq.CNOT(q[i], q[(i + 1) % n]) for i in range(n))
        c.append(cirq.amplitude_damp(DAMP).on_each(*q))
    sim = cirq.DensityMatrixSimulator(dtype=np.complex128)

    def f():
        rho = sim.simulate(c).final_density_matrix
        return float(cirq.Z(q[0]).expectation_from_density_matrix(rho, {x: i for i, x in enumerate(q)}).real)
    return f


def run_default_mixed(n, a, threads):
    import pennylane as qml
    dev = qml.device("default.mixed", wires=n)

    @qml.qnode(dev)
    def circuit():
        for layer in a:
            for g, row in zip((qml.RY, qml.RZ), layer):
                for i, t in enumerate(row):
                    g(float(t), wires=i)
                for i in range(n):
                    qml.DepolarizingChannel(DEPOL, wires=i)
            for i in range(n):
                qml.CNOT(wires=[i, (i + 1) % n])
            for i in range(n):
                qml.AmplitudeDamping(DAMP, wires=i)
        return qml.expval(qml.PauliZ(0))
    return lambda: float(circuit())


def qmlsim_circuit(n, a):
    """The benchmark circuit built with qmlsim's Python API, every angle a parameter."""
    import qmlsim
    c = qmlsim.Circuit(n)
    for layer in a:
        for g, row in zip(("RY", "RZ"), layer):
            for i, t in enumerate(row):
                c.add(g, [i], [float(t)])
            for i in range(n):
                c.channel("depolarizing", [i], [DEPOL])
        for i in range(n):
            c.add("CNOT", [i, (i + 1) % n])
        for i in range(n):
            c.channel("amplitude_damping", [i], [DAMP])
    return c


def gradient_ratio(n, a, threads, reps, want):
    """qmlsim's exact gradient (qmlsim.jacobian: every angle, and the value)
    over its forward pass (qmlsim.expval), in this process, alternated,
    medians: (ratio, gradient seconds)."""
    import qmlsim
    c = qmlsim_circuit(n, a)
    forward = lambda: qmlsim.expval(c, "Z0", threads=threads)  # noqa: E731
    gradient = lambda: qmlsim.jacobian(c, "Z0", threads=threads)  # noqa: E731
    if abs(forward()[0] - want) > 1e-12:
        sys.exit(f"qmlsim's Python circuit at {n} qubits: <Z0> = {forward()[0]}, OpenQASM {want}")
    gradient()
    f, g = [], []
    for _ in range(reps):
        f.append(timed(forward))
        g.append(timed(gradient))
    return statistics.median(g) / statistics.median(f), statistics.median(g)


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--qubits", default="8,10,12")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--peers", default="aer,qulacs,cirq,mixed",
                   help="which peers (cirq and default.mixed take minutes from 12 qubits)")
    args = p.parse_args()
    peers = {"aer density_matrix": run_aer, "qulacs DensityMatrix": run_qulacs,
             "cirq DensityMatrixSimulator": run_cirq, "default.mixed": run_default_mixed}
    print("| qubits | simulator | median s | peer / qmlsim |\n| --- | --- | --- | --- |")
    for n in (int(x) for x in args.qubits.split(",")):
        a = angles(n, args.layers)
        ours = run_qmlsim(n, a, args.threads)
        want = ours()
        fns = {}
        for name, make in peers.items():
            if name.split()[0].split(".")[-1] not in args.peers.split(","):
                continue
            if name == "default.mixed" and n > 10:
                continue
            try:
                fns[name] = make(n, a, args.threads)
            except ImportError as e:
                print(f"| {n} | {name} | not installed ({e.name}) | |")
                continue
            got = fns[name]()
            if abs(got - want) > 1e-9:
                sys.exit(f"{name} at {n} qubits: <Z0> = {got}, qmlsim {want}")
        times = {name: [] for name in ["qmlsim", *fns]}
        for _ in range(args.reps):
            times["qmlsim"].append(timed(ours))
            for name, fn in fns.items():
                times[name].append(timed(fn))
                times["qmlsim"].append(timed(ours))
        base = statistics.median(times["qmlsim"])
        print(f"| {n} | qmlsim | {base:.4f} | 1 |")
        for name in fns:
            m = statistics.median(times[name])
            print(f"| {n} | {name} | {m:.4f} | {m / base:.1f} |")
        g = gradient_ratio(n, a, args.threads, args.reps, want)
        if g:
            print(f"| {n} | qmlsim expval + gradient ({2 * n * args.layers} angles) | {g[1]:.4f} | "
                  f"{g[0]:.2f}x its forward |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
