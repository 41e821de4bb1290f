#!/usr/bin/env bash
# Runs the peer comparison: builds qmlsim (release) if needed, creates
# bench/peers/.venv with the pinned peers from PyPI, then bench/peers/run.py.
#   bench/peers/run.sh [--quick] [--json FILE]
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build/release/qmlsim ] || ./scripts/build.sh release
venv=bench/peers/.venv
if ! [ -x "$venv/bin/python" ] || ! "$venv/bin/pip" freeze | grep -q "^qulacs=="; then
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r bench/peers/requirements.txt
fi
# The qmlsim package, so that qmlsim is timed warm like the Python peers; rebuilt
# when the checkout's commit changed since it was installed.
stamp="$venv/.qmlsim-commit"
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ "$(cat "$stamp" 2>/dev/null)" != "$commit" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps . && echo "$commit" >"$stamp"
fi
# TensorFlow Quantum needs its own environment; the QCNN case uses it when it installs.
tfq=bench/peers/.venv-tfq
if ! [ -x "$tfq/bin/python" ] || ! "$tfq/bin/pip" freeze | grep -q "^tensorflow-quantum=="; then
  /usr/bin/python3 -m venv "$tfq"
  "$tfq/bin/pip" install --quiet --disable-pip-version-check -r bench/peers/requirements-tfq.txt ||
    echo "run.sh: tensorflow-quantum did not install; the QCNN case runs without it"
fi
tfq_args=()
"$tfq/bin/python" -c "import tensorflow_quantum" 2>/dev/null && tfq_args=(--tfq-python "$tfq/bin/python")
exec "$venv/bin/python" bench/peers/run.py --qmlsim build/release/qmlsim "${tfq_args[@]}" "$@"
