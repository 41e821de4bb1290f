#!/usr/bin/env python3
"""Density-matrix simulation of noisy circuits: qmlsim against Qiskit Aer's
density_matrix method, Qulacs' DensityMatrix, cirq.DensityMatrixSimulator and
PennyLane's default.mixed, on the same circuits, in one process.

    python bench/peers/noise.py [--circuits layered,qaoa,qcnn] [--qubits 8,10,12]
        [--layers 4] [--reps 5] [--threads 2] [--peers aer,qulacs,cirq,mixed]

The circuits (each a list of gates and channels that every simulator is
built from, `ops` below):
- layered: `layers` layers of RY and RZ on every qubit and a CNOT ring, a
  depolarizing channel (p = 0.01) on every qubit after every gate layer and an
  amplitude damping (gamma = 0.02) on every qubit at the end of each layer;
  <Z0>.
- qaoa: MaxCut QAOA with p = 2 on a 3-regular graph (a ring and its
  diameters; even n), cost terms as CNOT RZ CNOT, RX mixers; after every gate
  a depolarizing channel and an amplitude damping on each of its qubits;
  sum of <Z_a Z_b> over the edges.
- qcnn: a quantum convolutional network: on the active qubits, convolutions
  (RY on both, CNOT) on neighbouring pairs, then pooling (CRZ from each even
  one to the next, which stays) until one qubit is left; the same noise after
  every gate; <Z> of the last qubit.
Values agree first (1e-9, complex128 for everyone); then the timed runs
alternate (peers and qmlsim in turn), medians, and the ratios peer / qmlsim
(above 1: qmlsim is faster). qmlsim reads the circuit as OpenQASM 3 with
Braket's noise pragmas each time (qmlsim.expval_qasm: parsing included).
Also qmlsim's exact gradient (every angle, qmlsim.jacobian, which gives the
value too) over its forward pass (qmlsim.expval), the same circuit built in
Python, alternated, medians. default.mixed is skipped above 10 qubits
(minutes per run). Threads: 2 for qmlsim, Aer and Qulacs (OMP_NUM_THREADS),
one for cirq and default.mixed.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

DEPOL, DAMP = 0.01, 0.02
GATES = {"h": 0, "rx": 1, "ry": 1, "rz": 1, "cx": 0, "crz": 1}  # name: parameters
CHANNELS = {"depolarizing": DEPOL, "amplitude_damping": DAMP}


def noisy(gate, wires, angle=None):
    """A gate as (name, wires, angle), then a depolarizing channel and an
    amplitude damping on each of its wires."""
    return [(gate, wires, angle)] + [(ch, (w,), p) for w in wires for ch, p in CHANNELS.items()]


def layered(n, layers, rng):
    ops = []
    for _ in range(layers):
        for g in ("ry", "rz"):
            ops += [(g, (i,), t) for i, t in enumerate(rng.uniform(-np.pi, np.pi, n))]
            ops += [("depolarizing", (i,), DEPOL) for i in range(n)]
        ops += [("cx", (i, (i + 1) % n), None) for i in range(n)]
        ops += [("amplitude_damping", (i,), DAMP) for i in range(n)]
    return ops, [(0,)]


def qaoa(n, layers, rng):
    edges = [(i, (i + 1) % n) for i in range(n)] + [(i, i + n // 2) for i in range(n // 2)]
    ops = [op for i in range(n) for op in noisy("h", (i,))]
    for gamma, beta in rng.uniform(0, np.pi, (2, 2)):
        for a, b in edges:
            ops += noisy("cx", (a, b)) + noisy("rz", (b,), 2 * gamma) + noisy("cx", (a, b))
        ops += [op for i in range(n) for op in noisy("rx", (i,), 2 * beta)]
    return ops, edges


def qcnn(n, layers, rng):
    active, ops = list(range(n)), []
    while len(active) > 1:
        for start in (0, 1):
            for a, b in zip(active[start::2], active[start + 1::2]):
                t = rng.uniform(-np.pi, np.pi, 2)
                ops += noisy("ry", (a,), t[0]) + noisy("ry", (b,), t[1]) + noisy("cx", (a, b))
        for a, b in zip(active[0::2], active[1::2]):
            ops += noisy("crz", (a, b), rng.uniform(-np.pi, np.pi))
        active = active[1::2]
    return ops, [(active[0],)]


CIRCUITS = {"layered": layered, "qaoa": qaoa, "qcnn": qcnn}


def observable_text(obs):
    return " + ".join("*".join(f"Z{q}" for q in term) for term in obs)


def qasm(n, ops):
    lines = ["OPENQASM 3.0;", 'include "stdgates.inc";', f"qubit[{n}] q;"]
    for name, wires, x in ops:
        qubits = ", ".join(f"q[{w}]" for w in wires)
        if name in CHANNELS:
            lines.append(f"#pragma braket noise {name}({x}) {qubits}")
        else:
            lines.append(f"{name}{'' if x is None else f'({float(x)!r})'} {qubits};")
    return "\n".join(lines) + "\n"


def run_qmlsim(n, ops, obs, threads):
    import qmlsim
    text = qasm(n, ops)
    return lambda: float(qmlsim.expval_qasm(text, [observable_text(obs)], threads=threads)[0])


def run_aer(n, ops, obs, threads):
    from qiskit import QuantumCircuit
    from qiskit.quantum_info import SparsePauliOp
    from qiskit_aer import AerSimulator
    from qiskit_aer.noise import amplitude_damping_error, depolarizing_error
    errors = {"depolarizing": depolarizing_error(DEPOL * 4 / 3, 1),  # Aer's lambda = 4 p / 3
              "amplitude_damping": amplitude_damping_error(DAMP)}
    qc = QuantumCircuit(n)
    for name, wires, x in ops:
        if name in CHANNELS:
            qc.append(errors[name].to_instruction(), list(wires))
        elif name == "crz":  # not among the density_matrix method's gates
            qc.rz(x / 2, wires[1])
            qc.cx(*wires)
            qc.rz(-x / 2, wires[1])
            qc.cx(*wires)
        else:
            getattr(qc, name)(*([] if x is None else [float(x)]), *wires)
    words = ["".join("Z" if q in term else "I" for q in reversed(range(n))) for term in obs]
    qc.save_expectation_value(SparsePauliOp(words), list(range(n)), "h")
    sim = AerSimulator(method="density_matrix", max_parallel_threads=threads)
    return lambda: float(sim.run(qc).result().data()["h"])


def run_qulacs(n, ops, obs, threads):
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import qulacs
    from qulacs import gate
    c = qulacs.QuantumCircuit(n)
    for name, wires, x in ops:
        if name == "depolarizing":
            c.add_gate(gate.DepolarizingNoise(wires[0], x))
        elif name == "amplitude_damping":
            c.add_gate(gate.AmplitudeDampingNoise(wires[0], x))
        elif name == "h":
            c.add_H_gate(wires[0])
        elif name == "cx":
            c.add_CNOT_gate(*wires)
        elif name == "crz":  # Qulacs' rotations are exp(+i t P / 2)
            g = gate.to_matrix_gate(gate.RZ(wires[1], -float(x)))
            g.add_control_qubit(wires[0], 1)
            c.add_gate(g)
        else:
            getattr(c, f"add_{name.upper()}_gate")(wires[0], -float(x))
    h = qulacs.Observable(n)
    for term in obs:
        h.add_operator(1.0, " ".join(f"Z {q}" for q in term))

    def f():
        rho = qulacs.DensityMatrix(n)
        c.update_quantum_state(rho)
        return float(h.get_expectation_value(rho).real)
    return f


def run_cirq(n, ops, obs, threads):
    import cirq
    q = cirq.LineQubit.range(n)
    make = {"h": lambda x: cirq.H, "rx": cirq.rx, "ry": cirq.ry, "rz": cirq.rz,
            "cx": lambda x: cirq.CNOT, "crz": lambda x: cirq.ControlledGate(cirq.rz(x)),
            "depolarizing": cirq.depolarize, "amplitude_damping": cirq.amplitude_damp}
    c = cirq.Circuit(make[name](None if x is None else float(x)).on(*(q[w] for w in wires))
                     for name, wires, x in ops)
    h = sum(cirq.PauliString({q[w]: cirq.Z for w in term}) for term in obs)
    sim = cirq.DensityMatrixSimulator(dtype=np.complex128)

    def f():
        rho = sim.simulate(c).final_density_matrix
        return float(h.expectation_from_density_matrix(rho, {x: i for i, x in enumerate(q)}).real)
    return f


def run_default_mixed(n, ops, obs, threads):
    import pennylane as qml
    make = {"h": qml.Hadamard, "rx": qml.RX, "ry": qml.RY, "rz": qml.RZ, "cx": qml.CNOT,
            "crz": qml.CRZ, "depolarizing": qml.DepolarizingChannel,
            "amplitude_damping": qml.AmplitudeDamping}
    h = qml.sum(*[qml.prod(*[qml.Z(w) for w in term]) for term in obs])

    @qml.qnode(qml.device("default.mixed", wires=n))
    def circuit():
        for name, wires, x in ops:
            make[name](*([] if x is None else [float(x)]), wires=list(wires))
        return qml.expval(h)
    return lambda: float(circuit())


def mindquantum_circuit(n, ops, obs):
    """The circuit in MindQuantum (its qubit w is wire w, the least
    significant first), every angle a parameter a<k>, and <H> as a
    Hamiltonian. Depolarizing as the Pauli channel (p/3, p/3, p/3): the same
    map; MindQuantum 0.11-0.12's DepolarizingChannel hangs in mqmatrix."""
    from mindquantum.core import gates as G
    from mindquantum.core.circuit import Circuit
    from mindquantum.core.operators import Hamiltonian, QubitOperator
    c, values = Circuit(), []
    for name, wires, x in ops:
        if name == "depolarizing":
            c += G.PauliChannel(x / 3, x / 3, x / 3).on(wires[0])
        elif name == "amplitude_damping":
            c += G.AmplitudeDampingChannel(x).on(wires[0])
        elif name == "h":
            c += G.H.on(wires[0])
        elif name == "cx":
            c += G.X.on(wires[1], wires[0])
        else:
            gate = {"rx": G.RX, "ry": G.RY, "rz": G.RZ, "crz": G.RZ}[name](f"a{len(values)}")
            c += gate.on(wires[1], wires[0]) if name == "crz" else gate.on(wires[0])
            values.append(float(x))
    h = QubitOperator()
    for term in obs:
        h += QubitOperator(" ".join(f"Z{q}" for q in term))
    return c, Hamiltonian(h), np.array(values)


def run_mindquantum(n, ops, obs, threads):
    os.environ["OMP_NUM_THREADS"] = str(threads)
    from mindquantum.simulator import Simulator
    c, h, values = mindquantum_circuit(n, ops, obs)
    sim = Simulator("mqmatrix", n)
    bound = c.apply_value(dict(zip(c.params_name, values)))
    return lambda: float(sim.get_expectation(h, bound).real)


def mindquantum_gradient(n, ops, obs, threads):
    """MindQuantum's density-matrix gradient of every angle (and the value)."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    from mindquantum.simulator import Simulator
    c, h, values = mindquantum_circuit(n, ops, obs)
    assert c.params_name == [f"a{k}" for k in range(len(values))]
    grad_ops = Simulator("mqmatrix", n).get_expectation_with_grad(h, c)

    def f():
        value, grad = grad_ops(values)
        return float(value.real[0, 0]), grad.real[0, 0]
    return f


def qmlsim_circuit(n, ops):
    """The circuit built with qmlsim's Python API, every angle a parameter."""
    import qmlsim
    names = {"h": "H", "rx": "RX", "ry": "RY", "rz": "RZ", "cx": "CNOT", "crz": "CRZ"}
    c = qmlsim.Circuit(n)
    for name, wires, x in ops:
        if name in CHANNELS:
            c.channel(name, list(wires), [x])
        else:
            c.add(names[name], list(wires), [] if x is None else [float(x)])
    return c


def gradient_ratio(n, ops, obs, threads, reps, want):
    """qmlsim's exact gradient (qmlsim.jacobian: every angle, and the value)
    over its forward pass (qmlsim.expval), in this process, alternated,
    medians: (ratio, gradient seconds, angles)."""
    import qmlsim
    c, h = qmlsim_circuit(n, ops), observable_text(obs)
    forward = lambda: qmlsim.expval(c, h, threads=threads)  # noqa: E731
    gradient = lambda: qmlsim.jacobian(c, h, threads=threads)  # noqa: E731
    if abs(forward()[0] - want) > 1e-12:
        sys.exit(f"qmlsim's Python circuit at {n} qubits: {forward()[0]}, OpenQASM {want}")
    gradient()
    f, g = [], []
    for _ in range(reps):
        f.append(timed(forward))
        g.append(timed(gradient))
    return statistics.median(g) / statistics.median(f), statistics.median(g), c.num_params


def peer_gradient(n, ops, obs, threads, reps):
    """MindQuantum's gradient, checked against qmlsim.jacobian (1e-9), then
    timed alternating with it: the median seconds."""
    import qmlsim
    c, h = qmlsim_circuit(n, ops), observable_text(obs)
    ours = lambda: qmlsim.jacobian(c, h, threads=threads)  # noqa: E731
    theirs = mindquantum_gradient(n, ops, obs, threads)
    want, got = np.ravel(ours()), theirs()[1]
    if np.max(np.abs(want - got)) > 1e-9:
        sys.exit(f"mindquantum's gradient at {n} qubits differs by {np.max(np.abs(want - got))}")
    times = []
    for _ in range(reps):
        ours()
        times.append(timed(theirs))
    return statistics.median(times)


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--circuits", default="layered", help="layered, qaoa, qcnn (comma-separated)")
    p.add_argument("--qubits", default="8,10,12")
    p.add_argument("--layers", type=int, default=4, help="the layered circuit's layers")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--peers", default="aer,qulacs,cirq,mixed",
                   help="which peers (cirq and default.mixed take minutes from 12 qubits; "
                   "mindquantum, in an environment of its own: bench/peers/run_mindquantum.sh)")
    args = p.parse_args()
    unknown = set(args.circuits.split(",")) - set(CIRCUITS)
    if unknown:
        p.error(f"--circuits: unknown {', '.join(sorted(unknown))} (one of {', '.join(CIRCUITS)})")
    peers = {"aer density_matrix": run_aer, "qulacs DensityMatrix": run_qulacs,
             "cirq DensityMatrixSimulator": run_cirq, "default.mixed": run_default_mixed,
             "mindquantum mqmatrix": run_mindquantum}
    print("| circuit | qubits | simulator | median s | peer / qmlsim |\n"
          "| --- | --- | --- | --- | --- |")
    for circuit in args.circuits.split(","):
        for n in (int(x) for x in args.qubits.split(",")):
            ops, obs = CIRCUITS[circuit](n, args.layers, np.random.default_rng(7))
            row = f"| {circuit} | {n} |"
            ours = run_qmlsim(n, ops, obs, args.threads)
            want = ours()
            fns = {}
            for name, make in peers.items():
                if name.split()[0].split(".")[-1] not in args.peers.split(","):
                    continue
                if name == "default.mixed" and n > 10:
                    continue
                try:
                    fns[name] = make(n, ops, obs, args.threads)
                except ImportError as e:
                    print(f"{row} {name} | not installed ({e.name}) | |")
                    continue
                got = fns[name]()
                if abs(got - want) > 1e-9:
                    sys.exit(f"{name}, {circuit} at {n} qubits: {got}, qmlsim {want}")
            times = {name: [] for name in ["qmlsim", *fns]}
            for _ in range(args.reps):
                times["qmlsim"].append(timed(ours))
                for name, fn in fns.items():
                    times[name].append(timed(fn))
                    times["qmlsim"].append(timed(ours))
            base = statistics.median(times["qmlsim"])
            print(f"{row} qmlsim | {base:.4f} | 1 |")
            for name in fns:
                m = statistics.median(times[name])
                print(f"{row} {name} | {m:.4f} | {m / base:.1f} |")
            ratio, seconds, angles = gradient_ratio(n, ops, obs, args.threads, args.reps, want)
            print(f"{row} qmlsim expval + gradient ({angles} angles) | {seconds:.4f} | "
                  f"{ratio:.2f}x its forward |")
            if "mindquantum mqmatrix" in fns:
                m = peer_gradient(n, ops, obs, args.threads, args.reps)
                print(f"{row} mindquantum expval + gradient | {m:.4f} | {m / seconds:.1f} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
