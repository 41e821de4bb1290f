#!/usr/bin/env python3
"""Exchanges of the distributed state vector against a per-gate pairwise scheme.

For random circuits, the QAOA Max-Cut circuit and the QFT at several sizes, runs
`mpirun -np P qmlsim run CIRCUIT --distributed --json` and prints, per process,
the exchange rounds and bytes sent by the planned schedule beside the per-gate
scheme of QuEST and lightning (an exchange for every gate with a non-diagonal
target on a slice qubit, and a swap in and back out for multi-target gates), and
the forward pass's time split into compute and exchange. Every row is checked
against one process first (expectation value to 1e-6 in complex64).

  bench/distributed/bench_distributed.py [--qmlsim build/release/qmlsim]
      [--qubits 20,22,24,26] [--processes 2,4,8] [--precision c64]
  bench/distributed/bench_distributed.py --emit random|qaoa|qft --qubits N [--depth D]
      (prints the circuit: random has D layers, default 10)
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile


def random_circuit(n, depth, seed):
    """qsim-style layers: a random rotation on every qubit, then CZ on random disjoint pairs."""
    rng = random.Random(seed)
    lines = ["OPENQASM 2.0;", 'include "qelib1.inc";', f"qreg q[{n}];"]
    for _ in range(depth):
        for q in range(n):
            g = rng.choice(["rx", "ry", "rz"])
            lines.append(f"{g}({rng.uniform(-3.14, 3.14):.6f}) q[{q}];")
        order = list(range(n))
        rng.shuffle(order)
        for a, b in zip(order[::2], order[1::2]):
            lines.append(f"cx q[{a}],q[{b}];" if rng.random() < 0.5 else f"cz q[{a}],q[{b}];")
    return "\n".join(lines) + "\n"


def qaoa_circuit(n, p, seed):
    """Max-Cut QAOA on a random 3-regular-like graph (3n/2 edges), p layers."""
    rng = random.Random(seed)
    edges = set()
    while len(edges) < 3 * n // 2:
        a, b = rng.sample(range(n), 2)
        edges.add((min(a, b), max(a, b)))
    lines = ["OPENQASM 2.0;", 'include "qelib1.inc";', f"qreg q[{n}];"]
    lines += [f"h q[{q}];" for q in range(n)]
    for _ in range(p):
        gamma, beta = rng.uniform(0, 3), rng.uniform(0, 3)
        lines += [f"rzz({gamma:.6f}) q[{a}],q[{b}];" for a, b in sorted(edges)]
        lines += [f"rx({beta:.6f}) q[{q}];" for q in range(n)]
    return "\n".join(lines) + "\n"


def qft_circuit(n):
    """The textbook QFT on a basis state: H, controlled phases, then the reversing SWAPs."""
    lines = ["OPENQASM 2.0;", 'include "qelib1.inc";', f"qreg q[{n}];"]
    lines += [f"x q[{q}];" for q in range(0, n, 3)]
    for j in reversed(range(n)):
        lines.append(f"h q[{j}];")
        for k in reversed(range(j)):
            lines.append(f"cp({math.pi / 2 ** (j - k):.12f}) q[{k}],q[{j}];")
    lines += [f"swap q[{q}],q[{n - 1 - q}];" for q in range(n // 2)]
    return "\n".join(lines) + "\n"


def run(cmd):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--qmlsim", default="build/release/qmlsim")
    ap.add_argument("--qubits", default="20,22,24,26")
    ap.add_argument("--processes", default="2,4,8")
    ap.add_argument("--precision", default="c64")
    ap.add_argument("--emit", choices=["random", "qaoa", "qft"])
    ap.add_argument("--depth", type=int, default=10)
    a = ap.parse_args()
    if a.emit:
        n = int(a.qubits)
        print({"random": lambda: random_circuit(n, a.depth, n), "qaoa": lambda: qaoa_circuit(n, 2, n),
               "qft": lambda: qft_circuit(n)}[a.emit](), end="")
        return
    mpirun = ["mpirun", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "tcp,self,vader"]
    print("| circuit | qubits | gates | processes | exchanges | per-gate scheme | "
          "MiB sent per process | per-gate MiB | compute s | exchange s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(x) for x in a.qubits.split(",")]:
            circuits = {"random (10 layers)": random_circuit(n, 10, n),
                        "QAOA p=2": qaoa_circuit(n, 2, n),
                        "QFT": qft_circuit(n)}
            for name, text in circuits.items():
                path = os.path.join(tmp, "c.qasm")
                with open(path, "w") as f:
                    f.write(text)
                common = [path, "--observable", "Z0 + 0.5*X1", "--json", "--threads", "1",
                          "--precision", a.precision]
                one = run([a.qmlsim, "run"] + common)
                for p in [int(x) for x in a.processes.split(",")]:
                    d = run(mpirun + ["-np", str(p), a.qmlsim, "run"] + common + ["--distributed"])
                    if abs(d["expval"][0] - one["expval"][0]) > 1e-6 * (a.precision == "c64") + 1e-12:
                        sys.exit(f"{name} n={n} P={p}: {d['expval']} != {one['expval']}")
                    info = d["distributed"]
                    fwd = info["forward"]
                    slice_mib = info["slice_bytes"] / 2**20
                    print(f"| {name} | {n} | {d['num_gates']} | {p} | {fwd['exchanges']} | "
                          f"{fwd['per_gate_exchanges']} | {fwd['bytes_sent'] / 2**20:.0f} | "
                          f"{fwd['per_gate_slices_moved'] * slice_mib:.0f} | "
                          f"{fwd['compute_s']:.2f} | {fwd['exchange_s']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
