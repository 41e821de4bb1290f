"""The qmlsim Python API against independent numbers: PennyLane's default.qubit
for states, expectation values and gradients, finite differences for the VJP."""
import numpy as np
import pennylane as qml
import pytest

import qmlsim

PARAMS = [0.3, -0.7, 1.1, 0.4, 0.9, -0.2]


def build():
    c = qmlsim.Circuit(3)
    c.add("H", [0]).add("RX", [1], [PARAMS[0]]).add("CNOT", [0, 2]).add("Rot", [2], PARAMS[1:4])
    c.add("IsingZZ", [0, 1], [PARAMS[4]]).add("CRY", [2, 1], [PARAMS[5]])
    return c


def reference_gates():
    """build() in PennyLane: wire 0 is the most significant, so qubit q is wire 2 - q."""
    qml.Hadamard(2)
    qml.RX(PARAMS[0], 1)
    qml.CNOT([2, 0])
    qml.Rot(*PARAMS[1:4], wires=0)
    qml.IsingZZ(PARAMS[4], wires=[2, 1])
    qml.CRY(PARAMS[5], wires=[0, 1])


def reference_state():
    @qml.qnode(qml.device("default.qubit", wires=3))
    def circuit():
        reference_gates()
        return qml.state()

    return circuit()


@pytest.mark.parametrize("precision,tol", [("c128", 1e-12), ("c64", 1e-6)])
def test_state_and_expvals_match_default_qubit(precision, tol):
    psi = qmlsim.state(build(), precision=precision)
    assert psi.dtype == np.complex128 and psi.shape == (8,)
    assert np.allclose(psi, reference_state(), atol=tol)
    # <Z0 Z1 - 0.5 X2>: qubits 0, 1, 2 are bits 0, 1, 2 of an index.
    z = np.array([(1 - 2 * (i & 1)) * (1 - 2 * (i >> 1 & 1)) for i in range(8)])
    flipped = psi[np.arange(8) ^ 4]
    want = np.vdot(psi, z * psi).real - 0.5 * np.vdot(psi, flipped).real
    got = qmlsim.expval(build(), ["Z0 Z1 - 0.5*X2", "Z0"], precision=precision)
    assert got.shape == (2,)
    assert abs(got[0] - want) < tol * 10
    assert np.allclose(qmlsim.probs(build()), np.abs(psi) ** 2, atol=1e-12)


def test_jacobian_and_vjp_match_finite_differences():
    obs = ["Z0 Z1 - 0.5*X2", "Y1 + 0.25"]
    jac = qmlsim.jacobian(build(), obs)
    assert jac.shape == (2, 6)
    eps = 1e-6
    for k in range(6):
        up, down = list(PARAMS), list(PARAMS)
        up[k] += eps
        down[k] -= eps

        def value(p):
            c = qmlsim.Circuit(3)
            c.add("H", [0]).add("RX", [1], [p[0]]).add("CNOT", [0, 2]).add("Rot", [2], p[1:4])
            c.add("IsingZZ", [0, 1], [p[4]]).add("CRY", [2, 1], [p[5]])
            return qmlsim.expval(c, obs)

        fd = (value(up) - value(down)) / (2 * eps)
        assert np.allclose(jac[:, k], fd, atol=1e-8)
    cot = np.array([0.3, -2.0])
    assert np.allclose(qmlsim.vjp(build(), obs, cot), cot @ jac, atol=1e-12)


def test_errors_are_python_exceptions_with_the_engine_message():
    with pytest.raises(ValueError, match="observable:1:1: unexpected character 'Q'"):
        qmlsim.expval(build(), "Q0")
    with pytest.raises(ValueError, match="RX: wire 5 is out of range for 3 qubit"):
        qmlsim.state(qmlsim.Circuit(3).add("RX", [5], [0.1]))
    with pytest.raises(ValueError, match="unknown gate or channel 'FOO'"):
        qmlsim.state(qmlsim.Circuit(1).add("FOO", [0]))
    with pytest.raises(ValueError, match="not a finite number"):
        qmlsim.state(qmlsim.Circuit(1).add("RX", [0], [float("nan")]))
    with pytest.raises(ValueError, match="precision"):
        qmlsim.state(build(), precision="c32")
    with pytest.raises(MemoryError, match="40-qubit state"):
        qmlsim.expval(qmlsim.Circuit(40), "Z0")
    with pytest.raises(ValueError, match="num_qubits"):
        qmlsim.Circuit(0)


def test_batches_equal_one_by_one_and_samples_are_seeded():
    circuits = []
    for k in range(6):
        c = qmlsim.Circuit(4)
        for q in range(4):
            c.add("RY", [q], [0.1 * k + 0.2 * q])
        c.add("CNOT", [0, 1]).add("CZ", [2, 3])
        circuits.append(c)
    batch = qmlsim.expval_batch(circuits, ["Z0 Z1", "X2 + 0.5*Y3"], threads=2)
    assert batch.shape == (6, 2)
    for c, row in zip(circuits, batch):
        assert np.allclose(row, qmlsim.expval(c, ["Z0 Z1", "X2 + 0.5*Y3"], threads=1), atol=1e-14)
    a = qmlsim.sample(circuits[3], 500, seed=11)
    assert np.array_equal(a, qmlsim.sample(circuits[3], 500, seed=11))
    p = qmlsim.probs(circuits[3])
    assert set(np.unique(a)) <= set(np.flatnonzero(p > 0))


def test_variance_matches_default_qubit():
    @qml.qnode(qml.device("default.qubit", wires=3))
    def ref():
        reference_gates()
        # qmlsim "0.5*Z0*Z1 - X2 + 0.3*Y0*X1": qubit q is wire 2 - q
        return qml.var(0.5 * qml.Z(2) @ qml.Z(1) - qml.X(0) + 0.3 * qml.Y(2) @ qml.X(1))

    got = qmlsim.var(build(), "0.5*Z0*Z1 - X2 + 0.3*Y0*X1")
    assert np.allclose(got, ref(), atol=1e-12)


def test_openqasm_programs_run_in_process():
    bell = 'OPENQASM 3.0;\ninclude "stdgates.inc";\nqubit[3] q;\nh q[0];\ncx q[0], q[1];\nrx(0.4) q[2];\n'
    for precision, tol in (("c128", 1e-12), ("c64", 1e-6)):
        v = qmlsim.expval_qasm(bell, ["Z0 Z1", "X0 X1", "Z2", "Z0"], precision=precision)
        assert np.allclose(v, [1, 1, np.cos(0.4), 0], atol=tol)
    with pytest.raises(ValueError, match="names qubit 3, beyond the 3 qubit"):
        qmlsim.expval_qasm(bell, "Z3")
    with pytest.raises(ValueError, match="<qasm>:2"):
        qmlsim.expval_qasm("OPENQASM 2.0;\nqreg q[1]; foo q[0];", "Z0")
    with pytest.raises(ValueError, match="inputs"):
        qmlsim.expval_qasm('OPENQASM 3.0;\ninclude "stdgates.inc";\ninput float[64] x;\n'
                           "qubit q;\nrx(x) q;", "Z0")


def test_every_entry_point_refuses_an_observable_beyond_the_circuit():
    # One check in the engine: no segfault (X20), no garbage (X7), no silent 1.0 (Z7).
    c = qmlsim.Circuit(2).add("H", [0]).add("RY", [1], [0.3])
    noisy = qmlsim.Circuit(2).add("H", [0]).channel("depolarizing", [1], [0.1])
    calls = [
        lambda obs: qmlsim.expval(c, obs),
        lambda obs: qmlsim.var(c, obs),
        lambda obs: qmlsim.jacobian(c, obs),
        lambda obs: qmlsim.vjp(c, obs, [1.0]),
        lambda obs: qmlsim.expval_batch([c, c], obs),
        lambda obs: qmlsim.expval(noisy, obs),
        lambda obs: qmlsim.expval(noisy, obs, method="trajectories"),
    ]
    for call in calls:
        for obs in ("X20", "X7", "Z7", "Z0 + Y2"):
            with pytest.raises(ValueError, match="beyond the 2 qubit"):
                call(obs)
    assert np.allclose(qmlsim.expval_batch([c, c], "Z1"), qmlsim.expval(c, "Z1"))


def _sixteen_qubit_expvals():
    c = qmlsim.Circuit(16)
    for q in range(16):
        c.add("RY", [q], [0.1 * q + 0.2])
    for q in range(15):
        c.add("CNOT", [q, q + 1])
    return qmlsim.expval(c, ["Z0", "Z15 X3"], threads=2)


def test_a_forked_child_computes_what_its_parent_did():
    # GNU OpenMP's pool does not survive fork(): the child must not hang.
    import multiprocessing
    parent = _sixteen_qubit_expvals()
    with multiprocessing.get_context("fork").Pool(2) as pool:
        child = pool.apply_async(_sixteen_qubit_expvals)
        assert np.allclose(child.get(timeout=300), parent, atol=1e-12)
