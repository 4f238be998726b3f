# shellcheck shell=bash
# Hostile users (issue 15 item 5), each attack against the real iostaged,
# Prolog, Epilog and Slurm, by the harness's unprivileged users: the
# victim TEST_USER (iostage-test) and the attacker OTHER_USER
# (iostage-other), or TEST_USER attacking root. A user must not read
# another user's staged data, telemetry or history, make root write
# outside the tier, or fill a tier past its capacity. The summary table
# (attacks already tested elsewhere included) is in docs/RELIABILITY.md.
. "$IT_DIR/datasets.sh"

SECRET=topsecret-$$-payload

reply_ok() { case "$1" in *'"ok":true'*) return 0 ;; esac; return 1; }

# a job's failure never drains the node
assert_node_not_drained() {
	local st
	st=$(node_state)
	case "$st" in
	*drain* | *DRAIN* | *down* | *fail*) fail "node state '$st' ($(node_reason))" ;;
	esac
}

# a private dataset of TEST_USER's with a secret in it
make_secret_dataset() {
	make_dataset "$1"
	echo "$SECRET" >"$1/train/secret.txt"
	chown "$TEST_USER:" "$1/train/secret.txt"
	chmod 0600 "$1/train/secret.txt"
}

# assert_secret_unread WHAT: no regular file on the tiers that OTHER_USER
# can read holds the secret (a copy made as OTHER_USER, a view, a leak)
assert_secret_unread() {
	local got
	got=$(find "$IOSTAGE_TIERS" -xdev -type f -print0 2>/dev/null |
		runuser -u "$OTHER_USER" -- xargs -0 -r grep -l -s -F "$SECRET" 2>/dev/null)
	[ -z "$got" ] || fail "$1: $OTHER_USER read the secret in: $got"
}

# start_secret_job DS: TEST_USER's job on DS, running (sleeps); sets JOB,
# DATA (its IOSTAGE_DATA)
start_secret_job() {
	submit "$TEST_USER" --io-profile="dl-train,data=$1" \
		--wrap 'echo "$IOSTAGE_DATA" >datapath; sleep 60' >/dev/null || fail "sbatch: $SUBMIT_OUT"
	JOB=$SUBMIT_JOBID
	for _ in $(seq 1 150); do [ -s datapath ] && break; sleep 0.2; done
	DATA=$(cat datapath)
	[ -n "$DATA" ] || fail "job $JOB did not start: $(job_state "$JOB") $(job_comment "$JOB")"
}

# While TEST_USER's job runs, OTHER_USER tries its data through the file
# system (the job's view, the cache entry) and every op of the socket
# that names a job, a path or a cache entry.
test_hostile_other_user_gets_nothing_of_a_running_job() {
	local ds="$TEST_WORKDIR/pfs/secret" r r2 id key op before after
	make_secret_dataset "$ds"
	start_secret_job "$ds"
	runuser -u "$TEST_USER" -- grep -qF "$SECRET" "$DATA/train/secret.txt" || fail "the owner cannot read its own data"
	# the search of assert_secret_unread, as the owner: it finds the copy
	[ -n "$(find "$IOSTAGE_TIERS" -xdev -type f -print0 2>/dev/null |
		runuser -u "$TEST_USER" -- xargs -0 -r grep -l -s -F "$SECRET" 2>/dev/null)" ] ||
		fail "control: the owner's search of the tiers finds no secret"
	# the file system: the view, its directory, the entry under cache/
	! runuser -u "$OTHER_USER" -- cat "$DATA/train/secret.txt" >/dev/null 2>&1 || fail "$OTHER_USER read the job's view"
	! runuser -u "$OTHER_USER" -- ls "$DATA" >/dev/null 2>&1 || fail "$OTHER_USER listed the job's view"
	assert_secret_unread "while the job runs"
	# the ops, with the victim's job id
	for op in wait job_env telemetry; do
		r=$(iostaged_request "$OTHER_USER" "{\"op\":\"$op\",\"job\":$JOB,\"timeout\":1}")
		assert_contains "$op of another user's job" "$r" '"ok":false'
		assert_not_contains "$op of another user's job" "$r" "$ds"
	done
	r=$(iostaged_request "$OTHER_USER" "{\"op\":\"phase\",\"job\":$JOB,\"name\":\"intruder\",\"event\":\"begin\"}")
	assert_contains "phase in another user's job" "$r" '"ok":false'
	r=$(iostaged_request "$OTHER_USER" "{\"op\":\"shim_report\",\"job\":$JOB,\"v\":1,\"pid\":1,\"reason\":\"exit\"}")
	assert_contains "shim_report into another user's job" "$r" '"ok":false'
	for op in stage abort finish task_register task_exit history_put; do
		r=$(iostaged_request "$OTHER_USER" "{\"op\":\"$op\",\"job\":$JOB,\"pid\":1}")
		assert_contains "$op as a user" "$r" "permission denied"
	done
	r=$(iostaged_request "$OTHER_USER" '{"op":"status"}')
	assert_not_contains "status lists another user's job" "$r" "\"job\":$JOB,"
	assert_not_contains "status shows another user's path" "$r" "$ds"
	r=$(iostaged_request "$OTHER_USER" '{"op":"cache_ls"}')
	assert_not_contains "cache_ls shows another user's entry" "$r" "$ds"
	key=$(iostaged_request '{"op":"cache_ls"}' | jq -r --arg p "$ds" '.entries[] | select(.source == $p) | .key' | head -n1)
	[ -n "$key" ] || fail "no cache entry of $ds for root's cache_ls"
	before=$(find "$IOSTAGE_TIERS/nvme/cache" -maxdepth 1 -name "$key.v*" | sort)
	r=$(iostaged_request "$OTHER_USER" "{\"op\":\"cache_evict\",\"key\":\"$key\"}")
	r2=$(iostaged_request "$OTHER_USER" "{\"op\":\"cache_evict\",\"path\":\"$ds\"}")
	after=$(find "$IOSTAGE_TIERS/nvme/cache" -maxdepth 1 -name "$key.v*" | sort)
	assert_eq "another user's entry after $OTHER_USER's evictions ($r / $r2)" "$before" "$after"
	r=$(iostaged_request "$OTHER_USER" "{\"op\":\"cache_evict\",\"path\":\"$ds\",\"user\":\"$TEST_USER\"}")
	assert_contains "cache_evict naming another user" "$r" "permission denied"
	r=$(iostaged_request "$OTHER_USER" "{\"op\":\"prestage\",\"path\":\"$ds\",\"user\":\"$TEST_USER\"}")
	assert_contains "prestage in another user's name" "$r" "permission denied"
	# prestage of the victim's path in the attacker's own name: built as
	# the attacker, who cannot read it; never the victim's entry
	r=$(iostaged_request "$OTHER_USER" "{\"op\":\"prestage\",\"path\":\"$ds\"}")
	if reply_ok "$r"; then
		id=$(printf '%s' "$r" | jq -r .id)
		r=$(iostaged_request "$OTHER_USER" "{\"op\":\"wait\",\"job\":$id,\"timeout\":30}")
		assert_contains "prestage of an unreadable tree" "$r" '"state":"failed"'
	fi
	assert_secret_unread "after the ops"
	scancel "$JOB"
	wait_job_state "$JOB" 'CANCELLED|COMPLETED|FAILED' 30 || true
	r=$(iostaged_request "$TEST_USER" "{\"op\":\"history_get\",\"job\":$JOB}")
	assert_not_contains "the victim's record" "$r" intruder
	r=$(iostaged_request "$OTHER_USER" "{\"op\":\"history_get\",\"job\":$JOB}")
	assert_contains "history_get of another user's job" "$r" '"ok":false'
	r=$(iostaged_request "$OTHER_USER" '{"op":"history_list"}')
	assert_not_contains "history_list of another user" "$r" "\"job\":$JOB"
}

# The profile names the attacker's own directory at submit (checked as the
# attacker by the plugin); before the Prolog runs it becomes a symlink to
# the victim's private dataset, which the victim has cached on the node.
# The copy runs as the attacker and the cache is keyed by user: the job
# gets nothing of the victim's.
test_hostile_profile_swapped_to_other_users_data() {
	local ds="$TEST_WORKDIR/pfs/secret" mine="$TEST_WORKDIR/o/mine"
	make_secret_dataset "$ds"
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds" --wrap true >/dev/null || fail "victim's job: $SUBMIT_OUT"
	mkdir -p "$mine/train" && echo mine >"$mine/train/secret.txt"
	chown -R "$OTHER_USER:" "$TEST_WORKDIR/o"
	submit "$OTHER_USER" -H --io-profile="dl-train,data=$mine" -o swap.out \
		--wrap 'cat "$IOSTAGE_DATA/train/secret.txt"; ls -la "$IOSTAGE_DATA"' >/dev/null || fail "sbatch: $SUBMIT_OUT"
	runuser -u "$OTHER_USER" -- sh -c "mv '$mine' '$mine.old' && ln -s '$ds' '$mine'" || fail "swap"
	scontrol release "$SUBMIT_JOBID"
	wait_job_state "$SUBMIT_JOBID" 'COMPLETED|FAILED|CANCELLED' 60 || fail "job did not end"
	! grep -qF "$SECRET" swap.out 2>/dev/null || fail "the attacker's job read the victim's data: $(cat swap.out)"
	assert_eq "attacker's job" FAILED "$(job_end_state "$SUBMIT_JOBID")"
	assert_contains "its reason" "$(job_comment "$SUBMIT_JOBID")" "iostage: staging failed"
	assert_secret_unread "after the swap"
}

# What the dataset path is when the Prolog runs: a directory at submit,
# then a symlink to /dev/zero, a FIFO, a symlink to /dev/urandom. Each job
# fails at once with a reason; nothing is read from the device or left on
# the tier (the 4 MiB 'small' one).
test_hostile_dataset_swapped_to_device_or_fifo() {
	local i ids=() p
	for i in 1 2 3; do
		mkdir -p "$TEST_WORKDIR/pfs/d$i" && echo x >"$TEST_WORKDIR/pfs/d$i/f"
	done
	chown -R "$TEST_USER:" "$TEST_WORKDIR/pfs"
	for i in 1 2 3; do
		submit "$TEST_USER" -H --io-profile="dl-train,data=$TEST_WORKDIR/pfs/d$i:small,timeout=60" \
			--wrap true >/dev/null || fail "sbatch: $SUBMIT_OUT"
		ids+=("$SUBMIT_JOBID")
	done
	p="$TEST_WORKDIR/pfs"
	runuser -u "$TEST_USER" -- sh -c "rm -r '$p/d1' && ln -s /dev/zero '$p/d1' &&
		rm -r '$p/d2' && mkfifo '$p/d2' && rm -r '$p/d3' && ln -s /dev/urandom '$p/d3'" || fail "swap"
	scontrol release "${ids[@]}"
	for i in 0 1 2; do
		wait_job_state "${ids[$i]}" 'COMPLETED|FAILED|CANCELLED' 40 || fail "job ${ids[$i]} did not end"
		assert_eq "job on swapped d$((i + 1))" FAILED "$(job_end_state "${ids[$i]}")"
		assert_contains "its reason" "$(job_comment "${ids[$i]}")" "iostage: staging failed"
	done
	assert_eq "small tier left" "" "$(find "$IOSTAGE_TIERS/small" -mindepth 2 -maxdepth 2 -name '.build*' 2>/dev/null)"
	assert_node_not_drained
}

# The tree changes under the copy: a directory swapped for a symlink to
# /etc and to another user's private directory (OTHER_USER's),
# a file swapped for a symlink to /etc/passwd, again and again while
# three jobs stage it. Each job either fails ("changed while being
# staged") or gets the tree; nothing from outside it is ever copied.
test_hostile_symlink_swap_during_copy() {
	local ds="$TEST_WORKDIR/pfs/race" priv="$TEST_WORKDIR/p" i racer n st
	# the loop in the background ends with the test, failed or not
	trap 'touch "$TEST_WORKDIR/stop"' EXIT
	mkdir -p "$priv" && echo "$SECRET" >"$priv/secret.txt"
	chown -R "$OTHER_USER:" "$priv" && chmod 0700 "$priv"
	mkdir -p "$ds/sub" "$ds/sub2"
	for i in $(seq 1 400); do echo "file $i" >"$ds/sub/f$i"; echo "two $i" >"$ds/sub2/g$i"; done
	head -c 3000000 /dev/urandom >"$ds/big"
	echo plain >"$ds/plain"
	chown -R "$TEST_USER:" "$ds"
	runuser -u "$TEST_USER" -- bash -c "
		cd '$ds' || exit 1
		while [ ! -e '$TEST_WORKDIR/stop' ]; do
			mv sub sub.x && ln -s /etc sub; rm -f sub; mv sub.x sub
			mv sub2 sub2.x && ln -s '$priv' sub2; rm -f sub2; mv sub2.x sub2
			ln -sf /etc/passwd plain.l && mv -T plain.l plain
			echo plain >plain.n && mv -T plain.n plain
		done" &
	racer=$!
	for i in 1 2 3; do
		submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds" -o "race$i.out" --wrap '
			cd "$IOSTAGE_DATA" || exit 3
			grep -rl -e "^root:" -e "'"$SECRET"'" . && echo LEAK
			echo RAN
			exit 0' >/dev/null
		[ -n "$SUBMIT_JOBID" ] || fail "sbatch: $SUBMIT_OUT"
		st=$(job_end_state "$SUBMIT_JOBID")
		echo "job $SUBMIT_JOBID: $st $(job_comment "$SUBMIT_JOBID")"
		case "$st" in
		COMPLETED) assert_file_contains "job $SUBMIT_JOBID's tree" "race$i.out" RAN ;;
		FAILED) assert_contains "job $SUBMIT_JOBID's reason" "$(job_comment "$SUBMIT_JOBID")" "iostage: staging failed" ;;
		*) fail "job $SUBMIT_JOBID: $st" ;;
		esac
		! grep -q LEAK "race$i.out" 2>/dev/null || fail "job $SUBMIT_JOBID saw files from outside the tree: $(cat "race$i.out")"
	done
	touch "$TEST_WORKDIR/stop"
	wait "$racer"
	n=$(find "$IOSTAGE_TIERS" -xdev -type f -print0 | xargs -0 -r grep -l -s -e '^root:x:0:0' -e "$SECRET" | head -3)
	[ -z "$n" ] || fail "files from outside the tree on the tier: $n"
}

# The job rearranges its own directory before the Epilog: its data mount
# points moved aside and replaced with a symlink to a root-owned directory
# outside the tier, its output directory replaced with such a symlink, a
# symlink, a FIFO and a hard link attempt. The Epilog (root) must neither
# write nor remove anything outside the tier, nor leave a mount behind.
test_hostile_job_dir_tricks_do_not_make_root_write_outside() {
	local ds="$TEST_WORKDIR/pfs/ds" victim="$TEST_WORKDIR/victim" out="$TEST_WORKDIR/pfsout" before jobdir
	make_dataset "$ds"
	mkdir -p "$victim/sub" "$out" && echo precious >"$victim/keep" && echo deep >"$victim/sub/keep"
	chmod 0755 "$victim" && chown "$TEST_USER:" "$out"
	before=$(cd "$victim" && find . -printf '%p %M %u %s %T@\n' | sort)
	cat >tricks.sh <<JOB
#!/bin/bash
J=\$IOSTAGE_JOB_DIR
echo JOBDIR=\$J
echo out >"\$IOSTAGE_OUTPUT/result"
mv "\$J/data" "\$J/data.moved" && ln -s "$victim" "\$J/data" && echo MOVED_DATA
rm -rf "\$IOSTAGE_OUTPUT" && ln -s "$victim" "\$IOSTAGE_OUTPUT" && echo SWAPPED_OUTPUT
ln -s "$victim" "\$J/victimlink"
ln -s "$victim/keep" "\$IOSTAGE_LOCAL/keeplink"
mkfifo "\$J/fifo" "\$IOSTAGE_LOCAL/fifo"
ln "$victim/keep" "\$J/hardlink" 2>/dev/null && echo HARDLINKED
exit 0
JOB
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds,out=$out" -o tricks.out --wrap "bash tricks.sh" >/dev/null ||
		fail "job failed: $SUBMIT_OUT $(cat tricks.out)"
	jobdir=$(sed -n 's/^JOBDIR=//p' tricks.out)
	[ -n "$jobdir" ] || fail "no job dir in the output: $(cat tricks.out)"
	assert_file_contains "the job moved its data mount points" tricks.out MOVED_DATA
	assert_eq "the victim directory" "$before" "$(cd "$victim" && find . -printf '%p %M %u %s %T@\n' | sort)"
	# sbatch --wait returns when the script ends; the Epilog (slow when
	# sanitized) unmounts the views while the job is still COMPLETING.
	job_end_state "$SUBMIT_JOBID" >/dev/null
	assert_eq "mounts left of the job" "" "$(awk -v d="$jobdir" 'index($5, d) == 1 || index($5, "'"$victim"'") == 1' /proc/self/mountinfo)"
	for _ in $(seq 1 50); do [ -e "$jobdir" ] || break; sleep 0.2; done
	[ ! -e "$jobdir" ] || fail "job directory left: $(ls -la "$jobdir")"
	assert_node_not_drained
}

# The same user's other process (a login shell, another job) races the
# Prolog: as soon as the job's directory appears, its data directory (the
# mount points' parent, root's) is moved aside and replaced by a symlink
# to a root-owned directory outside the tier, or by a directory of the
# user's. The view must never be mounted outside the tier nor in the
# user's directory; the job fails or gets its data, nothing else.
test_hostile_data_dir_swapped_while_staging() {
	local ds="$TEST_WORKDIR/pfs/big" victim="$TEST_WORKDIR/victim" racer i st
	# the loop in the background ends with the test, failed or not
	trap 'touch "$TEST_WORKDIR/stop"' EXIT
	mkdir -p "$ds" "$victim" && echo precious >"$victim/keep" && chmod 0755 "$victim"
	for i in $(seq 1 20); do head -c 2000000 /dev/urandom >"$ds/f$i"; done
	chown -R "$TEST_USER:" "$ds" && chmod 0750 "$ds"
	# job directories other tests left behind are not this test's
	ls -d "$IOSTAGE_TIERS"/nvme/jobs/[0-9]* >old-jobdirs 2>/dev/null
	cat >racer.sh <<RACER
n=0
while [ ! -e '$TEST_WORKDIR/stop' ]; do
	for d in '$IOSTAGE_TIERS'/nvme/jobs/[0-9]*; do
		grep -qxF "\$d" '$TEST_WORKDIR/old-jobdirs' && continue
		[ -d "\$d/data" ] && [ ! -L "\$d/data" ] || continue
		[ "\$(stat -c %u "\$d/data" 2>/dev/null)" = 0 ] || continue
		n=\$((n + 1))
		if [ \$((n % 2)) = 0 ]; then
			mv "\$d/data" "\$d/d\$n" && ln -s '$victim' "\$d/data" && echo swapped-link
		else
			mv "\$d/data" "\$d/d\$n" && mkdir "\$d/data" && echo swapped-dir
		fi
	done
done
RACER
	runuser -u "$TEST_USER" -- bash racer.sh >racer.out 2>&1 &
	racer=$!
	for i in 1 2 3 4; do
		submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds" -o "j$i.out" --wrap 'ls "$IOSTAGE_DATA" | wc -l' >/dev/null
		[ -n "$SUBMIT_JOBID" ] || fail "sbatch: $SUBMIT_OUT"
		st=$(job_end_state "$SUBMIT_JOBID")
		echo "job $SUBMIT_JOBID: $st $(job_comment "$SUBMIT_JOBID")"
		[ "$st" = COMPLETED ] || [ "$st" = FAILED ] || fail "job $SUBMIT_JOBID: $st"
		[ "$(awk -v v="$victim" 'index($5, v) == 1' /proc/self/mountinfo)" = "" ] || fail "a mount under $victim"
	done
	touch "$TEST_WORKDIR/stop"
	wait "$racer"
	echo "racer: $(sort racer.out | uniq -c | tr '\n' ' ')"
	grep -q swapped racer.out || fail "the racer never swapped a data directory"
	assert_eq "victim directory" keep "$(ls "$victim")"
	assert_eq "mounts left under the tiers" "" "$(awk -v t="$IOSTAGE_TIERS/nvme/jobs/" 'index($5, t) == 1' /proc/self/mountinfo)"
	assert_node_not_drained
}

# Capacity: the 4 MiB 'small' tier against a sparse file far larger than
# its blocks, one file hard-linked many times, and a file that grows
# while it is copied. Each job is staged within the capacity or refused;
# the tier never holds more than its capacity.
test_hostile_tier_capacity_holds() {
	local p="$TEST_WORKDIR/pfs" r used cap i grower
	# the loop in the background ends with the test, failed or not
	trap 'touch "$TEST_WORKDIR/stop"' EXIT
	mkdir -p "$p/sparse" "$p/links" "$p/grow"
	truncate -s 2G "$p/sparse/hole"
	head -c 1048576 /dev/urandom >"$p/links/one"
	for i in $(seq 1 40); do ln "$p/links/one" "$p/links/l$i"; done
	head -c 1000000 /dev/urandom >"$p/grow/g"
	chown -R "$TEST_USER:" "$p"
	for d in sparse links; do
		submit_wait "$TEST_USER" --io-profile="dl-train,data=$p/$d:small" --wrap true >/dev/null
		echo "$d: $(job_state "$SUBMIT_JOBID") $(job_comment "$SUBMIT_JOBID")"
		used=$(du -sk --apparent-size "$IOSTAGE_TIERS/small" | cut -f1)
		[ "$used" -le 4096 ] || fail "$d: the 4 MiB tier holds $used KiB (apparent)"
	done
	# between 1 MB and about 3.5 MB: the walk sees it fit, the copy sees
	# it grow
	runuser -u "$TEST_USER" -- bash -c "while [ ! -e '$TEST_WORKDIR/stop' ]; do
		truncate -s 1000000 '$p/grow/g'; head -c 2500000 /dev/zero >>'$p/grow/g'; done" &
	grower=$!
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$p/grow:small" --wrap true >/dev/null
	echo "grow: $(job_state "$SUBMIT_JOBID") $(job_comment "$SUBMIT_JOBID")"
	touch "$TEST_WORKDIR/stop"
	wait "$grower"
	used=$(du -sk "$IOSTAGE_TIERS/small" | cut -f1)
	[ "$used" -le 4096 ] || fail "grow: the 4 MiB tier holds $used KiB"
	r=$(iostaged_request '{"op":"status"}')
	cap=$(printf '%s' "$r" | jq '.tiers[] | select(.name == "small") | .capacity_bytes')
	used=$(printf '%s' "$r" | jq '.tiers[] | select(.name == "small") | .used_bytes')
	[ "$used" -le "$cap" ] || fail "iostaged counts $used bytes used on the small tier of $cap"
}
