#!/usr/bin/env bash
# The Python package and the PennyLane device, as a user installs them:
#  1. `pip install .` into a fresh virtual environment (build/python-venv), with
#     the pinned test requirements; the package's own tests (python/tests, the
#     Qiskit ones included), the SDKs' tutorials of bench/tutorials (agreement
#     with each tutorial's own simulator) and the Qiskit QAOA example;
#     PennyLane's device test suite, analytic and with 10,000 shots (the counts
#     are in docs/python.md);
#  2. `pip wheel .`, and that wheel installed into a second fresh environment
#     with nothing else, where it must import and compute.
# Needs PyPI (the build backend and PennyLane) and Debian's python3-venv.
set -euo pipefail
cd "$(dirname "$0")/.."
py=/usr/bin/python3
venv=build/python-venv
rm -rf "$venv" build/python-wheel build/python-venv-wheel
$py -m venv "$venv"
pip_q=(--quiet --disable-pip-version-check)
"$venv/bin/pip" install "${pip_q[@]}" -r python/requirements-test.txt
echo "== python: pip install ."
"$venv/bin/pip" install "${pip_q[@]}" .
echo "== python: package tests"
(cd build && "../$venv/bin/python" -m pytest -q -p no:cacheprovider ../python/tests)
echo "== python: the SDKs' own tutorials through the doors, against their simulators (agreement)"
"$venv/bin/python" bench/tutorials/run.py --only pennylane,cirq,qiskit --reps 0 --strict
echo "== python: the Qiskit QAOA example (qmlsim.qiskit, one step)"
"$venv/bin/python" examples/qiskit/qaoa_maxcut.py --graph examples/data/graphs/gnm_n18_m24_seed1967.edges --steps 1
for device in qmlsim.qubit qmlsim.mixed; do
  for shots in None 10000; do
    echo "== python: PennyLane device tests ($device, shots=$shots)"
    # pl-device-test runs pytest from PATH: the environment's.
    (cd build && PATH="$PWD/../$venv/bin:$PATH" "../$venv/bin/pl-device-test" --device $device \
      --skip-ops --shots=$shots -q --no-header --disable-warnings -p no:cacheprovider)
  done
done
echo "== python: pip wheel . into a second fresh environment"
"$venv/bin/pip" wheel "${pip_q[@]}" --no-deps -w build/python-wheel .
$py -m venv build/python-venv-wheel
build/python-venv-wheel/bin/pip install "${pip_q[@]}" build/python-wheel/qmlsim-*.whl
(cd build && ./python-venv-wheel/bin/python -c '
import qmlsim
c = qmlsim.Circuit(2).add("H", [0]).add("CNOT", [0, 1])
assert abs(qmlsim.expval(c, "Z0 Z1")[0] - 1) < 1e-12
print("wheel:", qmlsim.__file__, "works")')
