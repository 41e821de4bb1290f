#!/usr/bin/env python3
"""Turns the JSON of `qmlsim bench --json FILE` into the Markdown tables of docs/performance.md.

usage: scripts/bench_table.py FILE [--qubits 24,28]
"""
import json
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = json.load(open(sys.argv[1]))["results"]
    want = [24, 28]
    if "--qubits" in sys.argv:
        want = [int(x) for x in sys.argv[sys.argv.index("--qubits") + 1].split(",")]
    def is_circuit(r):
        return " gates, " in r["case"]

    kernel_rows = [r for r in rows if r["qubits"] in want and not is_circuit(r)
                   and "gradient" not in r["case"]]
    cols = sorted({(r["qubits"], r["precision"], r["threads"]) for r in kernel_rows},
                  key=lambda c: (c[0], c[1] != "c64", c[2]))
    cases = []
    for r in kernel_rows:
        if r["case"] not in cases and r["case"] != "bandwidth pass":
            cases.append(r["case"])
    if cases:
        head = "| kernel (time / bandwidth bound) | " + " | ".join(
            f"n={n} {p} {t}T" for n, p, t in cols) + " |"
        print(head)
        print("|" + " --- |" * (len(cols) + 1))
        for c in cases:
            cells = []
            for n, p, t in cols:
                m = [r for r in kernel_rows if r["case"] == c and (r["qubits"], r["precision"], r["threads"]) == (n, p, t)]
                cells.append(f"{m[0]['ratio']:.2f}" if m else "")
            print(f"| {c} | " + " | ".join(cells) + " |")
        bw = [r for r in kernel_rows if r["case"] == "bandwidth pass"]
        print()
        print("Bandwidth pass (ms): " + ", ".join(
            f"n={r['qubits']} {r['precision']} {r['threads']}T {r['seconds'] * 1e3:.1f}" for r in bw))
    circ = [r for r in rows if is_circuit(r) and r["qubits"] in want]
    if circ:
        print()
        print("| circuit, setting | n | precision | threads | ms | speedup vs one pass per gate |")
        print("| --- | --- | --- | --- | --- | --- |")
        for r in circ:
            print(f"| {r['case']} | {r['qubits']} | {r['precision']} | {r['threads']} | "
                  f"{r['seconds'] * 1e3:.0f} | {1 / r['ratio']:.2f} |")
    grad = [r for r in rows if "gradient" in r["case"]]
    if grad:
        print()
        print("| n | precision | threads | case | gradient ms | gradient / forward |")
        print("| --- | --- | --- | --- | --- | --- |")
        for r in grad:
            print(f"| {r['qubits']} | {r['precision']} | {r['threads']} | {r['case']} | "
                  f"{r['seconds'] * 1e3:.0f} | {r['ratio']:.2f} |")


if __name__ == "__main__":
    main()
