#!/usr/bin/env bash
# The TensorFlow-dependent checks of the Python package, kept out of the test
# command because TensorFlow from PyPI is about 1.5 GB with its dependencies:
# qmlsim.tfq against TensorFlow Quantum 0.7.6 (which pins TensorFlow 2.18, legacy
# Keras and cirq 1.5) and against Cirq in double precision, the PennyLane devices
# under PennyLane's TensorFlow interface, two workers under
# MultiWorkerMirroredStrategy, TFQ's tutorials of bench/tutorials (agreement with
# TFQ), and the QCNN example trained with both backends
# (the qmlsim one must reach 0.9 validation accuracy).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/python-venv-tfq
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r python/requirements-tfq.txt
"$venv/bin/pip" install --quiet --disable-pip-version-check .
export TF_USE_LEGACY_KERAS=1 TF_CPP_MIN_LOG_LEVEL=2
(cd build && "../$venv/bin/python" -m pytest -q -p no:cacheprovider ../python/tests_tfq)
"$venv/bin/python" bench/tutorials/run.py --only tfq --reps 0 --strict
for backend in qmlsim tfq; do
  "$venv/bin/python" examples/tfq/qcnn.py --backend "$backend" | tee "build/qcnn-$backend.log" | tail -1
done
"$venv/bin/python" - <<'PY'
import re
line = open("build/qcnn-qmlsim.log").read().strip().splitlines()[-1]
acc = float(re.search(r"validation accuracy ([0-9.]+)", line).group(1))
assert acc >= 0.9, f"the QCNN reached {acc} validation accuracy with qmlsim.tfq (want >= 0.9)"
print(f"QCNN with qmlsim.tfq: validation accuracy {acc}")
PY
