#!/usr/bin/python3
"""PyTorch side of bench/layers_bench: forward+backward time per layer of the MNIST CNN (PyTorch's
example Net: conv 1->32 3x3, ReLU, conv 32->64 3x3, ReLU, max-pool 2, dropout .25, flatten,
fc 9216->128, ReLU, dropout .5, fc 128->10, log-softmax, NLL), one thread, measured exactly as
the C++ side measures cohort: per layer, its input is a fixed random tensor, one iteration is
forward + backward of a fixed random output gradient, the figure is the median over iterations
run for at least --min-time seconds after 3 warm-up iterations. One thread:
torch.set_num_threads(1) and OPENBLAS_NUM_THREADS=1 (set below, before torch loads). Parameter gradients accumulate
across iterations (as cohort's do); the input gradient of a layer is dropped each iteration (as
an intermediate activation's gradient is in a network). conv1's input needs no gradient (it is
the image). Prints one line per layer: "<name> <median ms>".

    /usr/bin/python3 bench/layers_bench_torch.py --batch 64 --min-time 1
    python3 bench/layers_bench_torch.py --device cuda     # on a GPU, TF32 off, synchronised
"""
import argparse
import os
import statistics
import time

# One thread for every library torch may use: torch.set_num_threads(1) bounds ATen's OpenMP pool
# and oneDNN, but Debian's torch calls OpenBLAS (the pthread build) for matmul, which starts its own
# threads unless told otherwise before it loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402 (after the environment above)
import torch.nn as nn
import torch.nn.functional as F


def sync():
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def bench(fn, x, need_input_grad, min_time):
    x = x.detach().requires_grad_(need_input_grad)
    y = fn(x)
    g = torch.randn_like(y) if y.dim() > 0 else torch.tensor(1.0, device=y.device)
    times = []
    for i in range(3):
        x.grad = None
        fn(x).backward(g)
    sync()
    start = time.perf_counter()
    while time.perf_counter() - start < min_time or len(times) < 5:
        x.grad = None
        t0 = time.perf_counter()
        fn(x).backward(g)
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    dev = torch.device(args.device)
    # cohort's GPU default is full FP32; PyTorch's cuDNN default allows TF32.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    b = args.batch
    conv1, conv2 = nn.Conv2d(1, 32, 3).to(dev), nn.Conv2d(32, 64, 3).to(dev)
    fc1, fc2 = nn.Linear(9216, 128).to(dev), nn.Linear(128, 10).to(dev)
    drop1, drop2 = nn.Dropout(0.25), nn.Dropout(0.5)
    target = torch.randint(0, 10, (b,), device=dev)

    class Net(nn.Module):  # PyTorch's examples/mnist/main.py
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2, self.dropout1, self.dropout2 = conv1, conv2, drop1, drop2
            self.fc1, self.fc2 = fc1, fc2

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.relu(self.conv2(x))
            x = F.max_pool2d(x, 2)
            x = self.dropout1(x)
            x = torch.flatten(x, 1)
            x = F.relu(self.fc1(x))
            x = self.dropout2(x)
            x = self.fc2(x)
            return F.nll_loss(F.log_softmax(x, dim=1), target)

    net = Net().train()
    layers = [
        ("conv1", conv1, (b, 1, 28, 28), False),
        ("relu1", F.relu, (b, 32, 26, 26), True),
        ("conv2", conv2, (b, 32, 26, 26), True),
        ("relu2", F.relu, (b, 64, 24, 24), True),
        ("max_pool", lambda x: F.max_pool2d(x, 2), (b, 64, 24, 24), True),
        ("dropout1", drop1, (b, 64, 12, 12), True),
        ("flatten", lambda x: torch.flatten(x, 1), (b, 64, 12, 12), True),
        ("fc1", fc1, (b, 9216), True),
        ("relu3", F.relu, (b, 128), True),
        ("dropout2", drop2, (b, 128), True),
        ("fc2", fc2, (b, 128), True),
        ("log_softmax", lambda x: F.log_softmax(x, dim=1), (b, 10), True),
        ("nll_loss", lambda x: F.nll_loss(x, target), (b, 10), True),
        ("model", net, (b, 1, 28, 28), False),
    ]
    for name, fn, shape, need in layers:
        x = torch.randn(shape, device=dev)
        if name == "nll_loss":
            x = F.log_softmax(x, dim=1)
        print(name, "%.4f" % bench(fn, x, need, args.min_time), flush=True)


if __name__ == "__main__":
    main()
