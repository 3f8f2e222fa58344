#!/usr/bin/env python3
"""The side-by-side table of bench/mpi_compare.sh and bench/gloo_compare.sh: one row per size with
the peer's and cohort's times in both modes (blk: each op waited for; win: all issued, then waited
for), each side's best busbw, and three ratios (peer time / cohort time, so > 1 means cohort is
faster): blocking against blocking, window against window, each side's faster mode against the
other's. Each value is the median over the rounds.

    compare_table.py DIR ROUNDS PEER_LABEL COHORT_LABEL

DIR holds peer1.R, peer0.R, coh1.R, coh0.R for R = 1..ROUNDS (1: blocking, 0: window), lines in
cohort-bench's columns: size count type redop time algbw busbw #wrong ('#' lines are skipped).
"""
import collections
import statistics
import sys

tmp, rounds, peer, comm = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]


def load(kind):
    rows = collections.defaultdict(list)
    for r in range(1, rounds + 1):
        for line in open(f"{tmp}/{kind}.{r}"):
            f = line.split()  # size count type redop time algbw busbw #wrong
            if len(f) >= 8 and f[0].isdigit():
                rows[int(f[0])].append((float(f[4]), float(f[6]), f[7]))
    return rows


d = {k: load(k) for k in ("peer1", "peer0", "coh1", "coh0")}
print(f"{'size (B)':>10} | {peer + ' blk us':>10} {peer + ' win us':>10} | {comm + ' blk us':>10} {comm + ' win us':>10} |"
      f" {'busbw ' + peer:>9} {'busbw ' + comm:>9} | {'blk':>5} {'win':>5} {'best':>5} | #wrong")
for size in sorted(set.intersection(*(set(v) for v in d.values()))):
    t = {k: statistics.median(x[0] for x in v[size]) for k, v in d.items()}
    b = {k: statistics.median(x[1] for x in v[size]) for k, v in d.items()}
    wrong = ",".join(sorted(set(x[2] for v in d.values() for x in v[size])))
    # Same bytes on every side, so time ratios are busbw ratios (exact even where busbw rounds to 0).
    r = lambda m, c: m / c if c > 0 else float("nan")
    q = lambda x: f"{x:5.2f}" if x < 99.995 else f"{x:5.0f}"  # 5 wide, also for ratios in the 100s
    pbest, cbest = min(t["peer1"], t["peer0"]), min(t["coh1"], t["coh0"])
    bp, bc = max(b["peer1"], b["peer0"]), max(b["coh1"], b["coh0"])
    print(f"{size:10d} | {t['peer1']:10.2f} {t['peer0']:10.2f} | {t['coh1']:10.2f} {t['coh0']:10.2f} |"
          f" {bp:9.2f} {bc:9.2f} | {q(r(t['peer1'], t['coh1']))} {q(r(t['peer0'], t['coh0']))}"
          f" {q(r(pbest, cbest))} | {wrong}")
