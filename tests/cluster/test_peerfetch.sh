# shellcheck shell=bash
# Nodes fill each other (issue 29, item 2; docs/STAGING.md, "Filling from
# another node"): a stage worker that builds a version of an entry another
# node holds copies the files from that node's iostaged (PeerPort, the
# worker's own MUNGE credential) instead of the PFS. A job builds the
# entry on n1; on n2 the worker is run by hand, as the daemon would run
# it, and fills from n1: the same bytes, files fetched. Another user's
# worker is refused by n1 (the entry is not theirs) and copies from the
# source instead, without failing.

PEER_PORT=6826

# peer_entry SRC: the published version of SRC on n1's nvme, as
# TIER/KEY.vN
peer_entry() {
	local v
	v=$(cache_versions_of n1 nvme "$1")
	[ "$(printf '%s\n' "$v" | grep -c .)" = 1 ] || fail "versions of $1 on n1: '$v'"
	echo "nvme/$v"
}

# worker_on NODE USER SRC DST ENTRY: the stage worker as USER on NODE,
# filling DST from n1's ENTRY; its stdout into worker.USER
worker_on() {
	local node=$1 u=$2 src=$3 dst=$4 entry=$5
	install -d -o "$u" -m 0700 "$dst"
	on_node_as "$u" "$node" "$IOSTAGE_ROOT/usr/sbin/iostaged" --stage-worker \
		--peer "n1:$PEER_PORT" --peer-entry "$entry" "$src" "$dst" \
		>"worker.$u" 2>"worker.$u.err"
}

# figure FILE NAME: the number NAME has in FILE's JSON lines (the last)
figure() { sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" "$1" | tail -n1; }

test_peer_fill_from_another_node() {
	local ds entry dst jid other served
	ds=$(pfs_dataset fill 20)
	other=$(id -gn "$OTHER_USER")
	# per user (not readable by everyone: not a public entry), but the
	# other user's group may read the source itself
	chgrp -R "$other" "$ds"
	chmod -R g+rX,o-rwx "$ds"
	submit "$TEST_USER" -w n1 --io-profile="dl-train,data=$ds" -o /dev/null --wrap true >/dev/null ||
		fail "sbatch: $SUBMIT_OUT"
	jid=$SUBMIT_JOBID
	wait_job_state "$jid" COMPLETED 60 || fail "job $jid: $(job_state "$jid")"
	wait_finished n1 "$jid" || fail "job $jid not finished on n1"
	entry=$(peer_entry "$ds")

	# the job's user fills n2's copy from n1
	dst="$CLUSTER_PFS/$TEST_NAME/dst.test"
	worker_on n2 "$TEST_USER" "$ds" "$dst" "$entry" ||
		fail "worker as $TEST_USER: $(cat "worker.$TEST_USER" "worker.$TEST_USER.err")"
	assert_file_contains "result" "worker.$TEST_USER" '"ok":true'
	[ "$(figure "worker.$TEST_USER" fetched)" -gt 0 ] ||
		fail "nothing fetched: $(cat "worker.$TEST_USER")"
	assert_eq "files from the source" 0 "$(figure "worker.$TEST_USER" fallbacks)"
	assert_eq "bytes read from the source" 0 "$(figure "worker.$TEST_USER" source_bytes)"
	assert_eq "fetched bytes" "$(figure "worker.$TEST_USER" total_bytes)" \
		"$(figure "worker.$TEST_USER" fetched_bytes)"
	assert_eq "the copy" "$(tree_digest "$ds")" "$(tree_digest "$dst/data")"
	served=$(on_node n1 curl -s "http://127.0.0.1:${IOSTAGE_METRICS_PORT:-9464}/metrics" |
		sed -n 's/^iostage_peer_fetch_served_bytes_total \([0-9.e+]*\)$/\1/p')
	[ -n "$served" ] && [ "${served%%.*}" != 0 ] || fail "n1's /metrics: served bytes '$served'"

	# another user: n1 refuses (not their entry), the worker copies
	# everything from the source instead, and says so
	dst="$CLUSTER_PFS/$TEST_NAME/dst.other"
	worker_on n2 "$OTHER_USER" "$ds" "$dst" "$entry" ||
		fail "worker as $OTHER_USER: $(cat "worker.$OTHER_USER" "worker.$OTHER_USER.err")"
	assert_file_contains "result" "worker.$OTHER_USER" '"ok":true'
	assert_file_contains "note" "worker.$OTHER_USER" "cannot fill from node n1:$PEER_PORT"
	assert_file_contains "why" "worker.$OTHER_USER" "not found"
	assert_eq "fetched by $OTHER_USER" 0 "$(figure "worker.$OTHER_USER" fetched)"
	assert_eq "bytes read from the source" "$(figure "worker.$OTHER_USER" total_bytes)" \
		"$(figure "worker.$OTHER_USER" source_bytes)"
	assert_eq "the copy" "$(tree_digest "$ds")" "$(tree_digest "$dst/data")"
	wait_log n1 "uid $(id -u "$OTHER_USER")\\): fetch_open refused: cache entry .* not found" ||
		fail "n1 did not log the refusal"
}
