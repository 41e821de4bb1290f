"""The typed program the doors hand the engine (qmlsim._program): shared
parameters with scales and shifts (gradients per program parameter, chain rule
in C++), controls on |0>, the global phase, the initial state, and one-line
errors for a malformed program. References: PennyLane's default.qubit and
central differences."""
import numpy as np
import pennylane as qml
import pytest

from qmlsim import _qmlsim
from qmlsim._program import Builder, Param, engine_options, options, pauli_terms

OPTIONS = options(engine_options())


def shared_program(values_count=2):
    """RX(2 a + 0.1) q0, RY(-a) q1, CRZ(0.5 b) q0->q1 (engine qubits: no flip),
    X on q2 under controls q0 on |1> and q1 on |0>, e^{i 0.3}."""
    b = Builder(3, flip=False)
    b.gate("RX", [0], [Param(0, 2.0, 0.1)])
    b.gate("RY", [1], [Param(0, -1.0)])
    b.gate("CRZ", [0, 1], [Param(1, 0.5)])
    b.gate("RY", [2], [0.4])
    b.gate("X", [2], controls=[0, 1], control_values=[True, False])
    b.phase = 0.3
    return b.program(values_count)


def reference_state(a, c):
    @qml.qnode(qml.device("default.qubit", wires=3))
    def circuit():  # engine qubit q is wire 2 - q
        qml.RX(2 * a + 0.1, wires=2)
        qml.RY(-a, wires=1)
        qml.CRZ(0.5 * c, wires=[2, 1])
        qml.RY(0.4, wires=0)
        qml.ctrl(qml.PauliX(0), control=[2, 1], control_values=[1, 0])
        return qml.state()

    return np.exp(0.3j) * circuit()


def test_shared_scaled_parameters_controls_and_phase():
    values = [0.7, -1.3]
    psi = _qmlsim.state(shared_program(), values, OPTIONS)
    assert np.allclose(psi, reference_state(*values), atol=1e-12)
    h = [pauli_terms([(1.0, [(0, "Z"), (1, "X")]), (0.5, [(2, "Y")])], 3, flip=False)]
    _, rows = _qmlsim.jacobian(shared_program(), values, h, OPTIONS)
    assert len(rows[0]) == 2  # per program parameter, not per gate angle
    for k in range(2):
        d = np.zeros(2)
        d[k] = 1e-6
        hi = _qmlsim.expvals(shared_program(), list(values + d), h, OPTIONS)[0]
        lo = _qmlsim.expvals(shared_program(), list(values - d), h, OPTIONS)[0]
        assert abs(rows[0][k] - (hi - lo) / 2e-6) < 1e-7


def test_initial_state_and_batches():
    rng = np.random.default_rng(2)
    amps = rng.normal(size=8) + 1j * rng.normal(size=8)
    amps /= np.linalg.norm(amps)
    b = Builder(3, flip=False)
    b.gate("RX", [1], [Param(0)])
    program = b.program(1, amps.tolist())
    h = [[(1.0, 0, 0b010)]]  # Z on qubit 1
    one = [_qmlsim.expvals(program, [x], h, OPTIONS)[0] for x in (0.1, 0.2, 0.3)]
    batch = _qmlsim.expvals_batch([program] * 3, [[0.1], [0.2], [0.3]], h, OPTIONS)
    assert np.allclose([v[0] for v in batch], one, atol=1e-13)
    psi = _qmlsim.state(program, [0.0], OPTIONS)
    assert np.allclose(psi, amps, atol=1e-13)


@pytest.mark.parametrize("make,message", [
    (lambda: Builder(2).gate("NOPE", [0]).program(), "unknown gate or channel 'NOPE'"),
    (lambda: Builder(2).gate("RX", [0], [Param(1)]).program(1), "slot 1 is out of range"),
    (lambda: Builder(2).gate("RX", [0], [float("nan")]).program(), "not a finite number"),
    (lambda: Builder(2).gate("X", [0], controls=[1], control_values=[True, False]).program(),
     "2 control value(s) for 1 control(s)"),
    (lambda: Builder(2).gate("CNOT", [0, 0]).program(), "CNOT"),
    (lambda: Builder(2).program(0, [1.0, 0.0]), "initial state: 2 amplitudes for 2 qubit(s)"),
])
def test_malformed_programs_are_one_line_errors(make, message):
    with pytest.raises(ValueError) as e:
        make()
    assert message in str(e.value) and "\n" not in str(e.value)


def test_values_must_match_the_program():
    b = Builder(1)
    b.gate("RX", [0], [Param(0)])
    program = b.program(1)
    with pytest.raises(ValueError, match="2 for a program of 1 parameter"):
        _qmlsim.state(program, [0.1, 0.2], OPTIONS)
    with pytest.raises(ValueError, match="not a finite number"):
        _qmlsim.state(program, [float("inf")], OPTIONS)


def test_engine_options_one_validation():
    assert engine_options("c64", 2, 0) == ("c64", 2, 0, "cpu", "auto", 1000, 1)
    for kwargs, message in [({"precision": "c32"}, "precision must be"),
                            ({"method": "mixed"}, "method must be one of"),
                            ({"trajectories": 0}, "trajectories must be a whole number"),
                            ({"seed": -1}, "seed must be a whole number"),
                            ({"threads": 0}, "threads must be a whole number"),
                            ({"threads": True}, "threads must be a whole number"),
                            ({"fusion": 11}, "fusion must be a whole number"),
                            ({"backend": "tpu"}, "backend 'tpu'")]:
        with pytest.raises(ValueError, match=message):
            engine_options(**kwargs, who="door: ")


def test_circuit_controls_are_extra_controls():
    import qmlsim

    a = qmlsim.Circuit(3).add("H", [0]).add("H", [1]).add("RX", [2], [0.7], controls=[0, 1])
    b = qmlsim.Circuit(3).add("H", [0]).add("H", [1])
    b.add("QubitUnitary", [0, 1, 2], matrix=qml.matrix(qml.ctrl(qml.RX(0.7, 2), [0, 1]),
                                                       wire_order=[0, 1, 2]))
    assert np.allclose(qmlsim.state(a), qmlsim.state(b), atol=1e-12)
    assert a.num_params == 1 and qmlsim.jacobian(a, "Y2").shape == (1, 1)
