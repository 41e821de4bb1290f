"""Cirq's simulation guide (`docs/simulate/simulation.ipynb`), as written but
for the simulator line: sampling a two-qubit circuit, its final state vector,
expectation values, stepping through it moment by moment, a parameter sweep,
and the density-matrix section with amplitude damping. Samples are drawn
(and timed) but only the exact results enter the agreement check: the two
simulators draw from different random streams."""
SDK = "Cirq"
TITLE = "simulation guide (`simulation.ipynb`), 2 qubits; a sweep of 200 points"
DEVICES = ("qmlsim.cirq", "cirq")
REQUIRES = ("cirq",)  # the packages it needs besides qmlsim
TOLERANCE = 1e-6  # cirq.Simulator's default dtype is complex64


def run(simulator_module):
    import cirq
    import numpy as np
    import sympy

    sim = __import__(simulator_module, fromlist=["Simulator"])
    q0, q1 = cirq.GridQubit(0, 0), cirq.GridQubit(1, 0)

    def basic_circuit(meas=True):
        sqrt_x = cirq.X ** 0.5
        yield sqrt_x(q0), sqrt_x(q1)
        yield cirq.CZ(q0, q1)
        yield sqrt_x(q0), sqrt_x(q1)
        if meas:
            yield cirq.measure(q0, key="q0"), cirq.measure(q1, key="q1")

    out = {}
    simulator = sim.Simulator(seed=1)
    circuit = cirq.Circuit(basic_circuit())
    simulator.run(circuit, repetitions=100)
    circuit = cirq.Circuit(basic_circuit(False))
    result = simulator.simulate(circuit, qubit_order=[q0, q1])
    out["final_state_vector"] = result.final_state_vector
    xx, zz = cirq.X(q0) * cirq.X(q1), cirq.Z(q0) * cirq.Z(q1)
    out["expectation_values"] = simulator.simulate_expectation_values(
        circuit, observables=[xx, zz])
    steps = [step.state_vector(copy=True)
             for step in simulator.simulate_moment_steps(cirq.Circuit(basic_circuit()))]
    # the step after the measurements depends on the outcomes drawn
    out["steps"] = steps[:-1]
    out["measured_state_norm"] = np.linalg.norm(steps[-1])

    theta = sympy.Symbol("theta")
    param_circuit = cirq.Circuit(cirq.rx(theta)(q0), cirq.CNOT(q0, q1),
                                 cirq.ry(2 * theta)(q1))
    sweep = cirq.Linspace("theta", start=0, stop=2 * np.pi, length=200)
    out["sweep_states"] = [r.final_state_vector for r in
                           simulator.simulate_sweep(param_circuit, params=sweep)]
    out["sweep_expectations"] = simulator.simulate_expectation_values_sweep(
        param_circuit, observables=[zz, cirq.X(q1)], params=sweep)
    simulator.run_sweep(cirq.Circuit(param_circuit, cirq.measure(q0, q1, key="m")),
                        params=sweep, repetitions=20)

    q = cirq.NamedQubit("a")
    dm = sim.DensityMatrixSimulator(seed=2)
    dm.run(cirq.Circuit(cirq.H(q), cirq.amplitude_damp(0.2)(q), cirq.measure(q, key="a")),
           repetitions=100)
    out["density_matrix"] = dm.simulate(
        cirq.Circuit(cirq.H(q), cirq.amplitude_damp(0.2)(q))).final_density_matrix
    return out
