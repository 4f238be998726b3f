# shellcheck shell=bash
# Public datasets (docs/STAGING.md, "Public entries"): a source tree
# readable by everyone is staged once, by PublicUser, taken over by root
# and served read-only to every user who asks for it; a tree with anything
# private in it, or below a directory not everyone can pass, stays per
# user; a tree made private between jobs is noticed at the next hit.
. "$IT_DIR/datasets.sh"

# make_public DIR: a tree readable by everyone (root's files 0644, dirs 0755).
make_public() {
	local dir=$1
	mkdir -p "$dir/train/a" "$dir/val"
	head -c 300000 /dev/urandom >"$dir/train/a/x.bin"
	head -c 4097 /dev/urandom >"$dir/train/y.bin"
	printf 'label,file\n1,x\n' >"$dir/val/labels.csv"
	ln -s ../train/y.bin "$dir/val/link.bin"
	chown -R root:root "$dir"
	find "$dir" -type d -exec chmod 0755 {} + && find "$dir" -type f -exec chmod 0644 {} +
	chmod 0755 "$(dirname "$dir")"
}

pub_wait_finished() {
	for _ in $(seq 1 100); do
		grep -q "job $1: finished" "$IOSTAGED_LOG" && return 0
		sleep 0.1
	done
	fail "job $1 was not finished by the Epilog"
}

# The entry K.vN job JOBID was served for dataset NAME, from the log.
pub_entry_of() {
	sed -n "s/.*job $1: dataset '$2': \(built\|cache hit\) \([0-9a-f]\{32\}\.v[0-9]*\).*/\2/p" "$IOSTAGED_LOG" | head -n1
}

# The job script: where the data is (device:inode of a file and the top),
# and every way of writing into it, each refused or not.
write_probe_job() {
	cat >probe.sh <<'JOB'
#!/bin/bash
echo "INODE $(stat -c %d:%i "$IOSTAGE_DATA/train/a/x.bin")"
echo "TOP $(stat -c '%U %a' "$IOSTAGE_DATA")"
diff -r "$IOSTAGE_DATA" "$SRC" >/dev/null && echo SAME
touch "$IOSTAGE_DATA/new" 2>&1 && echo WROTE_NEW
echo x 2>&1 >>"$IOSTAGE_DATA/train/a/x.bin" && echo APPENDED
chmod u+w "$IOSTAGE_DATA/train/a/x.bin" 2>&1 && echo CHMODDED
chmod u+w "$IOSTAGE_DATA" 2>&1 && echo CHMODDED_TOP
rm -f "$IOSTAGE_DATA/val/labels.csv" 2>&1; [ -e "$IOSTAGE_DATA/val/labels.csv" ] || echo REMOVED
JOB
}

# run_probe USER OUT SRC: the probe job as USER with SRC staged.
run_probe() {
	submit_wait "$1" --export=ALL,SRC="$3" --io-profile="dl-train,data=$3" -o "$2" probe.sh >/dev/null ||
		fail "$1's job failed: $SUBMIT_OUT; output: $(cat "$2" 2>/dev/null)"
	assert_file_contains "$1's job sees the source" "$2" SAME
}

assert_no_writes() {
	local w
	for w in WROTE_NEW APPENDED CHMODDED CHMODDED_TOP REMOVED; do
		grep -qx "$w" "$1" && fail "a write went through the shared copy ($w); output: $(cat "$1")"
	done
	assert_file_contains "why writes fail" "$1" "Read-only file system"
}

test_two_users_share_one_public_copy() {
	local src="$TEST_WORKDIR/pfs/pubds" j1 j2 j3 e1 e2 cache r
	make_public "$src"
	write_probe_job
	run_probe "$TEST_USER" one.txt "$src"
	j1=$SUBMIT_JOBID
	run_probe "$OTHER_USER" two.txt "$src"
	j2=$SUBMIT_JOBID
	e1=$(pub_entry_of "$j1" pubds)
	e2=$(pub_entry_of "$j2" pubds)
	[ -n "$e1" ] || fail "no entry for job $j1 in the log"
	# One entry, one build: the second user's job is a hit on it.
	assert_eq "both users' entry" "$e1" "$e2"
	assert_file_contains "first job built the public entry" "$IOSTAGED_LOG" \
		"job $j1: dataset 'pubds': built $e1 on tier 'nvme' (public)"
	assert_file_contains "second job hit it" "$IOSTAGED_LOG" \
		"job $j2: dataset 'pubds': cache hit $e1 on tier 'nvme' (public)"
	assert_eq "builds of the dataset" 1 "$(grep -c "dataset 'pubds': built" "$IOSTAGED_LOG")"
	# The same file (device and inode) in both jobs.
	assert_eq "same copy in both jobs" "$(sed -n 's/^INODE //p' one.txt)" "$(sed -n 's/^INODE //p' two.txt)"
	cache="$IOSTAGE_TIERS/nvme/cache/$e1"
	assert_eq "the copy's inode" "$(stat -c %d:%i "$cache/data/train/a/x.bin")" "$(sed -n 's/^INODE //p' one.txt)"
	# Root's, without a write bit, for everyone alike.
	assert_eq "top of the shared copy" "TOP root 555" "$(grep '^TOP' one.txt)"
	assert_eq "owners in the shared copy" "root" \
		"$(find "$cache/data" -printf '%u\n' | sort -u | tr '\n' ' ' | sed 's/ $//')"
	[ -z "$(find "$cache/data" ! -type l -perm /7222)" ] ||
		fail "write or set-id bits left in the shared copy: $(find "$cache/data" ! -type l -perm /7222)"
	assert_no_writes one.txt
	assert_no_writes two.txt
	# Nor outside a job, through the cache directory itself.
	as_user "$TEST_USER" chmod u+w "$cache/data/train/a/x.bin" 2>/dev/null &&
		fail "$TEST_USER could chmod the shared copy"
	as_user "$OTHER_USER" touch "$cache/data/new" 2>/dev/null &&
		fail "$OTHER_USER could create a file in the shared copy"
	cmp -s "$src/train/a/x.bin" "$cache/data/train/a/x.bin" || fail "the shared copy changed"
	# Listed to every user, marked public; only root evicts it.
	pub_wait_finished "$j1"
	pub_wait_finished "$j2"
	r=$(iostaged_request "$OTHER_USER" '{"op":"cache_ls"}')
	assert_contains "cache_ls by another user" "$r" "\"source\":\"$src\",\"uid\":0,\"user\":\"(public)\",\"public\":true"
	r=$(as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" cache ls)
	assert_contains "iostage cache ls marks it" "$r" "(public)"
	# While a job of one user pins it, another user sees the count of
	# pins, not which jobs; root sees both.
	submit "$TEST_USER" --io-profile="dl-train,data=$src" -o pin.txt \
		--wrap 'touch started; sleep 60' >/dev/null || fail "sbatch: $SUBMIT_OUT"
	j3=$SUBMIT_JOBID
	for _ in $(seq 1 100); do [ -e started ] && break; sleep 0.2; done
	[ -e started ] || fail "job $j3 did not start"
	r=$(iostaged_request "$OTHER_USER" '{"op":"cache_ls"}')
	assert_contains "another user's view of the pins" "$r" "\"source\":\"$src\""
	assert_contains "another user's view of the pins" "$r" '"pins":1,"pinned_by":[]'
	r=$(iostaged_request '{"op":"cache_ls"}')
	assert_contains "root's view of the pins" "$r" ".$j3\"]"
	r=$(iostaged_request "{\"op\":\"cache_evict\",\"key\":\"${e1%.v*}\"}")
	assert_contains "evict while pinned, by root" "$r" "is pinned by"
	scancel "$j3"
	pub_wait_finished "$j3"
	r=$(iostaged_request "$TEST_USER" "{\"op\":\"cache_evict\",\"key\":\"${e1%.v*}\"}")
	assert_contains "evict by a user" "$r" "only root may evict it"
	[ -d "$cache" ] || fail "a user evicted the public entry"
	r=$(iostaged_request "{\"op\":\"cache_evict\",\"key\":\"${e1%.v*}\"}")
	assert_contains "evict by root" "$r" '"ok":true'
}

# One file not readable by others keeps the whole tree per user: each user
# gets an entry of their own, built as that user.
test_private_file_keeps_dataset_per_user() {
	local src="$TEST_WORKDIR/pfs/mixed" j1 j2 e1 e2
	make_public "$src"
	# Readable by its owner and, through their primary group, the other
	# user; not by others.
	chown "$TEST_USER:$(id -gn "$OTHER_USER")" "$src/val/labels.csv"
	chmod 0640 "$src/val/labels.csv"
	write_probe_job
	run_probe "$TEST_USER" one.txt "$src"
	j1=$SUBMIT_JOBID
	run_probe "$OTHER_USER" two.txt "$src"
	j2=$SUBMIT_JOBID
	e1=$(pub_entry_of "$j1" mixed)
	e2=$(pub_entry_of "$j2" mixed)
	[ -n "$e1" ] && [ -n "$e2" ] || fail "entries missing in the log: '$e1' '$e2'"
	assert_ne "two users, two entries" "$e1" "$e2"
	assert_ne "two copies" "$(sed -n 's/^INODE //p' one.txt)" "$(sed -n 's/^INODE //p' two.txt)"
	assert_file_contains "why job $j1 was not shared" "$IOSTAGED_LOG" \
		"job $j1: dataset 'mixed': not shared across users, staged for $TEST_USER alone: cannot share $src/val/labels.csv: mode 0640 is not readable by everyone"
	assert_file_contains "job $j2 not shared either" "$IOSTAGED_LOG" \
		"job $j2: dataset 'mixed': not shared across users, staged for $OTHER_USER alone"
	assert_eq "job $j1's entry is its user's" "$TEST_USER" "$(stat -c %U "$IOSTAGE_TIERS/nvme/cache/$e1/data")"
	assert_eq "job $j2's entry is its user's" "$OTHER_USER" "$(stat -c %U "$IOSTAGE_TIERS/nvme/cache/$e2/data")"
	# No public entry was left of the attempt.
	iostaged_request '{"op":"cache_ls"}' | grep -q "\"source\":\"$src\",\"uid\":0" &&
		fail "a public entry of $src exists"
	assert_no_writes one.txt
	return 0
}

# Permissions change between jobs: the next hit runs the public check
# again (the tree and the directories above it) and the job gets a copy of
# its own.
test_tree_made_private_between_jobs_goes_per_user() {
	local parent="$TEST_WORKDIR/pfs/group" src j1 j2 j3 e1 e2 e3
	src="$parent/ds"
	make_public "$src"
	write_probe_job
	run_probe "$TEST_USER" one.txt "$src"
	j1=$SUBMIT_JOBID
	e1=$(pub_entry_of "$j1" ds)
	assert_file_contains "first job: public" "$IOSTAGED_LOG" "job $j1: dataset 'ds': built $e1 on tier 'nvme' (public)"
	pub_wait_finished "$j1"
	# A file goes private (its mtime unchanged: only the mode differs).
	chown "$TEST_USER:" "$src/train/y.bin"
	chmod 0600 "$src/train/y.bin"
	run_probe "$TEST_USER" two.txt "$src"
	j2=$SUBMIT_JOBID
	e2=$(pub_entry_of "$j2" ds)
	assert_ne "job $j2's entry" "$e1" "$e2"
	assert_file_contains "job $j2: the change noticed" "$IOSTAGED_LOG" \
		"job $j2: dataset 'ds': not shared across users, staged for $TEST_USER alone"
	assert_eq "job $j2's entry is its user's" "$TEST_USER" "$(stat -c %U "$IOSTAGE_TIERS/nvme/cache/$e2/data")"
	pub_wait_finished "$j2"
	# Public again, but the directory above goes private to the user.
	chown root:root "$src/train/y.bin"
	chmod 0644 "$src/train/y.bin"
	chown "$TEST_USER:" "$parent"
	chmod 0750 "$parent"
	run_probe "$TEST_USER" three.txt "$src"
	j3=$SUBMIT_JOBID
	e3=$(pub_entry_of "$j3" ds)
	assert_file_contains "job $j3: the directory above noticed" "$IOSTAGED_LOG" \
		"job $j3: dataset 'ds': not shared across users, staged for $TEST_USER alone: $parent (mode 0750) is not searchable by everyone"
	assert_ne "job $j3 is not served the public entry" "$e1" "$e3"
	# The other user never gets the public copy of a tree they cannot reach.
	submit_wait "$OTHER_USER" --io-profile="dl-train,data=$src" -o four.txt --wrap 'echo RAN' >/dev/null &&
		fail "$OTHER_USER's job ran on a dataset they cannot read: $(cat four.txt)"
	return 0
}
