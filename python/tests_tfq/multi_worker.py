"""One worker of a two-worker tf.distribute.MultiWorkerMirroredStrategy job on
localhost training a qmlsim.tfq PQC (run by test_tfq.py, TF_CONFIG as TFQ's
multi-worker example sets it); with the argument "noisy", a NoisyPQC of the
same model with depolarize(0.01) after every moment. Prints the final weights
as one JSON line."""
import json
import os
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import cirq  # noqa: E402
import numpy as np  # noqa: E402
import sympy  # noqa: E402
import tensorflow as tf  # noqa: E402

import qmlsim.tfq as tfq  # noqa: E402


def main():
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    qubits = cirq.GridQubit.rect(1, 4)
    symbols = sympy.symbols("w0:8")
    model_circuit = cirq.Circuit()
    for i, q in enumerate(qubits):
        model_circuit.append([cirq.ry(symbols[i]).on(q), cirq.rz(symbols[i + 4]).on(q)])
    model_circuit.append(cirq.CNOT(a, b) for a, b in zip(qubits, qubits[1:]))
    rng = np.random.default_rng(5)
    angles = rng.uniform(-np.pi, np.pi, 64)
    x = tfq.convert_to_tensor([cirq.Circuit(cirq.rx(a).on(qubits[0])) for a in angles])
    y = np.where(np.abs(angles) < np.pi / 2, 1.0, -1.0).astype(np.float32)
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    data = data.with_options(options)
    with strategy.scope():
        inputs = tf.keras.Input(shape=(), dtype=tf.string)
        init = tf.keras.initializers.Constant(0.1)
        if sys.argv[1:] == ["noisy"]:
            out = tfq.layers.NoisyPQC(model_circuit.with_noise(cirq.depolarize(0.01)),
                                      cirq.Z(qubits[-1]), repetitions=100, sample_based=False,
                                      initializer=init)(inputs)
        else:
            out = tfq.layers.PQC(model_circuit, cirq.Z(qubits[-1]), initializer=init)(inputs)
        model = tf.keras.Model(inputs, out)
        model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="mse")
    model.fit(data, epochs=3, verbose=0)
    print(json.dumps(model.get_weights()[0].tolist()))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
