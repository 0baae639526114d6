# Steps run side by side, sourced by .ci/run and examples/run. `beside NAME COMMAND...` runs COMMAND in the
# background in a process group of its own (its servers and DynamoDB Local with it), its output kept in a
# file; `joined NAME` waits for it, prints that output, and fails the run with its name if it failed
# ("$SIDE_BY_SIDE_RUN: NAME failed (exit N)"), else calls `after_joined NAME` if the script defines one.
# `stop_side_jobs` (the scripts' EXIT trap) stops every group still running when the run fails.
side_pids=()
beside() {
  local name=$1 log
  shift
  log=$(mktemp)
  (exec setsid "$@" >"$log" 2>&1) &
  side_pids+=("$!")
  printf -v "side_pid_$name" '%s' "$!"
  printf -v "side_log_$name" '%s' "$log"
}
joined() {
  local name=$1 pid_var="side_pid_$1" log_var="side_log_$1" code=0
  wait "${!pid_var}" || code=$?
  cat "${!log_var}"
  rm -f "${!log_var}"
  [ "$code" -eq 0 ] || { echo "${SIDE_BY_SIDE_RUN:-run}: $name failed (exit $code)"; exit "$code"; }
  if declare -F after_joined >/dev/null; then after_joined "$name"; fi
}
stop_side_jobs() {
  for pid in "${side_pids[@]}"; do
    kill -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
