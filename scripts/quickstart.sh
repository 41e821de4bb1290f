#!/usr/bin/env bash
# From a fresh Debian 12 machine: install dependencies, build, and run the main
# job: QAOA Max-Cut on the 18-node reference graph with the original
# hyperparameters (reference job 1), into a new run directory under runs/.
# Builds the qmlsim program alone; ./scripts/test.sh builds and runs the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh release qmlsim
./build/release/qmlsim train examples/qaoa_maxcut.toml \
  --run-dir "runs/qaoa_maxcut-$(date +%Y%m%d-%H%M%S)"
