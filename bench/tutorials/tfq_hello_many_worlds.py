"""TensorFlow Quantum's first tutorial (`hello_many_worlds`), as written but
for the import line: a parametrised two-qubit circuit and its expectation
values by Cirq and by `tfq.layers.Expectation` over a batch of five value
rows, the hybrid controller (`tfq.layers.ControlledPQC` behind a Keras
Dense network) trained for 30 epochs, and the controller with inputs and
operators (`tfq.layers.Expectation` with an operator per row) trained for 30
epochs. The random seeds (Python's, NumPy's and TensorFlow's) are set again
before each controller is built, so that both simulators train from the same
initial weights (Keras draws them from seeds that depend on what ran before,
which differs between the two packages). TFQ computes in single precision."""
SDK = "TFQ"
TITLE = "`hello_many_worlds`, 1-2 qubits, two Keras models of 30 epochs"
DEVICES = ("qmlsim.tfq", "tensorflow_quantum")
REQUIRES = ("tensorflow", "tensorflow_quantum")  # the packages it needs besides qmlsim
TOLERANCE = 1e-4


def run(module):
    import cirq
    import numpy as np
    import sympy
    import tensorflow as tf

    tfq = __import__(module, fromlist=["layers"])
    tf.random.set_seed(1234)
    np.random.seed(1234)
    out = {}
    a, b = sympy.symbols("a b")
    q0, q1 = cirq.GridQubit.rect(1, 2)
    circuit = cirq.Circuit(cirq.rx(a).on(q0), cirq.ry(b).on(q1), cirq.CNOT(q0, q1))  # the tutorial: CNOT(control=, target=), refused by Cirq 1.5
    z0, z0x1 = cirq.Z(q0), 0.5 * cirq.Z(q0) + cirq.X(q1)
    batch_vals = np.array(np.random.uniform(0, 2 * np.pi, (5, 2)), dtype=np.float32)
    out["batch"] = tfq.layers.Expectation()(circuit, symbol_names=[a, b],
                                             symbol_values=batch_vals, operators=z0)
    out["batch two operators"] = tfq.layers.Expectation()(
        circuit, symbol_names=[a, b], symbol_values=batch_vals, operators=[z0, z0x1])

    # The hybrid controller
    control_params = sympy.symbols("theta_1 theta_2 theta_3")
    qubit = cirq.GridQubit(0, 0)
    model_circuit = cirq.Circuit(cirq.rz(control_params[0])(qubit),
                                 cirq.ry(control_params[1])(qubit),
                                 cirq.rx(control_params[2])(qubit))
    tf.keras.utils.set_random_seed(1234)  # not in the tutorial: the same initial weights
    controller = tf.keras.Sequential([tf.keras.layers.Dense(10, activation="elu"),
                                      tf.keras.layers.Dense(3)])
    circuits_input = tf.keras.Input(shape=(), dtype=tf.string, name="circuits_input")
    commands_input = tf.keras.Input(shape=(1,), dtype=tf.dtypes.float32, name="commands_input")
    dense_2 = controller(commands_input)
    expectation_layer = tfq.layers.ControlledPQC(model_circuit, operators=cirq.Z(qubit))
    expectation = expectation_layer([circuits_input, dense_2])
    model = tf.keras.Model(inputs=[circuits_input, commands_input], outputs=expectation)
    commands = np.array([[0], [1]], dtype=np.float32)
    expected_outputs = np.array([[1], [-1]], dtype=np.float32)
    random_rotations = np.random.uniform(0, 2 * np.pi, 3)
    noisy_preparation = cirq.Circuit(cirq.rx(random_rotations[0])(qubit),
                                     cirq.ry(random_rotations[1])(qubit),
                                     cirq.rz(random_rotations[2])(qubit))
    datapoint_circuits = tfq.convert_to_tensor([noisy_preparation] * 2)
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.05),
                  loss=tf.keras.losses.MeanSquaredError())
    history = model.fit(x=[datapoint_circuits, commands], y=expected_outputs, epochs=30,
                        verbose=0)
    out["controller loss"] = history.history["loss"]
    out["controller outputs"] = model([datapoint_circuits, commands])

    # Learning to prepare eigenstates of different operators
    commands_input = tf.keras.Input(shape=(1,), dtype=tf.dtypes.float32, name="commands_input")
    circuits_input = tf.keras.Input(shape=(), dtype=tf.dtypes.string, name="circuits_input")
    operators_input = tf.keras.Input(shape=(1,), dtype=tf.dtypes.string, name="operators_input")
    tf.keras.utils.set_random_seed(1234)  # not in the tutorial: the same initial weights
    controller = tf.keras.Sequential([tf.keras.layers.Dense(10, activation="elu"),
                                      tf.keras.layers.Dense(3)])
    dense_2 = controller(commands_input)
    full_circuit = tfq.layers.AddCircuit()(circuits_input, append=model_circuit)
    expectation_output = tfq.layers.Expectation()(full_circuit, symbol_names=control_params,
                                                  symbol_values=dense_2,
                                                  operators=operators_input)
    two_axis_control_model = tf.keras.Model(
        inputs=[circuits_input, commands_input, operators_input], outputs=[expectation_output])
    operator_data = tfq.convert_to_tensor([[cirq.X(qubit)], [cirq.Z(qubit)]])
    commands = np.array([[0], [1]], dtype=np.float32)
    expected_outputs = np.array([[1], [-1]], dtype=np.float32)
    two_axis_control_model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.02),
                                   loss=tf.keras.losses.MeanSquaredError())
    history = two_axis_control_model.fit(
        x=[datapoint_circuits, commands, operator_data], y=expected_outputs, epochs=30,
        verbose=0)
    out["two-axis loss"] = history.history["loss"]
    return out
