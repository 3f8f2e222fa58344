#!/usr/bin/env python3
"""Loads the --profile-dir files of real mnist_cnn runs (one rank, then two over shm under
cohortrun) with the PyTorch profiler plugin's own reader (torch-tb-profiler, PyPI, in .venv-peers)
and checks what its Overview would show against what the runs printed.

  test_profile_trace.py MNIST_CNN COHORTRUN WORK_DIR
Exit 77 (skipped) when torch_tb_profiler is not importable, saying so.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    from torch_tb_profiler import consts
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.run_generator import RunGenerator
except ImportError as e:
    print(f"SKIP: the PyTorch profiler plugin is not importable here ({e}); "
          "tools/setup.sh --peers installs torch-tb-profiler in .venv-peers")
    sys.exit(77)

mnist, cohortrun, work = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
STEPS = 6


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    print(r.stdout[-1500:], r.stderr[-1500:])
    assert r.returncode == 0, f"{cmd[0]} exited {r.returncode}"
    return r.stdout


def load(path):
    """The plugin's reader on one file: (worker, RunProfileData, the generated profile)."""
    m = consts.WORKER_PATTERN.match(os.path.basename(path))
    assert m, f"{path}: the plugin's WORKER_PATTERN does not match the file name"
    data = RunProfileData.parse(m.group(1), None, path, tempfile.mkdtemp(dir=work))
    return m.group(1), data, RunGenerator(m.group(1), None, data).generate_run_profile()


def overview(profile):
    perf = profile.overview["performance"][0]
    return perf["value"], {c["name"]: c["value"] for c in perf["children"]}


common = [mnist, "--epochs", "1", "--max-steps", str(STEPS), "--log-interval", "100000",
          "--test-batch-size", "1000"]

# One rank.
one = os.path.join(work, "one")
out = run(common + ["--profile-dir", one])
files = glob.glob(os.path.join(one, "*.pt.trace.json"))
assert len(files) == 1, files
assert f"profile: {files[0]}" in out, "the run names the file it wrote"
worker, data, prof = load(files[0])
assert worker.endswith("_rank0"), worker
assert data.steps_names == [str(s) for s in range(1, STEPS + 1)], data.steps_names
assert data.distributed_info is None
assert [v.display_name for v in prof.views][:1] == ["Overview"], prof.views
avg, parts = overview(prof)
print(f"one rank: average step {avg} us, {parts}")
assert parts["CPU Exec"] > 0.9 * avg, parts  # forward, backward, optimizer
assert parts["DataLoader"] > 0, parts
# The plugin's average step against the run's own per-step total (ms/step of its phase table;
# the plugin's step span also holds the few microseconds between phases).
ms = float(re.search(r"^total\s+[\d.]+\s+([\d.]+)\s", out, re.M).group(1))
assert abs(avg / 1000 - ms) <= 0.05 * ms + 0.2, (avg, ms)
ops = {r["name"]: r["calls"] for r in prof.operation_table_by_name["data"]}
assert ops.get("forward") == STEPS and ops.get("backward") == STEPS, ops

# Two ranks over shm: one file per rank, distributedInfo, the all-reduces on their own thread.
two = os.path.join(work, "two")
run([cohortrun, "--nproc-per-node", "2"] + common + ["--comm", "shm", "--profile-dir", two])
files = sorted(glob.glob(os.path.join(two, "*.pt.trace.json")))
assert len(files) == 2, files
for rank, path in enumerate(files):
    worker, data, prof = load(path)
    assert worker.endswith(f"_rank{rank}"), (worker, rank)
    assert data.distributed_info == {"backend": "shm", "rank": rank, "world_size": 2}, data.distributed_info
    assert data.steps_names == [str(s) for s in range(1, STEPS + 1)], data.steps_names
    ops = {r["name"]: r["calls"] for r in prof.operation_table_by_name["data"]}
    assert ops.get("shm:all_reduce", 0) >= STEPS, ops  # at least one bucket per step
    threads = {e.tid for e in data.events if e.name == "shm:all_reduce"}
    steps = {e.tid for e in data.events if e.name.startswith("ProfilerStep#")}
    assert threads and steps and threads.isdisjoint(steps), (threads, steps)
    print(f"rank {rank}: {overview(prof)}, all-reduces {ops['shm:all_reduce']}")
print("ok: the PyTorch profiler plugin reads both layouts")
