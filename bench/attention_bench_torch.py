#!/usr/bin/python3
"""PyTorch side of bench/attention_compare.sh: forward+backward time of attention at the ViT's
shapes, measured as bench/attention_bench.cpp measures cohort (median over iterations run for at
least --min-time seconds after 3 warm-ups; a fixed random input and output gradient). Rows:
  sdpa         F.scaled_dot_product_attention on q, k, v [N, H, T, dh] (requires_grad)
  mha          nn.MultiheadAttention(E, H, batch_first=True)(x, x, x, need_weights=False)
Prints "<row> <median ms>" per row. --device cuda runs both on the GPU, each iteration ending
with torch.cuda.synchronize() (tools/gpu_check.sh's speed stage).
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def median_ms(work, min_time, sync):
    for _ in range(3):
        work()
        sync()
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < min_time or len(times) < 5:
        t0 = time.perf_counter()
        work()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--tokens", type=int, default=65)
    p.add_argument("--embed", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--min-time", type=float, default=1.0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu", help="cpu or cuda (each iteration then synchronises)")
    a = p.parse_args()
    dev = torch.device("cpu" if a.device in ("cpu", "host") else a.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    n, t, e, h = a.batch, a.tokens, a.embed, a.heads
    dh = e // h
    q, k, v = (torch.rand(n, h, t, dh, device=dev).mul_(2).sub_(1).requires_grad_() for _ in range(3))
    g = torch.rand(n, h, t, dh, device=dev) * 2 - 1

    def sdpa():
        q.grad = k.grad = v.grad = None
        F.scaled_dot_product_attention(q, k, v).backward(g)

    print(f"sdpa {median_ms(sdpa, a.min_time, sync):.4f}")
    m = torch.nn.MultiheadAttention(e, h, batch_first=True).to(dev)
    x = (torch.rand(n, t, e, device=dev) * 2 - 1).requires_grad_()
    gy = torch.rand(n, t, e, device=dev) * 2 - 1

    def mha():
        x.grad = None
        m(x, x, x, need_weights=False)[0].backward(gy)

    print(f"mha {median_ms(mha, a.min_time, sync):.4f}")


if __name__ == "__main__":
    main()
