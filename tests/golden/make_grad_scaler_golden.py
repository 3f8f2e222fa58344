#!/usr/bin/env python3
"""Writes tests/golden/grad_scaler.json: torch.amp.GradScaler's scale sequence on the CPU.

Run with the peers' venv (tools/setup.sh --peers; Debian's PyTorch 1.13 has no CPU GradScaler):
  .venv-peers/bin/python tests/golden/make_grad_scaler_golden.py
The output is committed; CI never needs torch. Format: tests/common/golden.hpp.

Each case: a parameter p = [1, -2, 3] under SGD(lr 0.1), loss = sum(p * [0.5, 0.25, -1]), so the
gradient is [0.5, 0.25, -1] times the scale. Per step, `pattern` says what the scaled gradient gets:
0 nothing, 1 an inf in element 1, 2 a NaN in element 2. Then scaler.unscale_(opt),
scaler.step(opt), scaler.update(). Tensors: "scale" (after every update), "growth_tracker" (after
every update), "stepped" (1 when the optimizer stepped), "unscaled" (the gradient after
unscale_, every step, flattened), "param" (p after every step, flattened).
"""
import json
import math
import os

import torch

CASES = {
    # PyTorch's defaults; a skipped step halves the scale, growth would take 2000 good steps.
    "defaults": dict(init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5,
                     growth_interval=2000, pattern=[0, 1, 0, 0, 2, 0]),
    # Growth every 3 good steps in a row; a skip restarts the count.
    "growth": dict(init_scale=1024.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=3,
                   pattern=[0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 1, 0, 0, 0]),
    # Factors that are not powers of two: the scale is a float32, rounded at every change.
    "factors": dict(init_scale=3.0, growth_factor=1.5, backoff_factor=0.3, growth_interval=2,
                    pattern=[0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 1, 1, 0, 0]),
    # Growth past float32's range is not taken (the scale stays; the count restarts).
    "overflow": dict(init_scale=3e38, growth_factor=2.0, backoff_factor=0.5, growth_interval=1,
                     pattern=[0, 0, 1, 0]),
}


def f(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def tensor(values):
    return {"shape": [len(values)], "data": [f(v) for v in values]}


def run(cfg):
    p = torch.nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))
    opt = torch.optim.SGD([p], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=cfg["init_scale"],
                                  growth_factor=cfg["growth_factor"],
                                  backoff_factor=cfg["backoff_factor"],
                                  growth_interval=cfg["growth_interval"])
    w = torch.tensor([0.5, 0.25, -1.0])
    out = {"scale": [], "growth_tracker": [], "stepped": [], "unscaled": [], "param": []}
    for kind in cfg["pattern"]:
        opt.zero_grad()
        scaler.scale((p * w).sum()).backward()
        with torch.no_grad():
            if kind == 1:
                p.grad[1] = float("inf")
            elif kind == 2:
                p.grad[2] = float("nan")
        before = p.detach().clone()
        scaler.unscale_(opt)
        out["unscaled"] += p.grad.tolist()
        scaler.step(opt)
        scaler.update()
        out["stepped"].append(0.0 if torch.equal(before, p.detach()) else 1.0)
        out["scale"].append(scaler.get_scale())
        out["growth_tracker"].append(float(scaler._growth_tracker.item()))
        out["param"] += p.detach().tolist()
    return out


def main():
    cases = {}
    for name, cfg in CASES.items():
        res = run(cfg)
        cases[name] = {"config": {k: v for k, v in cfg.items()},
                       "tensors": {k: tensor(v) for k, v in res.items()}}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grad_scaler.json")
    with open(path, "w") as fh:
        json.dump({"generator": f"tests/golden/make_grad_scaler_golden.py, torch {torch.__version__}",
                   "cases": cases}, fh, indent=1)
        fh.write("\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
