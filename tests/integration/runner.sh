# shellcheck shell=bash
# The test loop shared by tests/integration/run.sh (one node) and
# tests/cluster/run.sh (several nodes): find the test_* functions of each
# file, run each in its own bash with a timeout, count and report them.
#
# The caller sets before run_files: CLUSTER_DIR, IT_TIMEOUT, passed=0,
# failed=0, test_pid= (its cleanup kills a test still running) and
# RUNNER_SOURCES (files every test sources first, colon-separated), and
# defines between_tests (puts its cluster back).

# test function names of a file, in file order
list_tests() {
  grep -oE '^[[:space:]]*(function[[:space:]]+)?test_[A-Za-z0-9_]+[[:space:]]*(\(\))?[[:space:]]*\{?' "$1" |
    sed -E 's/^[[:space:]]*(function[[:space:]]+)?//; s/[[:space:]({].*$//' | awk '!seen[$0]++'
}

run_one() {
  local file=$1 name=$2 log rc reason t0 t1
  log="$CLUSTER_DIR/tests/$name.log"
  t0=$SECONDS
  export TEST_NAME=$name TEST_WORKDIR="$CLUSTER_DIR/tests/$name"
  mkdir -p "$TEST_WORKDIR"
  chmod 1777 "$TEST_WORKDIR"
  RUNNER_SOURCES=$RUNNER_SOURCES timeout -k 10 "$IT_TIMEOUT" bash -c '
    IFS=: read -r -a srcs <<<"$RUNNER_SOURCES"
    for s in "${srcs[@]}"; do . "$s" || exit 99; done
    . "$1" || exit 98
    cd "$TEST_WORKDIR" || exit 97
    "$2"
  ' run-test "$file" "$name" >"$log" 2>&1 </dev/null &
  test_pid=$!
  wait "$test_pid"
  rc=$?
  test_pid=
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    echo "PASS $name ($((SECONDS - t0)) s)"
    # A test that could not check what it is for says so on a line of
    # its own ("SKIP: python3-torch is not installed"): shown here.
    grep -E '^SKIP: ' "$log" | sed 's/^/    /'
    [ "${IT_VERBOSE:-0}" = 1 ] && sed 's/^/    /' "$log"
  else
    failed=$((failed + 1))
    case $rc in
      124 | 137) reason="timed out after ${IT_TIMEOUT}s" ;;
      *) reason=$(grep -E '^FAIL: ' "$log" | tail -n1 | sed 's/^FAIL: //') ;;
    esac
    [ -n "$reason" ] || reason="exit code $rc"
    echo "FAIL $name: $reason"
    echo "    --- output ($log):"
    if [ "${IT_VERBOSE:-0}" = 1 ]; then sed 's/^/    /' "$log"; else tail -n 30 "$log" | sed 's/^/    /'; fi
  fi
  echo "$((SECONDS - t0)) $name $(basename "$file")" >>"$CLUSTER_DIR/tests/times"
  t1=$SECONDS
  between_tests
  RUNNER_BETWEEN=$((${RUNNER_BETWEEN:-0} + SECONDS - t1))
}

# Where the time went, for whoever makes the suite faster: the slowest
# tests, each file's total and the time spent putting the cluster back
# between tests (IT_SLOWEST: how many tests; 10).
print_times() {
  local f=$CLUSTER_DIR/tests/times
  [ -s "$f" ] || return 0
  echo "slowest tests:"
  sort -rn "$f" | head -n "${IT_SLOWEST:-10}" | awk '{ printf "  %4d s  %s (%s)\n", $1, $2, $3 }'
  echo "per file:"
  awk '{ t[$3] += $1; n[$3]++ } END { for (k in t) printf "  %4d s  %s (%d tests)\n", t[k], k, n[k] }' "$f" | sort -rn
  echo "between tests (cluster put back): ${RUNNER_BETWEEN:-0} s"
}

# run_files FILE...: every test of every file (IT_FILTER: only names
# matching that extended regex; IT_SKIP: not those matching this one).
run_files() {
  local f t
  for f in "$@"; do
    for t in $(list_tests "$f"); do
      if [ -n "${IT_FILTER:-}" ] && ! [[ "$t" =~ $IT_FILTER ]]; then
        continue
      fi
      if [ -n "${IT_SKIP:-}" ] && [[ "$t" =~ $IT_SKIP ]]; then
        continue
      fi
      run_one "$f" "$t"
    done
  done
  print_times
}
