#!/usr/bin/env python3
"""PyTorch peer for cohort's mnist_cnn: the classic PyTorch MNIST example network, Adadelta
(lr 1.0), batch 64, one thread, on Fashion-MNIST loaded into memory once (so only training
steps are timed, as cohort's images/s counts them). Prints one line: 'torch images/s: X'.

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/mnist_torch.py --steps 200
    python3 bench/mnist_torch.py --device cuda --steps 300     # on a GPU (tools/gpu_check.sh)

On cuda the whole data set sits on the GPU, the loss is read back once at the end, and the clock
stops after torch.cuda.synchronize(): the same work cohort's mnist_cnn times.
"""
import argparse
import gzip
import os
import struct
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # torch.set_num_threads does not reach BLAS
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def load(path, header, shape):
    with gzip.open(path, "rb") as f:
        data = f.read()
    return torch.frombuffer(bytearray(data[header:]), dtype=torch.uint8).reshape(shape)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--amp", default="off", choices=["off", "bf16", "f16"],
                    help="forward and loss under torch.autocast(device, that dtype)")
    ap.add_argument("--eval-batch", type=int, default=0,
                    help="then evaluate the test set in batches of N under no_grad (as mnist_cnn does)")
    a = ap.parse_args()
    dev = torch.device(a.device)
    torch.set_num_threads(1)
    torch.manual_seed(1)
    images = load(os.path.join(a.data, "train-images-idx3-ubyte.gz"), 16, (60000, 1, 28, 28))
    labels = load(os.path.join(a.data, "train-labels-idx1-ubyte.gz"), 8, (60000,)).long()
    x_all = ((images.float() / 255.0 - 0.1307) / 0.3081).to(dev)
    labels = labels.to(dev)
    model = Net().to(dev)
    opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
    perm = torch.randperm(60000).to(dev)
    model.train()
    b = a.batch_size
    warm = 5
    for step in range(a.steps + warm):
        if step == warm:
            t0 = time.perf_counter()
        idx = perm[(step * b) % (60000 - b):(step * b) % (60000 - b) + b]
        x, y = x_all[idx], labels[idx]
        opt.zero_grad()
        amp = {"bf16": torch.bfloat16, "f16": torch.float16}.get(a.amp)
        with torch.autocast(dev.type, dtype=amp or torch.float32, enabled=amp is not None):
            loss = F.nll_loss(model(x), y)
        loss.backward()
        opt.step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"torch images/s: {a.steps * b / dt:.1f}  (loss {loss.item():.4f}, {a.steps} steps)")
    if a.eval_batch:
        n = 10000
        xt = load(os.path.join(a.data, "t10k-images-idx3-ubyte.gz"), 16, (n, 1, 28, 28))
        yt = load(os.path.join(a.data, "t10k-labels-idx1-ubyte.gz"), 8, (n,)).long().to(dev)
        xt = ((xt.float() / 255.0 - 0.1307) / 0.3081).to(dev)
        model.eval()
        with torch.no_grad():
            correct = sum((model(xt[i:i + a.eval_batch]).argmax(1) == yt[i:i + a.eval_batch]).sum().item()
                          for i in range(0, n, a.eval_batch))
        print(f"torch test accuracy: {100.0 * correct / n:.2f}%")


if __name__ == "__main__":
    main()
