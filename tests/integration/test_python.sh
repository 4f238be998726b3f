# shellcheck shell=bash
# The Python module `iostage` and the PyTorch example of docs/PYTHON.md
# (examples/pytorch), trained as real jobs: the page shows the files the
# tests run; the training gives the same losses, data and checkpoints
# with iostage as from the PFS without it; the job's record has the phases
# the script marked, with exactly the dataset bytes it read; the
# checkpoints reach the PFS; the next job is a cache hit; and all of it
# holds under srun and with DataLoader workers started by spawn.
#
# The jobs run Debian's /usr/bin/python3 (PATH below: root's may start
# with a pyenv) with python3-torch, -torchvision, -h5py, -numpy and -pil
# (scripts/install-deps.sh). Where they are missing (a release root or a
# package test's fresh root without them) each test says SKIP and passes.

EXAMPLE="$REPO_ROOT/examples/pytorch"
PY=/usr/bin/python3
EPOCHS=2

# Where a build tree's `make install` (setup.sh) put the module, the
# library and the command; an installed iostage's module finds its own.
py_env() {
	printf '%s\n' "PATH=$IOSTAGE_BINDIR:/usr/local/bin:/usr/bin:/bin"
	[ "${IOSTAGE_INSTALLED:-0}" = 1 ] && return 0
	printf '%s\n' "PYTHONPATH=$IOSTAGE_PYTHONDIR" \
		"IOSTAGE_LIBIOSTAGE=$IOSTAGE_LIBDIR/libiostage.so.0" \
		"IOSTAGE_CLI=$IOSTAGE_BINDIR/iostage"
}

# sbatch's --export for a job that runs the example.
py_export() { printf 'ALL,%s' "$(py_env | paste -sd, -)"; }

# py_ready: 0 when the example can run here; else a SKIP line, 1.
py_ready() {
	local out
	out=$(mapfile -t e < <(py_env) && env "${e[@]}" "$PY" -c \
		'import h5py, numpy, PIL, torch, torchvision' 2>&1) || {
		echo "SKIP: $PY cannot import the example's packages (python3-torch, -torchvision, -h5py, -numpy, -pil: scripts/install-deps.sh): ${out##*$'\n'}"
		return 1
	}
	out=$(mapfile -t e < <(py_env) && env "${e[@]}" "$PY" -c 'import iostage' 2>&1) || {
		[ "${IOSTAGE_INSTALLED:-0}" = 1 ] ||
			fail "the module make install put in $IOSTAGE_PYTHONDIR does not import: $out"
		echo "SKIP: the installed iostage has no Python module for $PY: ${out##*$'\n'}"
		return 1
	}
}

# py_fixture: the example's data on the "PFS" (the test user's, private),
# train.py in the job's directory, and what reading it all costs.
py_fixture() {
	local g
	g=$(id -gn "$TEST_USER")
	PFS="$TEST_WORKDIR/pfs"
	DATA="$PFS/shapes"
	install -d -o "$TEST_USER" -g "$g" -m 0750 "$PFS"
	install -d -o "$TEST_USER" -g "$g" -m 0755 "$PFS/runs"
	"$PY" "$EXAMPLE/make_data.py" "$DATA" || fail "make_data.py $DATA failed"
	chown -R "$TEST_USER:$g" "$DATA"
	install -m 0644 "$EXAMPLE/train.py" "$TEST_WORKDIR/train.py"
	NIMG=$(find "$DATA/train" -type f -name '*.png' | wc -l)
	IMG_BYTES=$(find "$DATA/train" -type f -name '*.png' -printf '%s\n' |
		awk '{ s += $1 } END { print s + 0 }')
	H5_BYTES=$(stat -c %s "$DATA/val.h5")
	{ [ "$NIMG" -gt 0 ] && [ "$H5_BYTES" -gt 0 ]; } ||
		fail "make_data.py made $NIMG images and a val.h5 of ${H5_BYTES:-?} bytes"
}

# The --io-profile of submit.sh, on this test's PFS.
py_profile() { printf 'dl-train,data=%s,data=%s,out=%s' "$DATA/train" "$DATA/val.h5" "$1"; }

# py_reference OUT [ARGS...]: train.py outside Slurm and iostage, as the
# test user, on the PFS paths: the results every job must reproduce
# (stdout+stderr in ref.txt).
py_reference() {
	local out=$1 e
	shift
	mapfile -t e < <(py_env)
	(cd "$TEST_WORKDIR" && as_user "$TEST_USER" env "${e[@]}" "$PY" train.py \
		--pfs "$DATA" --out "$out" --epochs "$EPOCHS" "$@") >ref.txt 2>&1 ||
		fail "train.py outside Slurm failed: $(tail -n 5 ref.txt)"
}

# results FILE: what must not change (the losses, accuracies and data
# checksums train.py prints); 1 unless there is one line per epoch.
results() {
	local r
	r=$(grep -E '^(val data sha256 |epoch [0-9]+: )' "$1")
	printf '%s\n' "$r"
	[ "$(grep -c '^epoch ' <<<"$r")" = "$EPOCHS" ]
}

# assert_same_results WHAT EXPECTED_FILE FILE
assert_same_results() {
	local want got
	want=$(results "$2") || fail "$1: expected $EPOCHS epochs in $2, got: $(tail -n 20 "$2")"
	got=$(results "$3") || fail "$1: expected $EPOCHS epochs in $3, got: $(tail -n 20 "$3")"
	assert_eq "$1" "$want" "$got"
}

# job_record JOBID: the record once the Epilog closed it (root's view);
# 1 when there is none after 60 s.
job_record() {
	local i rec
	for ((i = 0; i < 300; i++)); do
		rec=$(iostage -c "$IOSTAGE_CONF" telemetry "$1" --json 2>/dev/null)
		if jq -e '.end' >/dev/null 2>&1 <<<"$rec"; then
			printf '%s\n' "$rec"
			return 0
		fi
		sleep 0.2
	done
	echo "no finished telemetry record for job $1: $rec" >&2
	return 1
}

# checkpoints DIR: "NAME SHA256" of each epoch's checkpoint.
checkpoints() {
	(cd "$1" 2>/dev/null && sha256sum epoch*.pt 2>/dev/null | awk '{ print $2, $1 }')
}

# assert_same_checkpoints WHAT EXPECTED_DIR DIR: one per epoch in both,
# byte for byte the same.
assert_same_checkpoints() {
	local want
	want=$(checkpoints "$2")
	{ [ -n "$want" ] && [ "$(wc -l <<<"$want")" = "$EPOCHS" ]; } ||
		fail "$1: expected $EPOCHS checkpoints in $2, got: $(ls -la "$2" 2>&1)"
	assert_eq "$1" "$want" "$(checkpoints "$3")"
}

# assert_iostage_job REC OUT WHAT: what every traced run of the example
# records (fork or spawn workers, batch step or srun):
# - the three phases train.py marks, as sub-phases of the run; no
#   automatic one with a byte: every read or write of a dataset or an
#   output is in a marked phase but the workers' reads of the images,
#   which the shim puts in "read", the marker's phase (below). (An srun
#   in the batch script makes one without bytes: the plugin, in srun,
#   checks the profile's paths, and a stat of the output is "write".)
# - the datasets' bytes: the shim counts what read(2) and its kin
#   returned, so this is exact: train.py reads every image of the
#   ImageFolder whole in each epoch (PIL through Python's buffered file:
#   one open, the file's bytes) and val.h5 once (HDF5's core driver: one
#   open, one read of the whole file); the workers' reads count in the
#   shim's automatic phase "read", which the marker "read" shares, the
#   main process's marked reads of val.h5 there too; nothing of the
#   datasets is read in any other phase;
# - the checkpoints: what torch.save wrote in "checkpoint", exactly the
#   files on the PFS after the drain.
assert_iostage_job() {
	local rec=$1 out=$2 what=$3 ck_bytes
	assert_eq "$what: bytes_source" shim \
		"$(jq -r '.phases[] | select(.name == "run") | .bytes_source' <<<"$rec")"
	assert_eq "$what: the run's marked sub-phases (by rank 0)" \
		"read:0 compute:0 checkpoint:0" \
		"$(jq -r '[.phases[] | select(.parent == "run" and .source == "marker") | "\(.name):\(.ranks | map(tostring) | join(","))"] | join(" ")' <<<"$rec")"
	assert_eq "$what: automatic sub-phases that read or wrote a byte" "" \
		"$(jq -r '[.phases[] | select(.parent == "run" and .source != "marker" and (.read_bytes // 0) + (.write_bytes // 0) > 0) | "\(.name) \(.read_bytes) \(.write_bytes)"] | join(", ")' <<<"$rec")"
	assert_eq "$what: read: dataset bytes and opens ($EPOCHS x $NIMG images of $IMG_BYTES bytes in all, val.h5 of $H5_BYTES once)" \
		"$((EPOCHS * IMG_BYTES + H5_BYTES)) $((EPOCHS * NIMG + 1))" \
		"$(jq -r '.phases[] | select(.name == "read") | .counters.dataset | "\(.POSIX_BYTES_READ) \(.POSIX_OPENS)"' <<<"$rec")"
	assert_eq "$what: the run's dataset bytes and opens are the read phase's" \
		"$((EPOCHS * IMG_BYTES + H5_BYTES)) $((EPOCHS * NIMG + 1))" \
		"$(jq -r '.phases[] | select(.name == "run") | .counters.dataset | "\(.POSIX_BYTES_READ) \(.POSIX_OPENS)"' <<<"$rec")"
	assert_eq "$what: compute and checkpoint read no dataset" "0 0" \
		"$(jq -r '[.phases[] | select(.name == "compute" or .name == "checkpoint") | .counters.dataset.POSIX_BYTES_READ // 0] | map(tostring) | join(" ")' <<<"$rec")"
	ck_bytes=$(stat -c %s "$out"/epoch*.pt 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
	[ "$ck_bytes" -gt 0 ] || fail "$what: no checkpoints in $out: $(ls -la "$out" 2>&1)"
	assert_eq "$what: checkpoint: bytes written to the output = the checkpoints on the PFS" \
		"$ck_bytes" \
		"$(jq -r '.phases[] | select(.name == "checkpoint") | .counters.output.POSIX_BYTES_WRITTEN' <<<"$rec")"
	assert_eq "$what: the output's drained files and bytes" "$EPOCHS $ck_bytes 0" \
		"$(jq -r '.outputs[0] | "\(.files) \(.bytes) \(.failed_files)"' <<<"$rec")"
}

test_python_docs_show_the_example_verbatim() {
	local out
	out=$(bash "$REPO_ROOT/scripts/check-doc-examples.sh" 2>&1) ||
		fail "docs/PYTHON.md and examples/: $out"
	printf '%s\n' "$out"
	# All three files, each once (a block that is not checked would be
	# free to drift).
	assert_eq "blocks checked" "3 blocks checked" "$out"
}

test_python_training_with_and_without_iostage() {
	local pfsout out rec j mark name
	py_ready || return 0
	py_fixture
	pfsout="$PFS/runs/tiny-cnn"

	# (a) Without iostage: a plain job on the PFS paths. No job to mark
	# phases in: one warning, then quiet; no record.
	cat >plain.sh <<JOB
#!/bin/bash
python3 train.py --pfs $DATA --out $PFS/runs/plain --epochs $EPOCHS
JOB
	submit_wait "$TEST_USER" --export="$(py_export)" -o plain.txt plain.sh >/dev/null ||
		fail "job without iostage failed: $SUBMIT_OUT; output: $(cat plain.txt)"
	j=$SUBMIT_JOBID
	assert_file_contains "plain: the PFS dataset" plain.txt "train: $DATA/train"
	assert_file_contains "plain: its identity" plain.txt "identity: Identity(job=$j, step=4294967291,"
	assert_eq "plain: warnings that markers are not recorded" 1 \
		"$(grep -c 'RuntimeWarning: iostage: phase markers are not recorded' plain.txt)"
	grep -qE "/train\.py:[0-9]+: RuntimeWarning: iostage: phase markers" plain.txt ||
		fail "plain: the warning should name the line of train.py that marked: $(grep -A1 RuntimeWarning plain.txt)"
	assert_file_contains "plain: no record" plain.txt "no telemetry: "

	# (b, c, d) submit.sh as the page shows it, on this test's PFS.
	sed "s|/pfs/alice|$PFS|g" "$EXAMPLE/submit.sh" >submit.sh
	grep -qF -- "--io-profile=$(py_profile "$pfsout")" submit.sh ||
		fail "submit.sh's --io-profile is not the one this test checks: $(grep io-profile submit.sh)"
	submit_wait "$TEST_USER" --export="$(py_export)" submit.sh >/dev/null ||
		fail "submit.sh failed: $SUBMIT_OUT; output: $(cat tiny-cnn-*.out)"
	j=$SUBMIT_JOBID
	out=tiny-cnn-$j.out
	assert_eq "job state after the Epilog" COMPLETED "$(job_end_state "$j")"
	assert_same_results "iostage: the same results as from the PFS" plain.txt "$out"
	assert_file_contains "iostage: the staged dataset" "$out" \
		"train: $IOSTAGE_TIERS/nvme/jobs/$j/data/train"
	assert_file_contains "iostage: the staged HDF5 file" "$out" \
		"val: $IOSTAGE_TIERS/nvme/jobs/$j/data/val_h5"
	assert_file_contains "iostage: checkpoints to the node" "$out" \
		"checkpoints: $IOSTAGE_TIERS/nvme/jobs/$j/out/tiny-cnn"
	assert_file_contains "iostage: the record from inside the job" "$out" \
		"phases marked: read compute checkpoint"
	assert_not_contains "iostage: no warning" "$(cat "$out")" "RuntimeWarning"
	rec=$(job_record "$j") || fail "no record of job $j"
	assert_eq "iostage: datasets (name result)" "train built val_h5 built" \
		"$(jq -r '[.datasets[] | "\(.name) \(.result)"] | join(" ")' <<<"$rec")"
	assert_iostage_job "$rec" "$pfsout" iostage
	assert_same_checkpoints "iostage: checkpoints on the PFS = the plain job's" \
		"$PFS/runs/plain" "$pfsout"

	# (e) The same job again: both datasets from the cache.
	mark=$(wc -l <"$IOSTAGED_LOG")
	rm -f "$pfsout"/epoch*.pt
	submit_wait "$TEST_USER" --export="$(py_export)" submit.sh >/dev/null ||
		fail "second submit.sh failed: $SUBMIT_OUT; output: $(cat "tiny-cnn-$SUBMIT_JOBID.out")"
	j=$SUBMIT_JOBID
	assert_same_results "second job: the same results" plain.txt "tiny-cnn-$j.out"
	rec=$(job_record "$j") || fail "no record of job $j"
	assert_eq "second job: datasets (name result copied_bytes)" "train hit 0 val_h5 hit 0" \
		"$(jq -r '[.datasets[] | "\(.name) \(.result) \(.copied_bytes)"] | join(" ")' <<<"$rec")"
	assert_eq "second job: stage_in copied nothing, served it all from cache" \
		"0 $((IMG_BYTES + H5_BYTES))" \
		"$(jq -r '.phases[] | select(.name == "stage_in") | "\(.copied_bytes) \(.cached_bytes)"' <<<"$rec")"
	for name in train val_h5; do
		tail -n +"$((mark + 1))" "$IOSTAGED_LOG" | grep -q "job $j: dataset '$name': cache hit" ||
			fail "second job: no 'job $j: dataset '$name': cache hit' in the iostaged log"
	done
	assert_iostage_job "$rec" "$pfsout" "second job"
	assert_same_checkpoints "second job: checkpoints on the PFS = the plain job's" \
		"$PFS/runs/plain" "$pfsout"
}

# (f) train.py as an srun task in the batch script: step 0, rank 0.
test_python_training_under_srun() {
	local pfsout rec
	py_ready || return 0
	py_fixture
	pfsout="$PFS/runs/srun"
	py_reference "$PFS/runs/ref"
	cat >job.sh <<JOB
#!/bin/bash
srun -n1 python3 train.py --epochs $EPOCHS
JOB
	submit_wait "$TEST_USER" --export="$(py_export)" --io-profile="$(py_profile "$pfsout")" \
		-o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt)"
	assert_eq "job state after the Epilog" COMPLETED "$(job_end_state "$SUBMIT_JOBID")"
	assert_same_results "srun: the same results as outside Slurm" ref.txt out.txt
	assert_file_contains "srun: the task's identity" out.txt \
		"identity: Identity(job=$SUBMIT_JOBID, step=0, rank=0, local_rank=0,"
	assert_file_contains "srun: the record from inside the job" out.txt \
		"phases marked: read compute checkpoint"
	rec=$(job_record "$SUBMIT_JOBID") || fail "no record of job $SUBMIT_JOBID"
	assert_iostage_job "$rec" "$pfsout" srun
	assert_ne "srun: traced processes in step 0" 0 \
		"$(jq '[.processes[] | select(.step == 0 and .traced)] | length' <<<"$rec")"
	assert_same_checkpoints "srun: checkpoints on the PFS = outside Slurm's" \
		"$PFS/runs/ref" "$pfsout"
}

# (f) DataLoader workers started by spawn: new python3 processes, traced
# because the shim stays in the environment they are exec'd with.
test_python_training_with_spawn_workers() {
	local pfsout rec
	py_ready || return 0
	py_fixture
	pfsout="$PFS/runs/spawn"
	py_reference "$PFS/runs/ref" --start-method spawn
	cat >job.sh <<JOB
#!/bin/bash
python3 train.py --epochs $EPOCHS --start-method spawn
JOB
	submit_wait "$TEST_USER" --export="$(py_export)" --io-profile="$(py_profile "$pfsout")" \
		-o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT; output: $(cat out.txt)"
	assert_eq "job state after the Epilog" COMPLETED "$(job_end_state "$SUBMIT_JOBID")"
	assert_same_results "spawn: the same results as outside Slurm" ref.txt out.txt
	assert_file_contains "spawn: the record from inside the job" out.txt \
		"phases marked: read compute checkpoint"
	# The images are read by the workers only (the main process reads
	# val.h5): the exact counts say the spawned processes were traced.
	rec=$(job_record "$SUBMIT_JOBID") || fail "no record of job $SUBMIT_JOBID"
	assert_iostage_job "$rec" "$pfsout" spawn
	assert_same_checkpoints "spawn: checkpoints on the PFS = outside Slurm's" \
		"$PFS/runs/ref" "$pfsout"
}
