#!/usr/bin/python3
"""own_chunks.py - read this node's chunks of a cut file through the
job's view, as a task does with libiostage-localread.so preloaded
(tests/cluster/test_spread.sh).

  own_chunks.py FILE PFSFILE

Asks FILE for the view's user.iostage.chunks (common/fs/chunkxattr.h),
reads the chunks it says this node holds with os.pread in 256 KiB steps,
and compares them with PFSFILE. Prints "own chunks: N bytes same" (N 0
when the view holds none here), or the difference and exits 1.
"""
import os
import sys

STEP = 256 << 10


def main():
    path, pfs = sys.argv[1], sys.argv[2]
    try:
        value = os.getxattr(path, "user.iostage.chunks").decode()
    except OSError:
        print("own chunks: 0 bytes same (no attribute)")
        return
    version, size, chunk, _prefix, held, _dir = value.split(" ", 5)
    size, chunk = int(size), int(chunk)
    assert version == "1", value
    fd, ref = os.open(path, os.O_RDONLY), os.open(pfs, os.O_RDONLY)
    total = 0
    for i in range((size + chunk - 1) // chunk):
        if not (int(held[i // 4], 16) >> (i % 4)) & 1:
            continue
        off, end = i * chunk, min(size, (i + 1) * chunk)
        while off < end:
            n = min(STEP, end - off)
            got, want = os.pread(fd, n, off), os.pread(ref, n, off)
            if got != want:
                sys.exit(f"own chunks: chunk {i} differs at {off}")
            off += n
            total += n
    print(f"own chunks: {total} bytes same")


if __name__ == "__main__":
    main()
