#!/usr/bin/env bash
# Configures and builds a preset (default: release) with CMake presets; further
# arguments name the targets to build (default: all, the tests included).
#   ./scripts/build.sh release qmlsim    the program alone
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
shift || true
targets=()
[ $# -gt 0 ] && targets=(--target "$@")
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)" "${targets[@]}"
