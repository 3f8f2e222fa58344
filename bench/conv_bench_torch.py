"""PyTorch's side of bench/conv_compare.sh: the same shapes (bench/conv_shapes.txt), the same
method as build/bin/conv_bench (median over >= 3 iterations and --min-time seconds after one
warm-up), forward = F.conv2d, backward data / filter = aten.convolution_backward with only that
output requested. Prints "threads N path torch-VERSION" then "name fwd bwd_data bwd_filter" (ms).
--device cuda and --pipelined N as conv_bench's: every iteration ends with torch.cuda.synchronize(),
and with --pipelined N it is N calls back to back, divided by N. cuDNN's settings are PyTorch's
defaults except TF32, which is off as in cohort (torch.backends.cudnn.allow_tf32 = False)."""
import argparse
import os
import time

import torch
import torch.nn.functional as F


def median_ms(f, min_time):
    f()
    t = []
    start = time.perf_counter()
    while len(t) < 3 or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        f()
        t.append((time.perf_counter() - t0) * 1e3)
    t.sort()
    return t[len(t) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=os.path.join(os.path.dirname(__file__), "conv_shapes.txt"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=0.2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--pipelined", type=int, default=1)
    ap.add_argument("--cudnn-benchmark", action="store_true",
                    help="torch.backends.cudnn.benchmark = True (cohort: COHORT_CUDNN_BENCHMARK=1)")
    a = ap.parse_args()
    if a.pipelined < 1:
        ap.error(f"--pipelined {a.pipelined}: needs a whole number >= 1")
    torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    if cuda:
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.benchmark = a.cudnn_benchmark
    pipe = f" pipelined {a.pipelined}" if a.pipelined > 1 else ""
    if cuda and a.cudnn_benchmark:
        pipe += " cudnn.benchmark"
    print(f"threads {torch.get_num_threads()} path torch-{torch.__version__}{' ' + a.device if cuda else ''}{pipe}",
          flush=True)

    def timed(f):
        def it():
            for _ in range(a.pipelined):
                f()
            if cuda:
                torch.cuda.synchronize()
        return median_ms(it, a.min_time) / a.pipelined
    gen = torch.Generator().manual_seed(1)
    for line in open(a.shapes):
        if not line.strip() or line.startswith("#"):
            continue
        name, *v = line.split()
        n, c, h, w, k, r, s, stride, pad = map(int, v)
        x = (torch.rand(n, c, h, w, generator=gen) * 2 - 1).to(dev)
        wt = ((torch.rand(k, c, r, s, generator=gen) * 2 - 1) * 0.1).to(dev)
        with torch.no_grad():
            y = F.conv2d(x, wt, None, stride, pad)
        dy = (torch.rand(y.shape, generator=gen) * 2 - 1).to(dev)

        def bwd(mask):
            return torch.ops.aten.convolution_backward(
                dy, x, wt, None, [stride] * 2, [pad] * 2, [1, 1], False, [0, 0], 1, mask)

        with torch.no_grad():
            fwd = timed(lambda: F.conv2d(x, wt, None, stride, pad))
            bd = timed(lambda: bwd([True, False, False]))
            bf = timed(lambda: bwd([False, True, False]))
        print(f"{name} {fwd:.4f} {bd:.4f} {bf:.4f}", flush=True)


if __name__ == "__main__":
    main()
