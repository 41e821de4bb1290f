#!/usr/bin/env python3
"""qmlsim.tfq against TensorFlow Quantum 0.7.6 (its adjoint differentiator) on
the forward pass + gradient of tfq.layers.PQC over a batch of 32 circuits, and
on an epoch of the QCNN tutorial's model (8 qubits, and the same construction at
12); same process, agreement first, then alternating
timed runs (medians).

    build/python-venv-tfq/bin/python bench/peers/tfq_layers.py [--qubits 12,16,20] [--reps 3]

Run scripts/python_test_tfq.sh once to make that environment.
"""
import argparse
import os
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import cirq  # noqa: E402
import numpy as np  # noqa: E402
import sympy  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_quantum as tfq  # noqa: E402

import qmlsim.tfq as qtfq  # noqa: E402


def pqc_case(n, layers=3, batch=32):
    """A hardware-efficient model (ry, rz per qubit, a CZ chain) per layer;
    data: rx encodings of random angles; readout Z on every qubit summed."""
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
    return model, data, [sum(cirq.Z(b) for b in q)]


def qcnn_model(qubits):
    """The tutorial's QCNN generalized to any width: a convolution (15 symbols)
    over the qubits, then pooling of the first half into the second (6
    symbols), repeated until one qubit is left (8 qubits: the tutorial's)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "qcnn_example", os.path.join(os.path.dirname(__file__), "../../examples/tfq/qcnn.py"))
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    circuit, bits, k = cirq.Circuit(), list(qubits), 0
    while len(bits) > 1:
        conv = sympy.symbols(f"c{k}_0:15")
        pool = sympy.symbols(f"p{k}_0:6")
        circuit += ex.quantum_conv_circuit(bits, conv)
        half = len(bits) // 2
        circuit += ex.quantum_pool_circuit(bits[:half], bits[half:], pool)
        bits, k = bits[half:], k + 1
    return ex, circuit


def qcnn_epoch(mod, n, batch=32):
    """One Keras epoch of the QCNN on cluster-state excitations (rounds of n
    excitations, 70% training), a warm epoch first; returns (seconds, weights)."""
    qubits = cirq.GridQubit.rect(1, n)
    ex, model_circuit = qcnn_model(qubits)
    x, y, _, _ = ex.generate_data(qubits, np.random.default_rng(1), rounds=max(2, 160 // n))
    x = mod.convert_to_tensor(x)
    tf.keras.utils.set_random_seed(1)
    inp = tf.keras.Input(shape=(), dtype=tf.string)
    kw = {"differentiator": tfq.differentiators.Adjoint()} if mod is tfq else {}
    out = mod.layers.PQC(model_circuit, cirq.Z(qubits[-1]), **kw)(
        mod.layers.AddCircuit()(inp, prepend=ex.cluster_state_circuit(qubits)))
    model = tf.keras.Model(inp, out)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.02), loss=tf.keras.losses.mse)
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)  # warm
    t = time.perf_counter()
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)
    return time.perf_counter() - t, len(x)


def make_step(mod, model, data, ops):
    kw = {"differentiator": tfq.differentiators.Adjoint()} if mod is tfq else {}
    layer = mod.layers.PQC(model, ops, initializer=tf.keras.initializers.Constant(0.3), **kw)
    return step_of(layer, mod.convert_to_tensor(data))


def step_of(layer, x):
    """A forward pass of layer on x and the gradient of the outputs' sum by its
    weights: () -> (outputs, gradient) as numpy arrays."""

    def step():
        with tf.GradientTape() as tape:
            y = layer(x)
            loss = tf.reduce_sum(y)
        return y.numpy(), tape.gradient(loss, layer.trainable_variables)[0].numpy()

    return step


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qubits", default="12,16,20")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--qcnn", default="8,12", help="QCNN widths for the epoch rows ('' for none)")
    args = ap.parse_args()
    print(f"TensorFlow {tf.__version__}, TFQ {tfq.__version__}; medians of {args.reps} "
          "alternating runs after a warm-up and an agreement check\n")
    print("| workload | qubits | qmlsim.tfq | TFQ (adjoint) | TFQ / qmlsim |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for n in [int(v) for v in args.qubits.split(",") if v]:
        model, data, ops = pqc_case(n)
        ours, theirs = make_step(qtfq, model, data, ops), make_step(tfq, model, data, ops)
        (ya, ga), (yb, gb) = ours(), theirs()  # also the warm-up
        assert np.allclose(ya, yb, atol=1e-4) and np.allclose(ga, gb, atol=1e-2 * n), n
        ta, tb = [], []
        for _ in range(args.reps):
            ta.append(timed(ours))
            tb.append(timed(theirs))
        a, b = np.median(ta), np.median(tb)
        print(f"| PQC forward + gradient, batch of 32, {len(model)} moments, "
              f"{len(cirq.parameter_symbols(model))} symbols | {n} | {a:.3f} s | {b:.3f} s | "
              f"**{b / a:.2f}x** |", flush=True)
    for n in [int(v) for v in args.qcnn.split(",") if v]:
        ta, tb = [], []
        for _ in range(args.reps):
            a, examples = qcnn_epoch(qtfq, n)
            b, _ = qcnn_epoch(tfq, n)
            ta.append(a)
            tb.append(b)
        a, b = np.median(ta), np.median(tb)
        print(f"| QCNN epoch (warm), batch 32, {examples} training examples | {n} | {a:.3f} s | "
              f"{b:.3f} s | **{b / a:.2f}x** |", flush=True)


if __name__ == "__main__":
    main()
