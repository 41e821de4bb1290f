#!/usr/bin/env python3
"""Projects the distributed state vector to 34-40 qubits on 16-1024 nodes (docs/SCALING.md).

Compute: each circuit family's single-process time per amplitude, measured here
(`qmlsim run` at --measure-qubits, complex128, all cores), scaled to a node by the ratio
of memory bandwidths (this machine's bandwidth pass, --here-gbs, against --node-gbs).
Communication: the planner's own schedule for that layout (`qmlsim run
--plan-processes`, nothing allocated): per exchange round a process sends and
receives (1 - 2^-k) of its slice at --network-gbs per direction, not overlapped with
compute. The per-gate scheme moves per_gate_slices_moved slices at the same rate.

  bench/distributed/project_scaling.py [--qmlsim build/release/qmlsim]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_distributed import qaoa_circuit, qft_circuit, random_circuit  # noqa: E402


def qmlsim(binary, path, *extra):
    r = subprocess.run([binary, "run", path, "--observable", "Z0", "--json", *extra],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(r.stderr)
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--qmlsim", default="build/release/qmlsim")
    ap.add_argument("--measure-qubits", type=int, default=26)
    ap.add_argument("--here-gbs", type=float, default=45.0)
    ap.add_argument("--node-gbs", type=float, default=200.0)
    ap.add_argument("--network-gbs", type=float, default=25.0)
    a = ap.parse_args()
    layouts = [(34, 16), (36, 64), (38, 256), (40, 1024), (36, 16), (38, 64), (40, 256)]
    families = {"random (10 layers)": lambda n: random_circuit(n, 10, n),
                "QAOA p=2": lambda n: qaoa_circuit(n, 2, n),
                "QFT": qft_circuit}
    print(f"Measured here at n = {a.measure_qubits} (complex128); node memory {a.node_gbs:.0f} GB/s, "
          f"network {a.network_gbs:.0f} GB/s per direction.\n")
    print("| circuit | qubits | nodes | GiB per node | exchanges (per-gate scheme) | "
          "compute s | exchange s | per-gate exchange s | total s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "c.qasm")
        per_amp = {}
        for name, make in families.items():
            with open(path, "w") as f:
                f.write(make(a.measure_qubits))
            t = qmlsim(a.qmlsim, path)["time_s"]["simulate"]
            per_amp[name] = t / 2 ** a.measure_qubits
        for name, make in families.items():
            for n, nodes in layouts:
                with open(path, "w") as f:
                    f.write(make(n))
                p = qmlsim(a.qmlsim, path, "--plan-processes", str(nodes))
                slice_gb = p["slice_bytes"] / 1e9
                compute = per_amp[name] * 2 ** p["slice_qubits"] * a.here_gbs / a.node_gbs
                exchange = p["slices_moved"] * slice_gb / a.network_gbs
                naive = p["per_gate_slices_moved"] * slice_gb / a.network_gbs
                print(f"| {name} | {n} | {nodes} | {p['slice_bytes'] / 2**30:.0f} | "
                      f"{p['exchanges']} ({p['per_gate_exchanges']}) | {compute:.2f} | "
                      f"{exchange:.2f} | {naive:.2f} | {compute + exchange:.2f} |", flush=True)


if __name__ == "__main__":
    main()
