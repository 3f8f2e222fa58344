"""Batch norm in training, forward + backward, in PyTorch at each shape of bench/norm_shapes.txt:
the peer of bench/norm_bench.cpp, timed the same way (3 warm-up calls, then at least 0.3 s and 5
calls; the median, ms). Prints "path torch-<version>" then one line per shape: name, ms."""
import argparse
import os
import time

import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=1)
args = ap.parse_args()
torch.set_num_threads(args.threads)
here = os.path.dirname(os.path.abspath(__file__))
print(f"path torch-{torch.__version__}")
for line in open(os.path.join(here, "norm_shapes.txt")):
    if not line.strip() or line.startswith("#"):
        continue
    name, n, c, h, w, _ = line.split()
    n, c, h, w = int(n), int(c), int(h), int(w)
    x = (torch.rand(n, c, h, w) * 2 - 1).requires_grad_(True)
    g = (torch.rand(c) + 0.5).requires_grad_(True)
    b = torch.zeros(c, requires_grad=True)
    rm, rv = torch.zeros(c), torch.ones(c)
    dy = torch.rand(n, c, h, w) * 2 - 1

    def step():
        x.grad = g.grad = b.grad = None
        F.batch_norm(x, rm, rv, g, b, True, 0.1, 1e-5).backward(dy)

    for _ in range(3):
        step()
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < 0.3 or len(times) < 5:
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    print(f"{name} {times[len(times) // 2]:.4f}")
