#!/usr/bin/env bash
# make demo: boot a one-node Slurm on loopback with iostage installed, submit
# jobs with --io-profile as an unprivileged user, and show what happened.
set -uo pipefail

REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
IT_DIR="$REPO_ROOT/tests/integration"
export REPO_ROOT IT_DIR
# shellcheck source=tests/integration/lib.sh
. "$IT_DIR/lib.sh"
. "$IT_DIR/datasets.sh"

[ "$(id -u)" = 0 ] || { echo "demo: run as root (it starts slurmctld, slurmd and iostaged)" >&2; exit 1; }

CLUSTER_DIR=$(mktemp -d /tmp/iostage-demo.XXXXXX)
chmod 0755 "$CLUSTER_DIR"
export CLUSTER_DIR
bold() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '$ %s\n' "$*"; }

MULTI_DIR=
cleanup() {
	declare -F teardown_hook >/dev/null && teardown_hook
	bash "$IT_DIR/cluster.sh" stop "$CLUSTER_DIR" >/dev/null 2>&1
	echo "demo: cluster stopped; logs kept in $CLUSTER_DIR/log"
	if [ -n "$MULTI_DIR" ]; then
		CLUSTER_QUIET=1 bash "$REPO_ROOT/tests/cluster/cluster.sh" stop "$MULTI_DIR"
		echo "demo: multi-node cluster stopped; logs kept in $MULTI_DIR/log"
	fi
}
trap cleanup EXIT

ensure_users || exit 1
# shellcheck source=tests/integration/setup.sh
. "$IT_DIR/setup.sh" || exit 1
bash "$IT_DIR/cluster.sh" start "$CLUSTER_DIR" || exit 1
. "$CLUSTER_DIR/env.sh"

WORK="$CLUSTER_DIR/demo"
export TEST_WORKDIR="$WORK" # where submit/submit_wait run sbatch
mkdir -p "$WORK" && chmod 1777 "$WORK"
cd "$WORK" || exit 1
DS="$WORK/pfs/imagenet"
make_dataset "$DS"
for i in $(seq 1 200); do head -c 110000 /dev/urandom >"$DS/train/a/img$i.jpg"; done
chown -R "$TEST_USER:" "$WORK/pfs"

bold "A one-node Slurm with iostage (plugstack, Prolog/Epilog, iostaged)"
show "sinfo"; sinfo
show "cat $CLUSTER_DIR/plugstack.conf"; cat "$CLUSTER_DIR/plugstack.conf"
show "sbatch --help | grep -A3 io-profile"
as_user "$TEST_USER" sbatch --help | grep -A3 -- --io-profile

bold "The user's dataset on the parallel file system: $(find "$DS" -type f | wc -l) files, $(du -sh "$DS" | cut -f1)"

cat >job.sh <<JOB
#!/bin/bash
#SBATCH --io-profile=dl-train,data=$DS,timeout=120
#SBATCH -o job.out
echo "running as \$(id -un) on \$(hostname)"
env | grep -E '^IOSTAGE_(DATA|LOCAL|JOB_DIR|OUTPUT|FALLBACK)' | sort
. $IT_DIR/datasets.sh
if [ "\$(tree_digest "\$IOSTAGE_DATA")" = "\$(tree_digest $DS)" ]; then
  echo "staged copy is identical to the source, byte for byte"
fi
stat -c 'job dir: owner %U, mode %a' "\$IOSTAGE_JOB_DIR"
JOB
bold "Submitting as $TEST_USER: a job script with #SBATCH --io-profile"
cat job.sh
show "sbatch --wait job.sh"
submit_wait "$TEST_USER" job.sh
bold "The job's output"
cat job.out
echo "(the Epilog removed $IOSTAGE_TIERS/nvme/jobs/$SUBMIT_JOBID: $( [ -e "$IOSTAGE_TIERS/nvme/jobs/$SUBMIT_JOBID" ] && echo still there || echo gone))"

bold "The same dataset again: served from the node's cache, nothing copied"
submit_wait "$TEST_USER" -o job2.out job.sh >/dev/null
grep -E "identical|IOSTAGE_DATA=" job2.out
show "iostage cache ls   (as $TEST_USER)"
as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" cache ls
show "grep 'job $SUBMIT_JOBID' iostaged.log"
grep -E "job $SUBMIT_JOBID: " "$IOSTAGED_LOG" | head -5

bold "Telemetry: where a training job's time went"
mkdir -p "$WORK/pfs/ckpt" && chown "$TEST_USER:" "$WORK/pfs/ckpt"
cat >train.sh <<JOB
#!/bin/bash
#SBATCH --job-name=train-demo
#SBATCH --io-profile=dl-train,data=$DS,out=$WORK/pfs/ckpt
#SBATCH -o train.out
iostage phase begin read
cat "\$IOSTAGE_DATA"/train/a/*.jpg >/dev/null
iostage phase end read
iostage phase begin compute; sleep 2; iostage phase end compute
iostage phase begin checkpoint
dd if=/dev/urandom of="\$IOSTAGE_OUTPUT/ckpt-1.pt" bs=1M count=16 status=none
iostage phase end checkpoint
JOB
cat train.sh
show "sbatch --wait train.sh"
submit_wait "$TEST_USER" train.sh
TRAIN_JOB=$SUBMIT_JOBID
for _ in $(seq 1 100); do grep -q "job $TRAIN_JOB: finished" "$IOSTAGED_LOG" && break; sleep 0.1; done
show "iostage telemetry $TRAIN_JOB   (as $TEST_USER)"
as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" telemetry "$TRAIN_JOB"

bold "The history remembers every job and advises the next one"
for i in 2 3; do
	submit_wait "$TEST_USER" -o "train$i.out" train.sh >/dev/null
	for _ in $(seq 1 100); do grep -q "job $SUBMIT_JOBID: finished" "$IOSTAGED_LOG" && break; sleep 0.1; done
done
show "iostage recommend --job-name train-demo   (as $TEST_USER, after 3 runs)"
as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" recommend --job-name train-demo
show "sbatch --io-profile=auto -J train-demo ...   (applies the advice)"
submit_wait "$TEST_USER" -J train-demo --io-profile=auto -o auto.out --wrap 'echo "IOSTAGE_DATA=$IOSTAGE_DATA"'
cat auto.out

bold "Exports: Prometheus /metrics, CSV, a Perfetto trace, an HTML report"
show "curl -s http://127.0.0.1:$IOSTAGE_METRICS_PORT/metrics | grep -E '^iostage_(stage|cache)'"
curl -s "http://127.0.0.1:$IOSTAGE_METRICS_PORT/metrics" | grep -E '^iostage_(stage|cache)' | head -12
show "iostage export --format csv --job $TRAIN_JOB"
as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" export --format csv --job "$TRAIN_JOB"
as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" export --format trace --job "$TRAIN_JOB" -o "$WORK/trace.json"
as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" export --format html -o "$WORK/report.html"
echo "trace (open in https://ui.perfetto.dev): $WORK/trace.json, $(jq length "$WORK/trace.json") events"
echo "HTML report (self-contained, inline SVG): $WORK/report.html, $(wc -c <"$WORK/report.html") bytes"

bold "iostage status while a job runs"
submit "$TEST_USER" --io-profile="dl-train,data=$DS:ram" --wrap 'touch started; sleep 15' >/dev/null
for _ in $(seq 1 100); do [ -e started ] && break; sleep 0.2; done
show "iostage status"; iostage -c "$IOSTAGE_CONF" status
scancel "$SUBMIT_JOBID"

bold "A bad --io-profile is refused at submit, nothing queued"
for spec in "dl-train,data=$DS:nvm" "dl-train,data=$DS/../etc" "dl-train,timeout=0" "nosuch"; do
	show "sbatch --io-profile=$spec --wrap true"
	as_user "$TEST_USER" sbatch --io-profile="$spec" --wrap true
	echo "(exit status $?)"
done

bold "Staging fails (iostaged stopped): on-failure=fallback runs on the PFS paths"
iostaged_stop
submit_wait "$TEST_USER" --io-profile="dl-train,data=$DS,on-failure=fallback" -o fb.out -e fb.err \
	--wrap 'echo "IOSTAGE_DATA=$IOSTAGE_DATA IOSTAGE_FALLBACK=$IOSTAGE_FALLBACK"' >/dev/null
cat fb.out fb.err
bold "... and on-failure=fail ends the job FAILED with the reason, node stays up"
submit_wait "$TEST_USER" --io-profile="dl-train,data=$DS,on-failure=fail" -o f.out -e f.err --wrap 'echo ran' >/dev/null
echo "job $SUBMIT_JOBID: $(job_state "$SUBMIT_JOBID"), exit $(job_exit "$SUBMIT_JOBID")"
cat f.err
echo "Comment: $(job_comment "$SUBMIT_JOBID")"
echo "node: $(node_state)"
iostaged_start >/dev/null

bold "A multi-node cluster: a controller, a login node and three compute nodes"
# The one-node cluster is done; the multi-node one is booted from Linux
# namespaces by the test harness (tests/cluster/cluster.sh).
declare -F teardown_hook >/dev/null && teardown_hook
bash "$IT_DIR/cluster.sh" stop "$CLUSTER_DIR" >/dev/null 2>&1
MULTI_DIR=$(mktemp -d /tmp/iostage-cl.XXXXXX)
echo $$ >"$MULTI_DIR/runner.pid"
bash "$REPO_ROOT/tests/cluster/cluster.sh" start "$MULTI_DIR" || exit 1
(
	. "$MULTI_DIR/env.sh"
	# shellcheck source=tests/cluster/lib.sh
	. "$REPO_ROOT/tests/cluster/lib.sh"
	TEST_WORKDIR="$MULTI_DIR/tests/demo"
	mkdir -p "$TEST_WORKDIR" && chmod 1777 "$TEST_WORKDIR"
	cd "$TEST_WORKDIR" || exit 1
	echo "Each node is a network, UTS and mount namespace with its own hostname,"
	echo "address, /run (its own iostaged socket) and node-local tiers; the PFS,"
	echo "a Shared=yes burst-buffer tier 'bb', the users and munge are shared."
	show "sinfo   (on the login node)"; sinfo
	show "iostage status   (on n2: its own daemon and tiers)"
	iostage_on n2 status | head -8
	DS="$CLUSTER_PFS/imagenet"
	make_dataset "$DS"
	for i in $(seq 1 100); do head -c 110000 /dev/urandom >"$DS/train/a/img$i.jpg"; done
	chown -R "$TEST_USER:" "$CLUSTER_PFS"
	cat >train3.sh <<JOB
#!/bin/bash
#SBATCH -N 3
#SBATCH --io-profile=dl-train,data=$DS
#SBATCH -o train3.out
srun bash -c 'echo "\$(hostname): \$(find "\$IOSTAGE_DATA/" -type f | wc -l) files in \$IOSTAGE_DATA, diff -r against the PFS: \$(diff -r "\$IOSTAGE_DATA/" "$DS/" && echo identical)"'
JOB
	bold "A 3-node training job, submitted from the login node as $TEST_USER"
	cat train3.sh
	show "sbatch --wait train3.sh"
	submit_wait "$TEST_USER" train3.sh
	J=$SUBMIT_JOBID
	show "cat train3.out   (one task per node, each reading its node's copy)"
	sort train3.out
	show "grep 'job $J' on each node's iostaged log"
	for n in n1 n2 n3; do grep -h "job $J: dataset" "$(iostaged_log "$n")" | sed "s/^/$n: /"; done
	bold "The same job on the shared burst buffer: one copy for all three nodes"
	sed -i "s|data=$DS\$|data=$DS:bb|; s|train3.out|train3bb.out|" train3.sh
	show "sbatch --wait train3.sh   (data=$DS:bb)"
	submit_wait "$TEST_USER" train3.sh
	J=$SUBMIT_JOBID
	sort train3bb.out
	for n in n1 n2 n3; do grep -h "job $J: dataset" "$(iostaged_log "$n")" | sed "s/^/$n: /"; done
	show "ls $CLUSTER_SHARED/bb/cache"; ls "$CLUSTER_SHARED/bb/cache"
	bold "One record for the 3-node job, filed in iostagectld (on ctl)"
	echo "Each node's Epilog put its part in its outbox; the service merged them."
	for _ in $(seq 1 60); do
		as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" telemetry "$J" --json 2>/dev/null |
			jq -e '(.parts | length) == 3' >/dev/null 2>&1 && break
		sleep 0.5
	done
	show "iostage telemetry $J   (as $TEST_USER, on the login node: no iostaged there)"
	as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" telemetry "$J" | head -20
	show "iostage telemetry $J --json | jq '{nodes, missing_nodes, parts: [.parts[].node]}'"
	as_user "$TEST_USER" iostage -c "$IOSTAGE_CONF" telemetry "$J" --json |
		jq -c '{nodes, missing_nodes, parts: [.parts[].node]}'
)

bold "What this showed"
cat <<'SUMMARY'
- --io-profile is a real sbatch option (help text, #SBATCH line) validated at
  submit time, with one clear line for each bad SPEC and nothing queued;
- the Prolog had iostaged stage the dataset as the user into a private 0700
  directory on node-local storage before the job started; the job found it
  through IOSTAGE_DATA and it matched the source byte for byte;
- a second job for the same dataset was served from the node's cache after a
  check of the source, without copying; iostage cache ls lists it;
- iostage status showed the tiers and the running job; the Epilog cleaned up;
- with iostaged down, fallback ran the job on the PFS paths and fail ended
  it FAILED with the reason in its stderr and Comment, without draining the node.
- telemetry recorded each phase of a training job: stage_in (copied or
  served from cache), the run with its read/compute/checkpoint markers and
  its /proc I/O timeline, and stage_out (checkpoints drained to the PFS);
- the Epilog filed every job in the RocksDB history, which then advised
  caching the dataset; --io-profile=auto applied that advice;
- /metrics served Prometheus text, and iostage export wrote CSV, a
  Perfetto trace and a self-contained HTML report.
- on a booted 3-node cluster, a job submitted from the login node with
  sbatch -N 3 found its dataset staged on every node before it started
  (each node's own iostaged made its own copy); on the shared burst-buffer
  tier one node built the copy and the other two reused it; the job's
  telemetry is one record naming its three nodes, merged by iostagectld
  and read from the login node.
SUMMARY
