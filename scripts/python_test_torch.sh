#!/usr/bin/env bash
# The torch-dependent checks of the Python package, kept out of the test command
# because torch from PyPI is about 3 GB with its CUDA libraries: PennyLane's
# device test suite with torch installed (its torch gradient tests then run),
# the package's tests (one checks that torch and the engine share one OpenMP
# runtime), the Sonar comparison with lightning.qubit through TorchLayer, and the
# Qiskit EstimatorQNN + TorchConnector example (two epochs).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/python-venv-torch
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r python/requirements-test.txt \
  torch==2.9.1 pennylane-lightning==0.45.0 networkx==3.6.1
"$venv/bin/pip" install --quiet --disable-pip-version-check .
(cd build && "../$venv/bin/python" -m pytest -q -p no:cacheprovider ../python/tests)
for shots in None 10000; do
  (cd build && PATH="$PWD/../$venv/bin:$PATH" "../$venv/bin/pl-device-test" --device qmlsim.qubit \
    --skip-ops --shots=$shots -q --no-header --disable-warnings -p no:cacheprovider)
done
"$venv/bin/python" bench/peers/pennylane_devices.py --nodes "" --sonar 16,20 --rows 8 --reps 3
"$venv/bin/python" examples/qiskit/estimator_qnn_classifier.py --epochs 2
