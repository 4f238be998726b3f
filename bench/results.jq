# results.jq - turn run.sh's raw measurements into bench/results/*.json.
#
# Inputs (jq --arg/--argjson/--rawfile, see run.sh): $runs, TSV lines
# "dataset tool rep seconds ok"; $dsets, "dataset files bytes class"; the fio
# numbers; the cache-hit and daemon numbers (null when not measured).
# Medians are taken over the successful runs only; a target whose inputs
# were not measured is null ("NOT MEASURED"), never met.

def median:
  sort | if length == 0 then null
         elif length % 2 == 1 then .[(length - 1) / 2]
         else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def r3: if . == null then null else (. * 1000 | round) / 1000 end;
def r2: if . == null then null else (. * 100 | round) / 100 end;
def tsv($t): $t | split("\n") | map(select(length > 0) | split("\t"));
def human:
  if . >= 1e9 then "\(. / 1e7 | round / 100) GB"
  elif . >= 1e6 then "\(. / 1e5 | round / 10) MB"
  else "\(. / 1e3 | round) kB" end;
def verdict: if . == null then "NOT MEASURED" elif . then "PASS" else "MISSED" end;
def target($goal; $met; $short): {goal: $goal, met: $met, text: (($met | verdict) + $short)};

(tsv($runs) | map({ds: .[0], tool: .[1], rep: (.[2] | tonumber),
                   s: (.[3] | tonumber), ok: (.[4] == "1")})) as $R
| (if $fio_r != null and $fio_w != null and $fio_r > 0 and $fio_w > 0
   then true else false end) as $have_fio

| [tsv($dsets)[]
   | {name: .[0], files: (.[1] | tonumber), bytes: (.[2] | tonumber), class: .[3]}
   | . as $d
   | ($d.bytes / $d.files) as $mean
   | $d.class as $class
   | (if $have_fio then $d.bytes / $fio_r + $d.bytes / $fio_w else null end) as $bound
   | ([$R[] | select(.ds == $d.name)] | group_by(.tool)
      | map({key: .[0].tool,
             value: {runs_s: map(.s),
                     failed_runs: (map(select(.ok | not)) | length),
                     median_s: (map(select(.ok) | .s) | median | r3)}})
      | from_entries) as $t0
   | ($t0.cp.median_s) as $cp
   | ($t0 | with_entries(.value.speedup_vs_cp =
        (if $cp != null and .value.median_s != null and .value.median_s > 0
         then $cp / .value.median_s | r2 else null end))) as $tools
   | ($tools.iostage.median_s) as $io
   | (if $io != null and $cp != null and $io > 0 then $cp / $io else null end) as $sp
   | (if $io != null and $bound != null then $io / $bound else null end) as $vb
   | {name: $d.name, files: $d.files, bytes: $d.bytes, bytes_h: ($d.bytes | human),
      mean_file_bytes: ($mean | floor), class: $class, bound_s: ($bound | r3),
      tools: $tools,
      iostage_speedup_vs_cp: ($sp | r2), iostage_vs_bound: ($vb | r2),
      target: (if $class == "small-files" then
                 target("iostage >= 3x faster than cp -r";
                        (if $sp == null then null else $sp >= 3 end); " (>=3x cp)")
               else
                 target("iostage >= 1.5x faster than cp -r and <= 1.3x the fio bound";
                        (if $sp == null or $vb == null then null
                         else $sp >= 1.5 and $vb <= 1.3 end); " (>=1.5x cp, <=1.3x bound)")
               end)}
  ] as $datasets

| (if $hit_files == null then null else
     (if $hit_check != null and $hit_rsync != null and $hit_check > 0
      then $hit_rsync / $hit_check else null end) as $ratio
     | (64 * 1048576 + 200 * $hit_files) as $limit
     | {files: $hit_files, bytes: $hit_bytes,
        first_copy_s: $hit_copy,
        check_command: (if $hit_check_cmd == "" then null else "iostaged --stage-worker " + $hit_check_cmd end),
        check_warm_s: $hit_check, check_cold_s: $hit_check_cold,
        check_reported_unchanged: $hit_unchanged,
        rsync_dry_run_warm_s: $hit_rsync, rsync_dry_run_cold_s: $hit_rsync_cold,
        rsync_over_check: ($ratio | r2),
        target: target("worker --check (warm) < 0.5 s and >= 10x faster than rsync -a --dry-run (warm)";
                       (if $hit_check == null or $ratio == null then null
                        else $hit_check < 0.5 and $ratio >= 10 end); ""),
        daemon: {first_job_s: $d_miss, second_job_s: $d_hit, cache_entry: $d_cached,
                 target: target("second job of the same dataset: stage->wait round trip < 0.5 s";
                                # A second job that copied again was no hit.
                                (if $d_hit == null or $d_cached != true then null
                                 else $d_hit < 0.5 end);
                                (if $d_cached == false then " (no cache entry: the second job was a full copy)" else "" end))},
        rss: {rss_bytes: (if $d_rss_kb == null then null else $d_rss_kb * 1024 end),
              idle_rss_bytes: (if $d_rss_idle_kb == null then null else $d_rss_idle_kb * 1024 end),
              limit_bytes: $limit,
              # Without a cache entry the daemon holds no index: the number
              # says nothing about the target.
              target: target("iostaged VmRSS after caching < 64 MiB + 200 B per file";
                             (if $d_rss_kb == null or $d_cached != true then null
                              else $d_rss_kb * 1024 < $limit end);
                             (if $d_cached == false then " (no cache entry: nothing cached to measure)" else "" end))}}
   end) as $hit

| ([$datasets[].target.met]
   + (if $hit == null then [] else [$hit.target.met, $hit.daemon.target.met, $hit.rss.target.met] end)) as $all

| {schema: 1,
   started: $started, duration_s: $duration,
   git: {rev: $git_rev, dirty: $git_dirty},
   machine: {hostname: $host, kernel: $kernel, os: $os, cpus: $cpus, cpu_model: $cpu_model,
             mem_bytes: $mem_bytes, bench_dir: $bench_dir, fs_type: $fstype, device: $device,
             cold_cache: $cold, cold_cache_note: (if $cold_note == "" then null else $cold_note end)},
   settings: {scale: $scale, repeat: $repeat,
              threads: (if $threads == "" then null else ($threads | tonumber) end),
              tools: $tools, iostaged: $iostaged, iostaged_sha256_16: $iostaged_sha, worker_form: $worker_form},
   tool_versions: {cp: $v_cp, rsync: $v_rsync, tar: $v_tar, fpsync: $v_fpsync,
                   rclone: $v_rclone, fio: $v_fio},
   fio: {read_bw_bytes: $fio_r, write_bw_bytes: $fio_w, randread_4k_iops: $fio_iops,
         iodepth: $fio_qd, seconds: $fio_s, size: $fio_size,
         bound: "bytes/read_bw + bytes/write_bw (one disk: reads and writes share it)"},
   datasets: $datasets,
   cache_hit: $hit,
   baseline: (if $baseline == "" then null else
     {iostaged: $baseline,
      datasets: [$datasets[] | (.tools.iostage.median_s) as $a | (.tools.baseline.median_s) as $b
                 | {name, iostage_s: $a, baseline_s: $b,
                    ratio: (if $a != null and $b != null and $b > 0 then $a / $b | r2 else null end)}],
      daemon: {first_job_s: {iostage: $d_miss, baseline: $b_miss},
               second_job_s: {iostage: $d_hit, baseline: $b_hit},
               rss_kb: {iostage: $d_rss_kb, baseline: $b_rss_kb}}} end),
   notes: ($notes | split("\n") | map(select(length > 0))),
   summary: {met: ([$all[] | select(. == true)] | length),
             missed: ([$all[] | select(. == false)] | length),
             not_measured: ([$all[] | select(. == null)] | length)}}
