"""OpenQASM 2 dynamic circuits (mid-circuit measurement, reset, ``if``) through
``qmlsim run``, against Qiskit Aer: qmlsim's exact register probabilities
(its branch walk, no shots) explain Aer's counts and qmlsim's own sampled
counts by a chi-square test, on textbook circuits (teleportation, active
reset, qubit reuse, repeat-until-success) and random ones. Seeds are fixed,
so the tests are deterministic.
"""
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

qiskit = pytest.importorskip("qiskit")
qiskit_aer = pytest.importorskip("qiskit_aer")
scipy_stats = pytest.importorskip("scipy.stats")
from qiskit import qasm2  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
QMLSIM = Path(os.environ.get("QMLSIM_BIN", ROOT / "build" / "release" / "qmlsim"))
SHOTS = 20000
HEADER = 'OPENQASM 2.0;\ninclude "qelib1.inc";\n'

TEXTBOOK = {
    "teleportation": """qreg q[3]; creg c0[1]; creg c1[1]; creg c2[1];
ry(0.7) q[0]; rz(0.3) q[0]; h q[1]; cx q[1],q[2]; cx q[0],q[1]; h q[0];
measure q[0] -> c0[0]; measure q[1] -> c1[0];
if(c1==1) x q[2]; if(c0==1) z q[2];
rz(-0.3) q[2]; ry(-0.7) q[2]; measure q[2] -> c2[0];""",
    "active_reset": """qreg q[2]; creg m[1]; creg out[2];
h q[0]; cx q[0],q[1]; measure q[0] -> m[0]; if(m==1) x q[0];
ry(0.4) q[0]; measure q[0] -> out[0]; measure q[1] -> out[1];""",
    "qubit_reuse": """qreg q[2]; creg c[4];
h q[0]; cx q[0],q[1]; measure q[1] -> c[0]; reset q[1];
ry(1.1) q[1]; cx q[1],q[0]; measure q[1] -> c[1]; reset q[1];
h q[1]; measure q[1] -> c[2]; measure q[0] -> c[3];""",
    "repeat_until_success": """qreg q[2]; creg flag[1]; creg out[1];
h q[0]; t q[0]; cx q[0],q[1]; h q[0]; measure q[0] -> flag[0];
if(flag==1) reset q[0];
if(flag==1) h q[0];
if(flag==1) t q[0];
if(flag==1) cx q[0],q[1];
if(flag==1) h q[0];
if(flag==1) measure q[0] -> out[0];
measure q[1] -> out[0];""",
}


def qmlsim_run(text: str, tmp_path: Path, *flags) -> dict:
    if not QMLSIM.exists():
        pytest.skip(f"{QMLSIM} is not built (./scripts/build.sh release)")
    path = tmp_path / "c.qasm"
    path.write_text(text)
    out = subprocess.run([str(QMLSIM), "run", str(path), "--json", *flags], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def aer_counts(text: str, seed: int) -> dict:
    qc = qasm2.loads(text, custom_instructions=qasm2.LEGACY_CUSTOM_INSTRUCTIONS)
    sim = qiskit_aer.AerSimulator()
    return sim.run(qc, shots=SHOTS, seed_simulator=seed).result().get_counts()


def chi_square_p(counts: dict, probabilities: dict) -> float:
    """P-value of counts under probabilities (outcomes of probability < 1e-12 must not occur)."""
    for key in counts:
        assert probabilities.get(key, 0.0) > 1e-12, f"outcome {key!r} is impossible"
    keys = [k for k, p in probabilities.items() if p > 1e-12]
    observed = np.array([counts.get(k, 0) for k in keys], dtype=float)
    expected = np.array([probabilities[k] for k in keys]) * observed.sum()
    if len(keys) == 1:
        return 1.0
    return float(scipy_stats.chisquare(observed, expected).pvalue)


def check(text: str, tmp_path: Path, seed: int):
    exact = qmlsim_run(text, tmp_path, "--observable", "Z0")
    probabilities = exact["register_probabilities"]
    assert abs(sum(probabilities.values()) - 1) < 1e-12
    sampled = qmlsim_run(text, tmp_path, "--shots", str(SHOTS), "--seed", str(seed))
    assert sum(sampled["counts"].values()) == SHOTS
    assert chi_square_p(sampled["counts"], probabilities) > 1e-4
    assert chi_square_p(aer_counts(text, seed), probabilities) > 1e-4


@pytest.mark.parametrize("name", sorted(TEXTBOOK))
def test_textbook_circuits_agree_with_aer(name, tmp_path):
    check(HEADER + TEXTBOOK[name], tmp_path, seed=3)


def test_teleportation_moves_the_state(tmp_path):
    # The final rotation undoes the prepared state: q[2] always reads 0.
    probabilities = qmlsim_run(HEADER + TEXTBOOK["teleportation"], tmp_path, "--observable",
                               "Z2")["register_probabilities"]
    assert sum(p for k, p in probabilities.items() if k.startswith("1")) < 1e-12


def random_dynamic(rng, n: int, length: int) -> str:
    # Conditions read measured bits only (one never written is refused), so
    # both registers are written first.
    lines = [f"qreg q[{n}];", "creg a[2];", "creg b[1];", "ry(1.3) q[0];",
             "measure q[0] -> a[1];", "measure q[0] -> b[0];"]
    bits = ["a[0]", "a[1]", "b[0]"]
    for _ in range(length):
        kind = rng.integers(6)
        q = int(rng.integers(n))
        if kind == 0:
            lines.append(f"measure q[{q}] -> {bits[rng.integers(3)]};")
        elif kind == 1:
            lines.append(f"reset q[{q}];")
        else:
            if n > 1 and rng.random() < 0.4:
                r = int((q + 1 + rng.integers(n - 1)) % n)
                gate = f"{['cx', 'cz', 'cu1(0.8)'][rng.integers(3)]} q[{q}],q[{r}];"
            else:
                a, b, c = rng.uniform(-np.pi, np.pi, 3)
                gate = [f"h q[{q}];", f"x q[{q}];", f"ry({a:.6f}) q[{q}];",
                        f"u3({a:.6f},{b:.6f},{c:.6f}) q[{q}];"][rng.integers(4)]
            if rng.random() < 0.5:
                reg, size = [("a", 2), ("b", 1)][rng.integers(2)]
                gate = f"if({reg}=={rng.integers(1 << size)}) {gate}"
            lines.append(gate)
    lines.append("measure q[0] -> a[0];")
    return HEADER + "\n".join(lines) + "\n"


@pytest.mark.parametrize("trial", range(6))
def test_random_dynamic_circuits_agree_with_aer(trial, tmp_path):
    rng = np.random.default_rng(100 + trial)
    text = random_dynamic(rng, n=1 + trial % 3, length=14)
    check(text, tmp_path, seed=10 + trial)
