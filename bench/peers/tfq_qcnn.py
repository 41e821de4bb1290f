#!/usr/bin/env python3
"""The QCNN case in TensorFlow Quantum (its own environment: TFQ pins its own
cirq and numpy). Builds the model of TFQ's QCNN tutorial (the circuits of
docs/workloads.md job 2) with qmlsim's initial weights and examples, and prints one
JSON object: the batch's mean loss, the gradient of every tensor (adjoint
differentiator) and the time of each forward + gradient call.

  tfq_qcnn.py WEIGHTS.h5 EXAMPLES.json QUBITS REPS
"""
import json
import sys
import time

import cirq
import h5py
import numpy as np
import sympy
import tensorflow as tf
import tensorflow_quantum as tfq


def one_qubit_unitary(bit, s):
    return [cirq.X(bit) ** s[0], cirq.Y(bit) ** s[1], cirq.Z(bit) ** s[2]]


def two_qubit_unitary(a, b, s):
    return (one_qubit_unitary(a, s[0:3]) + one_qubit_unitary(b, s[3:6]) +
            [cirq.ZZ(a, b) ** s[6], cirq.YY(a, b) ** s[7], cirq.XX(a, b) ** s[8]] +
            one_qubit_unitary(a, s[9:12]) + one_qubit_unitary(b, s[12:15]))


def two_qubit_pool(source, sink, s):
    sink_basis = cirq.Circuit(one_qubit_unitary(sink, s[0:3]))
    source_basis = cirq.Circuit(one_qubit_unitary(source, s[3:6]))
    return cirq.Circuit(sink_basis, source_basis, cirq.CNOT(source, sink), sink_basis ** -1)


def main(weights, examples_file, n, reps):
    with h5py.File(weights, "r") as f:
        conv0, pool0 = f["params/quantum/conv"][()], f["params/quantum/pool"][()]
        w1, b1 = f["params/dense1/weight"][()], f["params/dense1/bias"][()]
        w2, b2 = f["params/dense2/weight"][()], f["params/dense2/bias"][()]
    examples = json.load(open(examples_file))
    bits = cirq.GridQubit.rect(1, n)
    half = n // 2
    data = []
    for q, theta, _ in examples:
        c = cirq.Circuit(cirq.H.on_each(bits))
        for i in range(n):
            c.append(cirq.CZ(bits[i], bits[(i + 1) % n]))
        c.append(cirq.rx(theta)(bits[q]))
        data.append(c)
    labels = tf.constant([[y] for _, _, y in examples], dtype=tf.float32)
    symbols = sympy.symbols("s0:21")
    model = cirq.Circuit()
    for a, b in zip(bits[0::2], bits[1::2]):
        model += two_qubit_unitary(a, b, symbols[0:15])
    for a, b in zip(bits[1::2], bits[2::2] + [bits[0]]):
        model += two_qubit_unitary(a, b, symbols[0:15])
    for src, sink in zip(bits[:half], bits[half:]):
        model += two_qubit_pool(src, sink, symbols[15:21])
    readouts = [cirq.Z(b) for b in bits[half:]]
    inputs = tfq.convert_to_tensor([d + model for d in data])  # data circuit, then the model
    layer = tfq.layers.Expectation(differentiator=tfq.differentiators.Adjoint())
    params = tf.Variable(np.concatenate([conv0, pool0])[None, :].repeat(len(data), 0),
                         dtype=tf.float32)
    dense = [tf.Variable(w1.T, dtype=tf.float32), tf.Variable(b1, dtype=tf.float32),
             tf.Variable(w2.T, dtype=tf.float32), tf.Variable(b2, dtype=tf.float32)]

    def step():
        with tf.GradientTape() as tape:
            e = layer(inputs, symbol_names=list(symbols), symbol_values=params, operators=readouts)
            pred = tf.matmul(tf.matmul(e, dense[0]) + dense[1], dense[2]) + dense[3]
            loss = tf.reduce_mean(tf.square(pred - labels))
        grads = tape.gradient(loss, [params] + dense)
        return loss, grads

    times = []
    for _ in range(reps):
        t = time.perf_counter()
        loss, grads = step()
        times.append(time.perf_counter() - t)
    g = grads[0].numpy().sum(axis=0)  # shared symbols: the per-example rows add up
    print(json.dumps(dict(loss=float(loss), conv=g[:15].tolist(), pool=g[15:].tolist(),
                          dense1_weight=grads[1].numpy().T.tolist(),
                          dense1_bias=grads[2].numpy().tolist(),
                          dense2_weight=grads[3].numpy().T.tolist(),
                          dense2_bias=grads[4].numpy().tolist(), times=times,
                          tfq=tfq.__version__, tensorflow=tf.__version__)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
