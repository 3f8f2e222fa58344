#!/usr/bin/env python3
"""Counts the samples of an elastic run against an uninterrupted one (test_elastic.sh).

  check_samples.py [--per-rank] RUN_PREFIX REF_PREFIX RANKS STEPS [MEMBERSHIP_LOG]

Both runs wrote mnist_cnn --sample-log PREFIX: PREFIX.rank<R> holds "STEP INDEX INDEX ..." per
optimizer step of launch rank R. For each step 1..STEPS, the samples of the run are those of the
ranks that were members at that step (a change logged at step C applies from step C + 1; a rank's
last line for a step wins, since a discarded step is run again), and they must be exactly the
reference's samples of that step: every global batch the same, so no sample lost or seen twice.
A rank may lack its line for step C when C completed without it finishing: dropped at C
(SIGKILLed after the step's collectives and before its write), or behind at a change logged at C
(its own collective failed, others' completed, and it took the state of the rank ahead: the
change's "steps" say so). Its share is then taken as the reference's (said in the output), and only
when the group at C was the whole job.

--per-rank (mnist_cnn --elastic-batch per-rank): after a change the global batches have another
size, so instead the epoch's order is rebuilt from the reference (global batch k is the elements
[W b k, W b (k + 1)) of the sampler's list, rank r holding r, r + W, ...) and the run's global
batches, step after step, must be consecutive pieces of it: every sample once, in order, none
skipped.
Prints one line; exits 1 on a difference, naming the first step at fault.
"""
import json
import sys


def read(prefix, ranks):
    got = {}
    for r in range(ranks):
        try:
            with open(f"{prefix}.rank{r}") as f:
                for line in f:
                    parts = line.split()
                    if parts:
                        got[(r, int(parts[0]))] = [int(x) for x in parts[1:]]
        except FileNotFoundError:
            pass
    return got


def reference_order(want, ranks, steps):
    """The sampler's list as far as the reference run went, from its ranks' logs."""
    order = []
    for s in range(1, steps + 1):
        parts = [want.get((r, s), []) for r in range(ranks)]
        for j in range(max(len(p) for p in parts)):
            order += [p[j] for p in parts if j < len(p)]
    return order


def main():
    args = sys.argv[1:]
    per_rank = args[:1] == ["--per-rank"]
    if per_rank:
        args = args[1:]
    run, ref, ranks, steps = args[0], args[1], int(args[2]), int(args[3])
    changes = []
    if len(args) > 4:
        with open(args[4]) as f:
            changes = [json.loads(line) for line in f if line.strip()]
    got, want = read(run, ranks), read(ref, ranks)
    order = reference_order(want, ranks, steps) if per_rank else []
    total = 0
    lost = []
    for s in range(1, steps + 1):
        members = list(range(ranks))
        for c in changes:
            if c["step"] < s:
                members = c["new"]
        mine = []
        for r in members:
            if (r, s) not in got:
                # The step completed with this rank's gradients but without its line (written
                # after the step): SIGKILLed right after the step's last collective (dropped at
                # this step), or its own collective failed where the others' completed, and it
                # took the state of the rank furthest ahead (behind at a change at this step).
                # Only from the whole group (the reference's assignment): its share is then the
                # reference's.
                why = ""
                for c in changes:
                    if c["step"] == s and r not in c["new"]:
                        why = "lost to its SIGKILL after the step"
                    elif (c["step"] == s and r in c["new"]
                          and c["steps"][c["new"].index(r)] < s):
                        why = "never written: its collective failed, the others' completed"
                if why and members == list(range(ranks)) and (r, s) in want:
                    lost.append(f"rank {r}'s line for step {s} {why}")
                    mine += want[(r, s)]
                    continue
                print(f"FAIL step {s}: member rank {r} logged no samples")
                return 1
            mine += got[(r, s)]
        if per_rank:
            theirs = order[total:total + len(mine)]
            if len(theirs) < len(mine):
                print(f"FAIL step {s}: the run is past the reference's {len(order)} samples")
                return 1
        else:
            theirs = [x for r in range(ranks) for x in want.get((r, s), [])]
        if len(mine) != len(set(mine)):
            print(f"FAIL step {s}: a sample twice in one global batch")
            return 1
        if sorted(mine) != sorted(theirs):
            print(f"FAIL step {s}: {len(mine)} samples, the uninterrupted run's global batch has "
                  f"{len(theirs)}; {len(set(mine) - set(theirs))} not in it, "
                  f"{len(set(theirs) - set(mine))} of it missing")
            return 1
        total += len(mine)
    what = ("the epoch's samples in order, each once, none skipped" if per_rank else
            "each global batch exactly the uninterrupted run's")
    note = (f"; {', '.join(lost)}: its share taken as the reference's" if lost else "")
    print(f"{total} samples in {steps} steps, {what} "
          f"({len(changes)} membership change{'s' if len(changes) != 1 else ''}{note})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
