# shellcheck shell=bash
# kill -9 of iostaged at random points (issue 15 item 3, docs/RELIABILITY.md):
# KILL_ITERATIONS times (3 in `make check`, 100 in `make soak-kill`), a job
# that stages a dataset changed since the last one (a build, evicting older
# versions from the 4 MiB tier 'small'), writes outputs (drained during the
# run and at the end) and is filed with iostagectld (the outbox and its
# forwarding) is started, and iostaged is killed with SIGKILL a random time
# into it, then started again. After each restart: the cache index matches
# the tiers (no build left, every listed entry complete, every entry
# listed), a job that ran saw its dataset whole and as it was, no output
# is lost (on the PFS or kept on the tier), and at the end every job that
# finished is filed with the service exactly once.
. "$IT_DIR/datasets.sh"

KILL_ITERATIONS=${KILL_ITERATIONS:-3}

# cache_matches_tiers: cache_ls lists exactly the complete K.vN entries
cache_matches_tiers() {
	local t
	for t in "$IOSTAGE_TIERS"/*; do
		compgen -G "$t/cache/.build.*" >/dev/null && fail "build left on $t after restart: $(ls -a "$t/cache")"
	done
	assert_cache_index_matches_tiers
}

# job_gone JOBID: not in the queue any more (its Epilog done)
job_gone() {
	for _ in $(seq 1 900); do
		[ -z "$(squeue -h -j "$1" -o %i 2>/dev/null)" ] && return 0
		sleep 0.2
	done
	return 1
}

# drain_settled JOBID: its drain record is done, or it never had one
drain_settled() {
	local f="$IOSTAGE_STATE/drain/$1.json"
	for _ in $(seq 1 300); do
		[ -e "$f" ] || return 0
		grep -q '"phase":"done"' "$f" && return 0
		sleep 0.2
	done
	return 1
}

test_kill9_iostaged_soak() {
	local ds="$TEST_WORKDIR/pfs/ds" i jid delay n ran=0 killed=0 filed dup missing unseen jobs=()
	local pfs="$TEST_WORKDIR/pfs" st
	local -A phases=()
	ctld_start || fail "iostagectld did not start"
	cp "$IOSTAGE_CONF" "$TEST_WORKDIR/node.conf"
	trap 'cp "$TEST_WORKDIR/node.conf" "$IOSTAGE_CONF"; iostaged_restart; ctld_stop' EXIT
	printf 'ControllerHost=127.0.0.1\nControllerPort=%s\n' "$CTLD_PORT" >>"$IOSTAGE_CONF"
	iostaged_restart || fail "iostaged did not start with the service"
	# 400 files of 4 KiB: a build of 1.6 MiB takes a moment, and the
	# small tier (4 MiB) holds one version, evicting the one before.
	mkdir -p "$ds"
	head -c 1638400 /dev/urandom | (cd "$ds" && split -b 4096 -a 3 - f)
	chown -R "$TEST_USER:" "$pfs"
	chmod 0750 "$ds"
	cat >job.sh <<'JOB'
#!/bin/bash
cd "$IOSTAGE_DATA" && find . -mindepth 1 -printf '%y %p %s %l\n' | sort &&
	find . -type f -print0 | sort -z | xargs -0 -r sha256sum
for k in $(seq 1 10); do head -c 20000 /dev/urandom >"$IOSTAGE_OUTPUT/during$k"; done
sleep 0.5
for k in $(seq 1 10); do head -c 20000 /dev/urandom >"$IOSTAGE_OUTPUT/end$k"; done
JOB
	chmod +x job.sh
	for ((i = 1; i <= KILL_ITERATIONS; i++)); do
		# A new version of the dataset: a build every time.
		echo "$i" >"$ds/iteration" && chown "$TEST_USER:" "$ds/iteration"
		tree_digest "$ds" >"digest.$i"
		install -d -o "$TEST_USER" "$pfs/out.$i"
		submit "$TEST_USER" --io-profile="dl-train,data=$ds:small,out=$pfs/out.$i" \
			-o "out.$i" -e "err.$i" job.sh >/dev/null || fail "sbatch: $SUBMIT_OUT"
		jid=$SUBMIT_JOBID
		jobs+=("$jid")
		# Anywhere from the Prolog's staging (and the eviction it
		# makes room with) to the Epilog's drain and the forwarding
		# after it (the whole job takes 1 to 2 s here).
		delay=$((RANDOM % 2500))
		sleep "$((delay / 1000)).$(printf '%03d' $((delay % 1000)))"
		st=$(squeue -h -j "$jid" -o %T 2>/dev/null)
		kill -KILL "$(iostaged_pid)" && killed=$((killed + 1))
		st=${st:-ENDED}
		phases[$st]=$((${phases[$st]:-0} + 1))
		echo "iteration $i: job $jid, kill -9 at ${delay} ms ($st)"
		for _ in $(seq 1 50); do pid_running "$(iostaged_pid)" || break; sleep 0.1; done
		rm -f "$IOSTAGE_DIR/iostaged.test.pid"
		iostaged_start || fail "iostaged did not restart (iteration $i)"
		# (Checked once the job is gone: a job still pending when
		# iostaged died has its Prolog start a build now.)
		job_gone "$jid" || fail "job $jid still queued (iteration $i)"
		drain_settled "$jid" || fail "job $jid: drain never done (iteration $i)"
		cache_matches_tiers
		# Nothing half-served: a job that ran saw the whole dataset of
		# its iteration.
		if [ -s "out.$i" ]; then
			ran=$((ran + 1))
			diff -q "digest.$i" "out.$i" >/dev/null || fail "job $jid saw a dataset other than its source: $(diff "digest.$i" "out.$i" | head -5)"
			# Nothing lost: every output on the PFS or kept on the tier.
			for f in during{1..10} end{1..10}; do
				[ -s "$pfs/out.$i/$f" ] || [ -s "$IOSTAGE_TIERS/nvme/jobs/.undrained/$jid/out.$i/$f" ] ||
					compgen -G "$IOSTAGE_TIERS/nvme/jobs/.undrained/$jid.*/out.$i/$f" >/dev/null ||
					fail "job $jid: output $f neither drained nor kept"
			done
		fi
	done
	# Every job filed exactly once, once the outboxes are empty.
	for _ in $(seq 1 300); do
		[ -z "$(find "$IOSTAGE_STATE/outbox" -maxdepth 1 -name '*.json' 2>/dev/null)" ] && break
		sleep 0.2
	done
	[ -z "$(find "$IOSTAGE_STATE/outbox" -maxdepth 1 -name '*.json')" ] ||
		fail "outbox not empty: $(ls "$IOSTAGE_STATE/outbox")"
	filed=$(ctld_request root '{"op":"history_list","limit":1000}' | jq -r '.records[].job' | sort -n)
	dup=$(printf '%s\n' "$filed" | uniq -d | tr '\n' ' ')
	[ -z "${dup// /}" ] || fail "filed more than once: $dup"
	# A job whose Prolog found iostaged down (restarting) was never
	# iostaged's: it failed with "not reachable" and has no record.
	missing='' unseen='' n=0
	for jid in "${jobs[@]}"; do
		if ! grep -q "job $jid: staging " "$IOSTAGED_LOG"; then
			unseen="$unseen $jid"
			continue
		fi
		if printf '%s\n' "$filed" | grep -qx "$jid"; then n=$((n + 1)); else missing="$missing $jid"; fi
	done
	echo "kills by the job's state: $(for k in "${!phases[@]}"; do printf '%s %s, ' "$k" "${phases[$k]}"; done)"
	echo "$KILL_ITERATIONS iterations, $killed kills, $ran jobs ran, $n filed once; never reached iostaged:${unseen:- none}; not filed:${missing:- none}"
	[ -z "$missing" ] || fail "jobs not filed:$missing ($(for j in $missing; do grep -h "job $j:" "$IOSTAGED_LOG" | tail -2; done))"
}
