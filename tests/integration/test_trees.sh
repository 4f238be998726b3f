# shellcheck shell=bash
# Awkward trees staged through a real job, seen from inside it: hard links,
# holes, a file over 4 GiB, odd names, deep nesting, links kept as links,
# special files skipped.

test_awkward_tree_staged_faithfully() {
	local ds="$TEST_WORKDIR/pfs/odd" deep i
	mkdir -p "$ds"
	head -c 5000 /dev/urandom >"$ds/a"
	ln "$ds/a" "$ds/a-hardlink"
	truncate -s 100M "$ds/holey" && printf 'end' >>"$ds/holey"
	truncate -s 5G "$ds/big" && printf 'past4GiB' | dd of="$ds/big" bs=1 seek=$((5 * 1024 * 1024 * 1024 - 8)) conv=notrunc 2>/dev/null
	printf 'x' >"$ds/$(printf 'new\nline')"
	printf 'y' >"$ds/données été"
	printf 'z' >"$ds/with space"
	: >"$ds/empty"
	deep="$ds"
	for i in $(seq 1 60); do deep="$deep/d$i"; done
	mkdir -p "$deep" && printf 'deep' >"$deep/leaf"
	ln -s /etc/passwd "$ds/outside-link"
	mkfifo "$ds/fifo"
	chown -R "$TEST_USER:" "$ds"

	cat >job.sh <<'JOB'
#!/bin/bash
d=$IOSTAGE_DATA
[ "$(stat -c %i "$d/a")" = "$(stat -c %i "$d/a-hardlink")" ] && echo HARDLINK_KEPT
[ "$(stat -c %b "$d/holey")" -lt 1000 ] && [ "$(tail -c 3 "$d/holey")" = end ] && echo HOLES_KEPT
[ "$(stat -c %s "$d/big")" = 5368709120 ] && [ "$(tail -c 8 "$d/big")" = past4GiB ] && echo BIG_OK
[ "$(cat "$d/$(printf 'new\nline')")" = x ] && echo NEWLINE_OK
[ "$(cat "$d/données été")" = y ] && [ "$(cat "$d/with space")" = z ] && echo NAMES_OK
[ -f "$d/empty" ] && [ ! -s "$d/empty" ] && echo EMPTY_OK
[ "$(cat "$d"/d1/d2/d3/d4/d5/d6/d7/d8/d9/d10/d11/d12/d13/d14/d15/d16/d17/d18/d19/d20/d21/d22/d23/d24/d25/d26/d27/d28/d29/d30/d31/d32/d33/d34/d35/d36/d37/d38/d39/d40/d41/d42/d43/d44/d45/d46/d47/d48/d49/d50/d51/d52/d53/d54/d55/d56/d57/d58/d59/d60/leaf)" = deep ] && echo DEEP_OK
[ -L "$d/outside-link" ] && [ "$(readlink "$d/outside-link")" = /etc/passwd ] && echo LINK_KEPT
[ ! -e "$d/fifo" ] && echo FIFO_SKIPPED
JOB
	submit_wait "$TEST_USER" --io-profile="dl-train,data=$ds,timeout=300" -o out.txt job.sh >/dev/null ||
		fail "job failed: $SUBMIT_OUT $(cat out.txt 2>/dev/null)"
	for want in HARDLINK_KEPT HOLES_KEPT BIG_OK NEWLINE_OK NAMES_OK EMPTY_OK DEEP_OK LINK_KEPT FIFO_SKIPPED; do
		assert_file_contains "staged tree" out.txt "$want"
	done
	grep -qF "pfs/odd/fifo: fifo skipped" "$IOSTAGED_LOG" ||
		fail "no note naming the skipped fifo in $IOSTAGED_LOG"
}
