#!/usr/bin/env bash
# Exercises the container recipe without a container engine: the Dockerfile's
# two stages are replayed in Debian 12 chroots made by debootstrap (root only,
# needs network access to the Debian mirror; about 10 minutes):
#   build stage:   debian:12 + the build packages, then the same cmake commands;
#   runtime stage: a minimal debian:12 + the runtime packages, the binary and
#                  examples copied in, the same ssh and user setup; then a smoke
#                  test as mpiuser: qmlsim --version, a short QCNN training
#                  under mpirun with 2 ranks, and inference on its run.
#   deploy/container/chroot_check.sh [WORK_DIR]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-/tmp/qmlsim_chroot}
mirror=http://deb.debian.org/debian
[ "$(id -u)" -eq 0 ] || { echo "chroot_check: needs root"; exit 2; }
command -v debootstrap >/dev/null || { echo "chroot_check: apt-get install debootstrap"; exit 2; }

# Packages: read from the Dockerfile, so the check follows the recipe.
packages() {  # $1: stage name
  awk -v stage="$1" '
    /^FROM / { in_stage = ($NF == stage) }
    in_stage && /apt-get install/ { grab = 1; print; next }
    in_stage && grab { if ($0 ~ /^[ \t]*&&/) { grab = 0; next } print }' \
    "$repo/deploy/container/Dockerfile" |
    tr ' \\' '\n\n' | grep -E '^[a-z0-9][a-z0-9.+-]+$' | grep -vE '^(apt-get|install)$' |
    sort -u | tr '\n' ' '
}
build_pkgs=$(packages build)
runtime_pkgs=$(packages runtime)
echo "build stage packages: $build_pkgs"
echo "runtime stage packages: $runtime_pkgs"

# The environment a container starts with (Docker's default PATH).
in_root() {
  chroot "$1" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root /bin/bash -c "$2"
}
mounts() { for m in proc sys dev; do mountpoint -q "$1/$m" || mount --rbind "/$m" "$1/$m"; done; }
unmounts() { for m in dev sys proc; do umount -R -l "$1/$m" 2>/dev/null || true; done; }
trap 'unmounts "$work/build"; unmounts "$work/runtime"' EXIT

for stage in build runtime; do
  [ -x "$work/$stage/bin/bash" ] || debootstrap --variant=minbase bookworm "$work/$stage" "$mirror" >/dev/null
  mounts "$work/$stage"
done
in_root "$work/build" "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $build_pkgs >/dev/null"
rm -rf "$work/build/src" && mkdir -p "$work/build/src"
cp -r "$repo/CMakeLists.txt" "$repo/CMakePresets.json" "$repo/src" "$repo/examples" "$work/build/src/"
in_root "$work/build" "cd /src && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DQMLSIM_BUILD_TESTS=OFF >/dev/null && cmake --build build --target qmlsim >/dev/null && ./build/qmlsim --version"

in_root "$work/runtime" "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $runtime_pkgs >/dev/null && mkdir -p /var/run/sshd"
in_root "$work/runtime" "id mpiuser >/dev/null 2>&1 || useradd --create-home --uid 1000 --shell /bin/bash mpiuser"
cp "$work/build/src/build/qmlsim" "$work/runtime/usr/local/bin/qmlsim"
rm -rf "$work/runtime/opt/qmlsim" && mkdir -p "$work/runtime/opt/qmlsim"
cp -r "$work/build/src/examples" "$work/runtime/opt/qmlsim/examples"
cp "$repo/deploy/container/sshd_config" "$work/runtime/home/mpiuser/.sshd_config"
in_root "$work/runtime" "chown mpiuser:mpiuser /home/mpiuser/.sshd_config && /usr/sbin/sshd -t -f /home/mpiuser/.sshd_config -o HostKey=/etc/ssh/ssh_host_ed25519_key 2>&1 | grep -v 'Could not load host key' || true"
in_root "$work/runtime" "su mpiuser -c 'cd && qmlsim --version && \
  mpirun --bind-to none -np 2 qmlsim train /opt/qmlsim/examples/qcnn.toml --set data.qubits=6 \
    --set train.epochs=2 --run-dir runs/smoke --resume --expect-ranks 2 --quiet && \
  qmlsim infer runs/smoke | tail -2'"
echo "chroot_check: the recipe builds, and the runtime stage trains and infers as mpiuser"
