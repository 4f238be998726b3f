#!/usr/bin/env bash
# gen-dataset.sh KIND DIR [SCALE]: write a DLIO-shaped benchmark dataset.
#
# Names, sizes and bytes depend only on KIND and SCALE (seeded), so two runs
# with the same arguments stage the same data. SCALE (default $BENCH_SCALE or
# 1) multiplies the file count of many-file kinds and the file size of
# few-file kinds, keeping each shape.
#
#   small     30,000 files, exactly 944,000,000 B (31 KB mean, 2-61 KB) in
#             100 class dirs: the measured peer case of REFERENCE.md
#   imagenet  $BENCH_IMAGENET_FILES (10,000) files of 110 KiB mean (+-50%),
#             1,281 per class dir, like ImageNet's JPEGs
#   unet3d    4 npz-like files of 256 MiB each, flat (the large-file peer case)
#   bert      8 tfrecord shards of 39,192 records x 2,516 B (2,500 B samples +
#             16 B record framing): 98.6 MB each
#   hit       $BENCH_HIT_FILES (100,000) files of 1-4 KiB in 100 dirs: for
#             cache-hit checks, where only the file count matters
#
# Prints "FILES BYTES". An existing DIR made with the same parameters is kept
# (a stamp DIR.gen records them); a different one is replaced.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

usage() { echo "usage: gen-dataset.sh small|imagenet|unet3d|bert|hit DIR [SCALE]" >&2; exit 2; }
if [ $# -lt 2 ] || [ $# -gt 3 ]; then usage; fi
kind=$1 dir=$2 scale=${3:-${BENCH_SCALE:-1}}
case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac
scaled() { bench_scale_int "$1" "$scale" "${2:-1}"; }

# count total spread ndirs prefix suffix seed
case "$kind" in
small)
	n=$(scaled 30000 2)
	set -- "$n" "$(scaled 944000000 1)" 94 "$(( (n + 299) / 300 ))" img_ .jpg 1
	;;
imagenet)
	n=$(scaled "${BENCH_IMAGENET_FILES:-10000}" 2)
	set -- "$n" $(( n * 112640 )) 50 "$(( (n + 1280) / 1281 ))" n_ .JPEG 2
	;;
unet3d)
	sz=$(scaled 268435456 4096)
	set -- 4 $(( 4 * sz )) 0 0 img_ _of_4.npz 3
	;;
bert)
	recs=$(scaled 39192 1)
	set -- 8 $(( 8 * recs * 2516 )) 0 0 part_ _of_8.tfrecord 4
	;;
hit)
	n=$(scaled "${BENCH_HIT_FILES:-100000}" 100)
	set -- "$n" $(( n * 2560 )) 60 "$(( n >= 100 ? 100 : 1 ))" f_ .bin 5
	;;
*) usage ;;
esac

stamp="$kind $*"
if [ -d "$dir" ] && [ "$(cat "$dir.gen" 2>/dev/null)" = "$stamp" ]; then
	cat "$dir.gen.out"
	exit 0
fi
gen=$(bench_helper gendata)
rm -rf "$dir" "$dir.gen" "$dir.gen.out"
out=$("$gen" "$dir" "$@")
sync -f "$dir"
echo "$out" >"$dir.gen.out"
echo "$stamp" >"$dir.gen"
echo "$out"
