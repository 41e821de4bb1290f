#!/usr/bin/env python3
"""qmlsim.tfq against TensorFlow Quantum 0.7.6 on tfq.layers.NoisyPQC: the
forward pass and the gradient of a noisy model over a batch of inputs, the
same repetitions on both sides, in one process.

    build/python-venv-tfq/bin/python bench/peers/tfq_noise.py [--qubits 8,12]
        [--layers 2] [--batch 8] [--repetitions 100] [--reps 3]

The model: `layers` layers of ry and rz on every qubit (trainable) and a CZ
chain, with cirq.depolarize(0.01) after every moment (`with_noise`, as TFQ's
noise tutorial builds it); inputs: rx encodings of random angles; readout:
Z on every qubit, summed. TFQ runs `repetitions` trajectories per value and
differentiates by parameter shift (its default, and its only exact choice for
noisy circuits); qmlsim.tfq computes the exact density-matrix values and the
adjoint gradient (its `repetitions` only check the argument). Values agree
within TFQ's trajectory error first; then alternating timed runs, medians.
Run scripts/python_test_tfq.sh once to make that environment.
"""
import argparse
import os
import statistics

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import cirq  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_quantum as tfq  # noqa: E402

import qmlsim.tfq as qtfq  # noqa: E402
from tfq_layers import pqc_case, step_of, timed  # noqa: E402


def noisy_case(n, layers, batch):
    """tfq_layers.py's PQC workload with depolarize(0.01) after every moment."""
    model, data, ops = pqc_case(n, layers, batch)
    return model.with_noise(cirq.depolarize(0.01)), data, ops


def make_step(mod, model, data, ops, repetitions):
    layer = mod.layers.NoisyPQC(model, ops, repetitions=repetitions, sample_based=False,
                                initializer=tf.keras.initializers.Constant(0.3))
    return step_of(layer, mod.convert_to_tensor(data))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qubits", default="8,12")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--repetitions", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    r = args.repetitions
    print(f"TensorFlow {tf.__version__}, TFQ {tfq.__version__}; NoisyPQC forward + gradient, "
          f"batch {args.batch}, {r} repetitions; medians of {args.reps} alternating runs\n")
    print("| qubits | parameters | qmlsim.tfq (s) | TFQ (s) | TFQ / qmlsim |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for n in [int(v) for v in args.qubits.split(",") if v]:
        model, data, ops = noisy_case(n, args.layers, args.batch)
        ours = make_step(qtfq, model, data, ops, r)
        theirs = make_step(tfq, model, data, ops, r)
        (ya, _), (yb, _) = ours(), theirs()  # also the warm-up
        # each TFQ value: a mean of n Z's over r trajectories
        assert np.max(np.abs(ya - yb)) < 5 * n / np.sqrt(r), (ya, yb)
        ta, tb = [], []
        for _ in range(args.reps):
            ta.append(timed(ours))
            tb.append(timed(theirs))
        a, b = statistics.median(ta), statistics.median(tb)
        print(f"| {n} | {2 * n * args.layers} | {a:.3f} | {b:.3f} | {b / a:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
