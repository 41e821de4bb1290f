"""Noisy OpenQASM 3 programs with Braket's noise pragmas: qmlsim's density
matrix against Braket's own (amazon-braket-default-simulator's
DensityMatrixSimulator, the local braket_dm) on random circuits, every channel
of the pragma set included."""
import numpy as np
import pytest

import qmlsim

braket = pytest.importorskip("braket.default_simulator")
from braket.ir.openqasm import Program  # noqa: E402

# (qmlsim's stdgates name, Braket's name, number of angles, qubits)
GATES = [("h", "h", 0, 1), ("x", "x", 0, 1), ("s", "s", 0, 1), ("t", "t", 0, 1),
         ("rx", "rx", 1, 1), ("ry", "ry", 1, 1), ("rz", "rz", 1, 1), ("cx", "cnot", 0, 2),
         ("cz", "cz", 0, 2), ("swap", "swap", 0, 2)]


def random_kraus(rng, qubits):
    """A trace-preserving pair sqrt(1-q) U, sqrt(q) V for random unitaries U, V."""
    d = 2 ** qubits
    q = rng.uniform(0, 1)
    out = []
    for w in (1 - q, q):
        u, _ = np.linalg.qr(rng.normal(size=(d, d)) + 1j * rng.normal(size=(d, d)))
        out.append(np.sqrt(w) * u)
    return out


def matrix_text(m):
    def num(z):
        return f"{float(z.real)!r}{float(z.imag):+.17g}im"
    return "[" + ", ".join("[" + ", ".join(num(z) for z in row) + "]" for row in m) + "]"


def random_noise(rng, n):
    kind = rng.integers(0, 11)
    a, b = (int(x) for x in rng.choice(n, size=2, replace=False)) if n > 1 else (0, 0)
    p = rng.uniform(0, 1)
    one = {0: f"depolarizing({p * 0.75})", 1: f"bit_flip({p * 0.5})", 2: f"phase_flip({p * 0.5})",
           3: "pauli_channel({}, {}, {})".format(*(rng.dirichlet([1, 1, 1, 1])[:3])),
           4: f"amplitude_damping({p})", 5: f"generalized_amplitude_damping({p}, {rng.uniform()})",
           6: f"phase_damping({p})", 7: "kraus(" + ", ".join(map(matrix_text, random_kraus(rng, 1))) + ")"}
    if kind in one or n == 1:
        return f"#pragma braket noise {one.get(kind, one[0])} q[{a}]"
    two = {8: f"two_qubit_depolarizing({p * 15 / 16})", 9: f"two_qubit_dephasing({p * 0.75})",
           10: "kraus(" + ", ".join(map(matrix_text, random_kraus(rng, 2))) + ")"}
    return f"#pragma braket noise {two[kind]} q[{a}], q[{b}]"


def random_program(rng, n, depth):
    ours, theirs = [], []
    for _ in range(depth):
        name, bname, angles, k = GATES[rng.integers(0, len(GATES))]
        if k > n:
            continue
        qs = [int(x) for x in rng.choice(n, size=k, replace=False)]
        args = "(" + ", ".join(repr(float(x)) for x in rng.uniform(-3, 3, angles)) + ")" if angles else ""
        targets = ", ".join(f"q[{q}]" for q in qs)
        ours.append(f"{name}{args} {targets};")
        theirs.append(f"{bname}{args} {targets};")
        if rng.uniform() < 0.5:
            line = random_noise(rng, n)
            ours.append(line)
            theirs.append(line)
    head = f"OPENQASM 3.0;\nqubit[{n}] q;\n"
    return (head.replace("\n", '\ninclude "stdgates.inc";\n', 1) + "\n".join(ours) + "\n",
            head + "\n".join(theirs) + "\n")


def pauli_words(rng, n, count):
    words = []
    for _ in range(count):
        factors = [(q, "XYZ"[rng.integers(0, 3)]) for q in range(n) if rng.uniform() < 0.6]
        words.append(factors or [(0, "Z")])
    return words


@pytest.mark.parametrize("seed", range(12))
def test_density_matrix_equals_braket_dm(seed):
    rng = np.random.default_rng(seed)
    n = 1 + seed % 4
    ours, theirs = random_program(rng, n, 14)
    words = pauli_words(rng, n, 4)
    results = "".join("#pragma braket result expectation "
                      + " @ ".join(f"{p.lower()}(q[{q}])" for q, p in w) + "\n" for w in words)
    want = [r.value for r in braket.DensityMatrixSimulator().run(
        Program(source=theirs + results), shots=0).resultTypes]
    got = qmlsim.expval_qasm(ours, ["*".join(f"{p}{q}" for q, p in w) for w in words])
    np.testing.assert_allclose(got, want, atol=1e-10)
