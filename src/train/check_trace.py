#!/usr/bin/env python3
"""Checks a qmlsim trace.json: Chrome trace-event structure, one process per
rank, the expected spans, microsecond timestamps, proper nesting per thread.
  check_trace.py TRACE.json RANKS
"""
import json
import sys
from collections import defaultdict

EXPECTED = {"step", "data", "forward+backward", "forward", "backward", "allreduce", "optimizer",
            "evaluation"}  # every rank; rank 0 also writes checkpoints


def main(path, ranks):
    events = json.load(open(path))["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X"]
    names = [e for e in events if e.get("ph") == "M" and e["name"] == "process_name"]
    assert sorted(e["pid"] for e in names) == list(range(ranks)), names
    by_thread = defaultdict(list)
    seen = defaultdict(set)
    for e in spans:
        for key in ("name", "cat", "ts", "dur", "pid", "tid"):
            assert key in e, f"{key} missing in {e}"
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float))
        assert e["ts"] >= -1e3 and e["dur"] >= 0, e  # microseconds from the shared origin
        by_thread[(e["pid"], e["tid"])].append(e)
        seen[e["pid"]].add(e["name"])
    for pid in range(ranks):
        missing = (EXPECTED | ({"checkpoint"} if pid == 0 else set())) - seen[pid]
        assert not missing, f"rank {pid} lacks spans {missing}"
    # Proper nesting: on each thread, a span that starts inside another ends inside it.
    tol = 1.0  # microseconds of rounding
    for key, evs in by_thread.items():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in evs:
            while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"] - tol:
                stack.pop()
            if stack:
                parent = stack[-1]
                assert e["ts"] + e["dur"] <= parent["ts"] + parent["dur"] + tol, \
                    f"{e['name']} overlaps {parent['name']} on {key}"
            stack.append(e)
    # The ranks share one clock: their first steps start within a second of each other.
    first = [min(e["ts"] for e in spans if e["pid"] == p and e["name"] == "step")
             for p in range(ranks)]
    assert max(first) - min(first) < 1e6, first
    print(f"trace: {len(spans)} spans from {ranks} rank(s), properly nested per thread")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
