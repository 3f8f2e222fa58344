#!/usr/bin/env python3
"""PyTorch peer for cohort's cifar_cnn: the same zoo model (models/torch_models.py, torchvision's
ResNet-50 and ViT), the same data (Fashion-MNIST padded by 2 to 32x32, 3 channels, normalised
(x - 0.2860) / 0.3530, or seeded synthetic images) and recipe (optimizer, lr, weight decay, batch,
steps, shuffled every epoch; cifar_cnn's recipe flags: --warmup-steps (LinearLR from 0.01 x lr, then
SequentialLR), --schedule cosine (CosineAnnealingLR to 0 over the steps after the warm-up, stepped
per step), --clip-grad-norm (clip_grad_norm_ after backward), --label-smoothing). Training steps alone are timed (data is in memory, as cohort's
images/s counts them). Prints 'torch images/s: X', and with --eval 'torch test accuracy: Y%'.

    .venv-peers/bin/python bench/zoo_torch.py --model resnet9 --steps 100 --threads 2
    .venv-peers/bin/python bench/zoo_torch.py --model resnet9 --steps 100 --nproc 2  # DDP, gloo

--device cuda runs on the GPU (timing each step up to torch.cuda.synchronize()); --amp bf16 runs
the forward and loss under torch.autocast(device, torch.bfloat16), --amp f16 under
torch.autocast(device, torch.float16) with torch.amp.GradScaler, as PyTorch's AMP recipe does.

    python3 bench/zoo_torch.py --model resnet50 --steps 30 --device cuda --amp f16

With --nproc N the same steps run data-parallel: N processes (torch.multiprocessing), gloo,
DistributedDataParallel, each rank a 1/N shard of every epoch's permutation, batch per rank;
images/s counts all ranks (rank 0's clock).
"""
import argparse
import gzip
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import torch_models  # noqa: E402


def load_idx(path, header, shape):
    with gzip.open(path, "rb") as f:
        data = f.read()
    return torch.frombuffer(bytearray(data[header:]), dtype=torch.uint8).reshape(shape)


def fashion(split, data):
    pre = "train" if split == "train" else "t10k"
    n = 60000 if split == "train" else 10000
    x = load_idx(f"{data}/{pre}-images-idx3-ubyte.gz", 16, (n, 1, 28, 28)).float() / 255
    y = load_idx(f"{data}/{pre}-labels-idx1-ubyte.gz", 8, (n,)).long()
    x = F.pad(x, (2, 2, 2, 2)).repeat(1, 3, 1, 1)
    return (x - 0.2860) / 0.3530, y


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="cnn_a")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--optimizer", default="adam", choices=["sgd", "adam", "adamw"])
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--synthetic", action="store_true")
    ap.add_argument("--eval", action="store_true", help="test accuracy after training")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--nproc", type=int, default=1, help="data-parallel ranks (gloo DDP)")
    ap.add_argument("--init", help="start from these weights (cohort's cifar_cnn --save-init FILE)")
    ap.add_argument("--no-shuffle", action="store_true", help="batches in data-set order")
    ap.add_argument("--port", type=int, default=29533)
    ap.add_argument("--warmup-steps", type=int, default=0)
    ap.add_argument("--schedule", default="none", choices=["none", "cosine"],
                    help="none: constant lr (cifar_cnn's StepLR with gamma 1)")
    ap.add_argument("--clip-grad-norm", type=float, default=0.0)
    ap.add_argument("--label-smoothing", type=float, default=0.0)
    ap.add_argument("--amp", default="off", choices=["off", "bf16", "f16"],
                    help="forward and loss under torch.autocast(device, bf16 / f16); f16 adds a GradScaler")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    return ap.parse_args()


def main():
    a = parse()
    if a.nproc > 1:
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(a,), nprocs=a.nproc)
    else:
        worker(0, a)


def worker(rank, a):
    world = a.nproc
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{a.port}", rank=rank, world_size=world)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    if a.synthetic:
        xs, ys = torch.randn(2048, 3, 32, 32), torch.randint(0, 10, (2048,))
        xt, yt = torch.randn(512, 3, 32, 32), torch.randint(0, 10, (512,))
    else:
        xs, ys = fashion("train", a.data)
        xt, yt = fashion("test", a.data)
    model = torch_models.make(a.model, 10, 3, 32)
    if a.init:
        from safetensors.torch import load_file
        model.load_state_dict(load_file(a.init), strict=True)
    dev = torch.device(a.device)
    model = model.to(dev)
    amp_dtype = {"bf16": torch.bfloat16, "f16": torch.float16}.get(a.amp)
    scaler = torch.amp.GradScaler(a.device, enabled=a.amp == "f16")
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum, weight_decay=a.weight_decay)
    elif a.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    L = torch.optim.lr_scheduler
    main = (L.CosineAnnealingLR(opt, T_max=max(1, a.steps - a.warmup_steps)) if a.schedule == "cosine"
            else L.LambdaLR(opt, lambda e: 1.0))
    sched = main
    if a.warmup_steps > 0:
        warm = L.LinearLR(opt, start_factor=0.01, end_factor=1.0, total_iters=a.warmup_steps)
        sched = L.SequentialLR(opt, [warm, main], milestones=[a.warmup_steps])
    model.train()
    shard = len(xs) // world
    step, seconds, per_epoch = 0, 0.0, shard // a.batch_size + (shard % a.batch_size > 0)
    while step < a.steps:
        perm = torch.arange(len(xs)) if a.no_shuffle else torch.randperm(len(xs))
        perm = perm[rank::world][:shard]
        for b in range(per_epoch):
            if step == a.steps:
                break
            idx = perm[b * a.batch_size:(b + 1) * a.batch_size]
            x, y = xs[idx].to(dev), ys[idx].to(dev)
            sync()
            t0 = time.perf_counter()
            opt.zero_grad()
            with torch.autocast(a.device, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
                loss = F.cross_entropy(model(x), y, label_smoothing=a.label_smoothing)
            scaler.scale(loss).backward()
            if a.clip_grad_norm > 0:
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip_grad_norm)
            scaler.step(opt)
            scaler.update()
            sched.step()
            sync()
            seconds += time.perf_counter() - t0
            step += 1
    if rank:
        return
    print(f"torch {torch.__version__} threads {torch.get_num_threads()} ranks {world} model {a.model} "
          f"steps {step} final loss {loss.item():.4f}")
    print(f"torch images/s: {world * step * a.batch_size / seconds:.1f}")
    if a.eval:
        model.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, len(xt), 1000):
                correct += (model(xt[i:i + 1000].to(dev)).argmax(1).cpu() == yt[i:i + 1000]).sum().item()
        print(f"torch test accuracy: {100.0 * correct / len(xt):.2f}%")


if __name__ == "__main__":
    main()
