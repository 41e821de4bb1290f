#!/usr/bin/env python3
"""How well `qmlsim plan` predicts a real run: planned against measured step time.

For each job, `qmlsim plan --json` gives the planned seconds per step; then the
same config trains for a few steps into a temporary run directory and the median
measured step time is read from metrics.jsonl. Prints a markdown table with the
ratio planned / measured. A timing comparison, so it is a benchmark, not a test:
run it on a quiet machine.
  python3 scripts/bench_plan.py [--binary build/release/qmlsim]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (config, overrides): the cases the planner's test used to time.
CASES = [
    ("qcnn.toml", ["train.epochs=4"]),
    ("sonar_dressed.toml", ["model.wires=12", "train.batch_size=16"]),
    ("qaoa_maxcut.toml", ["train.steps=6"]),
]


def run(cmd):
    done = subprocess.run(cmd, check=False, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench_plan: {' '.join(cmd)} exited {done.returncode}")
    return done.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "release", "qmlsim"))
    args = ap.parse_args()
    print("| job | planned s/step | measured s/step (median) | planned / measured |")
    print("| --- | --- | --- | --- |")
    for config, sets in CASES:
        path = os.path.join(ROOT, "examples", config)
        set_args = [a for s in sets for a in ("--set", s)]
        planned = json.loads(run([args.binary, "plan", path, "--json"] + set_args))["step_s"]
        with tempfile.TemporaryDirectory() as d:
            run([args.binary, "train", path, "--run-dir", d, "--quiet"] + set_args)
            records = [json.loads(line) for line in open(os.path.join(d, "metrics.jsonl"))]
        measured = statistics.median(r["step_time_s"] for r in records if r["type"] == "step")
        label = config + (" " + " ".join(sets) if sets else "")
        print(f"| {label} | {planned:.4f} | {measured:.4f} | {planned / measured:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
