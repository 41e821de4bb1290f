#!/usr/bin/env python3
"""Data-parallel step times: the QCNN and Sonar jobs at N = 1 and 2 ranks (and
more with --ranks), with the time each step spends gathering the per-example
gradients (metrics.jsonl: step_time_s, allgather_s). Prints a markdown table.
  python3 scripts/bench_mpi.py [--ranks 1,2] [--binary build/release/qmlsim]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = [
    ("QCNN 8 qubits, batch 32", "qcnn.toml", ["train.epochs=3"], 12),
    ("QCNN 14 qubits, batch 32", "qcnn.toml", ["data.qubits=14", "data.rounds=4"], 4),
    ("Sonar 10 wires, batch 64", "sonar_dressed.toml", ["data.rows=208", "train.epochs=3"], 12),
    ("Sonar 18 wires, batch 16", "sonar_dressed.toml", ["model.wires=18", "train.batch_size=16"], 4),
]


def run(binary, ranks, config, sets, steps):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    with tempfile.TemporaryDirectory() as d:
        cmd = [binary, "train", os.path.join(ROOT, "examples", config), "--run-dir", d, "--quiet",
               "--max-steps", str(steps)]
        for s in sets:
            cmd += ["--set", s]
        if ranks > 1:
            cmd = ["mpirun", "--oversubscribe", "-np", str(ranks)] + cmd
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=False)
        steps = [json.loads(l) for l in open(os.path.join(d, "metrics.jsonl"))]
        steps = [s for s in steps if s["type"] == "step"][1:]  # the first step warms up
    return (statistics.median(s["step_time_s"] for s in steps),
            statistics.median(s["allgather_s"] for s in steps))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "release", "qmlsim"))
    args = ap.parse_args()
    ranks = [int(r) for r in args.ranks.split(",")]
    print("| job | " + " | ".join(f"N={n}: step, gather" for n in ranks) + " |")
    print("| --- |" + " --- |" * len(ranks))
    for label, config, sets, steps in CASES:
        cells = []
        for n in ranks:
            step, gather = run(args.binary, n, config, sets, steps)
            cells.append(f"{step * 1e3:.1f} ms, {gather * 1e3:.2f} ms")
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
