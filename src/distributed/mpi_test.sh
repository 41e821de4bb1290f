#!/usr/bin/env bash
# The distributed state vector under mpirun: ./mpi_test.sh QMLSIM EXAMPLES TESTDATA PYTHON CASE
# (PYTHON: build/pyenv's, with h5py, for reading state files)
# CASE: equal | train | memory | errors | trajectories | density. Each case prints what it checks and exits non-zero on the first failure.
set -uo pipefail
qmlsim=$1
examples=$2
testdata=$3
python=$4
case_name=$5
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(timeout 300 mpirun --oversubscribe --bind-to none --mca btl tcp,self,vader)
work=$(mktemp -d /tmp/qmlsim_dist_test.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

case "$case_name" in
equal)
  # Expectation values, adjoint gradients (every angle), seeded samples and the
  # state written by --state-out of one process, against 1, 2, 4 and 8 processes
  # holding one state. The observables
  # put X, Y and Z on the top qubits (the slice qubits).
  for circuit in "$testdata/random_16.qasm" "$examples/circuits/qaoa_maxcut_18.qasm"; do
    args=(--observable "Z0 Z1 + 0.5*X15 Y14 - 0.25*Y13 X2 + X15 + 0.1"
      --observable "Z15 - 2*X14 X13 Z12" --gradient --shots 3000 --seed 7 --json --threads 1)
    "$qmlsim" run "$circuit" "${args[@]}" --state-out "$work/one.h5" >"$work/one.json" ||
      fail "single process: $circuit"
    for np in 1 2 4 8; do
      "${mpi[@]}" -np $np "$qmlsim" run "$circuit" "${args[@]}" --distributed \
        --exchange-mib 1 --state-out "$work/d$np.h5" >"$work/d$np.json" || fail "$np processes: $circuit"
      "$python" - "$work/one.h5" "$work/d$np.h5" <<'PY' || fail "$np processes: state files differ"
import sys
import h5py
import numpy as np
a, b = (h5py.File(p, "r")["state"][:] for p in sys.argv[1:3])
sys.exit(0 if a.shape == b.shape and np.abs(a - b).max() <= 1e-12 else 1)
PY
      python3 - "$work/one.json" "$work/d$np.json" <<'PY' || fail "$np processes differ: $circuit"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
de = max(abs(x - y) for x, y in zip(a["expval"], b["expval"]))
dg = max(abs(x - y) for ra, rb in zip(a["gradient"], b["gradient"]) for x, y in zip(ra, rb))
assert len(a["gradient"][0]) == len(b["gradient"][0]) > 0
print(f"  {b['distributed']['processes']} processes: state file equal, expvals within {de:.1e}, "
      f"gradients within {dg:.1e}, counts equal: {a['counts'] == b['counts']}; "
      f"{b['distributed']['total']['exchanges']} exchanges")
sys.exit(0 if de <= 1e-12 and dg <= 1e-12 and a["counts"] == b["counts"] else 1)
PY
    done
    echo "$(basename "$circuit"): 1-8 processes give the single-process results"
  done
  ;;

train)
  # Training with each example's state held by a group of ranks (job.state_ranks):
  # the losses and predictions of one process, for 1 to 4 groups of 2 or 4 ranks.
  close() {  # close FILE_A FILE_B TOLERANCE: every number of two files agrees
    python3 - "$1" "$2" "$3" <<'PY'
import re, sys
num = re.compile(r"-?\d+\.?\d*(?:e[-+]?\d+)?")
a, b = ([float(x) for x in num.findall(open(p).read())] for p in sys.argv[1:3])
tol = float(sys.argv[3])
sys.exit(0 if len(a) == len(b) > 0 and all(abs(x - y) <= tol for x, y in zip(a, b)) else 1)
PY
  }
  epoch_losses() { grep '"type":"epoch"' "$1/metrics.jsonl" | grep -o '"val_loss":[^,]*\|"loss":[^,]*'; }
  qcnn=(--set data.qubits=12 --set data.rounds=2 --set train.epochs=2 --set train.batch_size=8
    --set job.precision=c128 --quiet)
  sonar=(--set model.wires=12 --set data.rows=24 --set data.test_fraction=0.25 --set train.epochs=2
    --set train.batch_size=6 --quiet)
  for job in qcnn sonar; do
    case $job in
    qcnn) cfg=$examples/qcnn.toml sets=("${qcnn[@]}") ;;
    sonar) cfg=$examples/sonar_dressed.toml sets=("${sonar[@]}") ;;
    esac
    "$qmlsim" train "$cfg" "${sets[@]}" --run-dir "$work/$job-1" || fail "$job: one process"
    "$qmlsim" infer "$work/$job-1" >"$work/$job-1.infer" || fail "$job: infer"
    epoch_losses "$work/$job-1" >"$work/$job-1.loss"
    # "2 2 2": two threads per rank (each example's state in turn, its
    # collectives on one thread; examples one per thread crashed or hung there)
    for layout in "2 2" "4 2" "8 4" "2 2 2"; do
      set -- $layout
      d="$work/$job-$1-$2-${3:-default}"
      threads=()
      [ -n "${3:-}" ] && threads=(--set job.threads="$3")
      "${mpi[@]}" -np "$1" "$qmlsim" train "$cfg" "${sets[@]}" --set job.state_ranks="$2" \
        "${threads[@]}" --run-dir "$d" || fail "$job: $1 ranks in states of $2"
      epoch_losses "$d" >"$d.loss"
      close "$work/$job-1.loss" "$d.loss" 1e-12 || fail "$job: losses differ at $1/$2"
      "$qmlsim" infer "$d" >"$d.infer" || fail "$job: infer $d"
      close "$work/$job-1.infer" "$d.infer" 1e-9 || fail "$job: predictions differ at $1/$2"
      echo "$job: $1 ranks, states over $2, threads ${3:-default}: the losses and predictions of one process"
    done
  done
  "$qmlsim" train "$examples/qaoa_maxcut.toml" --set train.steps=3 --run-dir "$work/qaoa-1" --quiet ||
    fail "qaoa: one process"
  "${mpi[@]}" -np 2 "$qmlsim" train "$examples/qaoa_maxcut.toml" --set train.steps=3 \
    --set job.state_ranks=2 --run-dir "$work/qaoa-2" --quiet || fail "qaoa: one state over 2 ranks"
  for f in qaoa-1 qaoa-2; do grep -o '"cost":[^,]*\|"params":\[[^]]*' "$work/$f/result.json" >"$work/$f.r"; done
  close "$work/qaoa-1.r" "$work/qaoa-2.r" 1e-10 || fail "qaoa: results differ"
  echo "qaoa: one state over 2 ranks gives the cost and parameters of one process"
  ;;

memory)
  # Peak resident memory per process (VmHWM, measured) against its slice: 28 qubits in
  # complex64 over 2 processes, 1 GiB slices (the process itself is about 25 MB). Not run under the sanitizers (their
  # shadow memory is not qmlsim's).
  python3 "$(dirname "$0")/../../bench/distributed/bench_distributed.py" --emit random \
    --qubits 28 --depth 1 >"$work/c28.qasm" || fail "circuit"
  "${mpi[@]}" -np 2 "$qmlsim" run "$work/c28.qasm" --precision c64 --observable "Z0 + X27" \
    --distributed --exchange-mib 8 --threads 1 --json >"$work/m.json" || fail "28 qubits on 2"
  python3 - "$work/m.json" <<'PY' || fail "memory above 1.1 x the slice"
import json, sys
d = json.load(open(sys.argv[1]))["distributed"]
ratio = d["peak_resident_bytes"] / d["slice_bytes"]
print(f"peak resident memory per process: {ratio:.3f} x its {d['slice_bytes'] / 2**20:.0f} MiB slice")
sys.exit(0 if ratio <= 1.1 else 1)
PY
  ;;

errors)
  out=$("${mpi[@]}" -np 3 "$qmlsim" run "$testdata/random_16.qasm" --observable Z0 \
    --distributed 2>&1) && fail "3 processes exited 0"
  grep -q "3 processes; a distributed state needs a power of two" <<<"$out" || fail "message: $out"
  out=$("${mpi[@]}" -np 2 "$qmlsim" run "$examples/circuits/bell.qasm" --observable Z0 \
    --distributed 2>&1) && fail "2 qubits over 2 processes exited 0"
  grep -q "each needs at least 2^10" <<<"$out" || fail "message: $out"
  out=$("$qmlsim" run "$testdata/random_16.qasm" --observable Z0 --exchange-mib 4 2>&1) &&
    fail "--exchange-mib without --distributed exited 0"
  grep -q "exchange-mib: needs --distributed" <<<"$out" || fail "message: $out"
  out=$("${mpi[@]}" -np 4 "$qmlsim" train "$examples/qcnn.toml" --set data.qubits=12 \
    --set job.state_ranks=3 --run-dir "$work/bad" 2>&1) && fail "state_ranks 3 of 4 exited 0"
  grep -q "3 ranks per state do not divide the job's 4 ranks" <<<"$out" || fail "message: $out"
  out=$("${mpi[@]}" -np 2 "$qmlsim" train "$examples/qcnn.toml" --set data.qubits=8 \
    --set job.state_ranks=2 --run-dir "$work/bad2" 2>&1) && fail "8 qubits over 2 exited 0"
  grep -q "each needs at least 2^10" <<<"$out" || fail "message: $out"
  echo "bad layouts are one-line errors with a non-zero status"
  ;;

trajectories)
  # A noisy circuit's trajectories shared out over 1, 2 and 3 processes
  # (--distributed with --method trajectories): expectation values, standard
  # errors, samples and gradients (a Pauli-mixture circuit) bit for bit those
  # of one process.
  circuit="$work/noisy.qasm"
  printf '%s\n' 'OPENQASM 3.0;' 'include "stdgates.inc";' 'qubit[5] q;' 'h q[0];' \
    'cx q[0], q[1];' 'ry(0.4) q[2];' '#pragma braket noise amplitude_damping(0.2) q' \
    'cx q[1], q[2];' 'rx(0.9) q[3];' '#pragma braket noise depolarizing(0.1) q[3]' \
    'cx q[3], q[4];' '#pragma braket noise phase_damping(0.3) q[4]' >"$circuit"
  mixture="$work/mixture.qasm"  # Pauli channels only: trajectory gradients
  sed -e 's/amplitude_damping(0.2)/bit_flip(0.2)/' -e 's/phase_damping(0.3)/phase_flip(0.3)/' \
    "$circuit" >"$mixture"
  for c in "$circuit" "$mixture"; do
    args=(--observable Z0 --observable "Z1 Z2 + 0.5*X3" --method trajectories --trajectories 300
      --seed 9 --shots 1000 --json --threads 1)
    [ "$c" = "$mixture" ] && args+=(--gradient)
    "$qmlsim" run "$c" "${args[@]}" >"$work/one.json" || fail "one process: $c"
    for np in 1 2 3; do
      "${mpi[@]}" -np $np "$qmlsim" run "$c" "${args[@]}" --distributed >"$work/t$np.json" ||
        fail "$np processes: $c"
      python3 - "$work/one.json" "$work/t$np.json" <<'PY' || fail "$np processes differ: $c"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
keys = ["expval", "expval_error", "counts"] + (["gradient"] if "gradient" in a else [])
same = all(a[k] == b[k] for k in keys)
print(f"  {b['processes']} process(es): {', '.join(keys)} {'equal' if same else 'DIFFER'}")
sys.exit(0 if same else 1)
PY
    done
  done
  echo "trajectories over 1-3 processes give the single-process results"
  ;;

density)
  # A density matrix distributed over 1, 2 and 4 processes (vec(rho), 12
  # qubits: the column halves of gates and channels on q4, q5 touch the slice
  # qubits): expectation values within 1e-12 of one process (X and Y across
  # rows and columns, readout error folded in), samples identical; the plan
  # reports the 2n-qubit layout; --gradient is refused (forward only).
  circuit="$work/noisy6.qasm"
  printf '%s\n' 'OPENQASM 3.0;' 'include "stdgates.inc";' 'qubit[6] q;' 'h q[0];' \
    'cx q[0], q[5];' 'ry(0.4) q[4];' '#pragma braket noise amplitude_damping(0.2) q' \
    'cx q[5], q[4];' 'rx(0.9) q[3];' '#pragma braket noise two_qubit_depolarizing(0.1) q[4], q[5]' \
    'cx q[3], q[1];' 'rz(0.3) q[5];' 'cx q[4], q[2];' '#pragma braket noise phase_damping(0.3) q[5]' \
    'ry(1.1) q[5];' '#pragma braket noise generalized_amplitude_damping(0.2, 0.3) q[4]' >"$circuit"
  args=(--observable Z5 --observable "Z4 Z5 + 0.5*X3 Y5 - 0.2*Y4 X5 + X0 X5" --method density_matrix
    --seed 9 --shots 2000 --json --threads 1 --readout-error 0.02,0.05)
  "$qmlsim" run "$circuit" "${args[@]}" >"$work/one.json" || fail "one process"
  for np in 1 2 4; do
    "${mpi[@]}" -np $np "$qmlsim" run "$circuit" "${args[@]}" --distributed >"$work/d$np.json" ||
      fail "$np processes"
    python3 - "$work/one.json" "$work/d$np.json" <<'PY' || fail "$np processes differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
err = max(abs(x - y) for x, y in zip(a["expval"], b["expval"]))
same = len(a["expval"]) == len(b["expval"]) == 2 and err <= 1e-12 and a["counts"] == b["counts"]
d = b["distributed"]
print(f"  {d['processes']} process(es), slices of 2^{d['slice_qubits']}: expval within {err:.1e}, "
      f"counts {'equal' if a['counts'] == b['counts'] else 'DIFFER'}")
sys.exit(0 if same and b["method"] == "density_matrix" else 1)
PY
  done
  "$qmlsim" run "$circuit" --method density_matrix --observable Z0 --plan-processes 4 >"$work/plan.json" ||
    fail "plan"
  grep -q '"density_matrix":true,"processes":4,"slice_qubits":10' "$work/plan.json" ||
    fail "plan of a density matrix: $(cat "$work/plan.json")"
  "${mpi[@]}" -np 2 "$qmlsim" run "$circuit" --method density_matrix --observable Z0 --gradient \
    --distributed >/dev/null 2>"$work/err.txt"
  grep -q -- "--gradient: a density matrix over processes" "$work/err.txt" ||
    fail "--gradient not refused: $(cat "$work/err.txt")"
  echo "a density matrix over 1, 2 and 4 processes gives the single-process results"
  ;;

*)
  fail "unknown case $case_name"
  ;;
esac
