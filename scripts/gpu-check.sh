#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds with CUDA (preset `cuda`), runs every
# GPU test (a skipped one counts as a failure here), the GPU kernel and gradient
# benchmarks and the large reference jobs on the GPU, and writes a summary with
# the issue's targets marked met or not. About 5-8 minutes on an H200.
#
#   scripts/gpu-check.sh [--prebuilt BIN_DIR] [SUMMARY_DIR]   (default: $OUT if set, else gpu-check/)
#
# Needs the build dependencies of scripts/setup.sh (run it first where apt works)
# and the CUDA toolkit; CMAKE_CUDA_ARCHITECTURES=90 (H100/H200) unless set.
# --prebuilt skips the build and runs the binaries of a `cuda` preset build made
# on another machine (one with the toolkit and the dependencies but no GPU):
# BIN_DIR holds the build tree's layout (qmlsim, src/<layer>/<layer>_test) and,
# optionally, lib/ with shared libraries the GPU machine lacks
# (scripts/gpu-bundle.sh makes one).
set -uo pipefail
cd "$(dirname "$0")/.."
prebuilt=""
if [ "${1:-}" = "--prebuilt" ]; then
  prebuilt="${2:?--prebuilt needs a directory}"
  shift 2
fi
out="${1:-${OUT:-gpu-check}}"
mkdir -p "$out"
log="$out/gpu-check.log"
summary="$out/gpu-check-summary.md"
: >"$log"
status=0
step() { echo "== $*" | tee -a "$log"; }
fail() { echo "FAILED: $*" | tee -a "$log"; status=1; }

step "GPU"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee -a "$log" ||
  fail "nvidia-smi"

if [ -n "$prebuilt" ]; then
  step "prebuilt binaries from $prebuilt"
  bin="$prebuilt"
  [ -d "$bin/lib" ] && export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  step "build (cmake --preset cuda)"
  arch=()
  [ -n "${CMAKE_CUDA_ARCHITECTURES:-}" ] && arch=(-DCMAKE_CUDA_ARCHITECTURES="$CMAKE_CUDA_ARCHITECTURES")
  if ! { cmake --preset cuda "${arch[@]}" && cmake --build --preset cuda -j "$(nproc)"; } >>"$log" 2>&1; then
    fail "build (see $log)"
    tail -30 "$log"
    exit 1
  fi
  bin=build/cuda
fi

step "GPU tests"
run_tests() {  # binary, filter
  local o
  o=$("$bin/$1" --gtest_filter="$2" --gtest_brief=1 2>&1)
  local rc=$?
  echo "$o" >>"$log"
  echo "$o" | grep -E "PASSED|FAILED|SKIPPED" | sed "s|^|  $1: |" | tee -a "$log"
  [ $rc -eq 0 ] || fail "$1 $2"
  if echo "$o" | grep -q "SKIPPED \]"; then fail "$1: GPU tests skipped on a GPU machine"; fi
}
run_tests src/backends/cuda/cuda_backend_test '*'
run_tests src/grad/grad_test '*Cuda*:*Gpu*'
run_tests src/train/train_test '*Cuda*'

step "density matrix: 12 qubits on the GPU against the CPU (forward and gradient)"
python3 scripts/gpu_density_check.py "$bin/qmlsim" "$out" >"$out/density-matrix.txt" 2>>"$log" ||
  fail "density matrix"
cat "$out/density-matrix.txt" | tee -a "$log"

step "kernel benchmarks (time / the GPU's bandwidth pass)"
"$bin/qmlsim" bench --backend cuda --qubits 24,28 --precision c64,c128 --repetitions 7 \
  --json "$out/bench-kernels.json" >"$out/bench-kernels.txt" 2>&1 || fail "bench kernels"
cat "$out/bench-kernels.txt" >>"$log"

step "gradient benchmark (adjoint / forward on the GPU)"
"$bin/qmlsim" bench --backend cuda --gradient --qubits 20,24,26 --precision c64,c128 \
  --repetitions 3 --json "$out/bench-gradient.json" >"$out/bench-gradient.txt" 2>&1 ||
  fail "bench gradient"
cat "$out/bench-gradient.txt" >>"$log"

step "reference jobs on the GPU (large rows)"
python3 scripts/bench_jobs.py --large --backend cuda --binary "$bin/qmlsim" \
  >"$out/bench-jobs.md" 2>>"$log" || fail "bench jobs"
cat "$out/bench-jobs.md" | tee -a "$log"

step "summary"
python3 - "$out" "$status" >"$summary" <<'EOF'
import json, re, sys
out, status = sys.argv[1], int(sys.argv[2])
print("# qmlsim GPU check\n")
print("tests and runs: " + ("all passed" if status == 0 else "SOME FAILED (see gpu-check.log)") + "\n")
try:
    rows = json.load(open(f"{out}/bench-kernels.json"))["results"]
    print("## Kernels at 28 qubits: time / bandwidth pass (target: 1- and 2-qubit gates <= 1.3)\n")
    print("| kernel | c64 | c128 |\n| --- | --- | --- |")
    names = [r["case"] for r in rows if r["qubits"] == 28 and r["case"].startswith("cuda ")]
    for name in dict.fromkeys(names):
        v = {r["precision"]: r["ratio"] for r in rows if r["qubits"] == 28 and r["case"] == name}
        print(f"| {name[5:]} | {v.get('c64', float('nan')):.2f} | {v.get('c128', float('nan')):.2f} |")
    small = [r["ratio"] for r in rows if r["qubits"] == 28 and re.match(r"cuda [12]q (dense|diagonal)", r["case"])]
    if small:
        print(f"\n1-/2-qubit worst ratio at 28 qubits: {max(small):.2f} -> "
              + ("MET" if max(small) <= 1.3 else "NOT MET"))
except (OSError, KeyError, ValueError) as e:
    print(f"kernel results missing: {e}")
try:
    print("\n## Adjoint gradient / forward on the GPU\n\n```")
    print("".join(l for l in open(f"{out}/bench-gradient.txt") if "gradient" in l).rstrip())
    print("```")
except OSError as e:
    print(f"gradient results missing: {e}")
targets = {"QAOA 24": 0.5, "QCNN 23": 0.1, "Sonar 26": 0.3}
print("\n## Reference jobs on the GPU (targets: QAOA 24 < 0.5 s/iteration, "
      "Sonar 26 < 0.3 s/row, QCNN 23 < 0.1 s/example)\n")
verdicts = []
try:
    for line in open(f"{out}/bench-jobs.md"):
        print(line.rstrip())
        for key, limit in targets.items():
            m = re.search(r"\| ([\d.]+) (ms|s) \|", line)
            if key in line and m:
                s = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
                verdicts.append(f"{key}: {s:.3f} s (target {limit} s) -> "
                                + ("MET" if s < limit else "NOT MET"))
except OSError as e:
    print(f"job results missing: {e}")
print("\n" + "\n".join(f"- {v}" for v in verdicts))
try:
    print("\n## Density matrix on the GPU\n\n" + open(f"{out}/density-matrix.txt").read().rstrip())
except OSError as e:
    print(f"density-matrix results missing: {e}")
EOF
cat "$summary"
exit $status
