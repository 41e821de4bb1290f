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
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import cirq  # noqa: E402
import numpy as np  # noqa: E402
import sympy  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_quantum as tfq  # noqa: E402

import qmlsim.tfq as qtfq  # noqa: E402


def noisy_case(n, layers, batch):
    q = cirq.GridQubit.rect(1, n)
    sym = iter(sympy.symbols(f"t0:{2 * n * layers}"))
    model = cirq.Circuit()
    for _ in range(layers):
        model.append(cirq.ry(next(sym)).on(b) for b in q)
        model.append(cirq.rz(next(sym)).on(b) for b in q)
        model.append(cirq.CZ(a, b) for a, b in zip(q, q[1:]))
    rng = np.random.default_rng(n)
    data = [cirq.Circuit(cirq.rx(a).on(b) for a, b in zip(rng.uniform(-3, 3, n), q))
            for _ in range(batch)]
    return model.with_noise(cirq.depolarize(0.01)), data, [sum(cirq.Z(b) for b in q)]


def make_step(mod, model, data, ops, repetitions):
    layer = mod.layers.NoisyPQC(model, ops, repetitions=repetitions, sample_based=False,
                                initializer=tf.keras.initializers.Constant(0.3))
    x = mod.convert_to_tensor(data)

    def step():
        with tf.GradientTape() as tape:
            y = layer(x)
            loss = tf.reduce_sum(y)
        return y.numpy(), tape.gradient(loss, layer.trainable_variables)[0].numpy()

    return step


def seconds(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


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
            ta.append(seconds(ours))
            tb.append(seconds(theirs))
        a, b = statistics.median(ta), statistics.median(tb)
        print(f"| {n} | {2 * n * args.layers} | {a:.3f} | {b:.3f} | {b / a:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
