#!/usr/bin/env python3
"""Writes tests/golden/ema.json: torch's AveragedModel as torchvision's reference script builds its
ExponentialMovingAverage (use_buffers=True, avg_fn = decay * avg + (1 - decay) * value), updated
five times on a small model whose parameters and buffers are set by formula before each update,
with n_averaged reset to 0 after the second update (the reference script's warm-up reset). For
tests/train/test_ema.cpp.

    .venv-peers/bin/python tests/golden/make_ema_golden.py

Model: Sequential(Conv2d(1, 2, 3), BatchNorm2d(2), Flatten(), Linear(8, 3)); before update k
(k = 0..4) every float entry t (state_dict order) element i is sin(0.37 i + t + 1.3 k) and
num_batches_tracked is 3 k + 1. Recorded after each update: the average's state_dict (keys
"module.<name>" and "n_averaged"), float32 values as shortest decimals.
"""
import json
import math
import os
import sys

import torch
from torch.optim.swa_utils import AveragedModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_floats import f32_list  # noqa: E402

DECAY = 0.9
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.Flatten(),
                            torch.nn.Linear(8, 3))


def set_state(k):
    with torch.no_grad():
        for t, (name, v) in enumerate(model.state_dict().items()):
            if v.dtype == torch.int64:
                v.fill_(3 * k + 1)
            else:
                i = torch.arange(v.numel(), dtype=torch.float64)
                v.copy_(torch.sin(0.37 * i + t + 1.3 * k).reshape(v.shape).float())


ema = AveragedModel(model, avg_fn=lambda avg, value, n: DECAY * avg + (1 - DECAY) * value,
                    use_buffers=True)
steps = []
for k in range(5):
    set_state(k)
    ema.update_parameters(model)
    if k == 1:
        ema.n_averaged.fill_(0)
    state = {}
    for name, v in ema.state_dict().items():
        state[name] = v.tolist() if v.dtype == torch.int64 else f32_list(v)
    steps.append(state)
out = {"generator": "tests/golden/make_ema_golden.py", "torch": torch.__version__, "decay": DECAY,
       "reset_after_update": 1, "steps": steps}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ema.json")
with open(path, "w") as f:
    json.dump(out, f)
print("wrote", path)
