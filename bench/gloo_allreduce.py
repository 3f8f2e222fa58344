#!/usr/bin/env python3
"""PyTorch's Gloo all-reduce (the CPU backend of torch.distributed, what CPU DDP uses), timed as
cohort-bench times cohort: the same sizes, and the same columns (size, count, type, redop, time in
microseconds, algbw, busbw = algbw x 2(n-1)/n, #wrong), so bench/gloo_compare.sh can read both.

    .venv-peers/bin/python bench/gloo_allreduce.py [-np 2] [-b 8] [-e 64M] [-f 4] [-n 20] [-w 5]
                                                   [-d float|half|bfloat16] [-z 0|1]

-z 1: each all_reduce waited for before the next is issued (dist.all_reduce); -z 0: all -n issued
with async_op=True, then waited for (the window mode of cohort-bench and nccl-tests). The ranks
are processes on this host (torch.multiprocessing, spawn) rendezvousing over TCP on 127.0.0.1;
each runs torch with one intra-op thread. The time per size is rank 0's; #wrong counts wrong
elements after a separate checked op on integer-valued data (exact in every dtype).
"""
import argparse
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

TYPES = {"float": torch.float32, "f32": torch.float32, "half": torch.float16, "f16": torch.float16,
         "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}
NAMES = {torch.float32: "float", torch.float16: "half", torch.bfloat16: "bfloat16"}


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1].upper()] if s[-1].upper() in mult else int(s)


def pattern(rank, n, dt):
    # cohort-bench's integer pattern: ((i * 7 + rank * 13) % 31) - 15, exact in every dtype here.
    i = torch.arange(n, dtype=torch.int64)
    return (((i * 7 + rank * 13) % 31) - 15).to(dt)


def worker(rank, a, port, out):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=a.np)
    dt = TYPES[a.d]
    esize = torch.tensor([], dtype=dt).element_size()
    rows = []
    size = a.b
    while size <= a.e:
        n = max(size // esize, 1)
        x = torch.ones(n, dtype=dt)
        for _ in range(a.w):
            dist.all_reduce(x)
        dist.barrier()
        t0 = time.perf_counter()
        if a.z:
            for _ in range(a.n):
                dist.all_reduce(x)
        else:
            works = [dist.all_reduce(x, async_op=True) for _ in range(a.n)]
            for w in works:
                w.wait()
        us = (time.perf_counter() - t0) / a.n * 1e6
        # Checked run: the sum over ranks of the pattern, compared exactly.
        c = pattern(rank, n, dt)
        dist.all_reduce(c)
        want = sum(pattern(r, n, torch.float64) for r in range(a.np))
        wrong = torch.tensor(int((c.to(torch.float64) != want).sum()))
        dist.all_reduce(wrong)
        t = torch.tensor([us], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)  # the slowest rank, as cohort-bench reports
        algbw = n * esize / (t.item() * 1e-6) / 1e9
        busbw = algbw * 2 * (a.np - 1) / a.np
        rows.append(f"{n * esize:12d} {n:12d} {NAMES[dt]:>9} {'sum':>7} {t.item():10.2f} "
                    f"{algbw:8.2f} {busbw:8.2f} {int(wrong):7d}")
        size *= a.f
    if rank == 0:
        with open(out, "w") as f:
            f.write("\n".join(rows) + "\n")
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-np", type=int, default=2)
    p.add_argument("-b", type=parse_size, default=8)
    p.add_argument("-e", type=parse_size, default=64 << 20)
    p.add_argument("-f", type=int, default=4)
    p.add_argument("-n", type=int, default=20)
    p.add_argument("-w", type=int, default=5)
    p.add_argument("-d", choices=sorted(TYPES), default="float")
    p.add_argument("-z", type=int, choices=(0, 1), default=0)
    a = p.parse_args()
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = f"/tmp/gloo_allreduce.{os.getpid()}.txt"
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=worker, args=(r, a, port, out)) for r in range(a.np)]
    for q in procs:
        q.start()
    for q in procs:
        q.join(600)
    bad = [q.exitcode for q in procs if q.exitcode != 0]
    if bad:
        print(f"gloo_allreduce.py: a rank failed (exit codes {[q.exitcode for q in procs]})",
              file=sys.stderr)
        sys.exit(1)
    print(f"# gloo all-reduce: torch {torch.__version__}, {a.np} ranks, {NAMES[TYPES[a.d]]}, sum, "
          f"{'blocking' if a.z else 'window'}, {a.n} iters, {a.w} warmup, 1 intra-op thread")
    print("#       size        count      type   redop       time    algbw    busbw  #wrong")
    with open(out) as f:
        sys.stdout.write(f.read())
    os.unlink(out)


if __name__ == "__main__":
    main()
