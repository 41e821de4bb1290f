#!/usr/bin/env python3
"""qmlsim.qubit against lightning.qubit on the PennyLane workloads users run most.

Each workload is written once and run on both devices from the same code:
agreement first (values and gradients to 1e-8, complex128; 1e-6 for the torch
rows, where lightning.qubit returns float32 tensors), then timed runs
alternating between the devices; medians, and the ratio lightning / qmlsim
(above 1: qmlsim is faster), as a markdown table.

    python bench/peers/pennylane_workloads.py [--reps 5] [--only NAME,...] [--large] [--torch]
        [--share]

Workloads: QAOA Max-Cut (18 nodes; 24 with --large), VQE on H4 and LiH with
AllSinglesDoubles and with UCCSD (adjoint gradient of the molecular
Hamiltonian; H4 also with the Hamiltonian built from `qml.qchem.Molecule`, as
the qchem demos build it, and rebuilt from its terms in every call; the
forward pass in each form),
StronglyEntanglingLayers forward and Jacobian (4, 8, 12, 16 qubits, one <Z>
per wire), a quantum kernel matrix (6 and 10 qubits; and 6 qubits in the
kernels demo's form: a gate-by-gate ansatz and its qml.adjoint), a data
re-uploading classifier (8 qubits, 3 layers, batch of 32 through qml.jacobian);
with --torch, the dressed classifier of PennyLane's transfer-learning demo
(one QNode call per row, 10 and 16 wires, training and inference).
The environment needs qmlsim (pip install .) and pennylane (which brings
pennylane-lightning); torch for --torch.
"""
import argparse
import statistics
import sys
import time

import numpy as np
import pennylane as qml
from pennylane import numpy as pnp

DEVICES = ("qmlsim.qubit", "lightning.qubit")


def flat(x):
    """Every number of a (nested) result, as one float array."""
    if isinstance(x, (tuple, list)):
        return np.concatenate([flat(v) for v in x]) if x else np.zeros(0)
    return np.asarray(qml.math.unwrap(x), dtype=float).reshape(-1)


# -- workloads: name -> (qubits, make(device name) -> run() -> result)
def qaoa(nodes):
    import networkx as nx

    graph = nx.gnm_random_graph(nodes, {18: 24, 24: 36}[nodes], seed=1967)
    cost_h, mixer_h = qml.qaoa.maxcut(graph)

    def make(name):
        dev = qml.device(name, wires=nodes)

        @qml.qnode(dev, diff_method="adjoint")
        def cost(p):
            for w in range(nodes):
                qml.Hadamard(w)
            for k in range(2):
                qml.qaoa.cost_layer(p[0][k], cost_h)
                qml.qaoa.mixer_layer(p[1][k], mixer_h)
            return qml.expval(cost_h)

        p = pnp.array(np.random.default_rng(1).uniform(0, 0.01, (2, 2)), requires_grad=True)
        return lambda: (cost(p), qml.grad(cost)(p))

    return nodes, make


_HAMILTONIANS = {}


def vqe(molecule, ansatz, form="symbols", forward_only=False):
    """form "symbols": molecular_hamiltonian(symbols, coordinates), as
    bench scripts write it; "Molecule": molecular_hamiltonian(qml.qchem.Molecule(...)),
    as PennyLane's qchem demos write it (pennylane.numpy coefficients);
    "rebuilt": the symbols form's terms rebuilt in every call (qml.dot of
    pennylane.numpy coefficients), as code that builds its observable inside
    the QNode does."""
    symbols, coords, electrons = {
        "H4": (["H"] * 4, np.array([0.0, 0, 0, 0, 0, 1.4, 0, 0, 2.8, 0, 0, 4.2]), 4),
        "LiH": (["Li", "H"], np.array([0.0, 0, 0, 0, 0, 2.969280527]), 4),
    }[molecule]
    if (molecule, form) not in _HAMILTONIANS:
        _HAMILTONIANS[molecule, form] = qml.qchem.molecular_hamiltonian(
            qml.qchem.Molecule(symbols, coords) if form == "Molecule" else symbols,
            *(() if form == "Molecule" else (coords,)))
    h, n = _HAMILTONIANS[molecule, form]
    coeffs, terms = h.terms()
    coeffs = np.asarray(qml.math.unwrap(coeffs), dtype=float)

    def observable():
        return qml.dot(pnp.array(coeffs, requires_grad=False), terms) if form == "rebuilt" else h
    hf = qml.qchem.hf_state(electrons, n)
    singles, doubles = qml.qchem.excitations(electrons, n)
    count = len(singles) + len(doubles)

    def make(name):
        dev = qml.device(name, wires=n)

        @qml.qnode(dev, diff_method="adjoint")
        def energy(w):
            if ansatz == "AllSinglesDoubles":
                qml.AllSinglesDoubles(w, wires=range(n), hf_state=hf, singles=singles,
                                      doubles=doubles)
            else:
                s_wires, d_wires = qml.qchem.excitations_to_wires(singles, doubles)
                qml.UCCSD(w, wires=range(n), s_wires=s_wires, d_wires=d_wires, init_state=hf)
            return qml.expval(observable())

        w = pnp.array(np.random.default_rng(2).uniform(-0.1, 0.1, count), requires_grad=True)
        if forward_only:
            return lambda: energy(w)
        return lambda: (energy(w), qml.grad(energy)(w))

    return n, make


def strongly_entangling(n, jacobian):
    shape = qml.StronglyEntanglingLayers.shape(n_layers=3, n_wires=n)

    def make(name):
        dev = qml.device(name, wires=n)

        @qml.qnode(dev, diff_method="adjoint")
        def f(w):
            qml.StronglyEntanglingLayers(w, wires=range(n))
            return [qml.expval(qml.Z(i)) for i in range(n)]

        w = pnp.array(np.random.default_rng(3).uniform(0, 2 * np.pi, shape), requires_grad=True)
        if jacobian:
            return lambda: qml.jacobian(lambda v: qml.math.stack(f(v)))(w)
        return lambda: f(w)

    return n, make


def kernel_matrix(n, points):
    x = np.random.default_rng(4).uniform(0, np.pi, (points, n))

    def make(name):
        dev = qml.device(name, wires=n)

        @qml.qnode(dev)
        def overlap(a, b):
            qml.AngleEmbedding(a, wires=range(n))
            qml.IQPEmbedding(a, wires=range(n))
            qml.adjoint(qml.IQPEmbedding)(b, wires=range(n))
            qml.adjoint(qml.AngleEmbedding)(b, wires=range(n))
            return qml.probs(wires=range(n))

        return lambda: qml.kernels.square_kernel_matrix(x, lambda a, b: overlap(a, b)[0],
                                                        assume_normalized_kernel=True)

    return n, make


def kernel_matrix_demo(n, points, layers=6):
    """The kernel of PennyLane's kernels demo (tutorial_kernels_module) as it
    writes it: a layered ansatz gate by gate (Hadamard, RZ of the data, RY,
    a ring of CRZ) and qml.adjoint of it, qml.probs of every wire."""
    x = np.random.default_rng(4).uniform(0, np.pi, (points, n))
    params = np.random.default_rng(9).uniform(0, 2 * np.pi, (layers, 2, n))

    def ansatz(x, params, wires):
        for k, layer_params in enumerate(params):
            for j, wire in enumerate(wires):
                qml.Hadamard(wires=[wire])
                qml.RZ(x[(k * len(wires) + j) % len(x)], wires=[wire])
                qml.RY(layer_params[0, j], wires=[wire])
            for j in range(len(wires)):
                qml.CRZ(layer_params[1][j], wires=[wires[j], wires[(j + 1) % len(wires)]])

    def make(name):
        dev = qml.device(name, wires=n)

        @qml.qnode(dev)
        def kernel_circuit(a, b):
            ansatz(a, params, wires=range(n))
            qml.adjoint(ansatz)(b, params, wires=range(n))
            return qml.probs(wires=range(n))

        return lambda: qml.kernels.square_kernel_matrix(
            x, lambda a, b: kernel_circuit(a, b)[0], assume_normalized_kernel=True)

    return n, make


def reuploading(n=8, layers=3, batch=32):
    x = np.random.default_rng(5).uniform(-1, 1, (batch, n))

    def make(name):
        dev = qml.device(name, wires=n)

        @qml.qnode(dev, diff_method="adjoint")
        def f(w, row):
            for k in range(layers):
                qml.AngleEmbedding(row, wires=range(n), rotation="Y")
                for i in range(n):
                    qml.Rot(*w[k, i], wires=i)
                for i in range(n):
                    qml.CNOT([i, (i + 1) % n])
            return qml.expval(qml.Z(0))

        w = pnp.array(np.random.default_rng(6).uniform(0, 2 * np.pi, (layers, n, 3)),
                      requires_grad=True)

        def loss(v):
            return sum((f(v, row) - 0.5) ** 2 for row in x) / batch

        return lambda: (loss(w), qml.grad(loss)(w))

    return n, make


def transfer_learning(n, train):
    """PennyLane's transfer-learning demo's dressed quantum layer: 512 -> n
    features, n wires (Hadamards, RY encoding, 6 entangling layers of CNOTs and
    RY), n <Z> readouts, 2 outputs; one QNode call per row (the demo's loop),
    torch with the QNode's default options."""
    import torch

    torch.manual_seed(7)
    q_depth = 6
    rows = torch.randn(4, 512)

    def make(name):
        dev = qml.device(name, wires=n)

        @qml.qnode(dev, interface="torch", diff_method="adjoint")
        def net(inputs, weights):
            for i in range(n):
                qml.Hadamard(i)
            for i in range(n):
                qml.RY(inputs[i], wires=i)
            for k in range(q_depth):
                for i in range(0, n - 1, 2):
                    qml.CNOT([i, i + 1])
                for i in range(1, n - 1, 2):
                    qml.CNOT([i, i + 1])
                for i in range(n):
                    qml.RY(weights[k * n + i], wires=i)
            return [qml.expval(qml.Z(i)) for i in range(n)]

        torch.manual_seed(8)
        pre = torch.nn.Linear(512, n).double()
        post = torch.nn.Linear(n, 2).double()
        weights = torch.nn.Parameter(0.01 * torch.randn(q_depth * n, dtype=torch.float64))

        def forward(batch):
            q_in = torch.tanh(pre(batch.double())) * np.pi / 2
            q_out = torch.stack([torch.hstack(net(row, weights)) for row in q_in])
            return post(q_out.double())

        def run():
            if not train:
                with torch.no_grad():
                    return forward(rows).numpy()
            out = forward(rows)
            out.sum().backward()
            g = weights.grad.detach().numpy().copy()
            weights.grad = None
            return out.detach().numpy(), g

        return run

    return n, make


# The device's own methods (what a device implements; PennyLane's workflow,
# transforms and interfaces around them are the same code for both devices).
_DEVICE_METHODS = ("execute", "compute_derivatives", "execute_and_compute_derivatives",
                   "compute_vjp", "execute_and_compute_vjp", "supports_derivatives",
                   "setup_execution_config", "preprocess_transforms")


def device_share(run, name, reps):
    """(seconds in the device's own methods, seconds in all) per run: the
    device class's methods timed (outermost calls only), over `reps` runs."""
    cls = type(qml.device(name, wires=1))
    spent = [0.0]
    depth = [0]

    def timed(f):
        def wrapper(*a, **k):
            depth[0] += 1
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    spent[0] += time.perf_counter() - t
        return wrapper

    own = {m: vars(cls)[m] for m in _DEVICE_METHODS if m in vars(cls)}
    for m in _DEVICE_METHODS:
        setattr(cls, m, timed(getattr(cls, m)))
    try:
        t = time.perf_counter()
        for _ in range(reps):
            run()
        total = time.perf_counter() - t
    finally:
        for m in _DEVICE_METHODS:
            if m in own:
                setattr(cls, m, own[m])
            else:
                delattr(cls, m)
    return spent[0] / reps, total / reps


def workloads(args):
    w = {"QAOA Max-Cut, 18 nodes: cost + gradient": qaoa(18)}
    if args.large:
        w["QAOA Max-Cut, 24 nodes: cost + gradient"] = qaoa(24)
    for mol in ("H4", "LiH"):
        for ansatz in ("AllSinglesDoubles", "UCCSD"):
            w[f"VQE {mol}, {ansatz}: energy + gradient"] = vqe(mol, ansatz)
    w["VQE H4, AllSinglesDoubles, Hamiltonian from qml.qchem.Molecule: energy + gradient"] = \
        vqe("H4", "AllSinglesDoubles", "Molecule")
    w["VQE H4, AllSinglesDoubles, Hamiltonian rebuilt in every call: energy + gradient"] = \
        vqe("H4", "AllSinglesDoubles", "rebuilt")
    for form in ("symbols", "Molecule", "rebuilt"):
        w[f"VQE H4, AllSinglesDoubles, Hamiltonian from {form}: energy"] = \
            vqe("H4", "AllSinglesDoubles", form, forward_only=True)
    for n in (4, 8, 12, 16):
        w[f"StronglyEntanglingLayers, {n} qubits: forward"] = strongly_entangling(n, False)
        w[f"StronglyEntanglingLayers, {n} qubits: Jacobian"] = strongly_entangling(n, True)
    w["kernel matrix, 6 qubits, 30 points (435 circuits)"] = kernel_matrix(6, 30)
    w["kernel matrix, 10 qubits, 12 points (66 circuits)"] = kernel_matrix(10, 12)
    w["kernel matrix, kernels-demo form, 6 qubits, 12 points (66 circuits)"] = \
        kernel_matrix_demo(6, 12)
    w["data re-uploading, 8 qubits, 3 layers, batch of 32: loss + gradient"] = reuploading()
    if args.torch:
        for n in (10, 16):
            w[f"transfer-learning dressed layer, {n} wires, 4 rows: training step"] = \
                transfer_learning(n, True)
            w[f"transfer-learning dressed layer, {n} wires, 4 rows: inference"] = \
                transfer_learning(n, False)
    if args.only:
        keep = [k for k in w if any(s.lower() in k.lower() for s in args.only.split(","))]
        w = {k: w[k] for k in keep}
    return w


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="timed runs per device (default 5)")
    ap.add_argument("--only", help="comma-separated substrings of workload names")
    ap.add_argument("--large", action="store_true", help="add QAOA on 24 nodes (minutes)")
    ap.add_argument("--torch", action="store_true", help="add the torch workloads")
    ap.add_argument("--share", action="store_true",
                    help="add each device's own share of a run: the time in its methods "
                         "(execute, derivatives, VJPs, configuration), the rest being PennyLane's "
                         "workflow, transforms and interfaces")
    args = ap.parse_args()
    print(f"PennyLane {qml.__version__}; medians of {args.reps} alternating runs after a "
          "warm-up and an agreement check (1e-8)\n")
    share_head = " in qmlsim.qubit's methods | in lightning.qubit's methods |" if args.share else ""
    print("| workload | qubits | qmlsim.qubit | lightning.qubit | lightning / qmlsim |" + share_head)
    print("| --- | ---: | ---: | ---: | ---: |" + (" ---: | ---: |" if args.share else ""))
    failed = False
    for title, (n, make) in workloads(args).items():
        runs = {name: make(name) for name in DEVICES}
        results = {name: flat(run()) for name, run in runs.items()}  # warm-up and agreement
        diff = float(np.max(np.abs(results[DEVICES[0]] - results[DEVICES[1]])))
        # lightning.qubit's torch results come back as float32 tensors
        if diff > (1e-6 if title.startswith("transfer") else 1e-8):
            print(f"| {title} | {n} | disagree: max abs diff {diff:.1e} | | |", flush=True)
            failed = True
            continue
        times = {name: [] for name in DEVICES}
        for _ in range(args.reps):
            for name, run in runs.items():
                t = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - t)
        med = {name: statistics.median(v) for name, v in times.items()}
        fmt = lambda s: f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"  # noqa: E731
        shares = ""
        for name in DEVICES if args.share else ():
            inside, total = device_share(runs[name], name, args.reps)
            shares += f" {fmt(inside)} of {fmt(total)} ({100 * inside / total:.0f}%) |"
        print(f"| {title} | {n} | {fmt(med[DEVICES[0]])} | {fmt(med[DEVICES[1]])} | "
              f"**{med[DEVICES[1]] / med[DEVICES[0]]:.2f}x** |" + shares, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
