#!/usr/bin/env python3
"""Cross-check of the OpenQASM 3 reader against Qiskit.

Builds a circuit with Parameters and a ParameterVector (nonlinear parameter
expressions, a non-ASCII name, gates Qiskit writes as its own definitions),
writes it with qiskit.qasm3.dumps to examples/circuits/qiskit_params.qasm, and
prints <H> and dH/d(parameter) from Qiskit's Statevector (fourth-order central
differences, h = 1e-3: error about 1e-12). The numbers are the reference of
Cli.RunsQiskitOpenQasm3WithInputs in src/cli/cli_test.cc.

  python3 -m venv /tmp/qk && /tmp/qk/bin/pip install qiskit==2.2.3
  /tmp/qk/bin/python scripts/crosscheck/qasm3_qiskit.py
"""
import os

import numpy as np
from qiskit import QuantumCircuit, qasm3
from qiskit.circuit import Parameter, ParameterVector
from qiskit.quantum_info import SparsePauliOp, Statevector

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    theta, beta, w = Parameter("theta"), Parameter("β"), ParameterVector("w", 4)
    qc = QuantumCircuit(3)
    qc.h(range(3))
    qc.rx(theta, 0)
    qc.ry(w[0] * w[1] + 0.5, 1)
    qc.rz(2 * beta, 2)
    qc.cx(0, 1)
    qc.crz(w[2], 1, 2)
    qc.rzz(theta - w[3], 0, 2)
    qc.u(w[0], beta, 0.3, 1)
    qc.cp(w[1] ** 2, 2, 0)
    qc.ryy(beta, 0, 1)
    qc.sx(2)
    qc.sdg(0)
    qc.ch(0, 2)
    qc.swap(1, 2)
    qc.measure_all()
    with open(os.path.join(ROOT, "examples", "circuits", "qiskit_params.qasm"), "w") as f:
        f.write(qasm3.dumps(qc))
    # qmlsim's "0.5*Z0*Z1 - X2 + 0.3*Y1" (Qiskit's labels put qubit 0 rightmost)
    obs = SparsePauliOp.from_list([("IZZ", 0.5), ("XII", -1.0), ("IYI", 0.3)])
    bare = qc.remove_final_measurements(inplace=False)
    values = {theta: 0.3, beta: -0.7, w[0]: 0.1, w[1]: 0.2, w[2]: -0.5, w[3]: 0.9}

    def ev(v):
        return float(np.real(Statevector(bare.assign_parameters(v)).expectation_value(obs)))

    print("expval", repr(ev(values)))
    h = 1e-3
    for p in [theta, beta] + list(w):
        def at(d):
            shifted = dict(values)
            shifted[p] += d
            return ev(shifted)
        grad = (-at(2 * h) + 8 * at(h) - 8 * at(-h) + at(-2 * h)) / (12 * h)
        print("grad", p.name, repr(grad))


if __name__ == "__main__":
    main()
