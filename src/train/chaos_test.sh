#!/usr/bin/env bash
# Training under chaos (ctest labels "chaos"): a bounded loop of random SIGKILL,
# SIGTERM and second launchers on one run, each followed by `--resume`, must
# end with the weights of an uninterrupted run, byte for byte, and its complete
# metrics log. Kills land at random moments; nothing asserts on time.
#   chaos_test.sh QMLSIM EXAMPLES single|mpi [SEED]
set -uo pipefail
qmlsim=$1
examples=$2
case_name=$3
seed=${4:-$$}
RANDOM=$seed
echo "chaos seed $seed (replay: $0 $qmlsim $examples $case_name $seed)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d /tmp/qmlsim_chaos_test.XXXXXX)
trap 'pkill -9 -f "$work/" 2>/dev/null; rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# A QCNN-8 job long enough (seconds) for kills to land mid-run.
sets=(--set train.epochs=100 --set train.checkpoint_every=1)
launch=("$qmlsim" train "$examples/qcnn.toml" "${sets[@]}" --quiet)
rounds=12
if [ "$case_name" = mpi ]; then
  launch=(mpirun --oversubscribe --bind-to none --mca btl tcp,self,vader -np 2 "${launch[@]}")
  rounds=6
fi
pause() { sleep "0.$(printf '%02d' $((RANDOM % 90 + 5)))"; }  # 0.05 to 0.94 s
rank_pid() {  # the pid of rank $1 of the run in $work/parts (empty when it has ended)
  for p in $(pgrep -x qmlsim); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" &&
      grep -q "$work/parts" "/proc/$p/cmdline" 2>/dev/null && echo "$p"
  done
}

"${launch[@]}" --run-dir "$work/whole" || fail "the uninterrupted run"
first_action=$((RANDOM % 3))
for round in $(seq 1 $rounds); do
  [ -e "$work/parts/result.json" ] && break
  "${launch[@]}" --run-dir "$work/parts" --resume >"$work/log" 2>&1 &
  first=$!
  pause
  action=$(((round + first_action) % 3))  # each action once in the first three rounds
  [ "$round" -gt 3 ] && action=$((RANDOM % 3))
  case $action in
  0) # SIGKILL: the process (a rank under mpirun) dies at once
    victim=$first
    [ "$case_name" = mpi ] && victim=$(rank_pid $((RANDOM % 2)))
    [ -n "$victim" ] && kill -9 "$victim" 2>/dev/null
    { wait $first; } 2>/dev/null
    echo "round $round: SIGKILL -> exit $?"
    ;;
  1) # SIGTERM: a checkpoint at the next step, exit 143 (or 0 when it had finished)
    kill -TERM $first 2>/dev/null
    { wait $first; } 2>/dev/null
    status=$?
    echo "round $round: SIGTERM -> exit $status"
    if [ "$case_name" = single ] && [ $status -ne 143 ] && [ $status -ne 0 ]; then
      fail "SIGTERM gave exit $status: $(cat "$work/log")"
    fi
    ;;
  2) # a second launcher on the same directory: one of the two is refused;
    # then SIGTERM for the first
    "${launch[@]}" --run-dir "$work/parts" --resume >"$work/log2" 2>&1
    second=$?
    kill -TERM $first 2>/dev/null
    { wait $first; } 2>/dev/null
    status=$?
    echo "round $round: second launcher -> exits $status and $second"
    if [ $status -ne 0 ] && [ $second -ne 0 ]; then
      grep -q "another training process writes this run" "$work/log" "$work/log2" ||
        fail "both launchers failed: $(cat "$work/log" "$work/log2")"
    fi
    ;;
  esac
  grep -h "internal error\|terminate called\|Segmentation\|Aborted" "$work/log" "$work/log2" \
    2>/dev/null && fail "a crash in round $round"
done
"${launch[@]}" --run-dir "$work/parts" --resume >"$work/log" 2>&1 ||
  fail "the final --resume: $(cat "$work/log")"
cmp -s "$work/whole/weights.h5" "$work/parts/weights.h5" || fail "weights differ"
diff <(grep '"type":"step"' "$work/whole/metrics.jsonl" | grep -o '"step":[0-9]*,.*"loss":[^,]*') \
  <(grep '"type":"step"' "$work/parts/metrics.jsonl" | grep -o '"step":[0-9]*,.*"loss":[^,]*') \
  >/dev/null || fail "metrics.jsonl differs from the uninterrupted run's"
echo "$case_name: after $round rounds of chaos, the weights and metrics of an unbroken run"
