#!/usr/bin/env bash
# Creates build/pyenv, a Python virtual environment with the PyPI packages the
# tests read qmlsim's outputs with (the real TensorBoard, h5py) and the S3
# server the bucket tests run against (moto's standalone server: moto, flask,
# flask-cors; boto3 to look into the bucket). Idempotent:
# nothing is installed when the pinned versions are already there.
set -euo pipefail
cd "$(dirname "$0")/.."
env_dir=build/pyenv
want=(tensorboard==2.21.0 h5py==3.12.1 moto==5.2.5 flask==3.1.3 flask-cors==6.0.5 boto3==1.44.8)
if [ -x "$env_dir/bin/python" ]; then
  have=$("$env_dir/bin/pip" freeze 2>/dev/null || true)
  missing=0
  for w in "${want[@]}"; do grep -qx "$w" <<<"$have" || missing=1; done
  [ $missing -eq 0 ] && exit 0
fi
/usr/bin/python3 -m venv "$env_dir"
"$env_dir/bin/pip" install --quiet --disable-pip-version-check "${want[@]}"
echo "python_env: $env_dir has ${want[*]}"
