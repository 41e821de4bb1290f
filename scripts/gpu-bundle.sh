#!/usr/bin/env bash
# Packs a `cuda` preset build for a GPU machine that lacks the build's
# dependencies (no compiler toolchain, no GoogleTest or HDF5 packages): the
# binaries scripts/gpu-check.sh runs, in the build tree's layout, and in lib/
# every shared library they load except the C library's own and the NVIDIA
# driver's. Run it where the build was made:
#
#   cmake --preset cuda && cmake --build --preset cuda
#   scripts/gpu-bundle.sh DIR                  # then, on the GPU machine:
#   scripts/gpu-check.sh --prebuilt DIR [SUMMARY_DIR]
#
# The test binaries read examples/ at the path of the source tree they were built
# from; check out the same tree at that path on the GPU machine (or link it).
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${1:?usage: scripts/gpu-bundle.sh DIR}"
build=build/cuda
bins=(qmlsim src/backends/cuda/cuda_backend_test src/grad/grad_test src/train/train_test)
mkdir -p "$dest/lib"
for b in "${bins[@]}"; do
  [ -x "$build/$b" ] || { echo "gpu-bundle: $build/$b is missing: build the cuda preset first" >&2; exit 2; }
  mkdir -p "$dest/$(dirname "$b")"
  cp "$build/$b" "$dest/$b"
  strip --strip-debug "$dest/$b"
  ldd "$build/$b" | awk '$3 ~ /^\// {print $3}' |
    grep -vE '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libcuda|libnvidia[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$dest/lib/"; done
done
echo "gpu-bundle: $(du -sh "$dest" | cut -f1) in $dest (built from $PWD)"
