#!/usr/bin/env python3
"""The QCNN of TensorFlow Quantum's tutorial ("Quantum Convolutional Neural
Network"), as a TFQ user writes it: cluster-state excitations on 8 qubits,
tfq.layers.AddCircuit and tfq.layers.PQC over the QCNN circuit, Adam 0.02,
mean squared error, hinge accuracy. The only difference between the backends
is the import:

    python examples/tfq/qcnn.py --backend qmlsim    # import qmlsim.tfq as tfq
    python examples/tfq/qcnn.py --backend tfq       # import tensorflow_quantum as tfq

Needs TensorFlow 2.18 with legacy Keras (TF_USE_LEGACY_KERAS=1, tf_keras) as
TFQ 0.7.6 does, cirq-core, and for --backend tfq tensorflow-quantum 0.7.6:
scripts/python_test_tfq.sh makes that environment.
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


def generate_data(qubits, rng, rounds=20):
    """Excitations rx(theta) on one qubit of the cluster state; label +1 when
    |theta| <= pi/2, else -1. 70% for training."""
    excitations, labels = [], []
    for _ in range(rounds):
        for bit in qubits:
            theta = rng.uniform(-np.pi, np.pi)
            excitations.append(cirq.Circuit(cirq.rx(theta)(bit)))
            labels.append(1 if -np.pi / 2 <= theta <= np.pi / 2 else -1)
    split = int(len(excitations) * 0.7)
    return (excitations[:split], np.array(labels[:split]), excitations[split:],
            np.array(labels[split:]))


def cluster_state_circuit(bits):
    circuit = cirq.Circuit(cirq.H.on_each(bits))
    for this_bit, next_bit in zip(bits, bits[1:] + [bits[0]]):
        circuit.append(cirq.CZ(this_bit, next_bit))
    return circuit


def one_qubit_unitary(bit, symbols):
    return cirq.Circuit(cirq.X(bit) ** symbols[0], cirq.Y(bit) ** symbols[1],
                        cirq.Z(bit) ** symbols[2])


def two_qubit_unitary(bits, symbols):
    circuit = cirq.Circuit()
    circuit += one_qubit_unitary(bits[0], symbols[0:3])
    circuit += one_qubit_unitary(bits[1], symbols[3:6])
    circuit += [cirq.ZZ(*bits) ** symbols[6]]
    circuit += [cirq.YY(*bits) ** symbols[7]]
    circuit += [cirq.XX(*bits) ** symbols[8]]
    circuit += one_qubit_unitary(bits[0], symbols[9:12])
    circuit += one_qubit_unitary(bits[1], symbols[12:])
    return circuit


def two_qubit_pool(source_qubit, sink_qubit, symbols):
    sink_basis_selector = one_qubit_unitary(sink_qubit, symbols[0:3])
    source_basis_selector = one_qubit_unitary(source_qubit, symbols[3:6])
    circuit = cirq.Circuit(sink_basis_selector, source_basis_selector)
    circuit.append(cirq.CNOT(source_qubit, sink_qubit))
    circuit.append(sink_basis_selector ** -1)
    return circuit


def quantum_conv_circuit(bits, symbols):
    circuit = cirq.Circuit()
    for first, second in zip(bits[0::2], bits[1::2]):
        circuit += two_qubit_unitary([first, second], symbols)
    for first, second in zip(bits[1::2], bits[2::2] + [bits[0]]):
        circuit += two_qubit_unitary([first, second], symbols)
    return circuit


def quantum_pool_circuit(source_bits, sink_bits, symbols):
    circuit = cirq.Circuit()
    for source, sink in zip(source_bits, sink_bits):
        circuit += two_qubit_pool(source, sink, symbols)
    return circuit


def create_model_circuit(qubits):
    symbols = sympy.symbols("qconv0:63")
    circuit = cirq.Circuit()
    circuit += quantum_conv_circuit(qubits, symbols[0:15])
    circuit += quantum_pool_circuit(qubits[:4], qubits[4:], symbols[15:21])
    circuit += quantum_conv_circuit(qubits[4:], symbols[21:36])
    circuit += quantum_pool_circuit(qubits[4:6], qubits[6:], symbols[36:42])
    circuit += quantum_conv_circuit(qubits[6:], symbols[42:57])
    circuit += quantum_pool_circuit([qubits[6]], [qubits[7]], symbols[57:63])
    return circuit


def hinge_accuracy(y_true, y_pred):
    y_true = tf.squeeze(y_true) > 0.0
    y_pred = tf.squeeze(y_pred) > 0.0
    return tf.reduce_mean(tf.cast(y_true == y_pred, tf.float32))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=["qmlsim", "tfq"], default="qmlsim")
    ap.add_argument("--epochs", type=int, default=25)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    if args.backend == "qmlsim":
        import qmlsim.tfq as tfq
    else:
        import tensorflow_quantum as tfq
    tf.keras.utils.set_random_seed(args.seed)  # Python, NumPy and TensorFlow
    tf.config.experimental.enable_op_determinism()
    qubits = cirq.GridQubit.rect(1, 8)
    x_train, y_train, x_test, y_test = generate_data(qubits, np.random.default_rng(args.seed))
    x_train, x_test = tfq.convert_to_tensor(x_train), tfq.convert_to_tensor(x_test)

    excitation_input = tf.keras.Input(shape=(), dtype=tf.dtypes.string)
    cluster_state = tfq.layers.AddCircuit()(excitation_input,
                                            prepend=cluster_state_circuit(qubits))
    readout = tfq.layers.PQC(create_model_circuit(qubits), cirq.Z(qubits[-1]))(cluster_state)
    model = tf.keras.Model(inputs=[excitation_input], outputs=[readout])
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.02),
                  loss=tf.keras.losses.mse, metrics=[hinge_accuracy])
    start = time.perf_counter()
    history = model.fit(x=x_train, y=y_train, batch_size=args.batch_size, epochs=args.epochs,
                        verbose=2, validation_data=(x_test, y_test))
    seconds = time.perf_counter() - start
    print(f"backend {args.backend}: {args.epochs} epochs in {seconds:.1f} s "
          f"({seconds / args.epochs:.2f} s per epoch); validation accuracy "
          f"{history.history['val_hinge_accuracy'][-1]:.3f}, loss "
          f"{history.history['val_loss'][-1]:.4f}")


if __name__ == "__main__":
    main()
