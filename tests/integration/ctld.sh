# shellcheck shell=bash
# iostagectld in the one-node harness: its own iostage.conf (the node's,
# with its own StateDir and run directory, ControllerHost=127.0.0.1 so it
# listens on loopback only, and an AdminGroup), started from the installed
# tree like iostaged. Sourced by setup.sh; the functions are exported.
# Tests start it (ctld_start) when they need it; teardown_hook stops it.
#
# Exports: CTLD_CONF, CTLD_PORT, CTLD_STATE (its StateDir; the history is
# $CTLD_STATE/history), CTLD_LOG, CTLD_ADMIN_USER (in CTLD_ADMIN_GROUP).

export CTLD_DIR="$IOSTAGE_DIR/ctld"
export CTLD_CONF="$CTLD_DIR/iostage.conf"
export CTLD_STATE="$CTLD_DIR/state"
export CTLD_LOG="$CTLD_DIR/iostagectld.log"
# A port per harness, beside PeerPort's (slurmd + 103).
export CTLD_PORT=$((${CLUSTER_SLURMD_PORT:-16818} + 104))
export CTLD_ADMIN_GROUP=iostage-ctladm CTLD_ADMIN_USER=iostage-ctladm

# ctld_write_conf [EXTRA LINES]: the node's conf, StateDir and SocketPath
# (its pid file's directory) moved to the service's, plus the service keys.
ctld_write_conf() {
	mkdir -p "$CTLD_DIR/run"
	chmod 0755 "$CTLD_DIR"
	sed -e "s|^StateDir=.*|StateDir=$CTLD_STATE|" \
		-e "s|^SocketPath=.*|SocketPath=$CTLD_DIR/run/iostaged.sock|" \
		"$IOSTAGE_CONF" >"$CTLD_CONF.tmp"
	cat >>"$CTLD_CONF.tmp" <<CONF
ControllerHost=127.0.0.1
ControllerPort=$CTLD_PORT
AdminGroup=$CTLD_ADMIN_GROUP
${1:-}
CONF
	chmod 0644 "$CTLD_CONF.tmp"
	mv "$CTLD_CONF.tmp" "$CTLD_CONF"
}

# ctld_admin_user: the admin group and a user in it (no login, no home)
ctld_admin_user() {
	getent group "$CTLD_ADMIN_GROUP" >/dev/null ||
		groupadd -r "$CTLD_ADMIN_GROUP" || return 1
	id "$CTLD_ADMIN_USER" >/dev/null 2>&1 ||
		useradd -r -M -d /nonexistent -s /usr/sbin/nologin -g "$CTLD_ADMIN_GROUP" \
			"$CTLD_ADMIN_USER" || return 1
}

ctld_pid() {
	local pid
	pid=$(cat "$CTLD_DIR/iostagectld.test.pid" 2>/dev/null) || return 1
	pid_running "$pid" && echo "$pid"
}

# ctld_start: the installed iostagectld -f, logging to $CTLD_LOG; waits
# until it answers a ping.
ctld_start() {
	local pid
	setsid "$IOSTAGE_SBINDIR/iostagectld" -f -c "$CTLD_CONF" \
		>>"$CTLD_LOG" 2>&1 </dev/null &
	pid=$!
	echo "$pid" >"$CTLD_DIR/iostagectld.test.pid"
	for _ in $(seq 1 50); do
		ctld_request root '{"op":"ping"}' 2>/dev/null | grep -q '"ok":true' && return 0
		pid_running "$pid" || break
		sleep 0.1
	done
	echo "iostagectld did not start; log:" >&2
	tail -n 20 "$CTLD_LOG" >&2
	return 1
}

# ctld_stop: SIGTERM, wait for the exit (SIGKILL after 10 s)
ctld_stop() {
	local pid
	pid=$(ctld_pid) || { rm -f "$CTLD_DIR/iostagectld.test.pid"; return 0; }
	kill -TERM "$pid" 2>/dev/null
	for _ in $(seq 1 100); do
		pid_running "$pid" || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	rm -f "$CTLD_DIR/iostagectld.test.pid"
	return 0
}

# ctld_line USER JSON: the request line a client sends, a credential of
# USER's carrying JSON (what common/net/peernet does, with the munge command)
ctld_line() {
	local cred
	cred=$(runuser -u "$1" -- munge -s "$2") || return 1
	printf '{"cred":"%s"}\n' "$cred"
}

# ctld_send LINE: LINE to the service as is; the reply on stdout
ctld_send() { printf '%s\n' "$1" | socat -t 5 - "TCP:127.0.0.1:$CTLD_PORT"; }

# ctld_request [USER=root] JSON: one credentialled request, the reply
ctld_request() {
	local user=root line
	[ $# -gt 1 ] && { user=$1; shift; }
	line=$(ctld_line "$user" "$1") || return 1
	ctld_send "$line"
}

export -f ctld_write_conf ctld_admin_user ctld_pid ctld_start ctld_stop \
	ctld_line ctld_send ctld_request
