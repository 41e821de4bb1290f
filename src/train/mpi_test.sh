#!/usr/bin/env bash
# Data-parallel training under mpirun (ctest label "mpi"). One case per call:
#   mpi_test.sh QMLSIM EXAMPLES CASE
# CASE: identical | kill_resume | errors | qaoa_restarts | multihost | trace
# Each case prints what it checks and exits non-zero on the first failure.
set -uo pipefail
qmlsim=$1
examples=$2
case_name=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Several ranks on one small machine: no core binding, and no shared-memory
# transport warnings about the container's /dev/shm.
mpi=(mpirun --oversubscribe --bind-to none --mca btl tcp,self,vader)
work=$(mktemp -d /tmp/qmlsim_mpi_test.XXXXXX)
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
same_weights() {  # HDF5 files without timestamps: identical weights, identical bytes
  cmp -s "$1/weights.h5" "$2/weights.h5" || fail "weights differ: $1 vs $2"
  diff <(grep -o '"loss":[^,]*' "$1/metrics.jsonl") <(grep -o '"loss":[^,]*' "$2/metrics.jsonl") \
    >/dev/null || fail "metrics differ: $1 vs $2"
}

case "$case_name" in
identical)
  qcnn=(--set data.qubits=6 --set data.rounds=12 --set train.epochs=2 --set train.batch_size=16)
  # The QCNN under noise after every gate: density matrices, exact gradients.
  qcnn_noisy=(--set data.qubits=4 --set data.rounds=12 --set train.epochs=1
    --set train.batch_size=8 --set noise.depolarizing=0.02 --set noise.amplitude_damping=0.01)
  sonar=(--set model.wires=5 --set data.rows=48 --set data.test_fraction=0.25
    --set train.batch_size=12 --set train.epochs=2)
  hybrid=(--set train.epochs=2 --set train.batch_size=24)
  classes=(--set train.epochs=2 --set train.batch_size=16)
  qcnn_file=(--set train.epochs=2)
  sonar_file=(--set train.epochs=1 --set train.batch_size=52)
  for job in qcnn qcnn_noisy sonar hybrid classes qcnn_file sonar_file; do
    case $job in
    qcnn) cfg=$examples/qcnn.toml sets=("${qcnn[@]}") ;;
    qcnn_noisy) cfg=$examples/qcnn.toml sets=("${qcnn_noisy[@]}") ;;
    sonar) cfg=$examples/sonar_dressed.toml sets=("${sonar[@]}") ;;
    hybrid) cfg=$examples/hybrid_breast_cancer.toml sets=("${hybrid[@]}") ;;
    classes) cfg=$examples/hybrid_wine.toml sets=("${classes[@]}") ;;
    qcnn_file) cfg=$examples/hybrid_qcnn.toml sets=("${qcnn_file[@]}") ;;
    sonar_file) cfg=$examples/hybrid_sonar.toml sets=("${sonar_file[@]}") ;;
    esac
    "$qmlsim" train "$cfg" "${sets[@]}" --run-dir "$work/$job-1" --quiet || fail "$job N=1"
    for n in 2 3 4; do
      "${mpi[@]}" -np $n "$qmlsim" train "$cfg" "${sets[@]}" --run-dir "$work/$job-$n" \
        --quiet --expect-ranks $n || fail "$job N=$n exited non-zero"
      same_weights "$work/$job-1" "$work/$job-$n"
      echo "$job: N=$n gives the weights and losses of N=1, bit for bit"
    done
  done
  ;;

kill_resume)
  # Long enough that the kill lands mid-run: about 1.2 s in a release build (96
  # steps), far longer than the 50 ms poll below; 4 epochs (0.5 s since the
  # faster QCNN gradient) raced it. The poll waits for any checkpoint, not a
  # given one: only the last 3 are kept, so an early one can come and go
  # between two looks.
  sets=(--set data.qubits=14 --set data.rounds=6 --set train.epochs=12 --set train.batch_size=8
    --set train.checkpoint_every=1)
  "$qmlsim" train "$examples/qcnn.toml" "${sets[@]}" --run-dir "$work/whole" --quiet ||
    fail "uninterrupted run"
  cmd=("${mpi[@]}" -np 2 "$qmlsim" train "$examples/qcnn.toml" "${sets[@]}"
    --run-dir "$work/parts" --resume --quiet)
  "${cmd[@]}" &
  launcher=$!
  has_checkpoint() { compgen -G "$work/parts/checkpoints/ckpt-*.h5" >/dev/null; }
  for _ in $(seq 1 600); do
    has_checkpoint && break
    sleep 0.05
  done
  has_checkpoint || fail "no checkpoint appeared"
  victim=""
  for p in $(pgrep -x qmlsim); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" &&
      grep -q "$work/parts" "/proc/$p/cmdline" && victim=$p
  done
  [ -n "$victim" ] || fail "rank 1 not found (the job ended too soon?)"
  kill -9 "$victim"
  # The job must end (not hang); how fast is not asserted: a busy machine is slow.
  start=$(date +%s)
  for _ in $(seq 1 1200); do
    kill -0 "$launcher" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$launcher" 2>/dev/null && fail "the job still runs 120 s after a rank was killed (hung)"
  wait $launcher
  status=$?
  [ $status -ne 0 ] || fail "the job ended with status 0 after a rank was killed"
  echo "killed rank 1 (pid $victim) mid-run: mpirun exited with $status after $(($(date +%s) - start))s"
  last=$(ls "$work/parts/checkpoints" | tail -1)
  "${cmd[@]}" || fail "the same command did not finish the job"
  same_weights "$work/whole" "$work/parts"
  echo "resumed from $last: final weights equal the uninterrupted run's"
  ;;

errors)
  out=$("${mpi[@]}" -np 2 "$qmlsim" train "$examples/qcnn.toml" --set train.epoch=1 \
    --run-dir "$work/e1" 2>&1) && fail "a bad key under mpirun exited 0"
  grep -q "unknown key train.epoch" <<<"$out" || fail "no error message: $out"
  # An error on rank 0 alone (a used run directory) must end every rank.
  "$qmlsim" train "$examples/qcnn.toml" --set data.qubits=4 --set train.epochs=1 \
    --run-dir "$work/used" --quiet || fail "first run"
  out=$(timeout 120 "${mpi[@]}" -np 2 "$qmlsim" train "$examples/qcnn.toml" --set data.qubits=4 \
    --set train.epochs=1 --run-dir "$work/used" --quiet 2>&1)
  status=$?
  [ $status -ne 124 ] || fail "ranks were left waiting: no exit within 120 s"
  [ $status -ne 0 ] || fail "rank-0 error: status 0"
  grep -q "rank 0: error: .*already holds checkpoints" <<<"$out" || fail "no rank in: $out"
  out=$("$qmlsim" train "$examples/qcnn.toml" --expect-ranks 2 --run-dir "$work/e3" 2>&1) &&
    fail "--expect-ranks 2 in a single process exited 0"
  grep -q "this job has 1 rank" <<<"$out" || fail "no --expect-ranks message: $out"
  echo "errors under mpirun end the job with a non-zero status and name the rank"
  ;;

qaoa_restarts)
  "${mpi[@]}" -np 2 "$qmlsim" train "$examples/qaoa_maxcut.toml" --set train.steps=3 \
    --set train.learning_rate=0.01 --run-dir "$work/q" --quiet || fail "QAOA restarts"
  for r in 0 1; do [ -e "$work/q/restart-$r/weights.h5" ] || fail "restart $r missing"; done
  grep -q '"restarts":2' "$work/q/result.json" || fail "result.json: $(cat "$work/q/result.json")"
  [ -e "$work/q/weights.h5" ] && [ -e "$work/q/graph.svg" ] || fail "best run not saved"
  echo "two QAOA restarts ran; the best is saved: $(grep -o '"best_restart":[0-9]*' "$work/q/result.json")"
  ;;

multihost)
  if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
    echo "SKIP: needs root and iproute2 to make network namespaces"
    exit 0
  fi
  ns_a=qmlsim_a$$ ns_b=qmlsim_b$$ net=10.213.$(($$ % 200)).
  cleanup() {
    ip netns del $ns_a 2>/dev/null
    ip netns del $ns_b 2>/dev/null
    rm -rf "$work"
  }
  trap cleanup EXIT
  ip netns add $ns_a && ip netns add $ns_b || fail "cannot create network namespaces"
  ip link add qv$$a type veth peer name qv$$b || fail "cannot create a veth pair"
  ip link set qv$$a netns $ns_a && ip link set qv$$b netns $ns_b
  ip -n $ns_a addr add ${net}1/24 dev qv$$a && ip -n $ns_b addr add ${net}2/24 dev qv$$b
  for ns in $ns_a $ns_b; do ip -n $ns link set lo up; done
  ip -n $ns_a link set qv$$a up && ip -n $ns_b link set qv$$b up
  # The "remote shell": runs the command inside the namespace that owns the host's address.
  cat >"$work/agent.sh" <<AGENT
#!/bin/bash
host=\$1; shift
case \$host in ${net}1) ns=$ns_a ;; ${net}2) ns=$ns_b ;; *) echo "unknown host \$host" >&2; exit 1 ;; esac
exec ip netns exec \$ns /bin/sh -c "\$*"
AGENT
  chmod +x "$work/agent.sh"
  sets=(--set data.qubits=6 --set data.rounds=12 --set train.epochs=2 --set train.batch_size=16)
  "$qmlsim" train "$examples/qcnn.toml" "${sets[@]}" --run-dir "$work/one" --quiet || fail "N=1"
  timeout 120 ip netns exec $ns_a mpirun --mca plm_rsh_agent "$work/agent.sh" \
    --host ${net}1:1,${net}2:1 -np 2 --mca btl tcp,self --mca btl_tcp_if_include ${net}0/24 \
    --mca oob_tcp_if_include ${net}0/24 "$qmlsim" train "$examples/qcnn.toml" "${sets[@]}" \
    --run-dir "$work/two-hosts" --quiet --expect-ranks 2 || fail "two-host run"
  same_weights "$work/one" "$work/two-hosts"
  echo "two hosts (network namespaces ${net}1 and ${net}2, OpenMPI over TCP): weights of one process"
  # One state vector split over the two hosts: the single-process values and gradients.
  circuit=$examples/circuits/qaoa_maxcut_18.qasm
  run=(run "$circuit" --observable "Z0 Z1 + 0.5*X17 Y16" --gradient --json --threads 1)
  "$qmlsim" "${run[@]}" >"$work/one.json" || fail "single-process run"
  timeout 120 ip netns exec $ns_a mpirun --mca plm_rsh_agent "$work/agent.sh" \
    --host ${net}1:1,${net}2:1 -np 2 --mca btl tcp,self --mca btl_tcp_if_include ${net}0/24 \
    --mca oob_tcp_if_include ${net}0/24 "$qmlsim" "${run[@]}" --distributed \
    >"$work/two.json" || fail "two-host distributed run"
  /usr/bin/python3 - "$work/one.json" "$work/two.json" <<'PY' || fail "two-host state differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert b["distributed"]["processes"] == 2
d = max(abs(x - y) for x, y in zip(a["expval"] + a["gradient"][0], b["expval"] + b["gradient"][0]))
sys.exit(0 if d <= 1e-12 else 1)
PY
  echo "two hosts holding one 18-qubit state: the values and gradients of one process"
  ;;

trace)
  "${mpi[@]}" -np 2 "$qmlsim" train "$examples/qcnn.toml" --set data.qubits=6 --set data.rounds=8 \
    --set train.epochs=2 --set train.batch_size=8 --run-dir "$work/t" --trace --quiet ||
    fail "2-rank run with --trace"
  /usr/bin/python3 "$(dirname "$0")/check_trace.py" "$work/t/trace.json" 2 || fail "trace check"
  ;;

progress_log)
  # Open MPI gives each rank a pseudo-terminal; the launcher's log must still get
  # one plain line per epoch, not redraw sequences.
  "${mpi[@]}" -np 2 "$qmlsim" train "$examples/qcnn.toml" --set data.qubits=4 \
    --set train.epochs=3 --run-dir "$work/p" >"$work/log" 2>&1 || fail "2-rank run: $(cat "$work/log")"
  if grep -q $'[\r\x1b]' "$work/log"; then fail "redraw sequences in the log: $(cat -A "$work/log")"; fi
  [ "$(grep -c '^Epoch ' "$work/log")" -eq 3 ] || fail "not one header per epoch: $(cat "$work/log")"
  [ "$(grep -c ' - loss: ' "$work/log")" -eq 3 ] || fail "not one line per epoch: $(cat "$work/log")"
  echo "under mpirun, the log holds one progress line per epoch"
  ;;

*)
  fail "unknown case $case_name"
  ;;
esac
