#!/usr/bin/env bash
# gen-records.sh - DLIO-shaped synthetic job records (docs/RECORDS.md), one
# history_put request per line, for the replay test and by hand:
#
#   tests/replay/gen-records.sh USER UID FIRST_JOB [NOW]
#
# Three kinds of jobs, in the shapes of DLIO/MLPerf Storage workloads
# (REFERENCE.md):
#   train-resnet  x10  repeated training on /pfs/imagenet (1.13 GB, 10,000
#                      ~110 KB files): small random reads; staged to nvme,
#                      the first run copies, the others hit the cache
#   train-bert    x5   checkpoint-heavy: a 4.03 GB shared checkpoint file
#                      per run, 1-4 MiB writes, 30 s of 200 s unoverlapped
#   infer-big     x4   one sequential pass over /pfs/big-eval (2 GiB) with
#                      tier "ram" (256 MiB): staging fell back to the PFS
# Times are hours before NOW (default: the current time), inside any window.
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 USER UID FIRST_JOB [NOW]" >&2; exit 2; }
user=$1 uid=$2 job=$3 now=${4:-$(date +%s)}

sizes() { # KIND (READ|WRITE) and ten counts: the POSIX_SIZE_KIND_ buckets
	local kind=$1 b=(0_100 100_1K 1K_10K 10K_100K 100K_1M 1M_4M 4M_10M 10M_100M 100M_1G 1G_PLUS) i out=
	shift
	local v=("$@")
	for i in 0 1 2 3 4 5 6 7 8 9; do
		out+="\"POSIX_SIZE_${kind}_${b[$i]}\":${v[$i]},"
	done
	printf '%s' "${out%,}"
}

record() { # JOB NAME END DATASETS OUTPUTS PHASES PROFILE
	printf '{"op":"history_put","record":{"schema":1,"job":%s,"user":"%s","uid":%s,"job_name":"%s","node":"node1","profile_origin":"replay","profile":%s,"state":"completed","start":%s,"end":%s,"datasets":%s,"outputs":%s,"phases":%s,"processes":[]}}\n' \
		"$1" "$user" "$uid" "$2" "$7" "$(($3 - 300))" "$3" "$4" "$5" "$6"
}

# train-resnet: 12,000 reads per run, all 100K-1M, 10 % sequential.
for i in $(seq 0 9); do
	end=$((now - 3600 * (30 - i)))
	result=hit copied=0 stage_s=0.4
	[ "$i" = 0 ] && result=built copied=1130000000 stage_s=9.5
	ds='[{"name":"imagenet","source":"/pfs/imagenet","tier":"nvme","bytes":1130000000,"files":10000,"result":"'$result'","copied_bytes":'$copied',"copied_files":0,"linked_files":0,"cached_bytes":0}]'
	counters='{"dataset":{"POSIX_OPENS":10000,"POSIX_READS":12000,"POSIX_WRITES":0,"POSIX_BYTES_READ":1130000000,"POSIX_SEQ_READS":1200,"POSIX_CONSEC_READS":1000,'$(sizes READ 0 0 0 0 12000 0 0 0 0 0)',"POSIX_F_READ_TIME":40.0,"POSIX_F_META_TIME":5.0}}'
	phases='[{"name":"stage_in","start":'$((end - 300))',"end":'$((end - 290))',"seconds":'$stage_s',"bytes":1130000000,"files":10000},{"name":"run","start":'$((end - 290))',"end":'$end',"seconds":290,"counters":'$counters'},{"name":"stage_out","start":'$end',"end":'$end',"seconds":0}]'
	record $((job++)) train-resnet "$end" "$ds" '[]' "$phases" '{"datasets":[{"name":"imagenet","path":"/pfs/imagenet","tier":"nvme"}]}'
done

# train-bert: checkpoints to a shared 4.03 GB file, drained at the end.
for i in $(seq 0 4); do
	end=$((now - 3600 * (20 - i)))
	ds='[{"name":"bert","source":"/pfs/bert","tier":"nvme","bytes":500000000,"files":500,"result":"hit","copied_bytes":0,"copied_files":0,"linked_files":0,"cached_bytes":500000000}]'
	out='[{"name":"ckpt","dest":"/pfs/'$user'/bert-ckpt","tier":"nvme","files":1,"bytes":4030000000,"during_files":0,"during_bytes":0,"end_files":1,"end_bytes":4030000000,"failed_files":0,"size_hist":{"0_100":0,"100_1K":0,"1K_10K":0,"10K_100K":0,"100K_1M":0,"1M_4M":0,"4M_10M":0,"10M_100M":0,"100M_1G":0,"1G_PLUS":1},"shared_files":1,"fpp_files":0}]'
	counters='{"output":{"POSIX_WRITES":1922,"POSIX_BYTES_WRITTEN":4030000000,'$(sizes WRITE 0 0 0 0 2 1920 0 0 0 0)'}}'
	phases='[{"name":"stage_in","seconds":0.5},{"name":"run","start":'$((end - 200))',"end":'$end',"seconds":200,"counters":'$counters'},{"name":"checkpoint","parent":"run","source":"marker","seconds":32,"io_seconds":32,"unoverlapped_io_seconds":30},{"name":"stage_out","seconds":20}]'
	record $((job++)) train-bert "$end" "$ds" "$out" "$phases" '{"outputs":[{"name":"ckpt","path":"/pfs/'$user'/bert-ckpt","tier":"nvme","drain":"end"}]}'
done

# infer-big: one pass, 1-4 MiB sequential reads, over 2 GiB > ram (256M).
for i in $(seq 0 3); do
	end=$((now - 3600 * (10 - i)))
	ds='[{"name":"eval","source":"/pfs/big-eval","tier":"ram","bytes":2147483648,"files":64,"result":"fallback","copied_bytes":0,"copied_files":0,"linked_files":0,"cached_bytes":0}]'
	counters='{"dataset":{"POSIX_OPENS":64,"POSIX_READS":1024,"POSIX_BYTES_READ":2147483648,"POSIX_SEQ_READS":1024,"POSIX_CONSEC_READS":1024,'$(sizes READ 0 0 0 0 0 1024 0 0 0 0)'}}'
	phases='[{"name":"stage_in","seconds":0.1},{"name":"run","start":'$((end - 100))',"end":'$end',"seconds":100,"counters":'$counters'},{"name":"stage_out","seconds":0}]'
	record $((job++)) infer-big "$end" "$ds" '[]' "$phases" '{"datasets":[{"name":"eval","path":"/pfs/big-eval","tier":"ram"}]}'
done
