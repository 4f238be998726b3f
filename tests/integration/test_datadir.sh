# shellcheck shell=bash
# What a job sees of its datasets (docs/STAGING.md): IOSTAGE_DATA_<NAME> is
# a read-only bind mount of the cache entry, a real directory (or a file
# for a single-file dataset) on which find, du, rsync and diff behave as on
# the source; nobody writes through it; it is unmounted when the job ends,
# and a restarted daemon unmounts the views of jobs it no longer knows,
# without ever touching the cache entries behind them.
. "$IT_DIR/datasets.sh"

# mounts_under DIR: the mount points below DIR in our mount table.
mounts_under() {
	awk -v d="$1/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo
}

# wait_finished JOBID: the Epilog's finish has been logged.
dd_wait_finished() {
	for _ in $(seq 1 100); do
		grep -q "job $1: finished" "$IOSTAGED_LOG" && return 0
		sleep 0.1
	done
	fail "job $1 was not finished by the Epilog"
}

# The cache key K of dataset NAME of job JOBID, from its "built"/"hit" line.
dd_entry_of() {
	sed -n "s/.*job $1: dataset '$2': \(built\|cache hit\) \([0-9a-f]\{32\}\.v[0-9]*\).*/\2/p" "$IOSTAGED_LOG" | head -n1
}

# The same listing, relative to its top, of files (find -type f).
files_of() { (cd "$1" && find . -type f | sort); }

# tree_digest without directory sizes (they depend on a directory's history).
dd_digest() { tree_digest "$1" | sed -E 's/^d (.*) [0-9]+ $/d \1/'; }

test_data_is_a_real_read_only_directory() {
	local src="$TEST_WORKDIR/pfs/tree" file="$TEST_WORKDIR/pfs/weights"
	local jid jobdir e1 e2 m
	make_dataset "$src"
	head -c 200000 /dev/urandom >"$file"
	chown "$TEST_USER:" "$file"
	mkdir -p dst && chown "$TEST_USER:" dst
	cat >job.sh <<'JOB'
#!/bin/bash
D=$IOSTAGE_DATA F=$IOSTAGE_DATA_WEIGHTS
[ -d "$D" ] && [ ! -L "$D" ] && echo REAL_DIR
[ -f "$F" ] && [ ! -L "$F" ] && echo REAL_FILE
[ "$D" = "$IOSTAGE_DATA_TREE" ] && echo NAMED
(cd "$D" && find . -type f | sort) >staged.find
find "$D" -type f | wc -l >staged.count
du -s "$D" | cut -f1 >staged.du
du -s "$F" | cut -f1 >staged.du1
rsync -a "$D" dst/ && diff -r dst/tree "$SRC" && echo RSYNC_SAME
rsync -a "$F" dst/ && cmp dst/weights "$SRCFILE" && echo RSYNC_FILE_SAME
diff -r "$D" "$SRC" && echo DIFF_SAME
diff "$F" "$SRCFILE" && echo DIFF_FILE_SAME
awk -v d="$D" '$5 == d { print "OPTS " $6 }' /proc/self/mountinfo
awk -v d="$F" '$5 == d { print "FOPTS " $6 }' /proc/self/mountinfo
# Nothing can be written through the view, not even by the owner.
touch "$D/new" 2>&1 && echo WROTE_NEW
echo x 2>&1 >>"$D/train/a/x.bin" && echo APPENDED
chmod u+w "$D/train/a/x.bin" 2>&1 && echo CHMODDED
chmod u+w "$D" 2>&1 && echo CHMODDED_TOP
rm -f "$D/val/empty" 2>&1 && [ ! -e "$D/val/empty" ] && echo REMOVED
echo x 2>&1 >>"$F" && echo APPENDED_FILE
echo "JOB_DIR=$IOSTAGE_JOB_DIR"
JOB
	submit_wait "$TEST_USER" --export=ALL,SRC="$src",SRCFILE="$file" \
		--io-profile="dl-train,data=$src,data=$file" -o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt)"
	jid=$SUBMIT_JOBID
	assert_file_contains "IOSTAGE_DATA is a directory, not a link" out.txt REAL_DIR
	assert_file_contains "a single-file dataset is a file, not a link" out.txt REAL_FILE
	assert_file_contains "IOSTAGE_DATA_TREE" out.txt NAMED
	# find, du, rsync and diff as on the source.
	assert_eq "find -type f in the job vs on the source" "$(files_of "$src")" "$(cat staged.find)"
	assert_eq "find -type f count" "$(find "$src" -type f | wc -l)" "$(cat staged.count)"
	[ "$(cat staged.count)" -gt 0 ] || fail "find listed nothing in IOSTAGE_DATA"
	assert_eq "du -s in the job vs on the source" "$(du -s "$src" | cut -f1)" "$(cat staged.du)"
	assert_eq "du -s of the single file" "$(du -s "$file" | cut -f1)" "$(cat staged.du1)"
	assert_file_contains "rsync -a of the tree" out.txt RSYNC_SAME
	assert_file_contains "rsync -a of the file" out.txt RSYNC_FILE_SAME
	assert_eq "rsync'd tree (outside the job)" "$(dd_digest "$src")" "$(dd_digest dst/tree)"
	assert_file_contains "diff -r of the tree" out.txt DIFF_SAME
	assert_file_contains "diff of the file" out.txt DIFF_FILE_SAME
	# Mounted read-only, nosuid, nodev; every write refused.
	m=$(sed -n 's/^OPTS //p' out.txt)
	assert_contains "tree mount options" "$m" "ro,nosuid,nodev"
	m=$(sed -n 's/^FOPTS //p' out.txt)
	assert_contains "file mount options" "$m" "ro,nosuid,nodev"
	for w in WROTE_NEW APPENDED CHMODDED CHMODDED_TOP REMOVED APPENDED_FILE; do
		grep -qx "$w" out.txt && fail "a write went through the view: $w; output: $(cat out.txt)"
	done
	assert_file_contains "why writes fail" out.txt "Read-only file system"
	# After the job: no mount left, the directory gone, the cache intact.
	dd_wait_finished "$jid"
	jobdir=$(sed -n 's/^JOB_DIR=//p' out.txt)
	assert_eq "mounts left below the job's directory" "" "$(mounts_under "$jobdir")"
	assert_eq "mounts left below the tier's jobs/" "" "$(mounts_under "$IOSTAGE_TIERS/nvme/jobs")"
	[ ! -e "$jobdir" ] || fail "job directory $jobdir still there"
	e1=$(dd_entry_of "$jid" tree)
	e2=$(dd_entry_of "$jid" weights)
	[ -n "$e1" ] && [ -n "$e2" ] || fail "no cache entries in the log: '$e1' '$e2'"
	assert_eq "cache entry of the tree after the job" "$(dd_digest "$src")" \
		"$(dd_digest "$IOSTAGE_TIERS/nvme/cache/$e1/data")"
	cmp -s "$file" "$IOSTAGE_TIERS/nvme/cache/$e2/data" || fail "cache entry of the file changed"
	# The next job is served the same entry (a hit), through a new view.
	submit_wait "$TEST_USER" --export=ALL,SRC="$src" --io-profile="dl-train,data=$src" \
		-o out2.txt --wrap 'diff -r "$IOSTAGE_DATA" "$SRC" && echo SAME2' >/dev/null ||
		fail "second job failed: $SUBMIT_OUT"
	assert_file_contains "second job's view" out2.txt SAME2
	assert_eq "second job's entry" "$e1" "$(dd_entry_of "$SUBMIT_JOBID" tree)"
}

# kill -9 of iostaged while two jobs hold views; one job's state is lost
# (as if StateDir had been wiped). The restarted daemon unmounts the view
# of the job it does not know, keeps the other's, and deletes nothing in
# the cache entry behind them.
test_restart_unmounts_stale_views_only() {
	local src="$TEST_WORKDIR/pfs/crashview" ja jb pid entry
	make_dataset "$src"
	submit "$TEST_USER" --io-profile="dl-train,data=$src" -o a.txt \
		--wrap 'touch started.a; sleep 300' >/dev/null || fail "sbatch a: $SUBMIT_OUT"
	ja=$SUBMIT_JOBID
	submit "$TEST_USER" --export=ALL,SRC="$src" --io-profile="dl-train,data=$src" -o b.txt \
		--wrap 'touch started.b; while [ ! -e go ]; do sleep 0.2; done; diff -r "$IOSTAGE_DATA" "$SRC" && echo B_SAME' \
		>/dev/null || fail "sbatch b: $SUBMIT_OUT"
	jb=$SUBMIT_JOBID
	for _ in $(seq 1 150); do [ -e started.a ] && [ -e started.b ] && break; sleep 0.2; done
	[ -e started.a ] && [ -e started.b ] || fail "jobs $ja and $jb did not both start"
	[ -n "$(mounts_under "$IOSTAGE_TIERS/nvme/jobs/$ja")" ] || fail "job $ja has no view mounted"
	[ -n "$(mounts_under "$IOSTAGE_TIERS/nvme/jobs/$jb")" ] || fail "job $jb has no view mounted"
	entry=$(dd_entry_of "$ja" crashview)
	[ -n "$entry" ] || fail "no cache entry for job $ja in the log"
	pid=$(iostaged_pid)
	kill -KILL "$pid"
	for _ in $(seq 1 50); do pid_running "$pid" || break; sleep 0.1; done
	rm -f "$IOSTAGE_DIR/iostaged.test.pid"
	rm -f "$IOSTAGE_STATE/jobs/$ja.json"
	iostaged_start || fail "iostaged did not restart"
	assert_eq "job $ja's view after the restart" "" "$(mounts_under "$IOSTAGE_TIERS/nvme/jobs/$ja")"
	[ -n "$(mounts_under "$IOSTAGE_TIERS/nvme/jobs/$jb")" ] || fail "job $jb's view was unmounted"
	assert_file_contains "restart log" "$IOSTAGED_LOG" "unmounted 1 dataset view of jobs no longer known"
	assert_eq "cache entry after the restart" "$(dd_digest "$src")" \
		"$(dd_digest "$IOSTAGE_TIERS/nvme/cache/$entry/data")"
	touch go
	wait_job_state "$jb" COMPLETED 60 || fail "job $jb did not complete: $(cat b.txt)"
	assert_file_contains "job $jb read its data across the restart" b.txt B_SAME
	scancel "$ja"
	wait_job_state "$ja" 'CANCELLED|COMPLETED|FAILED' 60 || fail "job $ja did not end"
	dd_wait_finished "$jb"
	assert_eq "mounts below jobs/ at the end" "" "$(mounts_under "$IOSTAGE_TIERS/nvme/jobs")"
	assert_eq "cache entry at the end" "$(dd_digest "$src")" \
		"$(dd_digest "$IOSTAGE_TIERS/nvme/cache/$entry/data")"
}
