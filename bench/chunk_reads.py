#!/usr/bin/python3
"""chunk_reads.py - read a node's chunks of a spread dataset's files too
large for one node, through the job's view or from the part's chunks
directory (bench/spread-local-jobs.sh, BENCH_SL_SHAPE=chunks).

  chunk_reads.py list VIEW CHUNKS OUT   the chunks CHUNKS holds of the
                                        files under VIEW, one per line:
                                        "NAME OFF LEN REL"
  chunk_reads.py view VIEW LIST         each chunk's range of its file
                                        read through VIEW
  chunk_reads.py plain CHUNKS LIST      each chunk's own file read

Names and extents follow common/fs/partchunks.h and common/sched/spread.h:
"<xxh3-128 of the path, hex>.<index>", chunks of size / 64 rounded down
to a power of two, 1 to 64 MiB.
"""
import os
import sys

import xxhash

MIB = 1 << 20
STEP = MIB  # the view's largest read


def chunk_bytes(size):
    c = MIB
    while c < 64 * MIB and c * 2 <= size // 64:
        c *= 2
    return c


def make_list(view, chunks, out):
    held = set(os.listdir(chunks))
    with open(out, "w") as f:
        for top, _, files in os.walk(view):
            for name in sorted(files):
                path = os.path.join(top, name)
                rel = os.path.relpath(path, view)
                size = os.stat(path).st_size
                c = chunk_bytes(size)
                h = xxhash.xxh3_128_hexdigest(rel.encode())
                for i in range((size + c - 1) // c):
                    if f"{h}.{i}" in held:
                        length = min(c, size - i * c)
                        f.write(f"{h}.{i} {i * c} {length} {rel}\n")


def read_range(fd, off, length):
    end = off + length
    while off < end:
        n = len(os.pread(fd, min(STEP, end - off), off))
        if not n:
            sys.exit(f"short read at {off}")
        off += n


def main():
    mode, top, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == "list":
        make_list(top, rest[0], rest[1])
        return
    fds = {}
    with open(rest[0]) as f:
        for line in f:
            name, off, length, rel = line.rstrip("\n").split(" ", 3)
            if mode == "view":
                if rel not in fds:
                    fds[rel] = os.open(os.path.join(top, rel), os.O_RDONLY)
                read_range(fds[rel], int(off), int(length))
            else:
                fd = os.open(os.path.join(top, name), os.O_RDONLY)
                read_range(fd, 0, int(length))
                os.close(fd)
    for fd in fds.values():
        os.close(fd)


if __name__ == "__main__":
    main()
