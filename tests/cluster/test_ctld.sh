# shellcheck shell=bash
# iostagectld on the controller node: reached by name (ControllerHost=ctl)
# from the login and compute nodes, MUNGE credentials decoded to the caller,
# root files, users read their own jobs; stopped and started again.

ctld_file_record() { # NODE JOB USER UID: root on NODE files a small record
	local now
	now=$(date +%s) # within HistoryRetention
	ctld_request "$1" root "$(jq -cn --argjson j "$2" --arg u "$3" --argjson uid "$4" --arg n "$1" \
		--argjson e "$now" '{op:"file",job:$j,node:$n,nodes:[$n],record:{job:$j,user:$u,
		  uid:$uid,job_name:"t",node:$n,state:"COMPLETED",start:($e - 60),end:$e}}')"
}

test_ctld_ping_from_every_node() {
	local node out
	[ "$CLUSTER_CONTROLLER" = yes ] || { echo "skipped: CLUSTER_CONTROLLER=no"; return 0; }
	assert_rc "iostagectld is running on ctl" 0 ctld_pid
	assert_contains "iostage.conf names ctl" "$(cat "$IOSTAGE_CONF")" "ControllerHost=ctl"
	for node in login $CLUSTER_COMPUTE_NODES; do
		out=$(ctld_request "$node" root '{"op":"ping"}')
		assert_contains "ping from $node as root" "$out" '"ok":true'
		assert_contains "ping from $node: uid 0" "$out" '"uid":0'
	done
	out=$(ctld_request login "$TEST_USER" '{"op":"ping"}')
	assert_contains "ping from login as a user: their uid" "$out" "\"uid\":$(id -u "$TEST_USER")"
	assert_contains "a user reads only their own" "$out" '"read_all":false'
}

test_ctld_file_and_read() {
	local out uid ouid
	uid=$(id -u "$TEST_USER")
	ouid=$(id -u "$OTHER_USER")
	out=$(ctld_file_record n2 424201 "$TEST_USER" "$uid")
	assert_contains "root on n2 files" "$out" '"filed":true'
	out=$(ctld_file_record n2 424201 "$TEST_USER" "$uid")
	assert_contains "the same filing again is a duplicate" "$out" '"duplicate":true'
	out=$(ctld_request login "$TEST_USER" '{"op":"history_get","job":424201}')
	assert_contains "the owner reads it from login" "$out" '"job":424201'
	out=$(ctld_request login "$OTHER_USER" '{"op":"history_get","job":424201}')
	assert_contains "another user does not" "$out" "job 424201: not in your history"
	out=$(ctld_request n1 "$TEST_USER" "$(jq -cn --argjson u "$uid" \
		'{op:"file",job:424202,node:"n1",record:{job:424202,user:"x",uid:$u,end:1}}')")
	assert_contains "a user may not file" "$out" "permission denied: only root"
	assert_file_contains "the refusal is logged" "$(ctld_log)" "uid $uid op 'file' declined"
	: "$ouid"
}

test_ctld_restart_keeps_history() {
	local out
	ctld_file_record n3 424203 "$TEST_USER" "$(id -u "$TEST_USER")" >/dev/null
	ctld_stop
	assert_rc "stopped" 1 ctld_pid
	out=$(ctld_request login root '{"op":"ping"}' 2>&1)
	assert_not_contains "no reply while stopped" "$out" '"ok":true'
	ctld_start
	out=$(ctld_request login root '{"op":"history_get","job":424203}')
	assert_contains "the record survived the restart" "$out" '"node":"n3"'
	ctld_kill
	ctld_start
	out=$(ctld_request login root '{"op":"history_get","job":424203}')
	assert_contains "and a kill -9" "$out" '"node":"n3"'
}
