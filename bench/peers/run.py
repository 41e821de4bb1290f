#!/usr/bin/env python3
"""qmlsim side by side with the simulators users run today, on this machine.

Every case first checks that qmlsim and the peer agree (expectation values and
gradients), then times both, alternating runs, and reports medians and the
ratio peer / qmlsim (> 1: qmlsim is faster). Threads = 2 everywhere. Forward
rows time qmlsim warm through its Python package, in this process, as the Python
peers are timed (with `qmlsim run`, a fresh process, as a second column); the
training rows time the `qmlsim train` steps.

  bench/peers/run.sh [--quick]        (creates the virtual environment, then runs this)
  python run.py --qmlsim build/release/qmlsim [--quick] [--json peers.json] [--cases random,grid,...]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

THREADS = 2
try:  # the package (pip install .): qmlsim timed warm, in this process, like the peers
    import qmlsim as QMLSIM_PACKAGE
except ImportError:
    QMLSIM_PACKAGE = None
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))

import h5py  # noqa: E402
import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
MASK = (1 << 64) - 1


class Failure(Exception):
    pass


# ---------------------------------------------------------------------------
# qmlsim's data generator (src/core/rng.h: xoshiro256** seeded by splitmix64),
# reimplemented from its description so both sides train on the same examples.
class Rng:
    def __init__(self, seed):
        self.s = []
        for _ in range(4):
            seed = (seed + 0x9E3779B97F4A7C15) & MASK
            z = seed
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
            self.s.append(z ^ (z >> 31))

    @staticmethod
    def _rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & MASK

    def next(self):
        s = self.s
        result = (self._rotl((s[1] * 5) & MASK, 7) * 9) & MASK
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = self._rotl(s[3], 45)
        return result

    def uniform(self, lo=0.0, hi=1.0):
        return lo + (hi - lo) * ((self.next() >> 11) * 2.0**-53)

    def below(self, n):
        limit = MASK - (MASK % n)
        while True:
            x = self.next()
            if x < limit:
                return x % n

    def permutation(self, n):
        p = list(range(n))
        for i in range(n, 1, -1):
            j = self.below(i)
            p[i - 1], p[j] = p[j], p[i - 1]
        return p


# ---------------------------------------------------------------------------
# After a parallel region, OpenMP runtimes keep their threads spinning for a
# while (libgomp: GOMP_SPINCOUNT PAUSE loops), on the cores the next timed run
# needs: after a 20-qubit qsim call returned, its process used 0-20 ms of CPU
# in the next 0.2 s (/proc task times, 2-vCPU VM), against a qmlsim run of
# about 22 ms. A pause after each call would keep those threads off the next
# run, but on this VM an idle pause costs more than it saves: measured
# (2026-12-03, 16-qubit random circuit, qmlsim warm and qsim alternated in one
# process, medians of 8), a 0.0 / 0.1 / 0.5 s pause gave qmlsim 3.7 / 8.4 / 13.0
# ms and qsim 8.4 / 18.6 / 24.6 ms (an idle vCPU wakes slowly, its caches cold).
# So runs alternate back to back by default; --settle S sets a pause.
SETTLE_S = 0.0


def timed(fn):
    t = time.perf_counter()
    value = fn()
    elapsed = time.perf_counter() - t
    time.sleep(SETTLE_S)
    return value, elapsed


def peer_times(first, fn, reps):
    """The first (checked) call's time, and more calls when they are quick."""
    return [first] + ([median_time(fn, 1) for _ in range(reps - 1)] if first < 2.0 else [])


def median_time(fn, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        time.sleep(SETTLE_S)
    return statistics.median(times)


def qmlsim(args, binary):
    out = subprocess.run([binary] + args, capture_output=True, text=True)
    if out.returncode != 0:
        raise Failure(f"qmlsim {' '.join(args[:2])}: {out.stderr.strip()}")
    return out.stdout


def train(binary, config, sets, run_dir, max_steps=None):
    args = ["train", os.path.join(EXAMPLES, config), "--run-dir", run_dir, "--quiet"]
    for s in sets:
        args += ["--set", s]
    if max_steps is not None:
        args += ["--max-steps", str(max_steps)]
    qmlsim(args, binary)


def read_params(path):
    with h5py.File(path, "r") as f:
        out = {}
        f["params"].visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
        return out


def step_metrics(run_dir):
    return [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))
            if '"type":"step"' in line]


def check(name, ours, theirs, tol):
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    err = float(np.max(np.abs(ours - theirs))) if ours.size else 0.0
    if not (err <= tol):
        raise Failure(f"{name}: disagreement {err:.3g} > {tol:g}")
    return err


# ---------------------------------------------------------------------------
# Case 1: random circuits of 1- and 2-qubit gates, depth 20, <Z0>.
def random_circuit(n, depth, seed):
    rng = np.random.default_rng(seed)
    ops = []
    for layer in range(depth):
        for q in range(n):
            ops.append((rng.choice(["rx", "ry", "rz"]), (q,), float(rng.uniform(-np.pi, np.pi))))
        two = "cx" if layer % 2 == 0 else "cz"
        for q in range(layer % 2, n - 1, 2):
            ops.append((two, (q, q + 1), None))
    return ops


def write_qasm(path, n, ops):
    with open(path, "w") as f:
        f.write(f'OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[{n}];\n')
        for g, w, a in ops:
            args = ",".join(f"q[{x}]" for x in w)
            f.write(f"{g}({a!r}) {args};\n" if a is not None else f"{g} {args};\n")


def forward_rows(binary, case, size, n, qasm_path, reps, peers):
    """Times qmlsim on the file against each peer's prepared run(), <Z0> checked first.
    peers: name -> (precision, run). qmlsim is timed warm, as the peers are: the
    qmlsim package reads and runs the file in this process (qmlsim.expval_qasm:
    parse, bind, fuse, simulate, <Z0>); the second column is `qmlsim run` (a
    fresh process, its reported simulation time)."""
    text = open(qasm_path).read()

    def cli(precision):
        out = json.loads(qmlsim(["run", qasm_path, "--observable", "Z0", "--json", "--threads",
                                 str(THREADS), "--precision", precision], binary))
        return out["expval"][0], out["time_s"]["simulate"]

    def ours(precision):
        if QMLSIM_PACKAGE is None:
            return cli(precision)
        t = time.perf_counter()
        value = QMLSIM_PACKAGE.expval_qasm(text, "Z0", precision=precision, threads=THREADS)[0]
        return value, time.perf_counter() - t

    refs = {p: ours(p) for p in ("c64", "c128")}  # (<Z0>, seconds)
    for p in ("c64", "c128"):  # the fresh process agrees with the warm one
        check(f"{case} {size} qmlsim run", [refs[p][0]], [cli(p)[0]], 1e-5 if p == "c128" else 1e-4)
    rows = []
    for peer, (precision, run) in peers.items():
        value = run()
        time.sleep(SETTLE_S)
        err = check(f"{case} {size} {peer}", [refs[precision][0]], [value],
                    1e-5 if precision == "c128" else 1e-4)
        t_ours, t_peer, t_cli = [], [], []
        # Runs under a second alternate 3x as often: on a shared host one slow
        # burst can hold two of three samples (the median) of a 20 ms run.
        quick = refs[precision][1] < 1.0
        for _ in range(3 * reps if quick else reps):  # alternate
            t_ours.append(ours(precision)[1])
            time.sleep(SETTLE_S)
            t_peer.append(median_time(run, 1))
            if QMLSIM_PACKAGE is not None:
                t_cli.append(cli(precision)[1])
                time.sleep(SETTLE_S)  # the fresh process's exit, away from the next warm run
        rows.append(dict(case=case, size=size, peer=peer, precision=precision,
                         qmlsim_s=statistics.median(t_ours), peer_s=statistics.median(t_peer),
                         qmlsim_cli_s=statistics.median(t_cli) if t_cli else None,
                         max_error=err))
        report(rows[-1])
    return rows


# The peers that run at n qubits: at 28, only qsim (the others take minutes a run:
# Aer in single precision over 2 minutes, 4 runs per row).
def peers_at(n, peers):
    return {k: v for k, v in peers.items() if n < 28 or k == "qsim"}


def case_random(binary, sizes, reps, builders):
    rows = []
    for n in sizes:
        ops = random_circuit(n, 20, 1000 + n)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "c.qasm")
            write_qasm(path, n, ops)
            peers = {k: (p, b(n, ops)) for k, (p, b) in peers_at(n, builders).items()}
            rows += forward_rows(binary, "random depth 20", f"{n} qubits", n, path, reps, peers)
    return rows


# ---------------------------------------------------------------------------
# Case 1b: qsim's own benchmark family: random circuits on a grid of qubits,
# each cycle sqrt(X), sqrt(Y) or sqrt(W) on every qubit, then fSim(pi/2, pi/6)
# (or CZ) on one of four coupler patterns (cirq's generator of the supremacy-style
# circuits qsim is benchmarked on). qsim runs the Cirq circuit as it is; qmlsim
# reads Cirq's own OpenQASM export of it; the other peers run that file
# transpiled by Qiskit to rx, ry, rz, cx, cz.
def grid_circuit(rows_, cols, depth, entangler, seed):
    import cirq
    qubits = cirq.GridQubit.rect(rows_, cols)
    if entangler == "fsim":
        def two(a, b, _):
            return cirq.FSimGate(np.pi / 2, np.pi / 6)(a, b)
    else:
        def two(a, b, _):
            return cirq.CZ(a, b)
    c = cirq.experiments.random_rotations_between_grid_interaction_layers_circuit(
        qubits, depth=depth, two_qubit_op_factory=two, seed=seed)
    return qubits, c


def qasm_to_ops(text):
    """Cirq's export, transpiled by Qiskit to rx, ry, rz, cx, cz: (gate, wires, angle) ops."""
    from qiskit import QuantumCircuit, transpile
    qc = transpile(QuantumCircuit.from_qasm_str(text), basis_gates=["rx", "ry", "rz", "cx", "cz"],
                   optimization_level=1)
    ops = []
    for inst in qc.data:
        wires = tuple(qc.find_bit(q).index for q in inst.qubits)
        angle = float(inst.operation.params[0]) if inst.operation.params else None
        ops.append((inst.operation.name, wires, angle))
    return ops


def case_qsim_grid(binary, grids, reps, builders, with_qsim=True):
    import cirq
    import qsimcirq
    rows = []
    for (r, c), entangler in grids:
        n = r * c
        qubits, circuit = grid_circuit(r, c, 14, entangler, seed=n)
        text = cirq.qasm(circuit)
        peers = {}
        sim = qsimcirq.QSimSimulator(qsim_options={"t": THREADS, "f": 3})
        obs = [cirq.Z(qubits[0])]  # Cirq's export orders qubits as sorted: qubits[0] is q[0]
        if with_qsim:
            peers["qsim"] = ("c64", lambda: float(np.real(
                sim.simulate_expectation_values(circuit, observables=obs)[0])))
        ops = qasm_to_ops(text)
        for k, (p, b) in peers_at(n, builders).items():
            if k != "qsim":
                peers[k] = (p, b(n, ops))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "c.qasm")
            with open(path, "w") as f:
                f.write(text)
            rows += forward_rows(binary, f"qsim-style grid, 14 cycles, {entangler}",
                                 f"{n} qubits ({r}x{c})", n, path, reps, peers)
    return rows


def peer_builders():
    peers = {}
    try:
        import pennylane as qml

        def pl(n, ops):
            dev = qml.device("lightning.qubit", wires=n)
            gate = {"rx": qml.RX, "ry": qml.RY, "rz": qml.RZ}

            @qml.qnode(dev)
            def f():
                for g, w, a in ops:
                    if g == "cx":
                        qml.CNOT(wires=w)
                    elif g == "cz":
                        qml.CZ(wires=w)
                    else:
                        gate[g](a, wires=w[0])
                return qml.expval(qml.PauliZ(0))
            return lambda: float(f())
        peers["lightning.qubit"] = ("c128", pl)
    except ImportError as e:
        print(f"skip lightning.qubit: {e}")
    try:
        from qiskit import QuantumCircuit, transpile
        from qiskit.quantum_info import Pauli
        from qiskit_aer import AerSimulator

        def aer(n, ops, precision="double"):
            qc = QuantumCircuit(n)
            for g, w, a in ops:
                getattr(qc, g)(*(([a] if a is not None else []) + list(w)))
            qc.save_expectation_value(Pauli("I" * (n - 1) + "Z"), list(range(n)))
            sim = AerSimulator(method="statevector", precision=precision,
                               max_parallel_threads=THREADS, fusion_enable=True)
            tqc = transpile(qc, sim)
            return lambda: float(sim.run(tqc, shots=1).result().data()["expectation_value"])
        peers["qiskit-aer"] = ("c128", aer)
        peers["qiskit-aer (single)"] = ("c64", lambda n, ops: aer(n, ops, "single"))
    except ImportError as e:
        print(f"skip qiskit-aer: {e}")
    try:
        import qulacs
        from qulacs.circuit import QuantumCircuitOptimizer

        def qu(n, ops):
            c = qulacs.QuantumCircuit(n)
            for g, w, a in ops:  # qulacs rotations are exp(+i a P / 2): negate
                if g == "rx":
                    c.add_RX_gate(w[0], -a)
                elif g == "ry":
                    c.add_RY_gate(w[0], -a)
                elif g == "rz":
                    c.add_RZ_gate(w[0], -a)
                elif g == "cx":
                    c.add_CNOT_gate(*w)
                else:
                    c.add_CZ_gate(*w)
            QuantumCircuitOptimizer().optimize(c, 2)
            obs = qulacs.Observable(n)
            obs.add_operator(1.0, "Z 0")
            state = qulacs.QuantumState(n)

            def run():
                state.set_zero_state()
                c.update_quantum_state(state)
                return float(obs.get_expectation_value(state))
            return run
        peers["qulacs"] = ("c128", qu)
    except ImportError as e:
        print(f"skip qulacs: {e}")
    try:
        import cirq
        import qsimcirq

        def qs(n, ops):
            q = cirq.LineQubit.range(n)
            gate = {"rx": cirq.rx, "ry": cirq.ry, "rz": cirq.rz}
            c = cirq.Circuit()
            for g, w, a in ops:
                if g == "cx":
                    c.append(cirq.CNOT(q[w[0]], q[w[1]]))
                elif g == "cz":
                    c.append(cirq.CZ(q[w[0]], q[w[1]]))
                else:
                    c.append(gate[g](a)(q[w[0]]))
            sim = qsimcirq.QSimSimulator(qsim_options={"t": THREADS, "f": 3})
            obs = [cirq.Z(q[0])]
            return lambda: float(np.real(sim.simulate_expectation_values(c, observables=obs)[0]))
        peers["qsim"] = ("c64", qs)
    except ImportError as e:
        print(f"skip qsim: {e}")
    return peers


# ---------------------------------------------------------------------------
# Case 2: the QAOA job, cost + gradient at p = 2.
def read_graph(path):
    edges = [tuple(map(int, line.split())) for line in open(path)
             if line.strip() and not line.startswith("#")]
    return edges


def case_qaoa(binary, graphs, reps, with_aer):
    import pennylane as qml
    rows = []
    for nodes, edge_file, config in graphs:
        edges = read_graph(os.path.join(EXAMPLES, "data", "graphs", edge_file))
        with tempfile.TemporaryDirectory() as d:
            # Initial parameters, then one plain gradient step of 0.1: grad = (p0 - p1) / 0.1.
            train(binary, config, ["train.steps=0", "model.samples=0"], f"{d}/p0")
            train(binary, config, ["train.steps=1", "model.samples=0"], f"{d}/p1")
            p0 = read_params(f"{d}/p0/weights.h5")["params"]
            p1 = read_params(f"{d}/p1/weights.h5")["params"]
            ours_cost = step_metrics(f"{d}/p1")[0]["cost"]
            ours_grad = (p0 - p1) / 0.1

            def ours_time():
                with tempfile.TemporaryDirectory() as e:
                    train(binary, config, ["train.steps=2", "model.samples=0"], e)
                    return statistics.median(m["step_time_s"] for m in step_metrics(e))

        import networkx as nx
        g = nx.Graph()
        g.add_nodes_from(range(nodes))
        g.add_edges_from(edges)
        cost_h, mixer_h = qml.qaoa.maxcut(g)
        dev = qml.device("lightning.qubit", wires=nodes)

        def layer(gamma, alpha):
            qml.qaoa.cost_layer(gamma, cost_h)
            qml.qaoa.mixer_layer(alpha, mixer_h)

        @qml.qnode(dev, diff_method="adjoint")
        def cost(params):
            for w in range(nodes):
                qml.Hadamard(wires=w)
            qml.layer(layer, 2, params[0], params[1])
            return qml.expval(cost_h)

        params = qml.numpy.array(p0, requires_grad=True)
        pl_grad = qml.grad(cost)(params)
        pl_cost = float(cost(params))
        err = max(check(f"qaoa {nodes} cost", [ours_cost], [pl_cost], 1e-5),
                  check(f"qaoa {nodes} gradient", ours_grad, pl_grad, 1e-5))
        opt = qml.GradientDescentOptimizer(stepsize=0.1)
        time.sleep(SETTLE_S)
        t_ours, t_peer = [], []
        for _ in range(reps):
            t_ours.append(ours_time())
            t_peer.append(median_time(lambda: opt.step_and_cost(cost, params), 1))
            if t_peer[-1] > 20:  # a slow peer: one iteration is the measurement
                break
        rows.append(dict(case="QAOA p=2 cost+gradient+step", size=f"{nodes} nodes",
                         peer="lightning.qubit (adjoint)", precision="c128",
                         qmlsim_s=statistics.median(t_ours), peer_s=statistics.median(t_peer),
                         max_error=err))
        report(rows[-1])
        row = qaoa_qulacs(nodes, edges, p0, ours_cost, ours_grad, t_ours)
        if row:
            rows.append(row)
            report(row)
        if with_aer and nodes <= 18:
            row = qaoa_aer_shift(nodes, edges, p0, ours_cost, ours_grad, t_ours)
            rows.append(row)
            report(row)
    return rows


def qaoa_qulacs(nodes, edges, p0, ours_cost, ours_grad, t_ours):
    try:
        import qulacs
    except ImportError:
        return None
    # Parametric gates in order; qulacs rotations are exp(+i phi P / 2): phi = -theta.
    c = qulacs.ParametricQuantumCircuit(nodes)
    owner = []  # (row, column, d phi / d param)
    for q in range(nodes):
        c.add_H_gate(q)
    for k in range(2):
        for u, v in edges:
            c.add_parametric_multi_Pauli_rotation_gate([u, v], [3, 3], -p0[0][k])
            owner.append((0, k, -1.0))
        for q in range(nodes):
            c.add_parametric_RX_gate(q, -2 * p0[1][k])
            owner.append((1, k, -2.0))
    obs = qulacs.Observable(nodes)
    for u, v in edges:
        obs.add_operator(0.5, f"Z {u} Z {v}")
    state = qulacs.QuantumState(nodes)

    def run():
        state.set_zero_state()
        c.update_quantum_state(state)
        value = obs.get_expectation_value(state).real - 0.5 * len(edges)
        grads = c.backprop(obs)
        g = np.zeros((2, 2))
        for (r, k, d), x in zip(owner, grads):
            g[r][k] += d * x
        return value, g

    value, g = run()
    err = max(check(f"qaoa {nodes} qulacs cost", [ours_cost], [value], 1e-5),
              check(f"qaoa {nodes} qulacs gradient", ours_grad, g, 1e-5))
    return dict(case="QAOA p=2 cost+gradient+step", size=f"{nodes} nodes",
                peer="qulacs (backprop)", precision="c128", qmlsim_s=statistics.median(t_ours),
                peer_s=median_time(run, 3), max_error=err)


def qaoa_aer_shift(nodes, edges, p0, ours_cost, ours_grad, t_ours):
    # Qiskit Aer has no adjoint: the gradient by parameter shift, two circuits
    # per gate occurrence (84 at p = 2 on 18 nodes / 24 edges), counted in full.
    from qiskit import QuantumCircuit, transpile
    from qiskit.quantum_info import SparsePauliOp
    from qiskit_aer import AerSimulator
    sim = AerSimulator(method="statevector", max_parallel_threads=THREADS, fusion_enable=True)
    op = SparsePauliOp.from_sparse_list([("ZZ", [u, v], 0.5) for u, v in edges], nodes)

    def circuit(shift_gate=None, shift=0.0):
        qc = QuantumCircuit(nodes)
        qc.h(range(nodes))
        i = 0
        for k in range(2):
            for u, v in edges:
                qc.rzz(p0[0][k] + (shift if i == shift_gate else 0), u, v)
                i += 1
            for q in range(nodes):
                qc.rx(2 * p0[1][k] + (shift if i == shift_gate else 0), q)
                i += 1
        qc.save_expectation_value(op, list(range(nodes)))
        return qc, i

    _, count = circuit()
    circuits = [circuit()[0]] + [circuit(i, s)[0] for i in range(count) for s in (np.pi / 2, -np.pi / 2)]
    tcs = transpile(circuits, sim)

    def run():
        res = sim.run(tcs, shots=1).result()
        vals = [float(res.data(i)["expectation_value"]) for i in range(len(tcs))]
        g = np.zeros((2, 2))
        i = 0
        for k in range(2):
            for _ in edges:
                g[0][k] += (vals[1 + 2 * i] - vals[2 + 2 * i]) / 2
                i += 1
            for _ in range(nodes):
                g[1][k] += 2 * (vals[1 + 2 * i] - vals[2 + 2 * i]) / 2
                i += 1
        return vals[0] - 0.5 * len(edges), g

    value, g = run()
    err = max(check("qaoa aer cost", [ours_cost], [value], 1e-5),
              check("qaoa aer gradient", ours_grad, g, 1e-5))
    return dict(case="QAOA p=2 cost+gradient+step", size=f"{nodes} nodes",
                peer=f"qiskit-aer (parameter shift, {len(tcs)} circuits)", precision="c128",
                qmlsim_s=statistics.median(t_ours), peer_s=median_time(run, 1), max_error=err)


# ---------------------------------------------------------------------------
# Cases 3 and 4: the hybrid models, forward + gradient of a batch, against
# PennyLane lightning.qubit (adjoint) with autograd for the classical layers.
# Both sides start from qmlsim's initial weights (checkpoint 0) and the same
# examples; qmlsim's batch gradient is read off one SGD step of rate 1.
def qmlsim_batch(binary, config, sets, reps):
    base = sets + ["train.optimizer=sgd", "train.learning_rate=1", "train.shuffle=false"]
    with tempfile.TemporaryDirectory() as d:
        train(binary, config, base, f"{d}/a", max_steps=0)
        train(binary, config, base, f"{d}/b", max_steps=1)
        p0 = read_params(f"{d}/a/checkpoints/ckpt-00000000.h5")
        p1 = read_params(f"{d}/b/checkpoints/ckpt-00000001.h5")
        loss = step_metrics(f"{d}/b")[0]["loss"]
        times = []
        for _ in range(reps):
            with tempfile.TemporaryDirectory() as e:
                train(binary, config, base, e, max_steps=3)
                times.append(statistics.median(m["step_time_s"] for m in step_metrics(e)[1:]))
    grad = {k: p0[k] - p1[k] for k in p0}
    return p0, grad, loss, times


def compare_batch(name, batch_loss, names, p0, grad, loss, reps):
    """PennyLane's batch loss and gradient (autograd over the named tensors, from
    qmlsim's initial weights) against qmlsim's; returns the largest difference
    and the peer's timings of the gradient call."""
    import pennylane as qml
    from pennylane import numpy as pnp
    args = [pnp.array(p0[k], requires_grad=True) for k in names]
    grad_fn = qml.grad(batch_loss, argnums=list(range(len(names))))
    pl_grad, first = timed(lambda: grad_fn(*args))
    err = max(check(f"{name} loss", [loss], [float(batch_loss(*args))], 1e-5),
              max(check(f"{name} d/{k}", grad[k], g, 1e-5) for k, g in zip(names, pl_grad)))
    return err, peer_times(first, lambda: grad_fn(*args), reps)


def one_qubit_unitary(qml, q, s):
    qml.RX(np.pi * s[0], wires=q)
    qml.RY(np.pi * s[1], wires=q)
    qml.RZ(np.pi * s[2], wires=q)


def two_qubit_unitary(qml, a, b, s):
    one_qubit_unitary(qml, a, s[0:3])
    one_qubit_unitary(qml, b, s[3:6])
    qml.IsingZZ(np.pi * s[6], wires=[a, b])
    qml.IsingYY(np.pi * s[7], wires=[a, b])
    qml.IsingXX(np.pi * s[8], wires=[a, b])
    one_qubit_unitary(qml, a, s[9:12])
    one_qubit_unitary(qml, b, s[12:15])


def qcnn_tfq(tfq_python, p0, batch, n, loss, grad, t_ours, reps):
    """The same batch in TensorFlow Quantum (adjoint differentiator), run by
    tfq_qcnn.py in TFQ's own environment."""
    with tempfile.TemporaryDirectory() as d:
        with h5py.File(f"{d}/w.h5", "w") as f:
            for k, v in p0.items():
                f[f"params/{k}"] = v
        json.dump(batch, open(f"{d}/examples.json", "w"))
        out = subprocess.run([tfq_python, os.path.join(os.path.dirname(__file__), "tfq_qcnn.py"),
                              f"{d}/w.h5", f"{d}/examples.json", str(n), str(reps + 1)],
                             capture_output=True, text=True)
    if out.returncode != 0:
        raise Failure(f"tfq_qcnn.py: {out.stderr.strip()[-500:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    # TFQ computes in single precision (complex64): agreement to 1e-4 with
    # qmlsim's complex128 values; the timing row compares with qmlsim in complex64.
    err = max(check(f"qcnn {n} tfq loss", [loss], [r["loss"]], 1e-4),
              check(f"qcnn {n} tfq d/conv", grad["quantum/conv"], r["conv"], 1e-4),
              check(f"qcnn {n} tfq d/pool", grad["quantum/pool"], r["pool"], 1e-4),
              check(f"qcnn {n} tfq d/dense1", grad["dense1/weight"], r["dense1_weight"], 1e-4),
              check(f"qcnn {n} tfq d/dense2", grad["dense2/weight"], r["dense2_weight"], 1e-4))
    return dict(case="QCNN hybrid: forward+gradient, batch of 32", size=f"{n} qubits",
                peer=f"TensorFlow Quantum {r['tfq']} (adjoint)", precision="c64",
                qmlsim_s=statistics.median(t_ours), peer_s=statistics.median(r["times"][1:]),
                max_error=err)


def case_qcnn(binary, sizes, reps, tfq_python=None):
    import pennylane as qml
    from pennylane import numpy as pnp
    rows = []
    for n in sizes:
        rounds = 20 if n == 8 else 6
        sets = [f"data.qubits={n}", f"data.rounds={rounds}", "train.batch_size=32",
                "job.precision=c128"]
        p0, grad, loss, t_ours = qmlsim_batch(binary, "qcnn.toml", sets, reps)
        rng = Rng(1234)
        examples = [(q, rng.uniform(-np.pi, np.pi)) for _ in range(rounds) for q in range(n)]
        batch = [(q, th, 1.0 if abs(th) <= np.pi / 2 else -1.0) for q, th in examples[:32]]
        half = n // 2
        dev = qml.device("lightning.qubit", wires=n)

        @qml.qnode(dev, diff_method="adjoint")
        def circuit(conv, pool, q, theta):
            for w in range(n):
                qml.Hadamard(wires=w)
            for w in range(n):
                qml.CZ(wires=[w, (w + 1) % n])
            qml.RX(theta, wires=q)
            bits = list(range(n))
            for a, b in zip(bits[0::2], bits[1::2]):
                two_qubit_unitary(qml, a, b, conv)
            for a, b in zip(bits[1::2], bits[2::2] + [bits[0]]):
                two_qubit_unitary(qml, a, b, conv)
            for src, sink in zip(bits[:half], bits[half:]):
                one_qubit_unitary(qml, sink, pool[0:3])
                one_qubit_unitary(qml, src, pool[3:6])
                qml.CNOT(wires=[src, sink])
                qml.RZ(-np.pi * pool[2], wires=sink)
                qml.RY(-np.pi * pool[1], wires=sink)
                qml.RX(-np.pi * pool[0], wires=sink)
            return [qml.expval(qml.PauliZ(w)) for w in bits[half:]]

        def batch_loss(conv, pool, w1, b1, w2, b2):
            total = 0.0
            for q, th, y in batch:
                e = pnp.stack(circuit(conv, pool, q, th))
                pred = pnp.dot(w2, pnp.dot(w1, e) + b1) + b2
                total = total + (pred[0] - y) ** 2
            return total / len(batch)

        names = ["quantum/conv", "quantum/pool", "dense1/weight", "dense1/bias", "dense2/weight",
                 "dense2/bias"]
        err, t_peer = compare_batch(f"qcnn {n}", batch_loss, names, p0, grad, loss, reps)
        rows.append(dict(case="QCNN hybrid: forward+gradient, batch of 32", size=f"{n} qubits",
                         peer="lightning.qubit (adjoint) + autograd", precision="c128",
                         qmlsim_s=statistics.median(t_ours), peer_s=statistics.median(t_peer),
                         max_error=err))
        report(rows[-1])
        if tfq_python:  # TFQ computes in complex64: so does qmlsim for its timing
            sets64 = [x for x in sets if not x.startswith("job.precision")] + ["job.precision=c64"]
            t64 = qmlsim_batch(binary, "qcnn.toml", sets64, reps)[3]
            rows.append(qcnn_tfq(tfq_python, p0, batch, n, loss, grad, t64, reps))
            report(rows[-1])
    return rows


def case_sonar(binary, sizes, reps):
    import pennylane as qml
    from pennylane import numpy as pnp
    rows = []
    data = [line.strip().split(",") for line in open(os.path.join(EXAMPLES, "data", "sonar.all-data"))
            if line.strip()]
    kept = [data[i] for i in Rng(42).permutation(len(data))[:64]]
    for n in sizes:
        batch_size = 16 if n <= 10 else 4
        sets = [f"model.wires={n}", f"train.batch_size={batch_size}"]
        p0, grad, loss, t_ours = qmlsim_batch(binary, "sonar_dressed.toml", sets, reps)
        batch = [(np.array(r[:60], float), 1.0 if r[60] == "M" else -1.0) for r in kept[:batch_size]]
        dev = qml.device("lightning.qubit", wires=n)

        def entangling(p, rng_):
            for i in range(n):
                qml.Rot(*p[0][i], wires=i)
            w = 0
            for k in range(n):
                t = (w - rng_) % n
                qml.CRot(*p[1][k], wires=[w, t])
                w = t

        @qml.qnode(dev, diff_method="adjoint")
        def circuit(angles, w1, w2, rot):
            for i in range(n):
                qml.RX(angles[i], wires=i)
            entangling(w1, 1)
            entangling(w2, 3)
            qml.Rot(*rot, wires=0)
            return qml.expval(qml.PauliZ(0))

        def batch_loss(wi, bi, w1, w2, rot, wo, bo):
            total = 0.0
            for x, y in batch:
                h = pnp.dot(wi, x) + bi
                angles = (1 / (1 + pnp.exp(-h)) - 0.5) * 2 * np.pi
                out = wo[0][0] * circuit(angles, w1, w2, rot) + bo[0]
                total = total + pnp.maximum(0.0, -y * out + 0.1)
            return total / len(batch)

        names = ["input/weight", "input/bias", "quantum/w1", "quantum/w2", "quantum/rot",
                 "output/weight", "output/bias"]
        err, t_peer = compare_batch(f"sonar {n}", batch_loss, names, p0, grad, loss, reps)
        rows.append(dict(case="Sonar dressed: forward+gradient per row", size=f"{n} wires",
                         peer="lightning.qubit (adjoint) + autograd", precision="c128",
                         qmlsim_s=statistics.median(t_ours) / batch_size,
                         peer_s=statistics.median(t_peer) / batch_size, max_error=err))
        report(rows[-1])
    return rows


# ---------------------------------------------------------------------------
def fmt(s):
    return f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"


def report(row):
    row["ratio"] = row["peer_s"] / row["qmlsim_s"]
    cli_s = row.get("qmlsim_cli_s")
    print(f"| {row['case']} | {row['size']} | {row['peer']} | {row['precision']} | "
          f"{fmt(row['qmlsim_s'])} | {fmt(row['peer_s'])} | **{row['ratio']:.2f}** | "
          f"{fmt(cli_s) if cli_s else '-'} | {row['max_error']:.1e} |", flush=True)


def versions():
    out = {}
    for pkg in ("pennylane", "pennylane_lightning", "qiskit", "qiskit_aer", "qulacs", "qsimcirq",
                "cirq-core", "numpy"):
        try:
            from importlib.metadata import version
            out[pkg] = version(pkg.replace("_", "-"))
        except Exception:  # noqa: BLE001
            out[pkg] = "absent"
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qmlsim", default=os.path.join(ROOT, "build", "release", "qmlsim"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default="peers.json")
    ap.add_argument("--tfq-python", help="python of an environment with tensorflow-quantum")
    ap.add_argument("--cases", default="random,grid,qaoa,sonar,qcnn",
                    help="comma-separated subset of random,grid,qaoa,sonar,qcnn")
    ap.add_argument("--peers", help="random and grid cases: only these peers (comma-separated "
                    "names as in the table, e.g. qsim)")
    ap.add_argument("--sizes", help="random and grid cases: only these qubit counts (e.g. 24,28)")
    ap.add_argument("--settle", type=float, default=0.0,
                    help="seconds of pause after each timed call (default 0: back to back)")
    args = ap.parse_args()
    global SETTLE_S
    SETTLE_S = args.settle
    wanted = set(args.cases.split(","))
    unknown = wanted - {"random", "grid", "qaoa", "sonar", "qcnn"}
    if unknown:
        ap.error(f"--cases: unknown case(s) {', '.join(sorted(unknown))}")
    quick = args.quick
    reps = 2 if quick else 3
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    meta = dict(date=time.strftime("%Y-%m-%d"), cpu=cpu, cores=os.cpu_count(), threads=THREADS,
                python=platform.python_version(), versions=versions(), quick=quick)
    print(f"# {meta['date']}, {cpu}, {os.cpu_count()} cores, threads = {THREADS}")
    print("# versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()))
    print("| case | size | peer | precision | qmlsim | peer | peer / qmlsim | qmlsim run "
          "(fresh process) | max abs diff |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows, failures = [], []
    grids = [((4, 4), "fsim"), ((4, 5), "fsim")] if quick else [
        ((4, 4), "fsim"), ((4, 5), "fsim"), ((4, 6), "fsim"), ((4, 6), "cz"), ((4, 7), "fsim")]
    random_sizes = [16, 20] if quick else [16, 20, 24, 28]
    if args.sizes:
        sizes = {int(x) for x in args.sizes.split(",")}
        grids = [g for g in grids if g[0][0] * g[0][1] in sizes]
        random_sizes = [n for n in random_sizes if n in sizes]

    def builders():
        b = peer_builders()
        return {k: v for k, v in b.items() if not args.peers or k in args.peers.split(",")}
    cases = [
        ("random", lambda: case_random(args.qmlsim, random_sizes, reps, builders())),
        ("grid", lambda: case_qsim_grid(args.qmlsim, grids, reps, builders(),
                                        with_qsim=not args.peers or "qsim" in args.peers)),
        ("qaoa", lambda: case_qaoa(args.qmlsim, [(18, "gnm_n18_m24_seed1967.edges", "qaoa_maxcut.toml")] +
                          ([] if quick else [(24, "gnm_n24_m36_seed1967.edges", "qaoa_maxcut_24.toml")]),
                          reps, with_aer=not quick)),
        ("sonar", lambda: case_sonar(args.qmlsim, [10] if quick else [10, 16, 20], reps)),
        ("qcnn", lambda: case_qcnn(args.qmlsim, [8] if quick else [8, 12], reps, args.tfq_python)),
    ]
    for name, case in cases:
        if name not in wanted:
            continue
        try:
            rows += case()
        except Failure as e:
            failures.append(str(e))
            print(f"FAILED: {e}", flush=True)
    with open(args.json, "w") as f:
        json.dump(dict(meta=meta, rows=rows, failures=failures), f, indent=1)
    print(f"# results: {args.json}")
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
