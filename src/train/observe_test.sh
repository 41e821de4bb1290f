#!/usr/bin/env bash
# Trains a small QCNN with --trace and reads its outputs back: the TensorBoard
# event file with the real tensorboard package, the trace with check_trace.py.
#   observe_test.sh QMLSIM EXAMPLES PYTHON_WITH_TENSORBOARD
set -euo pipefail
qmlsim=$1
examples=$2
python=$3
here=$(dirname "$0")
work=$(mktemp -d /tmp/qmlsim_observe.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$qmlsim" train "$examples/qcnn.toml" --set data.qubits=6 --set data.rounds=10 \
  --set train.epochs=3 --set train.batch_size=8 --run-dir "$work/run" --trace --quiet
ls "$work/run"/events.out.tfevents.* >/dev/null
"$python" "$here/check_tensorboard.py" "$work/run"
/usr/bin/python3 "$here/check_trace.py" "$work/run/trace.json" 1
