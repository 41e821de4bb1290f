#!/usr/bin/env python3
"""The SDKs' own tutorials through qmlsim's doors, against the simulator each
tutorial names: agreement of everything the tutorial computes, then time.

Each module here is one upstream tutorial written as upstream wrote it (loops
shortened where its docstring says) with the simulator as a parameter; `run`
returns what the tutorial prints or plots. The runner runs each tutorial once
on both simulators (the agreement check, and the first-call costs), then
`--reps` more times alternating, and prints a markdown table of medians.

    python bench/tutorials/run.py [--only NAME,...] [--reps 2] [--strict]

A tutorial whose packages (its REQUIRES) are not installed in this
interpreter is listed as skipped, or with --strict counts as a failure: the
TensorFlow Quantum ones need the TFQ environment (`python/requirements-tfq.txt`),
the others `python/requirements-test.txt`. Any other error, an ImportError of
qmlsim's own included, stops the run. The test command runs them with `--reps
0 --strict` (agreement only; exit status 1 if any disagrees or is missing);
the timings are in docs/performance.md.
"""
import argparse
import importlib
import importlib.util
import os
import statistics
import sys
import time

import numpy as np

MODULES = ("pennylane_kernels", "pennylane_noisy_circuits", "pennylane_vqe",
           "pennylane_barren_plateaus", "cirq_simulation",
           "qiskit_classifier", "tfq_hello_many_worlds", "tfq_gradients")


def flat(x):
    """Every number in a (nested) result as one complex array (a real result
    and a complex one with zero imaginary parts compare equal), dictionaries
    in key order."""
    if isinstance(x, dict):
        return flat([x[k] for k in sorted(x)])
    if isinstance(x, (tuple, list)):
        parts = [flat(v) for v in x]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=complex)
    if hasattr(x, "numpy"):  # torch and TensorFlow tensors
        x = x.numpy()
    return np.asarray(x).astype(complex).reshape(-1)


def disagreement(ours, theirs):
    """The largest absolute difference, key by key (the key named)."""
    if sorted(ours) != sorted(theirs):
        return float("inf"), f"keys {sorted(ours)} != {sorted(theirs)}"
    worst, where = 0.0, ""
    for key in sorted(ours):
        a, b = flat(ours[key]), flat(theirs[key])
        d = float("inf") if a.shape != b.shape else float(np.max(np.abs(a - b), initial=0.0))
        if d > worst or np.isnan(d):
            worst, where = d, key
    return worst, where


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="comma-separated substrings of module names")
    ap.add_argument("--reps", type=int, default=2,
                    help="timed runs after the first (default 2; 0: the agreement check alone, "
                         "as the test command runs it)")
    ap.add_argument("--strict", action="store_true",
                    help="a tutorial whose packages are not installed is a failure, not skipped")
    args = ap.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    names = [m for m in MODULES
             if not args.only or any(s in m for s in args.only.split(","))]
    if not names:
        ap.error(f"--only {args.only}: matches none of {', '.join(MODULES)}")
    print("| SDK | tutorial | qmlsim | upstream | upstream / qmlsim | agreement |")
    print("| --- | --- | ---: | ---: | ---: | --- |")
    failed = False
    for name in names:
        mod = importlib.import_module(name)
        missing = [r for r in mod.REQUIRES if importlib.util.find_spec(r) is None]
        if missing:
            print(f"| {mod.SDK} | {mod.TITLE} | skipped: no {', '.join(missing)} | | | |",
                  flush=True)
            failed |= args.strict
            continue
        ours, theirs = (mod.run(d) for d in mod.DEVICES)  # first runs: the agreement check
        diff, where = disagreement(ours, theirs)
        agree = diff <= mod.TOLERANCE
        failed |= not agree
        times = {d: [] for d in mod.DEVICES}
        for _ in range(args.reps):
            for d in mod.DEVICES:
                t = time.perf_counter()
                mod.run(d)
                times[d].append(time.perf_counter() - t)
        verdict = f"max diff {diff:.1e} (tolerance {mod.TOLERANCE:.0e})"
        if not agree:
            verdict = f"**disagree** in `{where}`: " + verdict
        if args.reps:
            med = [statistics.median(times[d]) for d in mod.DEVICES]
            cells = (f"{mod.DEVICES[0]}: {med[0]:.2f} s | {mod.DEVICES[1]}: {med[1]:.2f} s | "
                     f"**{med[1] / med[0]:.2f}x**")
        else:
            cells = f"{mod.DEVICES[0]} | {mod.DEVICES[1]} | -"
        print(f"| {mod.SDK} | {mod.TITLE} | {cells} | {verdict} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
