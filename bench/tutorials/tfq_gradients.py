"""TensorFlow Quantum's gradients tutorial (`gradients`), as written but for
the import line: <X> of Y^alpha and its derivative by hand, through
`tfq.layers.Expectation` with `ForwardDifference`, over 100 points by a
GradientTape; `SampledExpectation` with `ForwardDifference` and with
`ParameterShift` (500 repetitions: drawn and timed, not compared); and the
tutorial's own `Differentiator` subclass (`get_gradient_circuits`: the
shift rule of this one gate). TFQ computes in single precision, and its
forward difference of step 0.01 divides float32 rounding (1e-7) by the step:
the tolerance is that of the forward difference's rounding, 1e-3."""
SDK = "TFQ"
TITLE = "`gradients`, 1 qubit, 100 points, three differentiators and a user subclass"
DEVICES = ("qmlsim.tfq", "tensorflow_quantum")
REQUIRES = ("tensorflow", "tensorflow_quantum")  # the packages it needs besides qmlsim
TOLERANCE = 1e-3


def run(module):
    import cirq
    import numpy as np
    import sympy
    import tensorflow as tf

    tfq = __import__(module, fromlist=["layers"])
    out = {}
    qubit = cirq.GridQubit(0, 0)
    my_circuit = cirq.Circuit(cirq.Y(qubit) ** sympy.Symbol("alpha"))
    pauli_x = cirq.X(qubit)

    def my_expectation(op, alpha):
        params = {"alpha": alpha}
        sim = cirq.Simulator()
        final_state_vector = sim.simulate(my_circuit, params).final_state_vector
        return op.expectation_from_state_vector(final_state_vector, {qubit: 0}).real

    def my_grad(obs, alpha, eps=0.01):
        f_x = my_expectation(obs, alpha)
        f_x_prime = my_expectation(obs, alpha + eps)
        return (f_x_prime - f_x) / eps

    out["by hand"] = [my_expectation(pauli_x, 0.3), my_grad(pauli_x, 0.3)]
    expectation_calculation = tfq.layers.Expectation(
        differentiator=tfq.differentiators.ForwardDifference(grid_spacing=0.01))
    out["one value"] = expectation_calculation(my_circuit, operators=pauli_x,
                                               symbol_names=["alpha"], symbol_values=[[0.3]])
    sample_points = tf.reshape(tf.linspace(0.0, 2.0 * np.pi, num=100), [-1, 1])
    values_tensor = tf.convert_to_tensor(sample_points)
    with tf.GradientTape() as g:
        g.watch(values_tensor)
        exact_outputs = expectation_calculation(my_circuit, operators=pauli_x,
                                                symbol_names=["alpha"],
                                                symbol_values=values_tensor)
    out["forward difference"] = g.gradient(exact_outputs, values_tensor)

    for differentiator in (tfq.differentiators.ForwardDifference(grid_spacing=0.01),
                           tfq.differentiators.ParameterShift()):
        sampled = tfq.layers.SampledExpectation(differentiator=differentiator)
        with tf.GradientTape() as g:
            g.watch(values_tensor)
            outputs = sampled(my_circuit, operators=pauli_x, repetitions=500,
                              symbol_names=["alpha"], symbol_values=values_tensor)
        g.gradient(outputs, values_tensor)

    class MyDifferentiator(tfq.differentiators.Differentiator):
        """A Toy differentiator for <Y^alpha | X |Y^alpha>."""

        def __init__(self):
            pass

        def get_gradient_circuits(self, programs, symbol_names, symbol_values):
            # The two terms in the derivative are the same circuit...
            batch_programs = tf.stack([programs, programs], axis=1)
            # ... with shifted parameter values.
            shift = tf.constant(1 / 2)
            forward = symbol_values + shift
            backward = symbol_values - shift
            batch_symbol_values = tf.stack([forward, backward], axis=1)
            # Weights are the coefficients of the terms in the derivative.
            num_program_copies = tf.shape(batch_programs)[0]
            batch_weights = tf.tile(tf.constant([[[np.pi / 2, -np.pi / 2]]]),
                                    [num_program_copies, 1, 1])
            # The index map simply says which weights go with which circuits.
            batch_mapper = tf.tile(tf.constant([[[0, 1]]]), [num_program_copies, 1, 1])
            return (batch_programs, symbol_names, batch_symbol_values, batch_weights,
                    batch_mapper)

    custom_dif = MyDifferentiator()
    custom_grad_expectation = tfq.layers.Expectation(differentiator=custom_dif)
    with tf.GradientTape() as g:
        g.watch(values_tensor)
        my_outputs = custom_grad_expectation(my_circuit, operators=[pauli_x],
                                             symbol_names=["alpha"], symbol_values=values_tensor)
    out["custom differentiator"] = g.gradient(my_outputs, values_tensor)
    return out
