# shellcheck shell=bash
# Start, stop and talk to the test iostaged. Sourced by setup.sh; the
# functions are exported so every test (a child bash) can use them.

# iostaged_start: run the installed daemon in the foreground, in the
# background of this shell, logging to $IOSTAGED_LOG; wait until it answers.
iostaged_start() {
	setsid "$IOSTAGE_SBINDIR/iostaged" -f -c "$IOSTAGE_CONF" \
		>>"$IOSTAGED_LOG" 2>&1 </dev/null &
	echo $! >"$IOSTAGE_DIR/iostaged.test.pid"
	for _ in $(seq 1 50); do
		# iostaged itself on its socket: `iostage status` asks
		# iostagectld when ControllerHost= is set and no socket is there
		iostaged_request '{"op":"status"}' 2>/dev/null |
			grep -q '"ok":true' && return 0
		pid_running "$(cat "$IOSTAGE_DIR/iostaged.test.pid")" || break
		sleep 0.1
	done
	echo "iostaged did not start; log:" >&2
	tail -n 20 "$IOSTAGED_LOG" >&2
	return 1
}

iostaged_pid() { cat "$IOSTAGE_DIR/iostaged.test.pid" 2>/dev/null; }

# iostaged_stop: SIGTERM, wait for the exit; prints nothing when not running.
iostaged_stop() {
	local pid
	pid=$(iostaged_pid)
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || { rm -f "$IOSTAGE_DIR/iostaged.test.pid"; return 0; }
	for _ in $(seq 1 100); do
		pid_running "$pid" || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	rm -f "$IOSTAGE_DIR/iostaged.test.pid"
	return 0
}

iostaged_restart() { iostaged_stop && iostaged_start; }

# iostaged_request [USER] JSON: one raw protocol line, the reply on stdout.
iostaged_request() {
	local user=root
	[ $# -gt 1 ] && { user=$1; shift; }
	printf '%s\n' "$1" |
		runuser -u "$user" -- socat -t 5 - "UNIX-CONNECT:$IOSTAGE_SOCKET"
}

# assert_cache_index_matches_tiers: iostaged's cache index (cache_ls)
# lists exactly the K.vN entries on the tiers, and each is complete
# (meta.json, manifest, data): after a crash, a full tier or a failed copy
# no entry is half there. Uses the harness's assert_eq and fail.
assert_cache_index_matches_tiers() {
	local listed present d t
	listed=$(iostaged_request '{"op":"cache_ls"}' | grep -o '"entry":"[0-9a-f]*\.v[0-9]*"' |
		sed 's/"entry":"//; s/"//' | sort)
	present=$( (cd "$IOSTAGE_TIERS" && for t in *; do (cd "$t/cache" 2>/dev/null && ls -d ./*.v* 2>/dev/null); done) |
		sed 's|^\./||' | sort)
	assert_eq "cache_ls vs the tiers" "$present" "$listed"
	for d in $present; do
		for t in "$IOSTAGE_TIERS"/*; do
			[ -d "$t/cache/$d" ] || continue
			[ -f "$t/cache/$d/meta.json" ] && [ -f "$t/cache/$d/manifest" ] && [ -e "$t/cache/$d/data" ] ||
				fail "incomplete entry $t/cache/$d"
		done
	done
}

export -f iostaged_start iostaged_pid iostaged_stop iostaged_restart \
	iostaged_request assert_cache_index_matches_tiers
