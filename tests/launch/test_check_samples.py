#!/usr/bin/env python3
"""check_samples.py against hand-made logs: the run's global batches must be the reference's, a
missing line is excused only where the membership log shows the step completed without it, and
every other gap, loss or duplicate is refused with the step named."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# The reference: 3 ranks, 4 steps, rank r holding samples 10 s + r and 10 s + r + 3.
REF = {r: {s: [10 * s + r, 10 * s + r + 3] for s in range(1, 5)} for r in range(3)}


def write_logs(prefix, logs):
    for r, steps in logs.items():
        with open(f"{prefix}.rank{r}", "w") as f:
            for s, samples in sorted(steps.items()):
                f.write(" ".join(map(str, [s] + samples)) + "\n")


def check(work, name, run, changes):
    write_logs(f"{work}/ref", REF)
    write_logs(f"{work}/{name}", run)
    with open(f"{work}/{name}.jsonl", "w") as f:
        for c in changes:
            f.write(json.dumps(c) + "\n")
    p = subprocess.run([sys.executable, f"{HERE}/check_samples.py", f"{work}/{name}",
                        f"{work}/ref", "3", "4", f"{work}/{name}.jsonl"],
                       capture_output=True, text=True)
    return p.returncode, p.stdout.strip()


def copy(logs):
    return {r: dict(steps) for r, steps in logs.items()}


def after_drop(run, at):
    """Ranks 0 and 1 share rank 2's samples after step `at` (the global batch kept)."""
    for s in range(at + 1, 5):
        run[0][s] = REF[0][s] + REF[2][s][:1]
        run[1][s] = REF[1][s] + REF[2][s][1:]
        run[2].pop(s, None)
    return run


def main():
    failures = []

    def expect(name, run, changes, rc, text):
        with tempfile.TemporaryDirectory() as work:
            got_rc, out = check(work, name, run, changes)
        if got_rc != rc or text not in out:
            failures.append(f"{name}: exit {got_rc}, '{out}'; expected exit {rc} and '{text}'")

    drop = {"epoch": 1, "step": 2, "old": [0, 1, 2], "new": [0, 1], "steps": [2, 2], "root": 0}
    expect("uninterrupted", copy(REF), [], 0, "24 samples in 4 steps")
    expect("drop", after_drop(copy(REF), 2), [drop], 0, "1 membership change)")
    # Rank 2 SIGKILLed after step 2's collectives, before writing its line.
    killed = after_drop(copy(REF), 2)
    killed[2].pop(2)
    expect("killed before its line", killed, [drop], 0,
           "rank 2's line for step 2 lost to its SIGKILL after the step")
    # Rank 0's own collective of step 2 failed where rank 1's completed: it took rank 1's state.
    behind = after_drop(copy(REF), 2)
    behind[0].pop(2)
    expect("behind", behind, [dict(drop, steps=[1, 2], root=1)], 0,
           "rank 0's line for step 2 never written")
    # The same gap with every rank at step 2 (nobody behind): a lost share.
    expect("gap, nobody behind", behind, [drop], 1, "FAIL step 2: member rank 0 logged no samples")
    # A gap away from any change.
    gap = copy(REF)
    gap[1].pop(3)
    expect("gap", gap, [], 1, "FAIL step 3: member rank 1 logged no samples")
    # A survivor's share lost after the change.
    short = after_drop(copy(REF), 2)
    short[0][3] = REF[0][3]
    expect("sample lost", short, [drop], 1, "FAIL step 3: 5 samples")
    # A sample seen twice.
    twice = copy(REF)
    twice[1][4] = REF[1][4][:1] + REF[0][4][:1]
    expect("twice", twice, [], 1, "FAIL step 4: a sample twice in one global batch")
    # A later step rerun (a discarded step is written twice): the last line wins.
    rerun = copy(REF)
    with tempfile.TemporaryDirectory() as work:
        write_logs(f"{work}/ref", REF)
        write_logs(f"{work}/rerun", rerun)
        with open(f"{work}/rerun.rank1", "a") as f:
            f.write("3 1 2\n")  # step 3 again, with samples from nowhere
        with open(f"{work}/rerun.jsonl", "w"):
            pass
        p = subprocess.run([sys.executable, f"{HERE}/check_samples.py", f"{work}/rerun",
                            f"{work}/ref", "3", "4", f"{work}/rerun.jsonl"],
                           capture_output=True, text=True)
        if p.returncode != 1 or "FAIL step 3" not in p.stdout:
            failures.append(f"rerun: exit {p.returncode}, '{p.stdout.strip()}'")

    for f in failures:
        print("FAIL", f)
    print(f"check_samples.py: {9 - len(failures)} of 9 cases as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
