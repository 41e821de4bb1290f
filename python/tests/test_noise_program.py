"""Channels through the typed program (qmlsim.Circuit.channel, the protocol
every door will use): the density matrix against a numpy oracle (rho -> sum K
rho K^dagger with full matrices), its adjoint gradient against finite
differences, trajectories against the density matrix, and bad input."""
import numpy as np
import pytest

import qmlsim

I2 = np.eye(2)
X = np.array([[0, 1], [1, 0]], dtype=complex)
Y = np.array([[0, -1j], [1j, 0]])
Z = np.diag([1.0, -1.0]).astype(complex)


def ry(t):
    c, s = np.cos(t / 2), np.sin(t / 2)
    return np.array([[c, -s], [s, c]], dtype=complex)


def kraus(name, p):
    if name == "depolarizing":
        return [np.sqrt(1 - p) * I2] + [np.sqrt(p / 3) * P for P in (X, Y, Z)]
    if name == "bit_flip":
        return [np.sqrt(1 - p) * I2, np.sqrt(p) * X]
    if name == "amplitude_damping":
        return [np.array([[1, 0], [0, np.sqrt(1 - p)]]), np.array([[0, np.sqrt(p)], [0, 0]])]
    if name == "phase_damping":
        return [np.array([[1, 0], [0, np.sqrt(1 - p)]]), np.array([[0, 0], [0, np.sqrt(p)]])]
    raise KeyError(name)


def on(m, q, n):
    """A one-qubit matrix on qubit q of n (qubit q = bit q of an index)."""
    out = np.eye(1)
    for k in reversed(range(n)):
        out = np.kron(out, m if k == q else I2)
    return out


def cnot(c, t, n):
    d = 1 << n
    m = np.zeros((d, d))
    for i in range(d):
        m[i ^ (1 << t) if i >> c & 1 else i, i] = 1
    return m


def build(theta, n=3):
    """The same noisy circuit for qmlsim and for the oracle (a list of steps)."""
    c = qmlsim.Circuit(n)
    steps = []
    channels = [("depolarizing", 0.1), ("amplitude_damping", 0.3), ("bit_flip", 0.2),
                ("phase_damping", 0.25)]
    for layer in range(2):
        for q in range(n):
            c.add("RY", [q], [theta[layer * n + q]])
            steps.append(("U", on(ry(theta[layer * n + q]), q, n)))
            c.add("S", [q])  # complex entries: a transposed rho would differ
            steps.append(("U", on(np.diag([1, 1j]), q, n)))
            name, p = channels[(layer * n + q) % 4]
            c.channel(name, [q], [p])
            steps.append(("K", [on(k, q, n) for k in kraus(name, p)]))
        for q in range(n - 1):
            c.add("CNOT", [q, q + 1])
            steps.append(("U", cnot(q, q + 1, n)))
    return c, steps


def oracle(steps, n):
    rho = np.zeros((1 << n, 1 << n), dtype=complex)
    rho[0, 0] = 1
    for kind, m in steps:
        rho = m @ rho @ m.conj().T if kind == "U" else sum(k @ rho @ k.conj().T for k in m)
    return rho


OBS = ["Z0", "0.5*X1*Z2 - Y0*Y1", "Z2"]


def dense(h, n):
    out = 0
    for coeff, x, z in qmlsim.pauli_terms(h):
        m = np.eye(1)
        for q in reversed(range(n)):
            p = {(0, 0): I2, (1, 0): X, (0, 1): Z, (1, 1): Y}[(x >> q & 1, z >> q & 1)]
            m = np.kron(m, p)
        out = out + coeff * m
    return out


def test_the_density_matrix_matches_the_oracle():
    theta = np.random.default_rng(3).uniform(-3, 3, 6)
    c, steps = build(theta)
    rho = oracle(steps, 3)
    assert np.allclose(qmlsim.state(c), rho, atol=1e-12)
    assert np.allclose(qmlsim.probs(c), np.real(np.diag(rho)), atol=1e-12)
    want = [np.real(np.trace(dense(h, 3) @ rho)) for h in OBS]
    assert np.allclose(qmlsim.expval(c, OBS), want, atol=1e-12)
    assert np.allclose(qmlsim.expval(c, OBS, precision="c64"), want, atol=1e-5)


def test_density_matrix_gradients_equal_finite_differences():
    theta = np.random.default_rng(4).uniform(-3, 3, 6)
    c, _ = build(theta)
    jac = qmlsim.jacobian(c, OBS)
    for j in range(6):
        up, down = theta.copy(), theta.copy()
        up[j] += 1e-6
        down[j] -= 1e-6
        fd = (qmlsim.expval(build(up)[0], OBS) - qmlsim.expval(build(down)[0], OBS)) / 2e-6
        assert np.allclose(jac[:, j], fd, atol=1e-7)
    v = qmlsim.vjp(c, OBS, [1.0, -2.0, 0.5])
    assert np.allclose(v, jac.T @ [1.0, -2.0, 0.5], atol=1e-12)


def test_trainable_channel_parameters_against_the_oracle():
    """Circuit.channel(trainable=True): the noise strengths are circuit
    parameters after the angles; the Jacobian against central differences of
    the numpy oracle."""
    names = ["depolarizing", "amplitude_damping", "bit_flip", "phase_damping"]

    def circuit(theta, p, n=2):
        c, steps = qmlsim.Circuit(n), []
        for q in range(n):
            c.add("RY", [q], [theta[q]])
            steps.append(("U", on(ry(theta[q]), q, n)))
            c.add("S", [q])
            steps.append(("U", on(np.diag([1, 1j]), q, n)))
        c.add("CNOT", [0, 1])
        steps.append(("U", cnot(0, 1, n)))
        for k, name in enumerate(names):
            c.channel(name, [k % n], [p[k]], trainable=True)
            steps.append(("K", [on(m, k % n, n) for m in kraus(name, p[k])]))
        return c, steps

    obs = ["Z0", "0.5*X1*Z0 - Y0*Y1"]
    theta, p = np.array([0.7, -1.9]), np.array([0.1, 0.3, 0.0, 0.25])
    c, _ = circuit(theta, p)
    assert c.num_params == 6
    jac = qmlsim.jacobian(c, obs)

    def oracle_values(x):
        rho = oracle(circuit(x[:2], x[2:])[1], 2)
        return np.array([np.real(np.trace(dense(h, 2) @ rho)) for h in obs])

    x = np.concatenate([theta, p])
    for j in range(6):
        up, down = x.copy(), x.copy()
        up[j] += 1e-6
        if x[j] == 0:  # a probability of 0: one-sided
            fd = (oracle_values(up) - oracle_values(x)) / 1e-6
        else:
            down[j] -= 1e-6
            fd = (oracle_values(up) - oracle_values(down)) / 2e-6
        assert np.allclose(jac[:, j], fd, atol=1e-6 if x[j] == 0 else 1e-7), j
    with pytest.raises(ValueError, match="trajectories do not differentiate"):
        qmlsim.jacobian(c, obs, method="trajectories")


def test_trajectories_approach_the_density_matrix():
    theta = np.random.default_rng(5).uniform(-3, 3, 6)
    c, _ = build(theta)
    exact = qmlsim.expval(c, OBS)
    mean = qmlsim.expval(c, OBS, method="trajectories", trajectories=4000, seed=3)
    assert np.allclose(mean, exact, atol=0.06)
    again = qmlsim.expval(c, OBS, method="trajectories", trajectories=4000, seed=3, threads=1)
    assert np.array_equal(mean, again)  # seeded by index: any thread count


def test_bad_channels_are_one_line_errors():
    with pytest.raises(ValueError, match="probability"):
        qmlsim.expval(qmlsim.Circuit(1).channel("bit_flip", [0], [1.5]), "Z0")
    with pytest.raises(ValueError, match="unknown gate or channel 'leak'"):
        qmlsim.expval(qmlsim.Circuit(1).channel("leak", [0], [0.1]), "Z0")
    with pytest.raises(ValueError, match="trace preserving"):
        qmlsim.expval(qmlsim.Circuit(1).channel("kraus", [0], kraus=[0.5 * np.eye(2)]), "Z0")
    noisy = qmlsim.Circuit(1).channel("kraus", [0], kraus=kraus("amplitude_damping", 0.4))
    assert np.allclose(qmlsim.expval(noisy, "Z0"), [1.0])
    with pytest.raises(ValueError, match="noise channel"):
        qmlsim.expval(noisy, "Z0", method="statevector")
    with pytest.raises(ValueError, match="method must be one of"):
        qmlsim.expval(noisy, "Z0", method="mixed")


def test_the_engine_chooses_the_method_and_the_doors_ask_it():
    """_qmlsim.method is the engine's one choice (grad/method.h): a pure
    circuit on the state vector, a noisy one on the density matrix, by
    trajectories when asked, and with trajectory_estimate (TFQ's noisy
    estimate) by trajectories wherever that many cost less than the density
    matrix; the state-vector method refuses channels in one line."""
    def method(n, noisy, **kw):
        c = qmlsim.Circuit(n)
        c.add("H", [0])
        if noisy:
            c.channel("depolarizing", [0], [0.1])
        o = qmlsim._options("c128", 1, 3)
        for k, v in kw.items():
            setattr(o, k, v)
        return qmlsim._qmlsim.method(c._program()[0], o)

    assert method(3, False) == "statevector"
    assert method(3, True) == "density_matrix"
    assert method(3, True, method="trajectories") == "trajectories"
    assert method(3, False, method="density_matrix") == "density_matrix"
    assert method(8, True, trajectories=100, trajectory_estimate=True) == "density_matrix"
    assert method(10, True, trajectories=100, trajectory_estimate=True) == "trajectories"
    with pytest.raises(ValueError, match="method statevector: the circuit has noise channels"):
        method(3, True, method="statevector")


def test_an_oversized_density_matrix_is_refused_before_allocating():
    c = qmlsim.Circuit(18)
    c.channel("depolarizing", [0], [0.1])
    with pytest.raises(MemoryError, match="18-qubit density matri"):
        qmlsim.vjp(c, "Z0", [1.0], method="density_matrix")
