# shellcheck shell=bash
# iostaged on its own: peer checks, garbage input, config checks, daemon
# mode and a clean SIGTERM.

reply_ok() { case "$1" in *'"ok":true'*) return 0 ;; esac; return 1; }

test_non_root_peer_cannot_stage_or_finish() {
	local r
	r=$(iostaged_request "$TEST_USER" '{"op":"stage","job":999001,"uid":0,"gid":0,"user":"root","profile":{}}')
	assert_contains "stage as a user" "$r" '"ok":false'
	assert_contains "stage as a user" "$r" "permission denied"
	r=$(iostaged_request "$TEST_USER" '{"op":"finish","job":1}')
	assert_contains "finish as a user" "$r" '"ok":false'
	assert_contains "finish as a user" "$r" "permission denied"
	r=$(iostaged_request "$TEST_USER" '{"op":"abort","job":1,"reason":"x"}')
	assert_contains "abort as a user" "$r" "permission denied"
	r=$(iostaged_request "$TEST_USER" '{"op":"ping"}')
	reply_ok "$r" || fail "ping as a user: expected ok, got '$r'"
}

test_user_cannot_see_another_users_job() {
	local ds="$TEST_WORKDIR/ds" r
	mkdir -p "$ds" && echo hi >"$ds/f" && chown -R "$TEST_USER:" "$ds"
	submit "$TEST_USER" --io-profile="dl-train,data=$ds" --wrap 'touch started; sleep 20' >/dev/null ||
		fail "sbatch failed: $SUBMIT_OUT"
	for _ in $(seq 1 100); do [ -e started ] && break; sleep 0.2; done
	r=$(iostaged_request "$OTHER_USER" "{\"op\":\"job_env\",\"job\":$SUBMIT_JOBID}")
	assert_contains "job_env of another user's job" "$r" '"ok":false'
	r=$(iostaged_request "$TEST_USER" "{\"op\":\"job_env\",\"job\":$SUBMIT_JOBID}")
	reply_ok "$r" || fail "job_env by the owner: expected ok, got '$r'"
	assert_contains "job_env by the owner" "$r" "IOSTAGE_DATA"
	scancel "$SUBMIT_JOBID"
}

test_garbage_input_keeps_daemon_serving() {
	local r pid
	pid=$(iostaged_pid)
	r=$(iostaged_request 'this is not json')
	assert_contains "not JSON" "$r" '"ok":false'
	r=$(iostaged_request '[1,2,3]')
	assert_contains "array" "$r" '"ok":false'
	r=$(iostaged_request '{}')
	assert_contains "no op" "$r" "key 'op'"
	r=$(iostaged_request '{"op":42}')
	assert_contains "op not a string" "$r" "key 'op'"
	r=$(iostaged_request '{"op":"format_disk"}')
	assert_contains "unknown op" "$r" "unknown op"
	r=$(iostaged_request '{"op":"stage","job":"x"}')
	assert_contains "bad field" "$r" '"ok":false'
	r=$(iostaged_request '{"op":"wait","job":123456789,"timeout":1}')
	assert_contains "unknown job" "$r" "unknown job"
	# An oversized line, then random binary, each on its own connection.
	r=$(head -c 400000 /dev/zero | tr '\0' x | socat -t 5 - "UNIX-CONNECT:$IOSTAGE_SOCKET")
	assert_contains "oversized line" "$r" '"ok":false'
	head -c 65536 /dev/urandom | socat -t 2 - "UNIX-CONNECT:$IOSTAGE_SOCKET" >/dev/null 2>&1
	# Many connections that send nothing and hang up.
	for _ in $(seq 1 50); do socat -u /dev/null "UNIX-CONNECT:$IOSTAGE_SOCKET" 2>/dev/null; done
	r=$(iostaged_request '{"op":"ping"}')
	reply_ok "$r" || fail "ping after garbage: expected ok, got '$r'"
	assert_eq "iostaged pid" "$pid" "$(iostaged_pid)"
}

test_check_config() {
	local out rc
	out=$(iostaged --check-config -c "$IOSTAGE_CONF" 2>&1)
	assert_eq "--check-config on a good file: exit" 0 "$?"
	assert_contains "--check-config on a good file" "$out" "ok"
	printf 'SocketPath=/run/x.sock\nTier=a Path=/tmp/a\nBogusKey=1\n' >bad.conf
	out=$(iostaged --check-config -c bad.conf 2>&1)
	rc=$?
	assert_ne "--check-config on a bad file: exit" 0 "$rc"
	assert_contains "--check-config on a bad file" "$out" "bad.conf:3"
	assert_contains "--check-config on a bad file" "$out" "BogusKey"
	# PublicUser must exist and not be root, unless public datasets are off.
	printf 'Tier=a Path=/tmp/a\nPublicUser=iostage-nosuchuser\n' >pub.conf
	out=$(iostaged --check-config -c pub.conf 2>&1)
	assert_ne "--check-config, unknown PublicUser: exit" 0 "$?"
	assert_contains "--check-config, unknown PublicUser" "$out" \
		"PublicUser=iostage-nosuchuser: no such user"
	printf 'Tier=a Path=/tmp/a\nPublicUser=root\n' >pub.conf
	out=$(iostaged --check-config -c pub.conf 2>&1)
	assert_ne "--check-config, PublicUser=root: exit" 0 "$?"
	assert_contains "--check-config, PublicUser=root" "$out" "it must be an unprivileged account"
	printf 'Tier=a Path=/tmp/a\nPublicUser=iostage-nosuchuser\nPublicDatasets=no\n' >pub.conf
	out=$(iostaged --check-config -c pub.conf 2>&1)
	assert_eq "--check-config, PublicDatasets=no: exit" 0 "$?"
}

# A second daemon with its own socket and tiers, for lifecycle tests.
write_private_conf() {
	mkdir -p "$TEST_WORKDIR/t"
	cat >"$TEST_WORKDIR/d.conf" <<CONF
SocketPath=$TEST_WORKDIR/d.sock
StateDir=$TEST_WORKDIR/state
ProfileDir=$IOSTAGE_SYSCONFDIR/slurm/iostage.d
Tier=nvme Path=$TEST_WORKDIR/t/nvme
CONF
}

test_sigterm_exits_cleanly_in_foreground() {
	local pid rc
	write_private_conf
	iostaged -f -c "$TEST_WORKDIR/d.conf" 2>fg.log &
	pid=$!
	for _ in $(seq 1 50); do [ -S "$TEST_WORKDIR/d.sock" ] && break; sleep 0.1; done
	[ -S "$TEST_WORKDIR/d.sock" ] || fail "no socket; log: $(cat fg.log)"
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	assert_eq "exit status after SIGTERM" 0 "$rc"
	[ ! -e "$TEST_WORKDIR/d.sock" ] || fail "socket left behind after SIGTERM"
}

test_daemon_mode_detaches_when_ready() {
	local pid
	write_private_conf
	iostaged -c "$TEST_WORKDIR/d.conf" || fail "iostaged (daemon mode) exited non-zero"
	# The parent returns only once the daemon answers.
	iostage -c "$TEST_WORKDIR/d.conf" status >/dev/null || fail "daemon not answering right after start"
	pid=$(cat "$TEST_WORKDIR/iostaged.pid" 2>/dev/null)
	pid_running "$pid" || fail "no live pid in $TEST_WORKDIR/iostaged.pid"
	kill -TERM "$pid"
	for _ in $(seq 1 50); do pid_running "$pid" || break; sleep 0.1; done
	! pid_running "$pid" || fail "daemon still running after SIGTERM"
}

test_second_daemon_refuses_live_socket() {
	local out rc
	out=$(iostaged -f -c "$IOSTAGE_CONF" 2>&1)
	rc=$?
	assert_ne "second iostaged on the same socket: exit" 0 "$rc"
	assert_contains "second iostaged" "$out" "already"
	iostaged_request '{"op":"ping"}' | grep -q '"ok":true' || fail "first daemon hurt by the second"
}
