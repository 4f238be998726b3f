# shellcheck shell=bash
# iostagectld on loopback (ControllerHost=127.0.0.1), from the installed
# tree: --check-config, daemon mode, every refusal of a credential (none,
# forged, replayed, expired), users reading their own jobs only and never
# filing, the admin group reading all, --import of a node's old history,
# --repair-history on the service, and iostaged keeping no history when a
# service is configured.

TEST_UID=$(id -u "$TEST_USER")
OTHER_UID=$(id -u "$OTHER_USER")

# ctld_file JOB USER UID [NAME] [NODE] [END]: root files a record (ended
# END, default now)
ctld_file() {
	local now=${6:-$(date +%s)}
	ctld_request root "$(jq -cn --argjson j "$1" --arg u "$2" --argjson uid "$3" \
		--arg name "${4:-ctld-job}" --arg n "${5:-node1}" --argjson e "$now" \
		'{op:"file",job:$j,node:$n,nodes:[$n],record:{schema:1,job:$j,user:$u,uid:$uid,
		  job_name:$name,node:$n,state:"completed",start:($e - 60),end:$e,
		  datasets:[{name:"d",source:"/pfs/ctld",tier:"nvme",bytes:1000,files:6,result:"hit"}],
		  outputs:[],phases:[{name:"run",seconds:30}]}}')"
}

# the log lines written since MARK (a line count of $CTLD_LOG)
ctld_log_since() { tail -n +"$(($1 + 1))" "$CTLD_LOG"; }
ctld_log_mark() { wc -l <"$CTLD_LOG" 2>/dev/null || echo 0; }

test_ctld_check_config() {
	local out
	out=$(iostagectld --check-config -c "$CTLD_CONF" 2>&1)
	assert_contains "check-config verdict" "$out" "iostagectld: $CTLD_CONF: ok (listens on 127.0.0.1 port $CTLD_PORT"
	assert_contains "the service's history" "$out" "history in $CTLD_STATE/history"
	# the node's conf has no ControllerHost: nothing would reach a service
	out=$(iostagectld --check-config -c "$IOSTAGE_CONF" 2>&1)
	assert_rc "no ControllerHost: refused" 1 iostagectld --check-config -c "$IOSTAGE_CONF"
	assert_contains "says why" "$out" "ControllerHost= is empty"
	sed 's/^AdminGroup=.*/AdminGroup=no-such-group-ctld/' "$CTLD_CONF" >"$TEST_WORKDIR/bad.conf"
	out=$(iostagectld --check-config -c "$TEST_WORKDIR/bad.conf" 2>&1)
	assert_contains "an unknown AdminGroup" "$out" "AdminGroup=no-such-group-ctld: no such group"
	printf 'ControllerPort=0\n' >>"$TEST_WORKDIR/bad.conf"
	out=$(iostagectld --check-config -c "$TEST_WORKDIR/bad.conf" 2>&1)
	assert_contains "a bad port" "$out" "key 'ControllerPort'"
}

test_ctld_daemon_mode() {
	local out pid
	ctld_admin_user || fail "cannot create the admin group"
	ctld_stop
	# the parent returns once the service listens
	"$IOSTAGE_SBINDIR/iostagectld" -c "$CTLD_CONF" || fail "daemon mode failed"
	out=$(ctld_request root '{"op":"ping"}')
	assert_contains "answers at once" "$out" '"service":"iostagectld"'
	pid=$(cat "$CTLD_DIR/run/iostagectld.pid")
	assert_eq "pid file names it" iostagectld "$(cat "/proc/$pid/comm")"
	# a second one stops at the taken port, the first is untouched
	out=$("$IOSTAGE_SBINDIR/iostagectld" -f -c "$CTLD_CONF" 2>&1)
	assert_contains "second instance refused" "$out" "port $CTLD_PORT"
	kill -TERM "$pid"
	for _ in $(seq 1 50); do pid_running "$pid" || break; sleep 0.1; done
	assert_rc "stopped on SIGTERM" 1 pid_running "$pid"
	assert_rc "pid file removed" 1 test -e "$CTLD_DIR/run/iostagectld.pid"
}

test_ctld_refuses_bad_credentials() {
	local out mark line cred bad c
	ctld_admin_user || fail "cannot create the admin group"
	ctld_pid >/dev/null || ctld_start || fail "iostagectld did not start"
	mark=$(ctld_log_mark)
	# no credential
	out=$(ctld_send '{"op":"history_list"}')
	assert_contains "no credential: refused" "$out" '"refused":true'
	assert_contains "no credential: one line" "$out" 'malformed request: want {\"cred\":\"MUNGE:...\"}'
	# forged: one character of a real credential changed
	cred=$(runuser -u "$TEST_USER" -- munge -s '{"op":"history_list"}')
	c=${cred:40:1}
	[ "$c" = A ] && c=B || c=A
	bad="${cred:0:40}$c${cred:41}"
	out=$(ctld_send "{\"cred\":\"$bad\"}")
	assert_contains "forged: refused" "$out" '"refused":true'
	assert_contains "forged: why" "$out" "credential refused: invalid"
	# replayed: the same line twice
	line=$(ctld_line "$TEST_USER" '{"op":"history_list"}')
	out=$(ctld_send "$line")
	assert_contains "first use answered" "$out" '"ok":true'
	out=$(ctld_send "$line")
	assert_contains "replayed: refused" "$out" '"refused":true'
	assert_contains "replayed: why" "$out" "credential refused: replayed"
	# expired: a one-second credential used three seconds later
	cred=$(runuser -u "$TEST_USER" -- munge -t 1 -s '{"op":"history_list"}')
	sleep 3
	out=$(ctld_send "{\"cred\":\"$cred\"}")
	assert_contains "expired: refused" "$out" '"refused":true'
	assert_contains "expired: why" "$out" "credential refused: expired"
	# each refusal has its log line, naming the peer
	out=$(ctld_log_since "$mark")
	assert_eq "four refusals logged" 4 "$(grep -c '127.0.0.1: request refused: ' <<<"$out")"
	assert_contains "the replay is logged" "$out" "request refused: credential refused: replayed"
	assert_contains "the expiry is logged" "$out" "request refused: credential refused: expired"
}

test_ctld_users_read_their_own() {
	local out mark end
	ctld_admin_user || fail "cannot create the admin group"
	ctld_pid >/dev/null || ctld_start || fail "iostagectld did not start"
	end=$(date +%s)
	assert_contains "root files" "$(ctld_file 910001 "$TEST_USER" "$TEST_UID" ctld-job node1 "$end")" '"filed":true'
	assert_contains "root files" "$(ctld_file 910002 "$OTHER_USER" "$OTHER_UID")" '"filed":true'
	assert_contains "a retry is a duplicate" \
		"$(ctld_file 910001 "$TEST_USER" "$TEST_UID" ctld-job node1 "$end")" '"duplicate":true'
	out=$(ctld_request "$TEST_USER" '{"op":"history_get","job":910001}')
	assert_contains "a user reads their own job" "$out" '"job_name":"ctld-job"'
	mark=$(ctld_log_mark)
	out=$(ctld_request "$TEST_USER" '{"op":"history_get","job":910002}')
	assert_eq "not another user's" '{"ok":false,"error":"job 910002: not in your history"}' "$out"
	out=$(ctld_request "$TEST_USER" '{"op":"history_list","limit":1000}')
	assert_contains "their list has their job" "$out" '"job":910001'
	assert_not_contains "and not the other's" "$out" '"job":910002'
	out=$(ctld_request "$TEST_USER" "{\"op\":\"history_list\",\"user\":\"$OTHER_USER\"}")
	assert_contains "nor another user's list" "$out" "only root or AdminGroup may read another user"
	out=$(ctld_request "$TEST_USER" "{\"op\":\"recommend\",\"user\":\"$OTHER_USER\"}")
	assert_contains "nor another user's advice" "$out" "only root or AdminGroup may read another user"
	out=$(ctld_request "$TEST_USER" '{"op":"recommend","job_name":"ctld-job"}')
	assert_contains "their own advice" "$out" "\"user\":\"$TEST_USER\""
	# a user files: refused, and nothing filed
	out=$(ctld_request "$TEST_USER" "$(jq -cn --argjson uid "$TEST_UID" --arg u "$TEST_USER" \
		'{op:"file",job:910003,node:"node1",record:{job:910003,user:$u,uid:$uid,end:1}}')")
	assert_contains "a user may not file" "$out" "permission denied: only root on a cluster node files job records (credential of uid $TEST_UID)"
	assert_contains "not filed" "$(ctld_request root '{"op":"history_get","job":910003}')" "not in your history"
	out=$(ctld_log_since "$mark")
	assert_contains "the other's job is logged" "$out" "uid $TEST_UID op 'history_get' declined: job 910002"
	assert_contains "the filing is logged" "$out" "uid $TEST_UID op 'file' declined: permission denied"
}

test_ctld_admin_group_reads_all() {
	local out
	ctld_admin_user || fail "cannot create the admin group"
	ctld_pid >/dev/null || ctld_start || fail "iostagectld did not start"
	ctld_file 910011 "$TEST_USER" "$TEST_UID" >/dev/null
	ctld_file 910012 "$OTHER_USER" "$OTHER_UID" >/dev/null
	out=$(ctld_request "$CTLD_ADMIN_USER" '{"op":"ping"}')
	assert_contains "the admin group reads all" "$out" '"read_all":true'
	for j in 910011 910012; do
		out=$(ctld_request "$CTLD_ADMIN_USER" "{\"op\":\"history_get\",\"job\":$j}")
		assert_contains "admin reads job $j" "$out" "\"job\":$j"
	done
	out=$(ctld_request "$CTLD_ADMIN_USER" '{"op":"history_list","limit":1000}')
	assert_contains "admin's list: both users" "$out" '"job":910011'
	assert_contains "admin's list: both users" "$out" '"job":910012'
	out=$(ctld_request "$CTLD_ADMIN_USER" "{\"op\":\"recommend\",\"user\":\"$OTHER_USER\"}")
	assert_contains "admin asks for another user's advice" "$out" "\"user\":\"$OTHER_USER\""
	# but files nothing: only root does
	out=$(ctld_request "$CTLD_ADMIN_USER" "$(jq -cn --argjson uid "$TEST_UID" --arg u "$TEST_USER" \
		'{op:"file",job:910013,node:"node1",record:{job:910013,user:$u,uid:$uid,end:1}}')")
	assert_contains "the admin group does not file" "$out" "permission denied"
}

# A site upgrading: the node's history (iostaged without a service) is
# imported into the service, twice: the second changes nothing.
test_ctld_import_node_history() {
	local out j
	for j in 1 2 3; do
		out=$(iostaged_request "$(printf '{"op":"history_put","record":{"schema":1,"job":92000%s,"user":"%s","uid":%s,"job_name":"old-node-job","node":"node1","state":"completed","start":%s,"end":%s,"datasets":[],"outputs":[],"phases":[{"name":"run","seconds":5}]}}' \
			"$j" "$TEST_USER" "$TEST_UID" "$(($(date +%s) - 100))" "$(($(date +%s) - 40))")")
		assert_contains "node history job $j" "$out" '"ok":true'
	done
	# the node's StateDir, copied to the service host with the node stopped
	iostaged_stop
	cp -a "$IOSTAGE_STATE" "$TEST_WORKDIR/node1-state"
	iostaged_start || fail "iostaged did not restart"
	ctld_stop
	out=$("$IOSTAGE_SBINDIR/iostagectld" --import "$TEST_WORKDIR/node1-state" -c "$CTLD_CONF" 2>&1) ||
		fail "import failed: $out"
	assert_contains "import report" "$out" "into $CTLD_STATE/history:"
	assert_contains "every job of the node imported" "$out" "already recorded, 0 unreadable, 0 refused"
	# what the node held is now the service's (its own records win)
	out=$("$IOSTAGE_SBINDIR/iostagectld" --import "$TEST_WORKDIR/node1-state/history" -c "$CTLD_CONF" 2>&1) ||
		fail "second import failed: $out"
	assert_contains "second import: nothing new" "$out" ": 0 jobs imported,"
	ctld_start || fail "iostagectld did not start after the import"
	for j in 1 2 3; do
		out=$(ctld_request "$TEST_USER" "{\"op\":\"history_get\",\"job\":92000$j}")
		assert_contains "imported job 92000$j, read by its owner" "$out" '"job_name":"old-node-job"'
	done
	out=$(ctld_request "$TEST_USER" '{"op":"history_list","limit":1000}')
	assert_eq "imported once" 1 "$(jq '[.records[] | select(.job == 920001)] | length' <<<"$out")"
	# while the service runs its database is its own: refused, one line
	out=$("$IOSTAGE_SBINDIR/iostagectld" --import "$TEST_WORKDIR/node1-state" -c "$CTLD_CONF" 2>&1)
	assert_contains "import with the service running" "$out" "(is iostagectld running? stop it first)"
	# bad sources: one line, exit 1
	ctld_stop
	out=$("$IOSTAGE_SBINDIR/iostagectld" --import "$TEST_WORKDIR/nothing" -c "$CTLD_CONF" 2>&1)
	assert_contains "a missing source" "$out" "iostagectld: --import $TEST_WORKDIR/nothing: "
	assert_eq "one line" 1 "$(printf '%s\n' "$out" | wc -l)"
	out=$("$IOSTAGE_SBINDIR/iostagectld" --import "$CTLD_STATE" -c "$CTLD_CONF" 2>&1)
	assert_contains "its own history" "$out" "the service's own history"
}

test_ctld_repair_history() {
	local out mark
	ctld_pid >/dev/null || ctld_start || fail "iostagectld did not start"
	ctld_file 930001 "$TEST_USER" "$TEST_UID" damaged-ctld >/dev/null
	ctld_stop
	printf 'garbage\n' >"$CTLD_STATE/history/CURRENT"
	mark=$(ctld_log_mark)
	ctld_start || fail "iostagectld did not start with a damaged history"
	out=$(ctld_log_since "$mark")
	assert_contains "service log" "$out" "history disabled: history: cannot open $CTLD_STATE/history"
	assert_contains "points at the repair" "$out" "iostagectld --repair-history recovers it"
	out=$(ctld_request "$TEST_USER" '{"op":"history_list"}')
	assert_contains "ops say why" "$out" '"error":"history disabled: '
	assert_eq "CURRENT untouched" garbage "$(cat "$CTLD_STATE/history/CURRENT")"
	ctld_stop
	out=$("$IOSTAGE_SBINDIR/iostagectld" --repair-history -c "$CTLD_CONF" 2>&1) ||
		fail "repair failed: $out"
	assert_contains "repair report" "$out" "iostagectld: history $CTLD_STATE/history repaired"
	assert_contains "copy kept" "$out" "damaged files are kept in $CTLD_STATE/history.damaged."
	ctld_start || fail "iostagectld did not start after the repair"
	out=$(ctld_request "$TEST_USER" '{"op":"history_get","job":930001}')
	assert_contains "the job is back" "$out" '"job_name":"damaged-ctld"'
}

# With ControllerHost= set, iostaged opens no history of its own.
test_ctld_iostaged_keeps_no_history() {
	local out
	iostaged_stop
	cp "$IOSTAGE_CONF" "$TEST_WORKDIR/node.conf"
	printf 'ControllerHost=127.0.0.1\nControllerPort=%s\n' "$CTLD_PORT" >>"$IOSTAGE_CONF"
	iostaged_start || { cp "$TEST_WORKDIR/node.conf" "$IOSTAGE_CONF"; fail "iostaged did not start"; }
	out=$(iostaged_request '{"op":"history_list"}')
	cp "$TEST_WORKDIR/node.conf" "$IOSTAGE_CONF"
	iostaged_restart || fail "iostaged did not restart with its own conf"
	assert_contains "the node's history ops" "$out" "history disabled: kept by iostagectld at 127.0.0.1 port $CTLD_PORT"
	assert_contains "iostaged log" "$(cat "$IOSTAGED_LOG")" "history: kept by iostagectld at 127.0.0.1"
	out=$(iostaged_request '{"op":"history_list"}')
	assert_contains "back to the node-local history" "$out" '"ok":true'
}
