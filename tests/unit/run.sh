#!/bin/bash
# Run the Check unit-test binaries given as arguments and total their results.
#
#   tests/unit/run.sh build/tests/check_*
#
# Each binary prints its own Check output ("100%: Checks: 12, Failures: 0,
# Errors: 0"). The last line is "N passed, M failed" over all binaries; a
# binary that crashes, prints no summary or is missing counts as one failure;
# *.d and *.o arguments are ignored; tests/python/run.py reports in the
# same format. Exits 1 if anything failed, 2 on usage errors.
set -u

if [ $# -eq 0 ]; then
	echo "usage: $0 CHECK_BINARY..." >&2
	exit 2
fi

# Fork mode and normal verbosity whatever the caller's environment says:
# the summary line is what we count.
export CK_FORK=yes CK_VERBOSITY=normal

passed=0
failed=0
for bin in "$@"; do
	# A glob like build/tests/check_* also matches the compiler's -MMD
	# dependency files: those are not tests.
	case $bin in
	*.d | *.o) continue ;;
	esac
	if [ ! -f "$bin" ] || [ ! -x "$bin" ]; then
		echo "$bin: not an executable" >&2
		failed=$((failed + 1))
		continue
	fi
	out=$("$bin" 2>&1)
	rc=$?
	[ -n "$out" ] && printf '%s\n' "$out"
	summary=$(printf '%s\n' "$out" |
		sed -n 's/^[0-9]*%: Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\)$/\1 \2 \3/p' |
		tail -n 1)
	if [ -z "$summary" ]; then
		echo "$bin: no Check summary (exit status $rc)" >&2
		failed=$((failed + 1))
		continue
	fi
	read -r checks fails errors <<<"$summary"
	passed=$((passed + checks - fails - errors))
	failed=$((failed + fails + errors))
	if [ "$rc" -ne 0 ] && [ $((fails + errors)) -eq 0 ]; then
		echo "$bin: exit status $rc with no failed checks" >&2
		failed=$((failed + 1))
	fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
