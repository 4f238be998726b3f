# shellcheck shell=bash
# Start, stop and talk to the test iostaged. Sourced by setup.sh; the
# functions are exported so every test (a child bash) can use them.

# iostaged_start: run the installed daemon in the foreground, in the
# background of this shell, logging to $IOSTAGED_LOG; wait until it answers.
iostaged_start() {
	setsid "$IOSTAGE_ROOT/usr/sbin/iostaged" -f -c "$IOSTAGE_CONF" \
		>>"$IOSTAGED_LOG" 2>&1 </dev/null &
	echo $! >"$IOSTAGE_DIR/iostaged.test.pid"
	for _ in $(seq 1 50); do
		# iostaged itself on its socket: `iostage status` asks
		# iostagectld when ControllerHost= is set and no socket is there
		iostaged_request '{"op":"status"}' 2>/dev/null |
			grep -q '"ok":true' && return 0
		kill -0 "$(cat "$IOSTAGE_DIR/iostaged.test.pid")" 2>/dev/null || break
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
		kill -0 "$pid" 2>/dev/null || break
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

export -f iostaged_start iostaged_pid iostaged_stop iostaged_restart \
	iostaged_request
