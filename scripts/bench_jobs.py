#!/usr/bin/env python3
"""Times the reference jobs with `qmlsim train` and prints a markdown table.

Each row runs a short training (--max-steps or a few epochs) into a temporary
run directory and reads the step or epoch times from metrics.jsonl (medians).
  python3 scripts/bench_jobs.py [--quick | --large] [--backend cpu|cuda] [--binary build/release/qmlsim]
--quick skips the large rows (24-node QAOA, 23-qubit QCNN, 26-wire Sonar);
--large runs only those (the GPU targets of the CUDA issue).
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (label, config, overrides, max steps, unit: iteration|epoch|example, batch, published, large)
ROWS = [
    ("QAOA 18 nodes, p=2: iteration (cost + gradient + step)", "qaoa_maxcut.toml", [], 5,
     "iteration", 1, "~25 s (8 vCPUs), ~12 s (V100)", False),
    ("QAOA 24 nodes, p=2: iteration", "qaoa_maxcut_24.toml", ["model.samples=0"], 2,
     "iteration", 1, "~1 h (8 vCPUs), ~2 min (V100)", True),
    ("QCNN 8 qubits (hybrid, 112 training examples): epoch", "qcnn.toml", ["train.epochs=5"], -1,
     "epoch", 1, "-", False),
    ("QCNN 23 qubits: forward + gradient per example", "qcnn_23.toml", ["train.batch_size=2"], 2,
     "example", 2, "~4.8 s (4 h per epoch of ~3,000 executions, 1 worker)", True),
    ("Sonar 10 wires: forward + gradient per row", "sonar_dressed.toml", ["train.batch_size=16"],
     3, "example", 16, "-", False),
    ("Sonar 20 wires: forward + gradient per row", "sonar_dressed.toml",
     ["model.wires=20", "train.batch_size=4"], 2, "example", 4, "-", False),
    ("Sonar 26 wires: forward + gradient per row", "sonar_dressed_26.toml",
     ["train.batch_size=2"], 3, "example", 2, "~13 s (V100: 45 min per 208 rows)", True),
]


def fmt(seconds):
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def run_row(binary, row, backend):
    label, config, sets, steps, unit, batch, published, _ = row
    with tempfile.TemporaryDirectory() as d:
        cmd = [binary, "train", os.path.join(ROOT, "examples", config), "--run-dir", d, "--quiet",
               "--backend", backend]
        for s in sets:
            cmd += ["--set", s]
        if steps >= 0:
            cmd += ["--max-steps", str(steps)]
        done = subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL)
        if done.returncode != 0:
            raise SystemExit(f"bench_jobs: {' '.join(cmd)} exited {done.returncode}")
        records = [json.loads(line) for line in open(os.path.join(d, "metrics.jsonl"))]
    if unit == "epoch":
        times = [r["epoch_time_s"] for r in records if r["type"] == "epoch"]
    else:
        steps_ = [r for r in records if r["type"] == "step"]
        # A step whose loss is exactly 0 (Sonar's margin loss on a batch ranked
        # with margin) has no gradient to propagate and skips the backward pass:
        # it is not a forward + gradient step, so it is left out when others ran.
        active = [r for r in steps_ if r.get("loss", 1) != 0] or steps_
        times = [r["step_time_s"] / batch for r in active]
    return label, fmt(statistics.median(times)), published, " ".join(["--set " + s for s in sets])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--large", action="store_true")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "release", "qmlsim"))
    args = ap.parse_args()
    print(f"| job | qmlsim (this machine, {args.backend}) | published |")
    print("| --- | --- | --- |")
    for row in ROWS:
        if (args.quick and row[-1]) or (args.large and not row[-1]):
            continue
        label, t, published, _ = run_row(args.binary, row, args.backend)
        print(f"| {label} | {t} | {published} |", flush=True)


if __name__ == "__main__":
    main()
