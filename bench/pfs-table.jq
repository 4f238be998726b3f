# pfs-table.jq: the table of bench/results/pfs-LATEST.json (bench/pfs-bench.sh).
def f: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
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
  "cache hit, \(.files) files at \(.rtt_ms) ms, cold: verify=stat check \(.check_cold_s | f) s, rsync -a --dry-run \(.rsync_dry_run_cold_s | f) s" ),
( .runs[] | select(.kind == "epochs") | . as $e |
  "epochs (\(.dataset) at \(.rtt_ms) ms, reader \(.args | join(" "))):",
  ( ["pfs", "staged", "cache_warm"][] as $k | $e[$k] |
    "  \($k): time to solution \((.total_s + (.stage_s // 0)) | f) s (stage \(.stage_s // 0 | f) s), first batch \((.first_batch_s + (.stage_s // 0)) | f) s, AU per epoch " +
    ([.epochs[] | (.au * 100 | round | tostring) + "%"] | join(" ")) ) )
