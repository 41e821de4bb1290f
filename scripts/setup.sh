#!/usr/bin/env bash
# Installs every Debian 12 package qmlsim needs to build and test. Idempotent:
# packages already present are not reinstalled, and apt is only asked when
# something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev
  libhdf5-dev libtomlplusplus-dev libmimalloc-dev libcurl4-openssl-dev libssl-dev
  openmpi-bin libopenmpi-dev iproute2
  python3-h5py python3-venv python3-yaml
  clang-format ccache
  clang libclang-rt-14-dev libomp-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  exit 0
fi

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
echo "setup: installing ${missing[*]}"
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
