"""qmlsim.tfq against TensorFlow Quantum 0.7.6 and against Cirq in double
precision. Run by scripts/python_test_tfq.sh (TensorFlow is a large download,
so these tests are not in the main test command)."""
import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import cirq  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import sympy  # noqa: E402
import tensorflow as tf  # noqa: E402

import qmlsim.tfq as qtfq  # noqa: E402

tfq = pytest.importorskip("tensorflow_quantum")

QUBITS = cirq.GridQubit.rect(2, 2)
SYMBOLS = sympy.symbols("s0:5")


def random_model(rng, gates=24):
    """A circuit over the gate list with symbols in exponents, expressions of
    them included, and fixed gates."""
    q = QUBITS
    c = cirq.Circuit()
    for _ in range(gates):
        a, b = rng.choice(len(q), 2, replace=False)
        s = SYMBOLS[rng.integers(len(SYMBOLS))]
        k = rng.integers(11)
        c.append([cirq.X(q[a]) ** s, cirq.Y(q[a]) ** (2 * s), cirq.Z(q[a]) ** s,
                  cirq.rx(s).on(q[a]), cirq.ry(0.5 * s).on(q[a]), cirq.rz(s).on(q[a]),
                  cirq.CZ(q[a], q[b]) ** s, cirq.XX(q[a], q[b]) ** s, cirq.YY(q[a], q[b]) ** s,
                  cirq.ZZ(q[a], q[b]) ** s,
                  cirq.PhasedXPowGate(phase_exponent=0.25, exponent=s).on(q[a])][k])
        if rng.random() < 0.3:
            c.append([cirq.H(q[a]), cirq.CNOT(q[a], q[b]), cirq.FSimGate(0.3, 0.2).on(q[a], q[b]),
                      cirq.ISWAP(q[a], q[b]) ** 0.4][rng.integers(4)])
    return c


def operators():
    q = QUBITS
    return [cirq.Z(q[0]), cirq.X(q[1]) * cirq.Y(q[2]) + 0.5 * cirq.Z(q[3]),
            -0.3 * cirq.X(q[0]) * cirq.X(q[3])]


def exact(circuit, values):
    """<op> for every op, in double precision by Cirq."""
    resolver = dict(zip([str(s) for s in SYMBOLS], values))
    state = cirq.final_state_vector(cirq.resolve_parameters(circuit, resolver),
                                    qubit_order=QUBITS, dtype=np.complex128)
    index = {q: i for i, q in enumerate(QUBITS)}
    return np.array([op.expectation_from_state_vector(state, index).real for op in operators()])


@pytest.mark.parametrize("seed", range(4))
def test_pqc_values_and_gradients(seed):
    rng = np.random.default_rng(seed)
    model = random_model(rng)
    data = [cirq.Circuit(cirq.rx(rng.uniform(-3, 3)).on(QUBITS[i % 4]),
                         cirq.H(QUBITS[(i + 1) % 4])) for i in range(3)]
    used = sorted(cirq.parameter_symbols(model), key=str)
    init = rng.uniform(-2, 2, len(used))
    weights = tf.constant(rng.normal(size=(3, len(operators()))), dtype=tf.float32)
    results = {}
    for name, mod in (("qmlsim", qtfq), ("tfq", tfq)):
        kw = {"differentiator": tfq.differentiators.Adjoint()} if name == "tfq" else {}
        layer = mod.layers.PQC(model, operators(),
                               initializer=tf.keras.initializers.Constant(init), **kw)
        x = mod.convert_to_tensor(data)
        with tf.GradientTape() as tape:
            y = layer(x)
            loss = tf.reduce_sum(y * weights)
        results[name] = (y.numpy(), tape.gradient(loss, layer.parameters).numpy())
    values = np.zeros(len(SYMBOLS))
    for s, v in zip(used, init):
        values[SYMBOLS.index(s)] = v
    want = np.array([exact(d + model, values) for d in data])
    # Finite differences of the weighted loss in double precision.
    h, fd = 1e-6, []
    for s in used:
        i = SYMBOLS.index(s)
        up, down = values.copy(), values.copy()
        up[i] += h
        down[i] -= h
        fd.append(sum(np.dot(weights.numpy()[b], exact(d + model, up) - exact(d + model, down))
                      for b, d in enumerate(data)) / (2 * h))
    y, g = results["qmlsim"]
    np.testing.assert_allclose(y, want, atol=1e-6)
    np.testing.assert_allclose(g, fd, atol=2e-5)
    # TFQ computes in complex64: values to 1e-5; its adjoint gradients are
    # off by up to ~1e-3 here (measured against the finite differences).
    np.testing.assert_allclose(results["tfq"][0], y, atol=1e-5)
    np.testing.assert_allclose(results["tfq"][1], g, atol=5e-3)


def test_controlled_pqc_and_expectation_take_symbol_values():
    rng = np.random.default_rng(11)
    model = random_model(rng, 16)
    used = [str(s) for s in sorted(cirq.parameter_symbols(model), key=str)]
    values = tf.Variable(rng.uniform(-2, 2, (2, len(used))), dtype=tf.float32)
    data = [cirq.Circuit(), cirq.Circuit(cirq.X(QUBITS[0]))]
    out = {}
    for name, mod in (("qmlsim", qtfq), ("tfq", tfq)):
        x = mod.convert_to_tensor(data)
        with tf.GradientTape(persistent=True) as tape:
            a = mod.layers.ControlledPQC(model, operators())([x, values])
            b = mod.layers.Expectation()(mod.layers.AddCircuit()(x, append=model),
                                         symbol_names=used, symbol_values=values,
                                         operators=operators())
        out[name] = (a.numpy(), b.numpy(), tape.gradient(a, values).numpy(),
                     tape.gradient(b, values).numpy())
    q = out["qmlsim"]
    np.testing.assert_allclose(q[0], q[1], atol=1e-7)
    np.testing.assert_allclose(q[2], q[3], atol=1e-7)
    for got, want, tol in zip(out["tfq"], q, (1e-5, 1e-5, 5e-3, 5e-3)):
        np.testing.assert_allclose(got, want, atol=tol)


def test_state_layer_matches_cirq_with_global_phases():
    q = QUBITS
    a = sympy.Symbol("a")
    circuit = cirq.Circuit(cirq.X(q[0]) ** a, cirq.rz(0.4).on(q[1]), cirq.H(q[2]),
                           cirq.CZ(q[2], q[3]) ** 0.3, cirq.ZZ(q[0], q[3]) ** (a / 2),
                           cirq.PhasedXPowGate(phase_exponent=0.1, exponent=0.7).on(q[3]))
    states = qtfq.layers.State()(qtfq.convert_to_tensor([circuit, circuit]),
                                 symbol_names=["a"], symbol_values=[[0.3], [1.7]])
    for row, v in zip(states.to_tensor().numpy(), (0.3, 1.7)):
        want = cirq.final_state_vector(cirq.resolve_parameters(circuit, {"a": v}),
                                       qubit_order=q, dtype=np.complex128)
        np.testing.assert_allclose(row, want, atol=1e-6)


def test_conversion_and_add_circuit_round_trip():
    q = cirq.LineQubit.range(2)  # any qubit type, not only GridQubit
    a = cirq.Circuit(cirq.H(q[0]))
    b = cirq.Circuit(cirq.CNOT(q[0], q[1]))
    t = qtfq.convert_to_tensor([a, a])
    joined = qtfq.from_tensor(qtfq.layers.AddCircuit()(t, append=b))
    assert all(c == a + b for c in joined)
    joined = qtfq.from_tensor(qtfq.layers.AddCircuit()(t, prepend=b))
    assert all(c == b + a for c in joined)
    ops = qtfq.from_tensor(qtfq.convert_to_tensor([[cirq.Z(q[0]), cirq.X(q[1]) * cirq.Z(q[0])]]))
    assert ops.shape == (1, 2) and ops[0, 1] == cirq.PauliSum.wrap(cirq.X(q[1]) * cirq.Z(q[0]))


def test_refusals_are_clear():
    q = QUBITS[0]
    s = sympy.Symbol("s")
    with pytest.raises(ValueError, match="greater than zero"):
        qtfq.layers.PQC(cirq.Circuit(cirq.X(q) ** s), cirq.Z(q), repetitions=0)
    with pytest.raises(RuntimeError, match="repetitions"):
        qtfq.layers.Expectation()(qtfq.convert_to_tensor([cirq.Circuit(cirq.X(q) ** s)]),
                                  symbol_names=["s"], symbol_values=[[0.1]],
                                  operators=[cirq.Z(q)], repetitions=10)
    with pytest.raises(ValueError, match="backend"):
        qtfq.layers.Expectation(backend=cirq.Simulator())
    with pytest.raises(ValueError, match="no sympy.Symbols"):
        qtfq.layers.PQC(cirq.Circuit(cirq.X(q)), cirq.Z(q))
    with pytest.raises(Exception, match="have no values"):
        qtfq.layers.Expectation()(qtfq.convert_to_tensor([cirq.Circuit(cirq.X(q) ** s)]),
                                  symbol_names=["t"], symbol_values=[[0.1]],
                                  operators=[cirq.Z(q)])
    # A channel runs on the density matrix (exactly), not refused: <Z> = 1 - 4p/3.
    noisy = qtfq.layers.Expectation()(
        qtfq.convert_to_tensor([cirq.Circuit(cirq.depolarize(0.1)(q))]), operators=[cirq.Z(q)])
    assert np.allclose(noisy.numpy(), [[1 - 0.4 / 3]])
    with pytest.raises(Exception, match="has no unitary or decomposition"):
        qtfq.layers.Expectation()(qtfq.convert_to_tensor([cirq.Circuit(
            cirq.MatrixGate(np.eye(2 ** 11)).on(*cirq.LineQubit.range(11)))]),
            operators=[cirq.Z(cirq.LineQubit(0))])
    with pytest.raises(Exception, match=r"symbol_values has shape \[3, 1\]: expected \[2, 1\]"):
        qtfq.layers.Expectation()(qtfq.convert_to_tensor([cirq.Circuit(cirq.X(q) ** s)] * 2),
                                  symbol_names=["s"], symbol_values=[[0.1], [0.2], [0.3]],
                                  operators=[cirq.Z(q)])
    with pytest.raises(ValueError, match="measurements"):
        qtfq.layers.Expectation()(qtfq.convert_to_tensor([cirq.Circuit(cirq.measure(q))]),
                                  operators=[cirq.Z(q)])


@pytest.mark.parametrize("model", ["clean", "noisy"])
def test_two_workers_under_multi_worker_mirrored_strategy(model):
    """Two processes on localhost (TF_CONFIG), each a replica: synchronous
    training leaves both with the same weights, and they train (the weights
    move); also for a NoisyPQC (its density matrices)."""
    import json
    import socket
    import subprocess
    import sys

    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    script = os.path.join(os.path.dirname(__file__), "multi_worker.py")
    procs = []
    for i in range(2):
        env = dict(os.environ, TF_CONFIG=json.dumps({"cluster": cluster,
                                                     "task": {"type": "worker", "index": i}}))
        procs.append(subprocess.Popen([sys.executable, script, model], env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    weights = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        weights.append(np.array(json.loads(out.strip().splitlines()[-1])))
    np.testing.assert_allclose(weights[0], weights[1], atol=1e-6)
    assert np.max(np.abs(weights[0] - 0.1)) > 1e-3


def test_sample_layer_shape_and_distribution():
    q = cirq.GridQubit.rect(1, 3)
    circuits = [cirq.Circuit(cirq.X(q[0]), cirq.H(q[2])), cirq.Circuit(cirq.ry(1.0).on(q[1]))]
    tf.random.set_seed(4)
    ours = qtfq.layers.Sample()(qtfq.convert_to_tensor(circuits), repetitions=4000)
    theirs = tfq.layers.Sample()(tfq.convert_to_tensor(circuits), repetitions=4000)
    assert ours.shape.as_list() == theirs.shape.as_list() == [2, None, None]
    a, b = ours.to_list(), theirs.to_list()
    assert [len(r[0]) for r in a] == [len(r[0]) for r in b] == [2, 1]  # the circuit's own qubits
    first = np.array(a[0])
    assert np.all(first[:, 0] == 1)  # X on the first qubit (most significant, as in TFQ)
    assert abs(first[:, 1].mean() - 0.5) < 5 * 0.5 / np.sqrt(4000)
    p1 = np.sin(0.5) ** 2  # ry(1.0): P(1) = sin^2(1/2)
    assert abs(np.array(a[1]).mean() - p1) < 5 * np.sqrt(p1 * (1 - p1) / 4000)


def test_sampled_expectation_estimates_and_exact_gradient():
    q = cirq.GridQubit.rect(1, 3)
    a = sympy.Symbol("a")
    circuit = cirq.Circuit(cirq.ry(a).on(q[0]), cirq.CNOT(q[0], q[1]), cirq.rx(0.4).on(q[2]),
                           cirq.H(q[2]))
    ops = [cirq.Z(q[0]), cirq.X(q[2]) - 0.5 * cirq.Y(q[2]) * cirq.Z(q[1])]
    values = tf.Variable([[0.7], [2.1]])
    reps = 20000
    with tf.GradientTape() as tape:
        y = qtfq.layers.SampledExpectation()(qtfq.convert_to_tensor([circuit, circuit]),
                                             symbol_names=["a"], symbol_values=values,
                                             operators=ops, repetitions=reps)
        loss = tf.reduce_sum(y * tf.constant([[1.0, 2.0], [-1.0, 0.5]]))
    grad = tape.gradient(loss, values).numpy()
    with tf.GradientTape() as tape:
        exact = qtfq.layers.Expectation()(qtfq.convert_to_tensor([circuit, circuit]),
                                          symbol_names=["a"], symbol_values=values, operators=ops)
        loss = tf.reduce_sum(exact * tf.constant([[1.0, 2.0], [-1.0, 0.5]]))
    np.testing.assert_allclose(y.numpy(), exact.numpy(), atol=5 * 1.5 / np.sqrt(reps))
    np.testing.assert_allclose(grad, tape.gradient(loss, values).numpy(), atol=1e-6)
    # PQC with repetitions samples the same way.
    layer = qtfq.layers.PQC(cirq.Circuit(cirq.ry(a).on(q[0])), cirq.Z(q[0]), repetitions=reps,
                            initializer=tf.keras.initializers.Constant(0.7))
    value = layer(qtfq.convert_to_tensor([cirq.Circuit()])).numpy()
    assert abs(value[0, 0] - np.cos(0.7)) < 5 / np.sqrt(reps)


def test_nonlinear_symbol_expressions_and_their_gradients():
    """Angles that are no multiple of one symbol (s * t, s ** 2) are parameters
    of their own, chained through sympy; multiples of one symbol are read by
    the engine as Param(symbol, factor). Against cirq's values and their
    finite differences in complex128."""
    s, t = sympy.symbols("s t")
    q = cirq.LineQubit.range(2)
    c = cirq.Circuit(cirq.rx(s * t).on(q[0]), cirq.X(q[1]) ** (s ** 2), cirq.CNOT(q[0], q[1]),
                     cirq.ry(3 * t).on(q[1]), cirq.Z(q[0]) ** (0.5 * s + 0.1))
    ops = [cirq.Z(q[0]) * cirq.Z(q[1]) + 0.5 * cirq.X(q[1])]

    def value(v):
        sim = cirq.Simulator(dtype=np.complex128)
        return np.real(sim.simulate_expectation_values(
            c, ops, param_resolver={"s": v[1], "t": v[0]})[0])

    v = np.array([0.7, -0.4])
    x = tf.Variable([v])
    with tf.GradientTape() as tape:
        y = qtfq.layers.Expectation()(qtfq.convert_to_tensor([c]), symbol_names=["t", "s"],
                                      symbol_values=x, operators=ops)
    fd = [(value(v + e * 1e-6) - value(v - e * 1e-6)) / 2e-6 for e in np.eye(2)]
    np.testing.assert_allclose(y.numpy()[0, 0], value(v), atol=1e-6)
    np.testing.assert_allclose(tape.gradient(y, x).numpy()[0], fd, atol=1e-6)


def test_noisy_backend_and_noisy_pqc_are_exact_where_tfq_estimates():
    """TFQ's noise tutorial's layers: NoisyPQC and Expectation(backend='noisy')
    give the exact density-matrix values that TFQ's trajectories estimate
    (checked against cirq.DensityMatrixSimulator, and TFQ within its spread);
    gradients are exact through the noise; sample_based estimates by shots."""
    q = cirq.GridQubit.rect(1, 2)
    a, b = sympy.symbols("a b")
    model = cirq.Circuit(cirq.rx(a).on(q[0]), cirq.CNOT(q[0], q[1]), cirq.ry(b).on(q[1]))
    model = model.with_noise(cirq.depolarize(0.05))
    model.append([cirq.amplitude_damp(0.1).on(q[0]), cirq.bit_flip(0.05).on(q[1])])
    data = cirq.Circuit(cirq.H(q[0]))
    ops = [cirq.Z(q[0]) * cirq.Z(q[1]), cirq.X(q[1])]
    init = tf.keras.initializers.Constant([0.4, 1.1])
    layer = qtfq.layers.NoisyPQC(model, ops, repetitions=100, sample_based=False,
                                 initializer=init)
    inputs = qtfq.convert_to_tensor([data])
    with tf.GradientTape() as tape:
        ours = layer(inputs)
        loss = tf.reduce_sum(ours * tf.constant([[1.0, -0.5]]))
    grad = tape.gradient(loss, layer.trainable_variables)[0].numpy()
    rho = cirq.DensityMatrixSimulator(dtype=np.complex128).simulate(
        cirq.resolve_parameters(data + model, {"a": 0.4, "b": 1.1}), qubit_order=q
    ).final_density_matrix
    index = {qq: i for i, qq in enumerate(q)}
    want = [op.expectation_from_density_matrix(rho, index).real for op in ops]
    np.testing.assert_allclose(ours.numpy()[0], want, atol=1e-6)

    circuit = qtfq.convert_to_tensor([data + model])
    exp = qtfq.layers.Expectation(backend="noisy")
    h = 1e-3
    fd = []
    for k in range(2):
        hi, lo = [0.4, 1.1], [0.4, 1.1]
        hi[k] += h
        lo[k] -= h
        f = [float(tf.reduce_sum(exp(circuit, symbol_names=["a", "b"], symbol_values=[v],
                                     operators=ops, repetitions=10) * tf.constant([[1.0, -0.5]])))
             for v in (hi, lo)]
        fd.append((f[0] - f[1]) / (2 * h))
    np.testing.assert_allclose(grad, fd, atol=1e-3)  # float32 values
    with pytest.raises(RuntimeError, match="repetitions"):
        exp(circuit, symbol_names=["a", "b"], symbol_values=[[0.4, 1.1]], operators=ops)
    with pytest.raises(ValueError, match="sample_based"):
        qtfq.layers.NoisyPQC(model, ops, repetitions=10)
    # TFQ's own trajectories estimate the same values.
    theirs = tfq.layers.NoisyPQC(model, ops, repetitions=4000, sample_based=False,
                                 initializer=init)(tfq.convert_to_tensor([data])).numpy()[0]
    np.testing.assert_allclose(theirs, want, atol=0.06)
    # Sample based: shots of the noisy circuit.
    sampled = qtfq.layers.NoisyPQC(model, ops, repetitions=20000, sample_based=True,
                                   initializer=init)(inputs).numpy()[0]
    np.testing.assert_allclose(sampled, want, atol=5 / np.sqrt(20000))
    # tfq.noise's ops: the same exact values, and shots of the noisy circuit.
    full = qtfq.convert_to_tensor([data + model])
    names = tf.constant(["a", "b"])
    values = tf.constant([[0.4, 1.1]])
    pauli = qtfq.convert_to_tensor([ops])
    np.testing.assert_allclose(
        qtfq.noise.expectation(full, names, values, pauli, tf.constant([[10, 10]])).numpy()[0],
        want, atol=1e-6)
    shots = qtfq.noise.samples(full, names, values, 20000).to_list()[0]
    parity = np.mean([(-1) ** (s[0] + s[1]) for s in shots])
    assert abs(parity - want[0]) < 5 / np.sqrt(20000)


def test_noisy_pqc_runs_trajectories_where_they_cost_less_than_the_density_matrix():
    """12 qubits, repetitions=100: 100 state vectors cost less than one
    density matrix, so NoisyPQC estimates from 100 trajectories as TFQ does:
    values and gradients within their statistical error of the exact ones,
    the same for the same TensorFlow seed; a damping channel's gradient (which
    trajectories do not give) is the exact one. 20000 repetitions: exact."""
    q = cirq.GridQubit.rect(1, 12)
    syms = sympy.symbols("a0:12")
    body = [cirq.ry(s).on(b) for s, b in zip(syms, q)] + [cirq.CZ(x, y) for x, y in zip(q, q[1:])]
    ops = [sum(cirq.Z(b) for b in q)]
    init = tf.keras.initializers.Constant(0.3)
    inputs = qtfq.convert_to_tensor([cirq.Circuit(cirq.X(q[0]))])

    def value_and_grad(model, repetitions):
        layer = qtfq.layers.NoisyPQC(model, ops, repetitions=repetitions, sample_based=False,
                                     initializer=init)
        with tf.GradientTape() as tape:
            y = layer(inputs)
            loss = tf.reduce_sum(y)
        return y.numpy()[0, 0], tape.gradient(loss, layer.trainable_variables)[0].numpy()

    for noise in (cirq.depolarize(0.02), cirq.amplitude_damp(0.05)):
        model = cirq.Circuit(body).with_noise(noise)
        exact, exact_grad = value_and_grad(model, 20000)
        tf.random.set_seed(3)
        value, grad = value_and_grad(model, 100)
        tf.random.set_seed(3)
        again, _ = value_and_grad(model, 100)
        assert value == again and value != exact
        assert abs(value - exact) < 5 * 12 / np.sqrt(100)
        if noise == cirq.depolarize(0.02):  # a Pauli mixture: the trajectories' own gradient
            assert np.max(np.abs(grad - exact_grad)) < 5 * 2 / np.sqrt(100)
            assert np.max(np.abs(grad - exact_grad)) > 0
        else:
            np.testing.assert_allclose(grad, exact_grad, atol=1e-5)


def test_hello_many_worlds_broadcasts_one_circuit_over_a_batch():
    """TFQ's first tutorial (hello_many_worlds, section 2): one circuit and one
    operator (or a list of them) over five rows of symbol values, values and
    gradients as TFQ gives them; State and Sample broadcast the same way."""
    a, b = sympy.symbols("a b")
    q0, q1 = cirq.GridQubit.rect(1, 2)
    circuit = cirq.Circuit(cirq.rx(a).on(q0), cirq.ry(b).on(q1), cirq.CNOT(q0, q1))
    z0, x1 = cirq.Z(q0), cirq.X(q1)
    batch_vals = np.array(np.random.default_rng(3).uniform(0, 2 * np.pi, (5, 2)),
                          dtype=np.float32)
    for ops in (z0, [z0, 0.5 * x1 + z0]):
        ours = qtfq.layers.Expectation()(circuit, symbol_names=[a, b],
                                         symbol_values=batch_vals, operators=ops)
        theirs = tfq.layers.Expectation()(circuit, symbol_names=[a, b],
                                          symbol_values=batch_vals, operators=ops)
        assert ours.shape == theirs.shape
        assert np.allclose(ours.numpy(), theirs.numpy(), atol=1e-5)
    values = tf.Variable(batch_vals)
    grads = []
    for layer in (qtfq.layers.Expectation(), tfq.layers.Expectation()):
        with tf.GradientTape() as tape:
            out = layer(circuit, symbol_names=[a, b], symbol_values=values,
                        operators=[z0, x1])
        grads.append(tape.gradient(out, values).numpy())
    assert np.allclose(grads[0], grads[1], atol=1e-3)  # TFQ's adjoint runs in float32
    states = qtfq.layers.State()(circuit, symbol_names=[a, b], symbol_values=batch_vals)
    assert states.shape[0] == 5
    want = tfq.layers.State()(circuit, symbol_names=[a, b], symbol_values=batch_vals)
    assert np.allclose(states.to_tensor().numpy(), want.to_tensor().numpy(), atol=1e-5)
    samples = qtfq.layers.Sample()(circuit, symbol_names=[a, b], symbol_values=batch_vals,
                                   repetitions=4)
    assert samples.to_tensor().shape == (5, 4, 2)


def test_gradients_tutorial_differentiators_as_tfq():
    """TFQ's gradients tutorial, cell by cell, against TFQ 0.7.6."""
    qubit = cirq.GridQubit(0, 0)
    my_circuit = cirq.Circuit(cirq.Y(qubit) ** sympy.Symbol("alpha"))
    pauli_x = cirq.X(qubit)
    values = tf.convert_to_tensor(np.linspace(0, 5, 7).reshape(7, 1).astype(np.float32))

    def grad_of(module, differentiator, sampled=False):
        if sampled:
            layer = module.layers.SampledExpectation(differentiator=differentiator)
        else:
            layer = module.layers.Expectation(differentiator=differentiator)
        with tf.GradientTape() as g:
            g.watch(values)
            kw = {"repetitions": 20000} if sampled else {}
            out = layer(my_circuit, operators=pauli_x, symbol_names=["alpha"],
                        symbol_values=values, **kw)
        return out.numpy(), g.gradient(out, values).numpy()

    exact = -np.pi * np.sin(np.pi * values.numpy())  # d/da <Y^a|X|Y^a> = d/da sin(pi a)...
    for make in (lambda m: m.differentiators.ForwardDifference(grid_spacing=0.01),
                 lambda m: m.differentiators.CentralDifference(error_order=4, grid_spacing=0.01),
                 lambda m: m.differentiators.ParameterShift(),
                 lambda m: m.differentiators.Adjoint(),
                 lambda m: m.differentiators.LinearCombination([50, -50], [0.01, -0.01])):
        ours, theirs = grad_of(qtfq, make(qtfq)), grad_of(tfq, make(tfq))
        assert np.allclose(ours[0], theirs[0], atol=1e-5)
        assert np.allclose(ours[1], theirs[1], atol=2e-3), (make, ours[1], theirs[1])
    assert np.allclose(grad_of(qtfq, qtfq.differentiators.Adjoint())[1],
                       np.pi * np.cos(np.pi * values.numpy()), atol=1e-5)
    del exact
    # sampled: ParameterShift is the exact gradient of the expectation value
    _, sampled = grad_of(qtfq, qtfq.differentiators.ParameterShift(), sampled=True)
    assert np.allclose(sampled, np.pi * np.cos(np.pi * values.numpy()), atol=1e-5)
    with pytest.raises(ValueError, match="Adjoint"):
        qtfq.layers.SampledExpectation(differentiator=qtfq.differentiators.Adjoint())
    # stencils as TFQ's
    for ours, theirs in ((qtfq.differentiators.ForwardDifference(3, 0.02),
                          tfq.differentiators.ForwardDifference(3, 0.02)),
                         (qtfq.differentiators.CentralDifference(4, 0.02),
                          tfq.differentiators.CentralDifference(4, 0.02))):
        a = sorted(zip(ours.perturbations.numpy(), ours.weights.numpy()))
        b = sorted(zip(theirs.perturbations.numpy(), theirs.weights.numpy()))
        assert np.allclose(a, b, rtol=1e-5)

    # generate_differentiable_op, once per differentiator until refresh()
    diff = qtfq.differentiators.ForwardDifference(2, 0.01)
    op = diff.generate_differentiable_op(analytic_op=qtfq.get_expectation_op())
    with pytest.raises(TypeError, match="refresh"):
        diff.generate_differentiable_op(analytic_op=qtfq.get_expectation_op())
    circuit = qtfq.convert_to_tensor([cirq.Circuit(cirq.X(qubit) ** sympy.Symbol("alpha"))])
    psums = qtfq.convert_to_tensor([[cirq.Z(qubit)]])
    v = tf.convert_to_tensor([[0.123]], dtype=tf.float32)
    with tf.GradientTape() as g:
        g.watch(v)
        e = op(circuit, ["alpha"], v, psums)
    assert np.isclose(g.gradient(e, v).numpy()[0, 0], -1.184372, atol=2e-3)  # TFQ's docstring

    # get_gradient_circuits, used by hand as TFQ's docstring shows
    programs = qtfq.convert_to_tensor([my_circuit] * 7)
    ops = qtfq.convert_to_tensor([[pauli_x]] * 7)
    bp, names, bv, bw, bm = qtfq.differentiators.CentralDifference(2, 0.01) \
        .get_gradient_circuits(programs, tf.constant(["alpha"]), values)
    theirs = tfq.differentiators.CentralDifference(2, 0.01)  # held: TFQ's tf.function needs it
    tp = theirs.get_gradient_circuits(tfq.convert_to_tensor([my_circuit] * 7),
                                      tf.constant(["alpha"]), values)
    assert bp.shape == tp[0].shape and bv.shape == tp[2].shape and bw.shape == tp[3].shape
    n = int(tf.size(bp))
    exps = qtfq.layers.Expectation()(tf.reshape(bp, [n]), symbol_names=names,
                                     symbol_values=tf.reshape(bv, [n, 1]),
                                     operators=tf.reshape(tf.tile(ops[:, None, :],
                                                                  [1, bp.shape[1], 1]), [n, 1]))
    exps = tf.reshape(exps, [7, bp.shape[1], 1])
    manual = tf.einsum("bsk,bsko->bso", bw, tf.gather(exps, bm, batch_dims=1))[..., 0]
    assert np.allclose(manual.numpy(), np.pi * np.cos(np.pi * values.numpy()), atol=2e-3)


def test_gradients_tutorial_custom_differentiator_and_noisy_sampled_op():
    """The tutorial's own differentiator for <Y^a|X|Y^a>, in a layer and on
    a noisy sampled op built from a Cirq simulator with a noise model."""

    def make(module):
        class MyDifferentiator(module.differentiators.Differentiator):
            def __init__(self):
                pass

            def get_gradient_circuits(self):
                raise NotImplementedError()

            @tf.function
            def _compute_gradient(self, symbol_values):
                return tf.cast(-np.pi * tf.sin(np.pi * symbol_values), tf.float32)

            @tf.function
            def differentiate_analytic(self, programs, symbol_names, symbol_values,
                                       pauli_sums, forward_pass_vals, grad):
                return self._compute_gradient(symbol_values) * grad

            @tf.function
            def differentiate_sampled(self, programs, symbol_names, symbol_values,
                                      pauli_sums, num_samples, forward_pass_vals, grad):
                return self._compute_gradient(symbol_values) * grad

        return MyDifferentiator()

    qubit = cirq.GridQubit(0, 0)
    my_circuit = cirq.Circuit(cirq.Y(qubit) ** sympy.Symbol("alpha"))
    values = tf.convert_to_tensor(np.linspace(0, 5, 9).reshape(9, 1).astype(np.float32))
    results = []
    for module in (qtfq, tfq):
        layer = module.layers.Expectation(differentiator=make(module))
        with tf.GradientTape() as g:
            g.watch(values)
            out = layer(my_circuit, operators=cirq.X(qubit), symbol_names=["alpha"],
                        symbol_values=values)
        results.append(g.gradient(out, values).numpy())
    assert np.allclose(results[0], results[1], atol=1e-6)

    custom = make(qtfq)
    op = custom.generate_differentiable_op(sampled_op=qtfq.get_sampled_expectation_op(
        cirq.DensityMatrixSimulator(noise=cirq.depolarize(0.01))))
    v = tf.convert_to_tensor([[0.3]])
    with tf.GradientTape() as g:
        g.watch(v)
        out = op(qtfq.convert_to_tensor([my_circuit]), ["alpha"], v,
                 qtfq.convert_to_tensor([[cirq.X(qubit)]]), tf.convert_to_tensor([[5000]]))
    assert np.isclose(g.gradient(out, v).numpy()[0, 0], -np.pi * np.sin(0.3 * np.pi), atol=1e-5)
    # the noise model is applied: <X> shrinks by (1 - 4p/3), within the shots' error
    assert abs(out.numpy()[0, 0] - (1 - 0.04 / 3) * np.sin(0.3 * np.pi)) < 0.05
    exact_noisy = qtfq.get_expectation_op(cirq.DensityMatrixSimulator(
        noise=cirq.depolarize(0.01)))(qtfq.convert_to_tensor([my_circuit]), ["alpha"], v,
                                       qtfq.convert_to_tensor([[cirq.X(qubit)]]))
    assert np.isclose(exact_noisy.numpy()[0, 0], (1 - 0.04 / 3) * np.sin(0.3 * np.pi), atol=1e-6)
