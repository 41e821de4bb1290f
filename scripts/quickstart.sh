#!/usr/bin/env bash
# From a fresh Debian 12 machine: install dependencies, build, and run the main
# job (until the training runner lands: QAOA Max-Cut on the 18-node reference
# graph, expected cut and samples).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh release
./build/release/qmlsim run examples/circuits/qaoa_maxcut_18.qasm \
  --observable "$(cat examples/circuits/qaoa_maxcut_18.cost)" --shots 10 --seed 1967
