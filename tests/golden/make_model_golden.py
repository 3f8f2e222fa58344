"""Writes model_golden.json: each zoo model's output and selected gradients in PyTorch for weights,
input and output gradient given by closed formulas (no weight files to commit), which
tests/models recomputes in cohort.

    /usr/bin/python3 tests/golden/make_model_golden.py   # Debian's python3-torch + torchvision

The formulas (tests/models/test_models.cpp repeats them), for the t-th state_dict parameter
(counting parameters only, in state_dict order) and its element k:
  rank >= 2 (conv, linear weights): sin(0.37 k + t) * sqrt(3 / fan_in), fan_in = numel / shape[0]
  rank 1 named *.weight of a batch norm: 1 + 0.1 sin(0.37 k + t);  other rank 1: 0.1 sin(0.37 k + t)
  input element k: sin(0.11 k);  d(loss)/d(output) element k: cos(0.07 k)
The first four entries were made on 2026-11-28; the ResNet family's on 2026-11-29 (a re-run
moves the earlier ones by float rounding, ~1e-7, as the CPU's oneDNN kernels differ).
Buffers keep their defaults (running mean 0, variance 1). CNN-A runs in training mode; the others
in evaluation mode (dropout off, batch norm on running statistics; see CASES for ResNet-50's reason).
"""
import json
import math
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "models"))
import torch_models  # noqa: E402

CASES = [  # (model, batch, size, train)
    ("cnn_a", 2, 16, True),
    ("cnn_b", 2, 16, False),
    ("resnet9", 2, 16, False),
    # Evaluation mode: in training mode this untrained 50-layer net with batch statistics is
    # chaotic (measured at 8 images of 64x64: an input change of 1e-5 moves the output by 74%,
    # input gradients reach 3e9), so f32 summation order alone would decide the comparison.
    ("resnet50", 4, 32, False),
    ("resnet18", 2, 32, False),
    ("resnet34", 2, 32, False),
    ("wide_resnet50_2", 2, 32, False),
]
PROBES = 5  # gradient entries kept per listed tensor


def fill(model):
    bn_weights = {n + ".weight" for n, m in model.named_modules() if isinstance(m, torch.nn.BatchNorm2d)}
    with torch.no_grad():
        for t, (name, p) in enumerate(model.named_parameters()):
            k = torch.arange(p.numel(), dtype=torch.float64)
            s = torch.sin(0.37 * k + t)
            if p.dim() >= 2:
                v = s * math.sqrt(3.0 / (p.numel() / p.shape[0]))
            elif name in bn_weights:
                v = 1 + 0.1 * s
            else:
                v = 0.1 * s
            p.copy_(v.reshape(p.shape).float())


def probes(n):
    return [int(i * (n - 1) / (PROBES - 1)) for i in range(PROBES)]


out = []
for name, batch, size, train in CASES:
    torch.manual_seed(0)
    m = torch_models.make(name, 10, 3, size)
    fill(m)
    m.train(train)
    x = torch.sin(0.11 * torch.arange(batch * 3 * size * size, dtype=torch.float64)).float()
    x = x.reshape(batch, 3, size, size).requires_grad_(True)
    y = m(x)
    r = torch.cos(0.07 * torch.arange(y.numel(), dtype=torch.float64)).float().reshape(y.shape)
    (y * r).sum().backward()
    params = list(m.named_parameters())
    listed = [params[0], params[len(params) // 2], params[-2], params[-1]]
    grads = {n: {"index": probes(p.numel()), "value": [p.grad.flatten()[i].item() for i in probes(p.numel())]}
             for n, p in listed}
    grads["input"] = {"index": probes(x.numel()), "value": [x.grad.flatten()[i].item() for i in probes(x.numel())]}
    out.append({"model": name, "batch": batch, "image_size": size, "train": train,
                "output": y.flatten().tolist(), "grads": grads})
with open(os.path.join(here, "model_golden.json"), "w") as f:
    json.dump(out, f)
print("wrote", len(out), "models")
