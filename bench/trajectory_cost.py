"""The cost of a noisy trajectory against a noiseless run (docs/performance.md).

    python bench/trajectory_cost.py [--qubits 20] [--trajectories 10] [--qmlsim build/release/qmlsim]

Writes a layered circuit (RY on every qubit, a CZ brick; a channel of
strength 0.01 on every qubit after each layer) with depolarizing(0) as the
noiseless reference (its trajectories apply only identities, so both pay the
same allocations; run alone, QMLSIM_SHARED_PREFIXES=0, each is one noiseless
run: shared, they would all be one), depolarizing(0.01) and
amplitude_damping(0.01), runs each by trajectories, with shared prefixes (the
default) and alone, and prints the time per trajectory and its ratio.
"""
import argparse
import json
import os
import random
import subprocess
import tempfile


def circuit(n: int, layers: int, channel: str) -> str:
    rng = random.Random(1)
    lines = ["OPENQASM 3;", 'include "stdgates.inc";', f"qubit[{n}] q;"]
    for layer in range(layers):
        for i in range(n):
            lines.append(f"ry({rng.uniform(0, 3):.3f}) q[{i}];")
            lines.append(f"#pragma braket noise {channel} q[{i}]")
        for i in range(layer % 2, n - 1, 2):
            lines.append(f"cz q[{i}], q[{i + 1}];")
        lines += [f"#pragma braket noise {channel} q[{i}]" for i in range(n)]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qubits", type=int, default=20)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--trajectories", type=int, default=10)
    ap.add_argument("--qmlsim", default="build/release/qmlsim")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = [("depolarizing(0)", "0")] + [
            (c, shared) for c in ("depolarizing(0.01)", "amplitude_damping(0.01)")
            for shared in ("1", "0")]
        for channel, shared in runs:
            path = os.path.join(tmp, "c.qasm")
            with open(path, "w") as f:
                f.write(circuit(args.qubits, args.layers, channel))
            out = subprocess.run([args.qmlsim, "run", path, "--observable", "Z0", "--method",
                                  "trajectories", "--trajectories", str(args.trajectories),
                                  "--json"], check=True, capture_output=True, text=True,
                                 env=dict(os.environ, QMLSIM_SHARED_PREFIXES=shared))
            label = channel + ("" if channel.endswith("(0)") else
                               " shared" if shared == "1" else " alone")
            rows.append((label, json.loads(out.stdout)["time_s"]["simulate"] / args.trajectories))
    print("| channel | per trajectory | x the noiseless reference |\n| --- | --- | --- |")
    for channel, t in rows:
        print(f"| {channel} | {t * 1e3:.1f} ms | {t / rows[0][1]:.2f} |")


if __name__ == "__main__":
    main()
