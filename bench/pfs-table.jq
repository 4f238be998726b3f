# pfs-table.jq: the table of bench/results/pfs-LATEST.json (bench/pfs-bench.sh).
def f: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
# A run re-measured on its own (a partial run merged in): when and where.
def again: if .measured then " [re-measured \(.measured.started), git \(.measured.git), load \(.measured.loadavg_start) -> \(.measured.loadavg_end)]" else "" end;
def r(a; b): if a == null or b == null or b == 0 then null else a / b end;
"remote PFS bench \(.started) on \(.machine.host) (\(.machine.cpus) cpus, load \(.machine.loadavg_start) -> \(.machine.loadavg_end)), scale \(.scale), \(.pfs.kind), cap \(.pfs.rate)",
"",
"staging, cold, copy + sync (seconds; peer/iostage > 1 means iostage is faster; iostage/bound is the ratio to bytes / cap)",
( [.runs[] | select(.kind == "stage")] | group_by([.rtt_ms, .dataset])[] |
  (map({key: .tool, value: .seconds}) | from_entries) as $t |
  .[0] as $x |
  ([.[] | select(.tool != "iostage") | .seconds | select(. != null)] | min) as $best |
  "  \($x.rtt_ms) ms \($x.dataset) (\($x.files) files, \($x.bytes / 1e6 | round) MB): " +
  ([.[] | "\(.tool) \(.seconds | f)"] | join(", ")) +
  "; bound \($x.link_bound_s | f); iostage/bound \(r($t.iostage; $x.link_bound_s) | f)x; best peer/iostage \(r($best; $t.iostage) | f)x; " +
  ([.[] | select(.tool != "iostage") | "\(.tool)/iostage \(r(.seconds; $t.iostage) | f)"] | join(" "))
),
"",
( .runs[] | select(.kind == "hit") |
  "cache hit, \(.files) files at \(.rtt_ms) ms, cold: verify=stat check \(.check_cold_s | f) s, rsync -a --dry-run \(.rsync_dry_run_cold_s | f) s\(again)" ),
( .runs[] | select(.kind == "epochs_slurm") | . as $e |
  # Cumulative time from the submission to the end of each epoch; the
  # staged job pays back at the first epoch it is not behind the PFS job.
  def ends($c): [foreach $c.reader.epochs[] as $x ($c.submit_to_start_s; . + $x.seconds)];
  (ends($e.pfs)) as $p | (ends($e.staged)) as $s |
  ([range(0; $p | length) | select($s[.] <= $p[.])] | first) as $pay |
  "epochs as Slurm jobs (imagenet at \(.rtt_ms) ms, reader \(.args); times from the submission):",
  ( ["pfs", "staged", "cache_warm"][] as $k | $e[$k] |
    "  \($k) (job \(.job)): time to solution \((.submit_to_start_s + .reader.total_s) | f) s (submit to start \(.submit_to_start_s | f) s), first batch \((.submit_to_start_s + .reader.first_batch_s) | f) s, AU per epoch " +
    ([.reader.epochs[] | (.au * 100 | round | tostring) + "%"] | join(" ")) ),
  "  staging has paid for itself " + (if $pay == null then "not within \($p | length) epochs (behind by \(($s[-1] - $p[-1]) | f) s)" else "by the end of epoch \($pay + 1)" end) ),
( .runs[] | select(.kind == "checkpoints") | . as $c |
  "checkpoints (\(.n) x \(.bytes / 1048576 | round) MiB, one every \(.k) steps of \(.step_ms) ms, at \(.rtt_ms) ms; blocked per checkpoint, run time, last checkpoint safe on the PFS, from the job's start):",
  ( ["pfs", "drain"][] as $k | $c[$k] |
    "  \($k) (job \(.job)): blocked " + ([.blocked_s[] | f] | join(" ")) + " s (total \(.blocked_total_s | f) s), run \(.run_s | f) s, last safe at \(.last_safe_s | f) s" +
    (if .identical == null then "" else ", every checkpoint byte-identical on the PFS after the Epilog: \(.identical)" end) ),
  "  blocked time pfs/drain \(r($c.pfs.blocked_total_s; $c.drain.blocked_total_s) | f)x\($c | again)" ),
( [.runs[] | select(.kind == "auto")] | select(length > 0) |
  ([.[] | select(.loop == "loop")]) as $l |
  ($l | map(select((.staged | length) == 0))) as $before |
  ($l | map(select((.staged | length) > 0))) as $after |
  def mean(f): if length == 0 then null else (map(f) | add / length) end;
  "closing the loop: --io-profile=auto on the 3-node cluster at \(.[0].rtt_ms) ms (unoverlapped I/O = staging + job wall time - compute; run = submit to end):",
  ( .[] | "  \(.loop) \(.n) (job \(.job) on \(.node)): unoverlapped I/O \(.unoverlapped_io_s | f) s, run \(.run_s | f) s, " +
    (if (.staged | length) > 0 then "staged (\(.staged | map(.result) | join(",")), \(.stage_in_s | f) s)"
     elif .observed != null then "observed from the PFS (\(.observed.files) files, \(.observed.bytes / 1e6 | round) MB)"
     else "from the PFS, not observed" end) +
    (if (.advice.skipped | length) > 0 then "; advice skipped: " + (.advice.skipped | map(.reason) | join("; ")) else "" end) ),
  "  mean unoverlapped I/O: from the PFS \($before | mean(.unoverlapped_io_s) | f) s (\($before | length) jobs), on the advice \($after | mean(.unoverlapped_io_s) | f) s (\($after | length) jobs): cut \((if ($before | length) > 0 and ($after | length) > 0 then (1 - ($after | mean(.unoverlapped_io_s)) / ($before | mean(.unoverlapped_io_s))) * 100 else null end) | f)% (target >= 50%)" )
