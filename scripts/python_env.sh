#!/usr/bin/env bash
# Creates build/pyenv, a Python virtual environment with the PyPI packages the
# tests read qmlsim's outputs with (the real TensorBoard). Idempotent: nothing
# is installed when the pinned versions are already there.
set -euo pipefail
cd "$(dirname "$0")/.."
env_dir=build/pyenv
want="tensorboard==2.21.0"
if [ -x "$env_dir/bin/python" ] && "$env_dir/bin/pip" freeze 2>/dev/null | grep -qx "$want"; then
  exit 0
fi
/usr/bin/python3 -m venv "$env_dir"
"$env_dir/bin/pip" install --quiet --disable-pip-version-check "$want"
echo "python_env: $env_dir has $want"
