#!/usr/bin/env python3
"""The data directory of the launcher tests' jobs (mnist_cnn --data), made once per test.

  launch_data.py SRC DST [TEST_SAMPLES]     prints DST; exits 1 naming why when it cannot

SRC is an MNIST-layout directory (Fashion-MNIST's package by default); DST gets
- SRC's training split, uncompressed (data/src/idx.cpp reads plain files as it reads gzip), so that
  the 26 MB gunzip is done once here instead of by every rank of every job: the same 60000
  samples in the same order, so sample logs, --poison-sample indices and digests are unchanged;
- the first TEST_SAMPLES (default 1000) of SRC's 10000 test samples. Every job ends its epoch with
  an evaluation of the whole test split (2.5-4 s a job on the 2-core CI machine) whose result no
  launcher test checks (they compare weight digests, exit statuses, logs, sample counts and
  training images/s); it still runs, sharded over the ranks and summed, on a tenth of the samples.
"""
import gzip
import os
import struct
import sys


def read(base):
    if os.path.isfile(base + ".gz"):
        with gzip.open(base + ".gz", "rb") as f:
            return f.read()
    with open(base, "rb") as f:
        return f.read()


def first(idx, n):
    """The IDX array `idx` cut to its first n entries along its first dimension."""
    ndim = idx[3]
    dims = struct.unpack(f">{ndim}I", idx[4:4 + 4 * ndim])
    per = 1
    for d in dims[1:]:
        per *= d
    k = min(n, dims[0])
    start = 4 + 4 * ndim
    return idx[:4] + struct.pack(f">{ndim}I", k, *dims[1:]) + idx[start:start + k * per]


def main():
    src, dst = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    os.makedirs(dst, exist_ok=True)
    for kind in ("images-idx3", "labels-idx1"):
        with open(os.path.join(dst, f"train-{kind}-ubyte"), "wb") as f:
            f.write(read(os.path.join(src, f"train-{kind}-ubyte")))
        with open(os.path.join(dst, f"t10k-{kind}-ubyte"), "wb") as f:
            f.write(first(read(os.path.join(src, f"t10k-{kind}-ubyte")), n))
    print(dst)


if __name__ == "__main__":
    try:
        main()
    except (OSError, IndexError, ValueError, struct.error, EOFError) as e:
        print(f"launch_data.py: {e}", file=sys.stderr)
        sys.exit(1)
