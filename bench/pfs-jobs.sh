# shellcheck shell=bash
# pfs-jobs.sh - the remote-PFS bench's Slurm jobs (issue 14 items 4 and 5),
# run by bench/pfs-bench.sh through the one-node harness
# (tests/integration/run.sh: a real slurmctld/slurmd, the plugin, the
# Prolog/Epilog and iostaged) while bench/pfs.sh's PFS is mounted on the
# host, where the jobs see it. Not part of the test suite: each function
# measures, appends one JSON line to PFSJ_RUNS and fails only when a job
# fails or a checkpoint is not byte-identical on the PFS.
#
# From pfs-bench.sh: PFSJ_RUNS (JSON lines), PFSJ_PFS (pfs.sh, with the
# PFS_* environment: `cold` before each cold case), PFSJ_DATA (the imagenet
# dataset on the PFS), PFSJ_READER (dlio_reader), PFSJ_RARGS (its options),
# PFSJ_OUT (a directory on the PFS the test user may create in),
# PFSJ_CKPT_BYTES, PFSJ_CKPT_N (checkpoints per job), PFSJ_CKPT_K (steps
# between checkpoints), PFSJ_STEP_MS (compute per step), PFSJ_RATE_BPS.

pfsj_now() { date +%s.%N; }

# pfsj_reader: the reader where the test user can run it.
pfsj_reader() {
	install -m 0755 "$PFSJ_READER" "$TEST_WORKDIR/dlio_reader"
	printf '%s\n' "$TEST_WORKDIR/dlio_reader"
}

# pfsj_epochs_job CASE SUBMIT_TIME SBATCH_ARGS...: one reader job; prints
# {case, submit_to_start_s, reader{...}} (times from the submission).
pfsj_epochs_job() {
	local case=$1 t0 start
	shift
	cat >"epochs-$case.sh" <<'JOB'
#!/bin/bash
echo "START $(date +%s.%N)"
# shellcheck disable=SC2086
"$PFSJ_RD" $PFSJ_RARGS "${IOSTAGE_DATA:-$PFSJ_DATA}" >"reader-$PFSJ_CASE.json" || exit 1
echo "END $(date +%s.%N)"
JOB
	chmod 0755 "epochs-$case.sh"
	t0=$(pfsj_now)
	submit_wait "$TEST_USER" --export=ALL,PFSJ_RD="$RD",PFSJ_RARGS="$PFSJ_RARGS",PFSJ_DATA="$PFSJ_DATA",PFSJ_CASE="$case" \
		-o "epochs-$case.out" "$@" "epochs-$case.sh" >/dev/null ||
		fail "epochs job ($case) failed: $SUBMIT_OUT; $(cat "epochs-$case.out")"
	start=$(sed -n 's/^START //p' "epochs-$case.out")
	jq -c --arg case "$case" --argjson pre "$(awk -v a="$start" -v b="$t0" 'BEGIN { printf "%.3f", a - b }')" \
		--arg job "$SUBMIT_JOBID" '{case:$case, job:($job|tonumber), submit_to_start_s:$pre, reader:.}' "reader-$case.json"
}

# Item 4: E epochs of the DLIO-shaped reader (a) straight from the PFS, (b)
# as a job with --io-profile (the Prolog stages; its time counts), (c) the
# same job again with the dataset cached (a verify=stat hit). Cold PFS
# client and page cache before each. Time to solution and to the first
# batch count from the submission.
test_pfs_epochs() {
	local RD a b c
	RD=$(pfsj_reader)
	"$PFSJ_PFS" cold || fail "cannot make the PFS cold"
	a=$(pfsj_epochs_job pfs) || exit 1
	"$PFSJ_PFS" cold || fail "cannot make the PFS cold"
	b=$(pfsj_epochs_job staged --io-profile="dl-train,data=$PFSJ_DATA") || exit 1
	"$PFSJ_PFS" cold || fail "cannot make the PFS cold"
	c=$(pfsj_epochs_job cache_warm --io-profile="dl-train,data=$PFSJ_DATA") || exit 1
	grep -q "job $(jq -r .job <<<"$c"):.*\(hit\|cached\|unchanged\)" "$IOSTAGED_LOG" ||
		echo "note: no cache-hit line for the third job in $IOSTAGED_LOG" >&2
	jq -nc --argjson a "$a" --argjson b "$b" --argjson c "$c" --arg args "$PFSJ_RARGS" --arg data "$PFSJ_DATA" \
		'{kind:"epochs_slurm", rtt_ms:(env.PFSJ_RTT_MS|tonumber), data:$data, args:$args, pfs:$a, staged:$b, cache_warm:$c}' >>"$PFSJ_RUNS"
}

# pfsj_ckpt_job CASE OUTDIR SBATCH_ARGS...: PFSJ_CKPT_N checkpoints of
# PFSJ_CKPT_BYTES, one every PFSJ_CKPT_K steps of PFSJ_STEP_MS compute, to
# ${IOSTAGE_OUTPUT:-OUTDIR}; writes to the PFS end with an fsync (the
# checkpoint is safe when the write returns), to the tier without (the
# drain makes it safe). Each checkpoint is the same random source with its
# number in the first 16 bytes. Prints the job's JSON.
pfsj_ckpt_job() {
	local case=$1 out=$2 t0 start last_safe i want
	shift 2
	cat >"ckpt-$case.sh" <<'JOB'
#!/usr/bin/python3
# The model's state is in memory (read once, not timed); each checkpoint is
# one write(2) of it with the step in its first 16 bytes, as torch.save
# writes a state dict: to a temporary name, renamed when complete.
import os, sys, time
env = os.environ
dst = env.get("IOSTAGE_OUTPUT") or env["PFSJ_OUTDIR"]
to_pfs = not env.get("IOSTAGE_OUTPUT")
os.makedirs(dst, exist_ok=True)
state = bytearray(open(env["PFSJ_SRC"], "rb").read())
n_ckpt, k, step = int(env["PFSJ_CKPT_N"]), int(env["PFSJ_CKPT_K"]), int(env["PFSJ_STEP_MS"]) / 1000
print("START %.6f" % time.time(), flush=True)
for n in range(1, n_ckpt + 1):
    for _ in range(k):
        time.sleep(step)
    a = time.time()
    state[0:16] = b"ckpt %010d\n" % n
    tmp, final = "%s/ckpt_%d.pt.tmp" % (dst, n), "%s/ckpt_%d.pt" % (dst, n)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    view = memoryview(state)
    while view:
        view = view[os.write(fd, view[: 64 << 20]):]
    if to_pfs:  # safe on the PFS only once flushed there
        os.fsync(fd)
    os.close(fd)
    os.rename(tmp, final)
    print("CKPT %d %.6f %.6f" % (n, a, time.time()), flush=True)
print("END %.6f" % time.time(), flush=True)
JOB
	chmod 0755 "ckpt-$case.sh"
	t0=$(pfsj_now)
	submit "$TEST_USER" --export=ALL,PFSJ_OUTDIR="$out",PFSJ_SRC="$SRC",PFSJ_CKPT_N="$PFSJ_CKPT_N",PFSJ_CKPT_K="$PFSJ_CKPT_K",PFSJ_STEP_MS="$PFSJ_STEP_MS" \
		-o "ckpt-$case.out" "$@" "ckpt-$case.sh" >/dev/null || fail "ckpt job ($case) not submitted: $SUBMIT_OUT"
	# The last checkpoint is safe when its final name is on the PFS (the
	# drain writes a temporary name and renames; the direct writer too).
	want="$out/ckpt_$PFSJ_CKPT_N.pt"
	last_safe=
	for ((i = 0; i < 18000; i++)); do
		if [ -z "$last_safe" ] && [ -e "$want" ]; then last_safe=$(pfsj_now); fi
		state=$(job_state "$SUBMIT_JOBID")
		case "$state" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) [ -n "$last_safe" ] && break ;; esac
		case "$state" in FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) break ;; esac
		sleep 0.1
	done
	[ "$(job_state "$SUBMIT_JOBID")" = COMPLETED ] || fail "ckpt job ($case) $(job_state "$SUBMIT_JOBID"): $(cat "ckpt-$case.out")"
	[ -n "$last_safe" ] || fail "ckpt job ($case): $want never appeared"
	start=$(sed -n 's/^START //p' "ckpt-$case.out")
	awk -v t0="$t0" -v start="$start" -v safe="$last_safe" -v c="$case" -v job="$SUBMIT_JOBID" '
		/^CKPT / { blocked[$2] = $4 - $3; n = $2 }
		/^END / { end = $2 }
		END {
			printf "{\"case\":\"%s\",\"job\":%d,\"submit_to_start_s\":%.3f,\"run_s\":%.3f,\"last_safe_s\":%.3f,\"blocked_s\":[", c, job, start - t0, end - start, safe - start
			for (i = 1; i <= n; i++) { printf "%s%.3f", (i > 1 ? "," : ""), blocked[i]; t += blocked[i] }
			printf "],\"blocked_total_s\":%.3f}\n", t
		}' "ckpt-$case.out"
}

# Item 5: checkpoints (a) straight to the PFS, (b) to IOSTAGE_OUTPUT with
# the drain. Blocked time per checkpoint, run time, when the last one is
# safe on the PFS (from the job's start), and, once the Epilog has drained,
# every checkpoint byte-identical on the PFS (read back cold).
test_pfs_checkpoints() {
	local SRC=$TEST_WORKDIR/ckpt.src a b direct drained n ok=true rec i
	head -c "$PFSJ_CKPT_BYTES" /dev/urandom >"$SRC" && chmod 0644 "$SRC"
	direct=$PFSJ_OUT/direct.$$ drained=$PFSJ_OUT/drained.$$
	a=$(pfsj_ckpt_job pfs "$direct") || exit 1
	b=$(pfsj_ckpt_job drain "$drained" --io-profile="checkpoint-heavy,out=$drained") || exit 1
	# The Epilog's finish: the drain record says done.
	for ((i = 0; i < 3000; i++)); do
		rec=$(cat "$IOSTAGE_STATE/drain/$(jq -r .job <<<"$b").json" 2>/dev/null)
		grep -q '"phase":"done"' <<<"$rec" && break
		sleep 0.2
	done
	grep -q '"phase":"done"' <<<"$rec" || fail "no finished drain record for job $(jq -r .job <<<"$b")"
	"$PFSJ_PFS" cold || fail "cannot make the PFS cold"
	for ((n = 1; n <= PFSJ_CKPT_N; n++)); do
		cmp -s <({ printf 'ckpt %010d\n' "$n"; tail -c +17 "$SRC"; }) "$drained/ckpt_$n.pt" ||
			{ ok=false; echo "checkpoint $n differs on the PFS" >&2; }
	done
	jq -nc --argjson a "$a" --argjson b "$b" --argjson ok "$ok" --argjson rec "$rec" \
		'{kind:"checkpoints", rtt_ms:(env.PFSJ_RTT_MS|tonumber), bytes:(env.PFSJ_CKPT_BYTES|tonumber),
		  n:(env.PFSJ_CKPT_N|tonumber), k:(env.PFSJ_CKPT_K|tonumber), step_ms:(env.PFSJ_STEP_MS|tonumber),
		  pfs:$a, drain:($b + {identical:$ok, drain_record:$rec})}' >>"$PFSJ_RUNS"
	rm -rf "$direct" "$drained"
	[ "$ok" = true ] || fail "a drained checkpoint differs from what the job wrote"
}
