"""OpenQASM 3 as Qiskit writes it: random circuits over Qiskit's whole standard
gate library (GlobalPhaseGate and parameter expressions included), as built and
transpiled, exported with ``qiskit.qasm3.dumps`` and read by qmlsim. Final
states agree with Qiskit's ``Statevector`` to 1e-12, phases included.

Qiskit's exporter (2.6) writes no trace of two kinds of phase: the circuit's
own ``global_phase`` (which transpiling sets), and the global phase of each
definition it writes out as a ``gate`` (``sxdg``, ``ecr``, ``ryy``, ...). The
reference state is corrected by exactly that, computed from the circuit, so
every phase the file does carry (``global_phase`` gates, ``gphase``) is checked.
"""
import numpy as np
import pytest

import qmlsim

qiskit = pytest.importorskip("qiskit")
from qiskit import QuantumCircuit, qasm3, transpile  # noqa: E402
from qiskit.circuit import Parameter  # noqa: E402
from qiskit.circuit.library import get_standard_gate_name_mapping  # noqa: E402
from qiskit.quantum_info import Statevector  # noqa: E402

# The gates Qiskit's exporter writes as stdgates.inc names (no definition in the file).
STDGATES = {"p", "x", "y", "z", "h", "s", "sdg", "t", "tdg", "sx", "rx", "ry", "rz", "cx", "cy",
            "cz", "cp", "crx", "cry", "crz", "ch", "swap", "ccx", "cswap", "cu", "id", "u1", "u2",
            "u3", "u", "global_phase"}
GATES = {name: gate for name, gate in get_standard_gate_name_mapping().items()
         if name not in ("delay", "measure", "reset")}


def dropped_phase(op) -> float:
    """The phase the exporter loses on `op`: its definition's, recursively."""
    if op.name in STDGATES or op.definition is None:
        return 0.0
    d = op.definition
    return float(d.global_phase) + sum(dropped_phase(i.operation) for i in d.data)


def reference(qc: QuantumCircuit) -> np.ndarray:
    lost = float(qc.global_phase) + sum(dropped_phase(i.operation) for i in qc.data)
    return Statevector(qc).data * np.exp(-1j * lost)


def random_circuit(rng, n: int, depth: int, params=()) -> QuantumCircuit:
    qc = QuantumCircuit(n)
    names = sorted(GATES)
    for _ in range(depth):
        proto = GATES[names[rng.integers(len(names))]]
        if proto.num_qubits > n:
            continue
        values = []
        for _ in proto.params:
            v = float(rng.uniform(-np.pi, np.pi))
            if params and rng.random() < 0.5:  # an expression of the circuit's parameters
                a, b = params[rng.integers(len(params))], params[rng.integers(len(params))]
                v = [a, 2 * a + v, a * b - v, a.sin() + b][rng.integers(4)]
            values.append(v)
        gate = type(proto)(*values) if proto.params else proto
        qubits = [int(q) for q in rng.permutation(n)[:gate.num_qubits]]
        qc.append(gate, qubits)
    return qc


def assert_same_state(got: np.ndarray, want: np.ndarray, text: str):
    assert got.shape == want.shape
    err = np.abs(got - want).max()
    assert err < 1e-12, f"max |difference| {err:.2e} for\n{text}"


@pytest.mark.parametrize("seed", range(12))
def test_exported_random_circuits_over_the_standard_library(seed):
    rng = np.random.default_rng(seed)
    qc = random_circuit(rng, n=5, depth=60)
    text = qasm3.dumps(qc)
    assert_same_state(qmlsim.state_qasm(text), reference(qc), text)


@pytest.mark.parametrize("seed", range(6))
def test_exported_transpiled_circuits(seed):
    rng = np.random.default_rng(100 + seed)
    qc = random_circuit(rng, n=4, depth=30)
    for basis in (["rz", "sx", "x", "cx"], ["u", "cz"], ["rx", "ry", "rz", "ecr"]):
        t = transpile(qc, basis_gates=basis, optimization_level=1, seed_transpiler=seed)
        text = qasm3.dumps(t)
        assert_same_state(qmlsim.state_qasm(text), reference(t), text)


@pytest.mark.parametrize("seed", range(6))
def test_exported_parameterised_circuits_bind_their_inputs(seed):
    rng = np.random.default_rng(200 + seed)
    alpha, beta = Parameter("alpha"), Parameter("beta")
    qc = random_circuit(rng, n=4, depth=40, params=(alpha, beta))
    qc.global_phase = 0  # (an expression of parameters here would be dropped by the exporter)
    values = {"alpha": float(rng.uniform(-2, 2)), "beta": float(rng.uniform(-2, 2))}
    bound = qc.assign_parameters({p: values[p.name] for p in qc.parameters})
    text = qasm3.dumps(qc)
    inputs = {name: v for name, v in values.items() if f"input float[64] {name};" in text}
    assert_same_state(qmlsim.state_qasm(text, inputs), reference(bound), text)


def test_global_phase_gates_are_applied_exactly():
    qc = QuantumCircuit(2)
    qc.h(0)
    qc.append(qiskit.circuit.library.GlobalPhaseGate(0.7), [])
    qc.cx(0, 1)
    qc.append(qiskit.circuit.library.GlobalPhaseGate(-0.2), [])
    text = qasm3.dumps(qc)
    assert "gate global_phase" in text
    got = qmlsim.state_qasm(text)
    want = np.exp(0.5j) * np.array([1, 0, 0, 1]) / np.sqrt(2)
    assert np.abs(got - want).max() < 1e-15
    # The same file without its version line is read the same way.
    body = text.replace("OPENQASM 3.0;\n", "")
    assert np.abs(qmlsim.state_qasm(body) - want).max() < 1e-15


def test_state_qasm_reports_bad_inputs():
    text = "include \"stdgates.inc\";\ninput float x;\nqubit q;\nrx(x) q;\n"
    with pytest.raises(Exception, match="input 'x' needs a value"):
        qmlsim.state_qasm(text)
    with pytest.raises(Exception, match="declares no input 'y'"):
        qmlsim.state_qasm(text, {"x": 1.0, "y": 2.0})
    with pytest.raises(Exception, match="takes 1 value"):
        qmlsim.state_qasm(text, {"x": [1.0, 2.0]})
    with pytest.raises(Exception, match=r"<qasm>:4:1: unknown gate"):
        qmlsim.state_qasm("include \"stdgates.inc\";\nqubit q;\nh q;\nfoo q;\n")
