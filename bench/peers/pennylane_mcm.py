"""Mid-circuit measurements through PennyLane: qmlsim.qubit against
default.qubit and lightning.qubit on one circuit (layers of RY and CNOT on
`--wires` wires, a measurement every few layers, each feeding a qml.cond),
with the same mcm_method on every device: tree-traversal analytically and
one-shot with shots. Prints the median seconds of each and the ratios.

    python bench/peers/pennylane_mcm.py --wires 16 --measurements 6 --shots 10000

default.qubit runs one-shot shot by shot (a full simulation per shot), so it
is left out of that comparison unless named in --one-shot-devices.
"""
import argparse
import statistics
import time
import warnings

import numpy as np
import pennylane as qml

warnings.simplefilter("ignore")


def make_circuit(wires: int, measurements: int, layers: int):
    rng = np.random.default_rng(7)
    angles = rng.uniform(-np.pi, np.pi, (layers, wires))

    def circuit():
        ms = []
        for layer in range(layers):
            for w in range(wires):
                qml.RY(angles[layer, w], w)
            for w in range(layer % 2, wires - 1, 2):
                qml.CNOT([w, w + 1])
            if len(ms) < measurements and layer % max(1, layers // measurements) == 0:
                w = (3 * len(ms)) % wires
                ms.append(qml.measure(w, reset=len(ms) % 2 == 1))
                qml.cond(ms[-1], qml.RX)(0.4, (w + 1) % wires)
        return qml.expval(qml.Z(0)), qml.probs(wires=[0, 1]), qml.expval(ms[0])

    return circuit


def seconds(fn, repeats: int) -> float:
    fn()  # warm-up (compilation, caches)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wires", type=int, default=16)
    ap.add_argument("--measurements", type=int, default=6)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--shots", type=int, default=10000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--devices", default="qmlsim.qubit,default.qubit,lightning.qubit")
    # default.qubit simulates one-shot shot by shot: minutes for 10,000 shots
    ap.add_argument("--one-shot-devices", default="qmlsim.qubit,lightning.qubit")
    args = ap.parse_args()
    circuit = make_circuit(args.wires, args.measurements, args.layers)
    for method, shots in (("tree-traversal", None), ("one-shot", args.shots)):
        times = {}
        for name in (args.one_shot_devices if shots else args.devices).split(","):
            node = qml.QNode(circuit, qml.device(name, wires=args.wires), mcm_method=method)
            if shots:
                node = qml.set_shots(node, shots)
            try:
                times[name] = seconds(node, args.repeats)
            except Exception as e:  # noqa: BLE001 - a device without this method: reported
                print(f"{method}: {name}: {type(e).__name__}: {str(e)[:120]}")
        base = times.get("qmlsim.qubit")
        for name, t in times.items():
            ratio = f"  ({t / base:.1f}x qmlsim.qubit's time)" if base and name != "qmlsim.qubit" else ""
            print(f"{method} ({'analytic' if shots is None else f'{shots} shots'}), "
                  f"{args.wires} wires, {args.measurements} measurements: {name} {t:.3f} s{ratio}")


if __name__ == "__main__":
    main()
