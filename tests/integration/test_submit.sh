# shellcheck shell=bash
# --io-profile at submit: sbatch (flag and #SBATCH), salloc, srun, --help,
# and every kind of bad SPEC refused with one line and nothing queued.
. "$IT_DIR/datasets.sh"

setup_ds() {
	DS="$TEST_WORKDIR/pfs/imagenet"
	make_dataset "$DS"
}

test_sbatch_help_lists_option() {
	local help
	help=$(as_user "$TEST_USER" sbatch --help 2>&1)
	assert_contains "sbatch --help" "$help" "--io-profile=SPEC"
	assert_contains "sbatch --help" "$help" "Stage datasets to node-local"
}

test_sbatch_flag_stages() {
	setup_ds
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$DS" -o out.txt \
		--wrap 'echo "DATA=$IOSTAGE_DATA"' >/dev/null ||
		fail "sbatch --wait failed: $SUBMIT_OUT"
	assert_file_contains "job output" out.txt "DATA=$IOSTAGE_TIERS/nvme/jobs/$SUBMIT_JOBID/data/imagenet"
}

test_sbatch_directive_stages() {
	setup_ds
	cat >job.sh <<JOB
#!/bin/bash
#SBATCH --io-profile=dl-train,data=$DS
#SBATCH -o out.txt
echo "DATA=\$IOSTAGE_DATA_IMAGENET"
JOB
	submit_wait "$TEST_USER" job.sh >/dev/null || fail "sbatch failed: $SUBMIT_OUT"
	assert_file_contains "job output" out.txt "DATA=$IOSTAGE_TIERS/nvme/jobs/$SUBMIT_JOBID/data/imagenet"
}

test_salloc_stages() {
	setup_ds
	local out
	out=$(as_user "$TEST_USER" timeout 60 salloc --io-profile="dl-train,data=$DS" \
		srun bash -c 'echo "DATA=$IOSTAGE_DATA"; ls "$IOSTAGE_DATA/train/a"' 2>&1)
	assert_contains "salloc output" "$out" "/data/imagenet"
	assert_contains "salloc output" "$out" "x.bin"
}

test_srun_stages() {
	setup_ds
	local out
	out=$(as_user "$TEST_USER" timeout 60 srun --io-profile="dl-train,data=$DS:ram" \
		bash -c 'echo "DATA=$IOSTAGE_DATA"; cat "$IOSTAGE_DATA/val/labels with space.csv"' 2>&1)
	assert_contains "srun output" "$out" "DATA=$IOSTAGE_TIERS/ram/jobs/"
	assert_contains "srun output" "$out" "1,x"
}

# expect_refused WHAT SPEC NEEDLE...: sbatch exits non-zero, queues nothing,
# and prints one iostage line containing every NEEDLE.
expect_refused() {
	local what=$1 spec=$2 out rc line
	shift 2
	out=$(cd "$TEST_WORKDIR" && as_user "$TEST_USER" sbatch --io-profile="$spec" --wrap true 2>&1)
	rc=$?
	assert_ne "$what: sbatch exit status" 0 "$rc"
	assert_not_contains "$what: sbatch output" "$out" "Submitted batch job"
	assert_eq "$what: jobs queued" "" "$(squeue -h -u "$TEST_USER" -o %i)"
	line=$(printf '%s\n' "$out" | grep 'iostage: --io-profile' || true)
	assert_eq "$what: number of iostage lines" 1 "$(printf '%s\n' "$line" | grep -c .)"
	for needle in "$@"; do
		assert_contains "$what: message" "$line" "$needle"
	done
}

test_bad_specs_refused() {
	setup_ds
	printf '{\n  "datasets": [\n    {"path": "/x",,}\n  ]\n}\n' >"$TEST_WORKDIR/broken.json"
	chmod 0644 "$TEST_WORKDIR/broken.json"
	install -d -m 0700 "$TEST_WORKDIR/private"
	head -c 100 /dev/urandom >"$TEST_WORKDIR/private/secret"

	expect_refused "unknown profile" "nosuch" "key 'profile'" "unknown profile 'nosuch'" "dl-train"
	expect_refused "unknown key" "dl-train,colour=blue" "key 'colour'" "unknown key"
	expect_refused "malformed JSON" "$TEST_WORKDIR/broken.json" "malformed JSON" "line 3" "column"
	expect_refused "relative path" "dl-train,data=pfs/imagenet" "key 'data'" "absolute"
	expect_refused "dotdot" "dl-train,data=$DS/../imagenet" "key 'data'" "'..'"
	expect_refused "missing dataset" "dl-train,data=$TEST_WORKDIR/nope" "key 'data'" "No such file or directory"
	expect_refused "unreadable dataset" "dl-train,data=$TEST_WORKDIR/private/secret" "key 'data'" "Permission denied"
	expect_refused "unknown tier" "dl-train,data=$DS:nvm" "unknown tier 'nvm'" "known: nvme, ram, tiny"
	expect_refused "timeout zero" "dl-train,data=$DS,timeout=0" "key 'timeout'" "out of range"
	expect_refused "timeout huge" "dl-train,data=$DS,timeout=999999" "key 'timeout'" "out of range"
	expect_refused "bad policy" "dl-train,data=$DS,on-failure=maybe" "key 'on-failure'"
	expect_refused "overlong spec" "dl-train,data=/$(head -c 5000 /dev/zero | tr '\0' a)" "longer than"
	expect_refused "overlong path" "dl-train,data=/$(head -c 2000 /dev/zero | tr '\0' a)" "key 'data'" "longer than"
}

test_srun_and_salloc_refuse_bad_spec() {
	local out rc
	out=$(as_user "$TEST_USER" timeout 30 srun --io-profile=nosuch true 2>&1)
	rc=$?
	assert_ne "srun exit status" 0 "$rc"
	assert_contains "srun message" "$out" "unknown profile 'nosuch'"
	out=$(as_user "$TEST_USER" timeout 30 salloc --io-profile=dl-train,data=relative true 2>&1)
	rc=$?
	assert_ne "salloc exit status" 0 "$rc"
	assert_contains "salloc message" "$out" "key 'data'"
	assert_eq "jobs queued" "" "$(squeue -h -u "$TEST_USER" -o %i)"
}

test_auto_without_history_runs() {
	submit_wait "$TEST_USER" -J "never-ran-before-$$" --io-profile=auto -o out.txt --wrap 'echo ran' >/dev/null ||
		fail "sbatch failed: $SUBMIT_OUT"
	assert_contains "sbatch output" "$SUBMIT_OUT" "no history yet"
	assert_file_contains "job output" out.txt "ran"
}

test_user_json_profile_with_overrides() {
	setup_ds
	cat >"$TEST_WORKDIR/train.json" <<JSON
{ "description": "my training run",
  "datasets": [ { "name": "images", "path": "$DS", "tier": "ram", "access": "random" } ],
  "timeout": 120, "on_failure": "fail" }
JSON
	chmod 0644 "$TEST_WORKDIR/train.json"
	submit_wait "$TEST_USER" --io-profile="$TEST_WORKDIR/train.json,on-failure=fallback" -o out.txt \
		--wrap 'echo "IMAGES=$IOSTAGE_DATA_IMAGES"; echo "PROFILE=$SLURM_SPANK_IOSTAGE_PROFILE"' >/dev/null ||
		fail "sbatch failed: $SUBMIT_OUT"
	assert_file_contains "dataset from the JSON file" out.txt "IMAGES=$IOSTAGE_TIERS/ram/jobs/$SUBMIT_JOBID/data/images"
	assert_file_contains "override applied" out.txt '"on_failure":"fallback"'
	assert_file_contains "timeout from the file" out.txt '"timeout":120'
}
