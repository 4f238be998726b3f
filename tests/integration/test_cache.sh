# shellcheck shell=bash
# The staging cache (docs/STAGING.md): reuse across jobs under each verify
# policy, incremental versions, single flight for job arrays, capacity and
# LRU eviction with pins, Shared=yes tiers seen by two daemons, crash
# safety, and the cache/prestage ops.
. "$IT_DIR/datasets.sh"

TEST_UID=$(id -u "$TEST_USER")
TEST_GID=$(id -g "$TEST_USER")

# --- helpers -------------------------------------------------------------------

# The daemon log from line MARK+1 on (MARK from log_mark).
log_mark() { wc -l <"$IOSTAGED_LOG"; }
log_since() { tail -n +"$(($1 + 1))" "$IOSTAGED_LOG"; }

# count_lines TEXT PATTERN: lines of TEXT matching the fixed PATTERN.
count_lines() { printf '%s\n' "$1" | grep -cF -- "$2"; }

# The cache key K of dataset name NAME, from a "built K.vN" log line.
key_from_log() {
	printf '%s\n' "$1" | sed -n "s/.*dataset '$2': built \([0-9a-f]\{32\}\)\.v[0-9]*.*/\1/p" | head -n1
}

# versions_of TIER KEY: the K.vN directories present, one per line.
versions_of() {
	(cd "$IOSTAGE_TIERS/$1/cache" 2>/dev/null && ls -d "$2".v* 2>/dev/null)
}

# tree_digest without directory sizes (a big directory's size depends on
# its history, not its contents).
cache_digest() { tree_digest "$1" | sed -E 's/^d (.*) [0-9]+ $/d \1/'; }

# job.sh: compare the staged tree of $IOSTAGE_DATA with $EXPECT.
write_digest_job() {
	cat >job.sh <<'JOB'
#!/bin/bash
. "$TREE_DIGEST_LIB"
tree_digest "$IOSTAGE_DATA" | sed -E 's/^d (.*) [0-9]+ $/d \1/' >"staged.${SLURM_JOB_ID}.digest"
if cmp -s "staged.${SLURM_JOB_ID}.digest" "$EXPECT"; then echo SAME; else echo DIFFERENT; fi
echo "DATA=$IOSTAGE_DATA"
JOB
}

# run_digest_job OUT PROFILE_SPEC: stage and compare against src.digest.
run_digest_job() {
	local out=$1 spec=$2
	cache_digest "$DS" >src.digest
	chmod 0644 src.digest
	submit_wait "$TEST_USER" \
		--export=ALL,TREE_DIGEST_LIB="$IT_DIR/datasets.sh",EXPECT="$TEST_WORKDIR/src.digest" \
		--io-profile="$spec" -o "$out" job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat "$out" 2>/dev/null)"
	assert_file_contains "byte-for-byte comparison in job $SUBMIT_JOBID" "$out" SAME
}

# wait_finished JOBID: the Epilog's finish has been logged.
wait_finished() {
	for _ in $(seq 1 100); do
		grep -q "job $1: finished" "$IOSTAGED_LOG" && return 0
		sleep 0.1
	done
	fail "job $1 was not finished by the Epilog"
}

# A user JSON profile with one dataset and a verify policy.
write_profile() {
	cat >"$1" <<JSON
{"datasets":[{"name":"$2","path":"$3","verify":"$4"}]}
JSON
	chmod 0644 "$1"
}

# --- private daemons (no Slurm) -------------------------------------------------

# start_private NAME NODENAME [EXTRA_CONF_LINES]: a daemon with its own
# socket and state in $TEST_WORKDIR/NAME; its tiers come from EXTRA or a
# default one.
start_private() {
	local name=$1 node=$2 extra=${3:-} dir="$TEST_WORKDIR/$1"
	mkdir -p "$dir"
	{
		echo "SocketPath=$dir/d.sock"
		echo "StateDir=$dir/state"
		echo "ProfileDir=$IOSTAGE_SYSCONFDIR/slurm/iostage.d"
		echo "NodeName=$node"
		if [ -n "$extra" ]; then printf '%s\n' "$extra"; else echo "Tier=nvme Path=$dir/tiers/nvme"; fi
	} >"$dir/d.conf"
	iostaged -f -c "$dir/d.conf" >>"$dir/d.log" 2>&1 &
	echo $! >"$dir/pid"
	for _ in $(seq 1 50); do
		[ -S "$dir/d.sock" ] && preq "$name" root '{"op":"ping"}' | grep -q '"ok":true' && return 0
		sleep 0.1
	done
	fail "private daemon $name did not start: $(cat "$dir/d.log")"
}

stop_private() {
	local f pid
	for f in "$TEST_WORKDIR"/*/pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		kill -TERM "$pid" 2>/dev/null
		for _ in $(seq 1 50); do pid_running "$pid" || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
		rm -f "$f"
	done
	# The views the private daemons mounted for jobs never finished.
	unmount_under "$TEST_WORKDIR"
}

# preq NAME USER JSON: one request to the private daemon NAME.
preq() {
	printf '%s\n' "$3" | runuser -u "$2" -- socat -t 60 - "UNIX-CONNECT:$TEST_WORKDIR/$1/d.sock"
}

# pstage NAME JOBID TIER PATH [VERIFY]: stage for the test user and wait.
pstage() {
	local verify=${5:-stat} r
	r=$(preq "$1" root "{\"op\":\"stage\",\"job\":$2,\"uid\":$TEST_UID,\"gid\":$TEST_GID,\"user\":\"$TEST_USER\",\"profile\":{\"datasets\":[{\"name\":\"ds\",\"path\":\"$4\",\"tier\":\"$3\",\"verify\":\"$verify\"}]}}")
	assert_contains "stage job $2 on $1" "$r" '"ok":true'
	preq "$1" root "{\"op\":\"wait\",\"job\":$2,\"timeout\":60}"
}

# --- 1. reuse and incremental versions -----------------------------------------

test_second_job_reuses_cache_stat() {
	DS="$TEST_WORKDIR/pfs/reuse_stat"
	make_dataset "$DS"
	write_digest_job
	local mark log key
	mark=$(log_mark)
	run_digest_job out1.txt "dl-train,data=$DS"
	local j1=$SUBMIT_JOBID
	wait_finished "$j1"
	run_digest_job out2.txt "dl-train,data=$DS"
	local j2=$SUBMIT_JOBID
	wait_finished "$j2"
	log=$(log_since "$mark")
	key=$(key_from_log "$log" reuse_stat)
	[ -n "$key" ] || fail "no 'built' line for the first job; log: $log"
	assert_contains "first job built a version" "$log" "job $j1: dataset 'reuse_stat': built $key.v1"
	assert_contains "second job hit" "$log" "job $j2: dataset 'reuse_stat': cache hit $key.v1"
	assert_contains "second job checked by stat" "$log" "unchanged (verify=stat)"
	assert_eq "versions on the tier" "$key.v1" "$(versions_of nvme "$key")"
	# The entry stays after both jobs, unpinned, owned by root 0711 with
	# the user's data inside.
	assert_eq "entry mode" "711 root" "$(stat -c '%a %U' "$IOSTAGE_TIERS/nvme/cache/$key.v1")"
	assert_eq "data owner (read-only)" "500 $TEST_USER" "$(stat -c '%a %U' "$IOSTAGE_TIERS/nvme/cache/$key.v1/data")"
	assert_eq "pins after the jobs" "" "$(ls "$IOSTAGE_TIERS/nvme/cache/$key.v1/pins")"
	# The job saw its own path (a read-only view of the entry).
	assert_contains "job's data path" "$(cat out2.txt)" "DATA=$IOSTAGE_TIERS/nvme/jobs/$j2/data/reuse_stat"
}

# A job cannot change a cached dataset by writing into it: the next job
# (a hit on the same version) sees the source's bytes.
test_staged_data_is_read_only_for_the_job() {
	DS="$TEST_WORKDIR/pfs/read_only"
	make_dataset "$DS"
	local f
	f=$(cd "$DS" && find . -type f | sort | head -n1)
	cat >writer.sh <<JOB
#!/bin/bash
if echo overwritten 2>/dev/null >"\$IOSTAGE_DATA/$f"; then echo WROTE_FILE; else echo FILE_REFUSED; fi
if touch "\$IOSTAGE_DATA/new-file" 2>/dev/null; then echo MADE_FILE; else echo DIR_REFUSED; fi
# The owner of the entry cannot give the write bits back through the view.
if chmod u+w "\$IOSTAGE_DATA/$f" 2>/dev/null; then echo CHMODDED; else echo CHMOD_REFUSED; fi
JOB
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$DS" -o writer.txt writer.sh >/dev/null ||
		fail "writer job failed: $SUBMIT_OUT"
	assert_file_contains "overwriting a staged file is refused" writer.txt FILE_REFUSED
	assert_file_contains "creating a file in staged data is refused" writer.txt DIR_REFUSED
	assert_file_contains "chmod of staged data is refused" writer.txt CHMOD_REFUSED
	wait_finished "$SUBMIT_JOBID"
	write_digest_job
	run_digest_job reader.txt "dl-train,data=$DS"
}

test_changed_source_copies_only_the_difference() {
	DS="$TEST_WORKDIR/pfs/incr"
	make_dataset "$DS"
	write_digest_job
	local mark log key j1 j2
	mark=$(log_mark)
	run_digest_job out1.txt "dl-train,data=$DS"
	j1=$SUBMIT_JOBID
	wait_finished "$j1"
	# Added, modified, removed and renamed files; the rest untouched.
	head -c 5000 /dev/urandom >"$DS/train/new.bin"
	printf 'label,file\n1,x\n2,y\n' >"$DS/val/labels with space.csv"
	rm "$DS/train/b/deep/er/one.bin"
	mv "$DS/train/b/y.bin" "$DS/train/b/y2.bin"
	chown -R "$TEST_USER:" "$DS"
	run_digest_job out2.txt "dl-train,data=$DS"
	j2=$SUBMIT_JOBID
	wait_finished "$j2"
	log=$(log_since "$mark")
	key=$(key_from_log "$log" incr)
	assert_contains "first job" "$log" "job $j1: dataset 'incr': built $key.v1"
	# new.bin, labels and y2.bin copied; x.bin and empty linked.
	assert_contains "second job built v2 from v1" "$log" \
		"job $j2: dataset 'incr': built $key.v2 on tier 'nvme': 3 files copied"
	assert_contains "unchanged files linked" "$log" "), 2 linked"
	# v1 is gone once unpinned; v2 is the only version.
	assert_eq "versions on the tier" "$key.v2" "$(versions_of nvme "$key")"
	# A third job finds v2 current.
	mark=$(log_mark)
	run_digest_job out3.txt "dl-train,data=$DS"
	wait_finished "$SUBMIT_JOBID"
	assert_contains "third job" "$(log_since "$mark")" "dataset 'incr': cache hit $key.v2"
}

test_verify_checksum_sees_same_size_same_mtime_change() {
	DS="$TEST_WORKDIR/pfs/cksum"
	make_dataset "$DS"
	write_digest_job
	write_profile p.json cksum "$DS" checksum
	local mark log key
	mark=$(log_mark)
	run_digest_job out1.txt "$TEST_WORKDIR/p.json"
	wait_finished "$SUBMIT_JOBID"
	# Same size, same mtime, other bytes: only a checksum sees it.
	local f="$DS/train/b/y.bin" mt
	mt=$(stat -c %Y "$f")
	head -c 4097 /dev/urandom >"$f"
	touch -d "@$mt" "$f"
	run_digest_job out2.txt "$TEST_WORKDIR/p.json"
	wait_finished "$SUBMIT_JOBID"
	log=$(log_since "$mark")
	key=$(key_from_log "$log" cksum)
	assert_contains "checksum found the change" "$log" \
		"dataset 'cksum': built $key.v2 on tier 'nvme': 1 files copied (4.0 KiB), 4 linked"
	# Unchanged: a checksum check is a hit.
	mark=$(log_mark)
	run_digest_job out3.txt "$TEST_WORKDIR/p.json"
	wait_finished "$SUBMIT_JOBID"
	assert_contains "checksum hit" "$(log_since "$mark")" "cache hit $key.v2 on tier 'nvme': unchanged (verify=checksum)"
}

test_verify_none_trusts_entry_within_ttl() {
	DS="$TEST_WORKDIR/pfs/trusted"
	make_dataset "$DS"
	write_digest_job
	write_profile p.json trusted "$DS" none
	local mark log key
	mark=$(log_mark)
	run_digest_job out1.txt "$TEST_WORKDIR/p.json"
	wait_finished "$SUBMIT_JOBID"
	cp src.digest v1.digest
	# A change the next job must NOT see: verify=none trusts the entry
	# for CacheTTL (3600 s by default) without walking the source.
	head -c 777 /dev/urandom >"$DS/val/extra.bin"
	chown "$TEST_USER:" "$DS/val/extra.bin"
	submit_wait "$TEST_USER" \
		--export=ALL,TREE_DIGEST_LIB="$IT_DIR/datasets.sh",EXPECT="$TEST_WORKDIR/v1.digest" \
		--io-profile="$TEST_WORKDIR/p.json" -o out2.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT"
	assert_file_contains "the job sees the trusted version" out2.txt SAME
	wait_finished "$SUBMIT_JOBID"
	log=$(log_since "$mark")
	key=$(key_from_log "$log" trusted)
	assert_contains "trusted hit" "$log" "cache hit $key.v1 on tier 'nvme': verify=none"
	assert_eq "versions" "$key.v1" "$(versions_of nvme "$key")"
}

test_verify_none_ttl_expiry_detects_change() {
	local ds="$TEST_WORKDIR/pfs/ttl" r log
	trap stop_private EXIT
	make_dataset "$ds"
	start_private ttl nodettl "Tier=nvme Path=$TEST_WORKDIR/ttl/tiers/nvme
CacheTTL=2"
	r=$(pstage ttl 501 nvme "$ds" none)
	assert_contains "first stage" "$r" '"state":"staged"'
	head -c 100 /dev/urandom >"$ds/val/more.bin"
	chown "$TEST_USER:" "$ds/val/more.bin"
	r=$(pstage ttl 502 nvme "$ds" none)
	assert_contains "within the TTL" "$r" '"state":"staged"'
	assert_contains "within the TTL: trusted" "$(cat "$TEST_WORKDIR/ttl/d.log")" "job 502: dataset 'ds': cache hit"
	sleep 3
	r=$(pstage ttl 503 nvme "$ds" none)
	assert_contains "after the TTL" "$r" '"state":"staged"'
	log=$(cat "$TEST_WORKDIR/ttl/d.log")
	assert_contains "after the TTL: the change is found" "$log" "job 503: dataset 'ds': built"
	assert_contains "only the new file copied" "$log" "1 files copied (100 B), 5 linked"
	diff -r "$ds" "$TEST_WORKDIR/ttl/tiers/nvme/jobs/503/data/ds" >/dev/null ||
		fail "job 503's data differs from the source"
}

# --- 3. single flight -------------------------------------------------------------

test_job_array_shares_one_copy() {
	DS="$TEST_WORKDIR/pfs/arrayds"
	make_dataset "$DS"
	# Enough files that the first copy takes a moment.
	mkdir -p "$DS/many"
	head -c 3000000 /dev/urandom | (cd "$DS/many" && split -b 1000 -a 4 - f)
	chown -R "$TEST_USER:" "$DS"
	write_digest_job
	cache_digest "$DS" >src.digest
	chmod 0644 src.digest
	local mark log key n_built n_hit i
	mark=$(log_mark)
	submit_wait "$TEST_USER" --array=1-8 \
		--export=ALL,TREE_DIGEST_LIB="$IT_DIR/datasets.sh",EXPECT="$TEST_WORKDIR/src.digest" \
		--io-profile="dl-train,data=$DS" -o 'out.%a.txt' job.sh >/dev/null ||
		fail "array failed: $SUBMIT_OUT"
	for i in 1 2 3 4 5 6 7 8; do
		assert_file_contains "task $i compared the data" "out.$i.txt" SAME
	done
	sleep 1
	log=$(log_since "$mark")
	key=$(key_from_log "$log" arrayds)
	n_built=$(count_lines "$log" "dataset 'arrayds': built")
	n_hit=$(count_lines "$log" "dataset 'arrayds': cache hit")
	assert_eq "builds" 1 "$n_built"
	assert_eq "hits" 7 "$n_hit"
	assert_eq "versions" "$key.v1" "$(versions_of nvme "$key")"
}

# --- 2. capacity -------------------------------------------------------------------

# mkds NAME BYTES: a one-file dataset.
mkds() {
	mkdir -p "$TEST_WORKDIR/pfs/$1"
	head -c "$2" /dev/urandom >"$TEST_WORKDIR/pfs/$1/blob"
	chown -R "$TEST_USER:" "$TEST_WORKDIR/pfs/$1"
}

stage_small() {
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$TEST_WORKDIR/pfs/$1:small" \
		-o "out.$1.txt" -e "err.$1.txt" --wrap 'test -s "$IOSTAGE_DATA/blob" && echo OK' >/dev/null
}

entry_of() { log_since 0 | sed -n "s/.*dataset '$1': built \([0-9a-f]\{32\}\.v[0-9]*\) on tier 'small'.*/\1/p" | tail -n1; }

test_capacity_lru_eviction_and_pins() {
	local e1 e2 e3 r
	# Three 1.3 MB datasets on a 4 MiB tier: the third crosses the high
	# watermark (85%) and evicts the least recently used one.
	mkds cap1 1300000
	mkds cap2 1300000
	mkds cap3 1300000
	stage_small cap1 || fail "cap1: $SUBMIT_OUT $(cat err.cap1.txt)"
	wait_finished "$SUBMIT_JOBID"
	sleep 1.1
	stage_small cap2 || fail "cap2: $(cat err.cap2.txt)"
	wait_finished "$SUBMIT_JOBID"
	sleep 1.1
	# cap1 used again: now cap2 is the least recently used.
	stage_small cap1 || fail "cap1 again: $(cat err.cap1.txt)"
	wait_finished "$SUBMIT_JOBID"
	sleep 1.1
	e1=$(entry_of cap1)
	e2=$(entry_of cap2)
	[ -d "$IOSTAGE_TIERS/small/cache/$e1" ] && [ -d "$IOSTAGE_TIERS/small/cache/$e2" ] ||
		fail "cap1/cap2 not cached: $(ls "$IOSTAGE_TIERS/small/cache")"
	stage_small cap3 || fail "cap3: $(cat err.cap3.txt)"
	wait_finished "$SUBMIT_JOBID"
	e3=$(entry_of cap3)
	[ ! -e "$IOSTAGE_TIERS/small/cache/$e2" ] || fail "LRU entry cap2 ($e2) was not evicted"
	[ -d "$IOSTAGE_TIERS/small/cache/$e1" ] || fail "recently used cap1 ($e1) was evicted"
	[ -d "$IOSTAGE_TIERS/small/cache/$e3" ] || fail "cap3 ($e3) not cached"
	assert_contains "eviction logged" "$(log_since 0)" "tier 'small': evicted cache/$e2"

	# Too big even after evicting everything: refused with the reason.
	mkds cap4 5000000
	stage_small cap4
	assert_eq "cap4 job state" FAILED "$(job_end_state "$SUBMIT_JOBID")"
	assert_file_contains "cap4 reason" err.cap4.txt "tier 'small' full: dataset 'cap4' needs 4.8 MiB"
	assert_file_contains "cap4 reason" err.cap4.txt "free after eviction"

	# A running job pins cap1: a dataset that needs cap1's room is
	# refused, one that fits once cap3 goes is staged, and cap1 stays.
	submit "$TEST_USER" --io-profile="dl-train,data=$TEST_WORKDIR/pfs/cap1:small" -o pin.txt \
		--wrap 'touch pinned; sleep 60' >/dev/null || fail "sbatch: $SUBMIT_OUT"
	local pinjob=$SUBMIT_JOBID
	for _ in $(seq 1 100); do [ -e pinned ] && break; sleep 0.2; done
	[ -e pinned ] || fail "pinning job did not start"
	mkds cap5 3000000
	stage_small cap5
	assert_eq "cap5 job state" FAILED "$(job_end_state "$SUBMIT_JOBID")"
	assert_file_contains "cap5 reason" err.cap5.txt "tier 'small' full: dataset 'cap5'"
	[ -d "$IOSTAGE_TIERS/small/cache/$e1" ] || fail "pinned cap1 evicted by a refused dataset"
	[ -d "$IOSTAGE_TIERS/small/cache/$e3" ] || fail "cap3 evicted for a dataset that was refused anyway"
	mkds cap6 2000000
	stage_small cap6 || fail "cap6: $(cat err.cap6.txt)"
	[ -d "$IOSTAGE_TIERS/small/cache/$e1" ] || fail "pinned cap1 ($e1) was evicted"
	[ ! -e "$IOSTAGE_TIERS/small/cache/$e3" ] || fail "unpinned cap3 ($e3) was not evicted"
	# The pin names this node and the job.
	r=$(ls "$IOSTAGE_TIERS/small/cache/$e1/pins")
	assert_contains "pin of the running job" "$r" ".$pinjob"
	scancel "$pinjob"
}

# Segmented LRU: a version only one job used goes before one jobs came
# back to, however recently it was used (daemon/staging/cache.c, cand_cmp).
# empty_small_tier: evict every entry of the small tier (earlier tests'
# entries would be eviction candidates too; one may stay pinned until its
# job's Epilog ends).
empty_small_tier() {
	local r key
	for _ in $(seq 1 100); do
		r=$(iostaged_request '{"op":"cache_ls","tier":"small"}')
		[ "$(jq '.entries | length' <<<"$r")" = 0 ] && return 0
		for key in $(jq -r '.entries[].key' <<<"$r" | sort -u); do
			iostaged_request "{\"op\":\"cache_evict\",\"key\":\"$key\",\"tier\":\"small\"}" >/dev/null
		done
		sleep 0.2
	done
	fail "cannot empty the small tier: $r"
}

test_one_pass_entries_evicted_before_reused() {
	local e r
	empty_small_tier
	mkds slru-train 1300000
	mkds slru-once 1300000
	mkds slru-new 1300000
	stage_small slru-train || fail "slru-train: $(cat err.slru-train.txt)"
	wait_finished "$SUBMIT_JOBID"
	stage_small slru-train || fail "slru-train again: $(cat err.slru-train.txt)"
	wait_finished "$SUBMIT_JOBID"
	sleep 1.1
	# Used once, and more recently than slru-train.
	stage_small slru-once || fail "slru-once: $(cat err.slru-once.txt)"
	wait_finished "$SUBMIT_JOBID"
	r=$(iostaged_request '{"op":"cache_ls","tier":"small"}')
	assert_eq "slru-train reused" true \
		"$(jq -r --arg s "$TEST_WORKDIR/pfs/slru-train" '.entries[] | select(.source == $s) | .reused' <<<"$r")"
	assert_eq "slru-once not reused" false \
		"$(jq -r --arg s "$TEST_WORKDIR/pfs/slru-once" '.entries[] | select(.source == $s) | .reused' <<<"$r")"
	# What a restart reads back: the class is in meta.json.
	e=$(entry_of slru-train)
	assert_eq "reused in meta.json" true "$(jq -r .reused "$IOSTAGE_TIERS/small/cache/$e/meta.json")"
	# The third crosses the high watermark: the one-pass entry goes,
	# although plain LRU would take slru-train.
	stage_small slru-new || fail "slru-new: $(cat err.slru-new.txt)"
	wait_finished "$SUBMIT_JOBID"
	[ -d "$IOSTAGE_TIERS/small/cache/$(entry_of slru-train)" ] ||
		fail "reused slru-train was evicted before the one-pass entry"
	[ ! -e "$IOSTAGE_TIERS/small/cache/$(entry_of slru-once)" ] ||
		fail "one-pass slru-once ($(entry_of slru-once)) was not evicted"
	[ -d "$IOSTAGE_TIERS/small/cache/$(entry_of slru-new)" ] || fail "slru-new not cached"
}

# The low watermark's slack comes from one-use versions only: a reused
# version goes only as far as the high watermark needs (4 MiB tier: high
# 3.56 MB, low 3.15 MB).
test_low_watermark_slack_spares_reused_data() {
	local a b o
	empty_small_tier
	mkds wm-a 1300000
	mkds wm-b 1300000
	mkds wm-once 300000
	mkds wm-new 800000
	for ds in wm-a wm-a wm-b wm-b wm-once; do
		stage_small "$ds" || fail "$ds: $(cat "err.$ds.txt")"
		wait_finished "$SUBMIT_JOBID"
	done
	a=$(entry_of wm-a)
	b=$(entry_of wm-b)
	o=$(entry_of wm-once)
	# 2.9 MB + 0.8 MB crosses the high watermark; without wm-once it is
	# 3.4 MB: above the low one, below the high one.
	stage_small wm-new || fail "wm-new: $(cat err.wm-new.txt)"
	wait_finished "$SUBMIT_JOBID"
	[ ! -e "$IOSTAGE_TIERS/small/cache/$o" ] || fail "one-use wm-once ($o) was not evicted"
	[ -d "$IOSTAGE_TIERS/small/cache/$a" ] && [ -d "$IOSTAGE_TIERS/small/cache/$b" ] ||
		fail "reused data evicted for the low watermark's slack: $(ls "$IOSTAGE_TIERS/small/cache")"
}

# A key's K.lock goes with its last version (daemon/staging/cache.c,
# cache_lock_release): a node that stages many distinct datasets between
# restarts would otherwise keep one lock file per dataset, and every stage
# lists the cache directory.
test_lock_files_go_with_the_last_version() {
	local e key
	mkds lk-a 300000
	stage_small lk-a || fail "lk-a: $(cat err.lk-a.txt)"
	wait_finished "$SUBMIT_JOBID"
	e=$(entry_of lk-a)
	key=${e%.v*}
	[ -e "$IOSTAGE_TIERS/small/cache/$key.lock" ] ||
		fail "no $key.lock while $e is cached"
	empty_small_tier
	assert_eq "lock files left on the emptied tier" "" \
		"$(cd "$IOSTAGE_TIERS/small/cache" && ls -- *.lock 2>/dev/null)"
	# and the key is staged again as before
	stage_small lk-a || fail "lk-a again: $(cat err.lk-a.txt)"
	wait_finished "$SUBMIT_JOBID"
	[ -d "$IOSTAGE_TIERS/small/cache/$(entry_of lk-a)" ] || fail "lk-a not cached again"
}

# prestage_wait DS [FOR_JOB]: a prestage of the user's DS on the small
# tier (iostagectld's prediction for pending job FOR_JOB, else the user's
# own warm-up), waited for; prints the wait's reply
prestage_wait() {
	local r id extra=${2:+,\"for_job\":$2}
	r=$(iostaged_request "{\"op\":\"prestage\",\"path\":\"$TEST_WORKDIR/pfs/$1\",\"user\":\"$TEST_USER\",\"tier\":\"small\"$extra}")
	id=$(jq -r .id <<<"$r")
	[ "$id" != null ] || { echo "$r"; return 1; }
	iostaged_request "{\"op\":\"wait\",\"job\":$id,\"timeout\":30}"
}

# A pre-stage for a pending job (iostagectld's prediction, "for_job") may
# evict only versions no job has used (earlier predictions nobody found,
# warm-ups): a wrong prediction never makes a job copy its data again. A
# user's own warm-up may evict what jobs used, one-use versions first.
test_prestage_for_a_pending_job_keeps_used_data() {
	local a b c r
	empty_small_tier
	mkds spec-a 1300000
	mkds spec-b 1300000
	mkds spec-c 2000000
	for ds in spec-a spec-a spec-b; do
		stage_small "$ds" || fail "$ds: $(cat "err.$ds.txt")"
		wait_finished "$SUBMIT_JOBID"
	done
	a=$(entry_of spec-a)
	b=$(entry_of spec-b)
	# 2.6 MB on a 4 MiB tier, spec-a used by two jobs, spec-b by one:
	# 2 MB more fits only by evicting one of them, which a prediction
	# may not do.
	r=$(prestage_wait spec-c 4242) || fail "prestage refused: $r"
	assert_contains "speculative pre-stage refused" "$r" '"state":"failed"'
	assert_contains "and why" "$r" "a pre-stage evicts only data no job has used"
	[ -d "$IOSTAGE_TIERS/small/cache/$a" ] && [ -d "$IOSTAGE_TIERS/small/cache/$b" ] ||
		fail "a pre-stage evicted data a job used: $(ls "$IOSTAGE_TIERS/small/cache")"
	# The user's own warm-up of the same data evicts the one-use spec-b,
	# not spec-a that two jobs used.
	r=$(prestage_wait spec-c) || fail "warm-up refused: $r"
	assert_contains "warm-up" "$r" '"state":"staged"'
	[ ! -e "$IOSTAGE_TIERS/small/cache/$b" ] || fail "warm-up did not evict spec-b ($b)"
	[ -d "$IOSTAGE_TIERS/small/cache/$a" ] || fail "warm-up evicted spec-a too"
	c=$(entry_of spec-c)
	# No job has used spec-c's copy yet: a prediction for spec-b may
	# evict it, and still not spec-a.
	r=$(prestage_wait spec-b 4243) || fail "prestage refused: $r"
	assert_contains "prediction over an unused copy" "$r" '"state":"staged"'
	[ ! -e "$IOSTAGE_TIERS/small/cache/$c" ] || fail "the prediction did not evict unused spec-c ($c)"
	[ -d "$IOSTAGE_TIERS/small/cache/$a" ] || fail "the prediction evicted spec-a"
}

# --- 6. ops ---------------------------------------------------------------------------

test_prestage_cache_ls_and_evict() {
	local ds="$TEST_WORKDIR/pfs/warm" r id key mark
	make_dataset "$ds"
	# A user warms their own cache; the reply names an id to wait on.
	r=$(iostaged_request "$TEST_USER" "{\"op\":\"prestage\",\"path\":\"$ds\"}")
	assert_contains "prestage reply" "$r" '"ok":true'
	id=$(printf '%s' "$r" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
	[ -n "$id" ] || fail "prestage: no id in '$r'"
	r=$(iostaged_request "$TEST_USER" "{\"op\":\"wait\",\"job\":$id,\"timeout\":30}")
	assert_contains "prestage done" "$r" '"state":"staged"'
	r=$(iostaged_request "$TEST_USER" '{"op":"status"}')
	assert_contains "status: prestage listed" "$r" "\"job\":$id"
	assert_contains "status: progress fields" "$r" '"rate_bps":'
	assert_contains "status: progress fields" "$r" '"eta_s":'
	assert_contains "status: cache record" "$r" '"result":"built"'
	# cache_ls: the owner sees it, unpinned; another user does not.
	r=$(iostaged_request "$TEST_USER" '{"op":"cache_ls"}')
	assert_contains "cache_ls by the owner" "$r" "\"source\":\"$ds\""
	assert_contains "cache_ls fields" "$r" "\"user\":\"$TEST_USER\""
	key=$(printf '%s' "$r" | grep -o "\"key\":\"[0-9a-f]*\",\"entry\":\"[0-9a-f]*\.v[0-9]*\",\"version\":[0-9]*,\"current\":true,\"source\":\"$ds\"" | sed 's/"key":"\([0-9a-f]*\)".*/\1/')
	[ -n "$key" ] || fail "cache_ls: no entry for $ds in '$r'"
	assert_contains "tier listed" "$(iostaged_request '{"op":"status"}')" '"cache_entries":'
	r=$(iostaged_request "$OTHER_USER" '{"op":"cache_ls"}')
	assert_not_contains "cache_ls by another user" "$r" "$ds"
	r=$(iostaged_request "$OTHER_USER" "{\"op\":\"cache_evict\",\"key\":\"$key\"}")
	assert_contains "evict by another user" "$r" "permission denied"
	# Another user's prestage of the same path is their own entry.
	r=$(iostaged_request "$OTHER_USER" "{\"op\":\"prestage\",\"path\":\"$ds\",\"user\":\"$TEST_USER\"}")
	assert_contains "prestage for someone else" "$r" "needs root"
	# Root warms a user's cache; a job then copies nothing.
	r=$(iostaged_request "{\"op\":\"prestage\",\"path\":\"$ds\",\"user\":\"$TEST_USER\",\"tier\":\"ram\"}")
	id=$(printf '%s' "$r" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
	r=$(iostaged_request "{\"op\":\"wait\",\"job\":$id,\"timeout\":30}")
	assert_contains "root prestage" "$r" '"state":"staged"'
	mark=$(log_mark)
	submit "$TEST_USER" --io-profile="dl-train,data=$ds" -o job.txt --wrap 'touch started; sleep 60' >/dev/null ||
		fail "sbatch: $SUBMIT_OUT"
	local jid=$SUBMIT_JOBID
	for _ in $(seq 1 100); do [ -e started ] && break; sleep 0.2; done
	assert_contains "job after prestage" "$(log_since "$mark")" "job $jid: dataset 'warm': cache hit $key.v1"
	# Pinned by the running job: eviction refused, by owner and root.
	r=$(iostaged_request "$TEST_USER" "{\"op\":\"cache_evict\",\"path\":\"$ds\",\"tier\":\"nvme\"}")
	assert_contains "evict a pinned entry" "$r" '"ok":false'
	assert_contains "evict a pinned entry" "$r" "is pinned by"
	assert_contains "evict a pinned entry" "$r" ".$jid"
	[ -d "$IOSTAGE_TIERS/nvme/cache/$key.v1" ] || fail "pinned entry removed"
	scancel "$jid"
	wait_finished "$jid"
	r=$(iostaged_request "$TEST_USER" "{\"op\":\"cache_evict\",\"path\":\"$ds\",\"tier\":\"nvme\"}")
	assert_contains "evict by the owner" "$r" '"ok":true'
	assert_contains "evict reply" "$r" "\"entry\":\"$key.v1\""
	[ ! -e "$IOSTAGE_TIERS/nvme/cache/$key.v1" ] || fail "evicted entry still on the tier"
	# Root evicts the ram copy by key.
	r=$(iostaged_request "{\"op\":\"cache_evict\",\"key\":\"$key\"}")
	assert_contains "evict by root" "$r" '"tier":"ram"'
	r=$(iostaged_request "{\"op\":\"cache_evict\",\"key\":\"$key\"}")
	assert_contains "nothing left" "$r" "no cache entry with key $key"
	r=$(iostaged_request '{"op":"cache_evict","path":"relative"}')
	assert_contains "bad path" "$r" "key 'path'"
}

# --- 4. shared tiers, two daemons -------------------------------------------------

test_shared_tier_two_daemons() {
	local ds="$TEST_WORKDIR/pfs/shared_ds" big="$TEST_WORKDIR/pfs/shared_big"
	local shared="$TEST_WORKDIR/shared" ra rb va la lb key r
	trap stop_private EXIT
	make_dataset "$ds"
	mkdir -p "$big" && head -c 1900000 /dev/urandom >"$big/blob" && chown -R "$TEST_USER:" "$big"
	start_private a nodeA "Tier=bb Path=$shared Shared=yes Capacity=2M"
	start_private b nodeB "Tier=bb Path=$shared Shared=yes Capacity=2M"
	# The same dataset for the same user from both nodes at once.
	local pa pb
	pstage a 1001 bb "$ds" >a.out &
	pa=$!
	pstage b 2001 bb "$ds" >b.out &
	pb=$!
	wait "$pa" "$pb"
	assert_contains "node A staged" "$(cat a.out)" '"state":"staged"'
	assert_contains "node B staged" "$(cat b.out)" '"state":"staged"'
	va=$(cd "$shared/cache" && ls -d ./*.v* | sed 's|^\./||')
	assert_eq "one version on the shared tier" 1 "$(printf '%s\n' "$va" | grep -c .)"
	key=${va%.v*}
	# Each job's view (jobs/J.NODE on a shared tier) is a read-only bind
	# mount of that one version.
	for j in 1001.nodeA 2001.nodeB; do
		[ -d "$shared/jobs/$j/data/ds" ] && [ ! -L "$shared/jobs/$j/data/ds" ] ||
			fail "job $j: data/ds is not a directory: $(stat -c %F "$shared/jobs/$j/data/ds" 2>&1)"
		mountpoint -q "$shared/jobs/$j/data/ds" || fail "job $j: data/ds is not a mount point"
		assert_eq "job $j's view is $va" "$(stat -c %d:%i "$shared/cache/$va/data")" \
			"$(stat -c %d:%i "$shared/jobs/$j/data/ds")"
	done
	assert_eq "one build in all" 1 "$(cat "$TEST_WORKDIR"/[ab]/d.log | grep -c "dataset 'ds': built")"
	assert_eq "one hit in all" 1 "$(cat "$TEST_WORKDIR"/[ab]/d.log | grep -c "dataset 'ds': cache hit")"
	assert_eq "pins" "nodeA.1001 nodeB.2001" "$(ls "$shared/cache/$va/pins" | tr '\n' ' ' | sed 's/ $//')"
	# Node A finishes: its pin goes, the version stays for B.
	r=$(preq a root '{"op":"finish","job":1001}')
	assert_contains "finish on A" "$r" '"ok":true'
	[ -d "$shared/cache/$va" ] || fail "finishing on A removed the version B uses"
	assert_eq "pins after A finished" "nodeB.2001" "$(ls "$shared/cache/$va/pins")"
	# Eviction on A skips it: by request...
	r=$(preq a root "{\"op\":\"cache_evict\",\"key\":\"$key\"}")
	assert_contains "evict on A" "$r" "is pinned by nodeB.2001"
	# ...and for space: 1.9 MB more does not fit next to B's pinned copy.
	r=$(pstage a 1002 bb "$big")
	assert_contains "big dataset on A" "$r" '"state":"failed"'
	assert_contains "big dataset on A" "$r" "tier 'bb' full: dataset 'ds'"
	[ -d "$shared/cache/$va" ] || fail "eviction on A removed B's pinned version"
	# A lists the entry B pins (A sees the shared tier as it is).
	r=$(preq a root '{"op":"cache_ls"}')
	assert_contains "cache_ls on A" "$r" "\"pinned_by\":[\"nodeB.2001\"]"
	# Once B is done, A may evict it.
	preq b root '{"op":"finish","job":2001}' >/dev/null
	r=$(preq a root "{\"op\":\"cache_evict\",\"key\":\"$key\"}")
	assert_contains "evict on A after B finished" "$r" '"ok":true'
	[ ! -e "$shared/cache/$va" ] || fail "version still there after eviction"
	# Each node journals only its own builds.
	assert_eq "A's journal" "" "$(ls "$TEST_WORKDIR/a/state/journal")"
	assert_eq "B's journal" "" "$(ls "$TEST_WORKDIR/b/state/journal")"
}

# --- 5. crash safety -----------------------------------------------------------------

test_kill_during_copy_then_restart() {
	DS="$TEST_WORKDIR/pfs/crashds"
	local cache="$IOSTAGE_TIERS/nvme/cache" st="" jid pid rss files
	mkdir -p "$DS/a" "$DS/b"
	head -c 10000000 /dev/urandom | (cd "$DS/a" && split -b 1000 -a 4 - f)
	head -c 10000000 /dev/urandom | (cd "$DS/b" && split -b 1000 -a 4 - f)
	chown -R "$TEST_USER:" "$DS"
	files=$(find "$DS" -type f | wc -l)
	submit "$TEST_USER" --io-profile="dl-train,data=$DS" -o out1.txt -e err1.txt --wrap 'echo RAN' >/dev/null ||
		fail "sbatch: $SUBMIT_OUT"
	jid=$SUBMIT_JOBID
	# Kill -9 while the build is on the tier (the worker walking or
	# copying); watch status meanwhile.
	for _ in $(seq 1 600); do
		if compgen -G "$cache/.build.*" >/dev/null; then
			st=$(iostaged_request "$TEST_USER" '{"op":"status"}')
			compgen -G "$cache/.build.*/data" >/dev/null && break
		fi
		sleep 0.02
	done
	compgen -G "$cache/.build.*" >/dev/null || fail "no build seen on the tier"
	pid=$(iostaged_pid)
	kill -KILL "$pid"
	for _ in $(seq 1 50); do pid_running "$pid" || break; sleep 0.1; done
	assert_contains "status while staging" "$st" '"rate_bps":'
	assert_contains "status while staging" "$st" '"eta_s":'
	[ -n "$(ls "$IOSTAGE_STATE/journal")" ] || fail "no journal record for the build in flight"
	rm -f "$IOSTAGE_DIR/iostaged.test.pid"
	iostaged_start || fail "iostaged did not restart"
	# The build and its journal record are gone; nothing partial served.
	compgen -G "$cache/.build.*" >/dev/null && fail "build left after restart: $(ls -a "$cache")"
	assert_eq "journal after restart" "" "$(ls "$IOSTAGE_STATE/journal")"
	wait_job_state "$jid" 'FAILED|COMPLETED' 60 || fail "job $jid did not end"
	case $(job_state "$jid") in
	FAILED) assert_file_contains "failed job's reason" err1.txt "iostage: staging failed" ;;
	COMPLETED) assert_file_contains "completed job" out1.txt RAN ;;
	esac
	# The index and the tier agree: cache_ls lists exactly the K.vN dirs.
	assert_cache_index_matches_tiers
	# A new job stages the dataset completely.
	write_digest_job
	run_digest_job out2.txt "dl-train,data=$DS"
	# Memory: summaries only, manifests stay on disk. (Not under ASan,
	# whose shadow memory and quarantine are most of a sanitized RSS.)
	rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$(iostaged_pid)/status")
	[ "${SANITIZE:-0}" = 1 ] || [ "$rss" -lt $((64 * 1024 + files * 200 / 1024)) ] ||
		fail "iostaged RSS ${rss} KiB with $files cached files"
}

# --- 3b. StageParallelism ---------------------------------------------------------------

test_stage_parallelism_bounds_concurrent_copies() {
	local tier="$TEST_WORKDIR/par/tiers/nvme" i n max=0 pids=()
	trap stop_private EXIT
	for i in 1 2 3; do
		mkdir -p "$TEST_WORKDIR/pfs/par$i"
		head -c 6000000 /dev/urandom | (cd "$TEST_WORKDIR/pfs/par$i" && split -b 1000 -a 4 - f)
	done
	chown -R "$TEST_USER:" "$TEST_WORKDIR/pfs"
	start_private par nodepar "Tier=nvme Path=$tier
StageParallelism=1"
	for i in 1 2 3; do
		pstage par "70$i" nvme "$TEST_WORKDIR/pfs/par$i" >"par$i.out" &
		pids+=($!)
	done
	# Copies in flight are iostaged's live stage workers of these sources
	# (a build directory outlives its worker while it is published, so
	# counting those would count a publish as a second copy). Only its
	# direct children: under SANITIZE=1 a worker's LeakSanitizer exit scan
	# clones a tracer task with the worker's own command line.
	while kill -0 "${pids[@]}" 2>/dev/null; do
		n=$(pgrep -P "$(cat "$TEST_WORKDIR/par/pid")" -f -- "--stage-worker .*$TEST_WORKDIR/pfs/par" | wc -l)
		[ "$n" -gt "$max" ] && max=$n
		sleep 0.02
	done
	wait "${pids[@]}"
	for i in 1 2 3; do
		assert_contains "dataset par$i" "$(cat "par$i.out")" '"state":"staged"'
	done
	[ "$max" -ge 1 ] || fail "never saw a copy in flight"
	[ "$max" -le 1 ] || fail "StageParallelism=1: saw $max copies at once"
	assert_eq "versions built" 3 "$(grep -c "dataset 'ds': built" "$TEST_WORKDIR/par/d.log")"
}
