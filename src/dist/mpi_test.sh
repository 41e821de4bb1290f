#!/usr/bin/env bash
# The distributed state vector under mpirun: ./mpi_test.sh QMLSIM EXAMPLES TESTDATA CASE
# CASE: equal | errors. Each case prints what it checks and exits non-zero on the first failure.
set -uo pipefail
qmlsim=$1
examples=$2
testdata=$3
case_name=$4
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
  # Expectation values, adjoint gradients (every angle) and seeded samples of one
  # process, against 1, 2, 4 and 8 processes holding one state. The observables
  # put X, Y and Z on the top qubits (the slice qubits).
  for circuit in "$testdata/random_16.qasm" "$examples/circuits/qaoa_maxcut_18.qasm"; do
    args=(--observable "Z0 Z1 + 0.5*X15 Y14 - 0.25*Y13 X2 + X15 + 0.1"
      --observable "Z15 - 2*X14 X13 Z12" --gradient --shots 3000 --seed 7 --json --threads 1)
    "$qmlsim" run "$circuit" "${args[@]}" >"$work/one.json" || fail "single process: $circuit"
    for np in 1 2 4 8; do
      "${mpi[@]}" -np $np "$qmlsim" run "$circuit" "${args[@]}" --distributed \
        --exchange-mib 1 >"$work/d$np.json" || fail "$np processes: $circuit"
      python3 - "$work/one.json" "$work/d$np.json" <<'PY' || fail "$np processes differ: $circuit"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
de = max(abs(x - y) for x, y in zip(a["expval"], b["expval"]))
dg = max(abs(x - y) for ra, rb in zip(a["gradient"], b["gradient"]) for x, y in zip(ra, rb))
assert len(a["gradient"][0]) == len(b["gradient"][0]) > 0
print(f"  {b['distributed']['processes']} processes: expvals within {de:.1e}, "
      f"gradients within {dg:.1e}, counts equal: {a['counts'] == b['counts']}; "
      f"{b['distributed']['exchanges']} exchanges")
sys.exit(0 if de <= 1e-12 and dg <= 1e-12 and a["counts"] == b["counts"] else 1)
PY
    done
    echo "$(basename "$circuit"): 1-8 processes give the single-process results"
  done
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
  echo "bad layouts are one-line errors with a non-zero status"
  ;;

*)
  fail "unknown case $case_name"
  ;;
esac
