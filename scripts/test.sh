#!/usr/bin/env bash
# Runs every test: installs what is missing, builds and tests the release
# preset, then the debug preset under AddressSanitizer + UndefinedBehaviorSanitizer,
# then the fuzz preset (libFuzzer targets, a fixed number of executions each),
# then the Python package and PennyLane's device test suite (scripts/python_test.sh),
# then the README's command blocks as a new user types them (scripts/readme_test.py).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# The compiler cache (setup.sh installs ccache; CMakeLists.txt uses it): paths
# relative to this checkout and no working directory in the hash, so a rerun,
# or a fresh clone on the same machine (CI), recompiles only what changed.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-8G}"
for preset in release debug fuzz; do
  echo "== $preset: build"
  ./scripts/build.sh "$preset"
  echo "== $preset: test"
  ctest --preset "$preset" -j "$(nproc)"
done
./scripts/python_test.sh
echo "== README: its command blocks"
python3 scripts/readme_test.py
echo "== format check (clang-format)"
find src fuzz python -name '*.cc' -o -name '*.h' -o -name '*.inc' -o -name '*.cu' -o -name '*.cuh' | xargs clang-format --dry-run --Werror
echo "format: clean"
