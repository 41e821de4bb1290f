#!/usr/bin/env python3
"""Reads a run directory's TensorBoard event file with the real tensorboard
package (EventAccumulator) and checks it against metrics.jsonl: every scalar
at the right step with the right value, and per epoch a histogram of every
parameter tensor and of the readouts.
  check_tensorboard.py RUN_DIR
"""
import json
import math
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def main(run_dir):
    records = [json.loads(line) for line in open(f"{run_dir}/metrics.jsonl")]
    ea = EventAccumulator(run_dir, size_guidance={"scalars": 0, "histograms": 0})
    ea.Reload()
    tags = ea.Tags()
    checked = 0
    for r in records:
        prefix, step = ("batch/", r["step"]) if r["type"] == "step" else ("epoch/", r["epoch"])
        for k, v in r.items():
            if k in ("type", "epoch", "step"):
                continue
            tag = prefix + k
            assert tag in tags["scalars"], f"missing scalar {tag}"
            events = [e for e in ea.Scalars(tag) if e.step == step]
            assert len(events) == 1, f"{tag} at step {step}: {len(events)} events"
            assert math.isclose(events[0].value, v, rel_tol=1e-6, abs_tol=1e-6), (tag, step, v)
            checked += 1
    epochs = [r["epoch"] for r in records if r["type"] == "epoch"]
    params = [t for t in tags["histograms"] if t.startswith("params/")]
    readouts = [t for t in tags["histograms"] if t.startswith("readouts/")]
    assert params and readouts, tags["histograms"]
    for tag in params + readouts:
        h = ea.Histograms(tag)
        assert [e.step for e in h] == epochs, (tag, [e.step for e in h])
        assert all(e.histogram_value.num > 0 for e in h), tag
    print(f"tensorboard: {checked} scalars match metrics.jsonl; "
          f"{len(params) + len(readouts)} histograms x {len(epochs)} epochs")


if __name__ == "__main__":
    main(sys.argv[1])
