#!/usr/bin/env bash
# The density-matrix comparison with MindQuantum (forward and gradient):
# creates bench/peers/.venv-mq with the pinned MindQuantum and the qmlsim
# package, then bench/peers/noise.py --peers mindquantum with the arguments
# given (default: the three circuits at 10 qubits, one repetition: a
# MindQuantum gradient takes up to a minute there).
#   bench/peers/run_mindquantum.sh [noise.py arguments]
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=bench/peers/.venv-mq
if ! [ -x "$venv/bin/python" ] || ! "$venv/bin/pip" freeze | grep -q "^mindquantum=="; then
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r bench/peers/requirements-mindquantum.txt
fi
stamp="$venv/.qmlsim-commit"
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ "$(cat "$stamp" 2>/dev/null)" != "$commit" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps . && echo "$commit" >"$stamp"
fi
[ $# -gt 0 ] || set -- --circuits layered,qaoa,qcnn --qubits 10 --reps 1
exec "$venv/bin/python" bench/peers/noise.py --peers mindquantum "$@"
