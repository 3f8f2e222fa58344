#!/usr/bin/python3
"""Writes tests/golden/recipe.json: golden vectors for the training-recipe pieces, from PyTorch 1.13.

Run with Debian's python3-torch (not a pyenv python):  /usr/bin/python3 tests/golden/make_recipe_golden.py
The output is committed; CI never needs torch. Format: tests/common/golden.hpp.

"clip_norm.*" (kind "clip_norm"): torch.nn.utils.clip_grad_norm_ over three gradients (shapes in
the config; in the "big" cases the last has 4500 elements, more than one of cohort's 4096-element
reduction rows).
Tensors grad<j>.in, grad<j>.out (after clipping) and total_norm. Config: max_norm, norm_type (a
string for inf), error_if_nonfinite. The "nan" case puts a NaN into gradient 1.

"clip_value" (kind "clip_value"): torch.nn.utils.clip_grad_value_, tensors grad<j>.in / .out.

"sequential.*" (kind "sequential"): SequentialLR over an SGD optimizer (lr = base_lr), stepped
`steps` times; tensor "lr" holds the lr after construction and after every step. Config lists the
parts (class name and torch keyword arguments) and the milestones.

"ce_smoothing.*" (kind "cross_entropy"): nn.CrossEntropyLoss(label_smoothing, reduction) on logits
[6, 10] and class targets; tensors logits, target (as floats), loss ([] tensor) and grad
(d loss / d logits).
"""
import json
import math
import os

import torch

assert torch.__version__.startswith("1.13"), f"expected PyTorch 1.13, got {torch.__version__}"
torch.set_default_dtype(torch.float32)
L = torch.optim.lr_scheduler


def number(v):
    """JSON has no NaN or infinity: those are written as the strings "nan", "inf", "-inf"."""
    return v if math.isfinite(v) else str(v)


def entry(t):
    t = t.detach().to(torch.float32).contiguous()
    return {"shape": list(t.shape), "data": [number(float(v)) for v in t.reshape(-1).tolist()]}


def clip_norm_case(seed, max_norm, norm_type, nan=False, big=False):
    g = torch.Generator().manual_seed(seed)
    shapes = [[3, 4], [5], [50, 90] if big else [6, 7]]
    grads = [torch.randn(s, generator=g) for s in shapes]
    if nan:
        grads[1][2] = float("nan")
    params = [torch.nn.Parameter(torch.zeros(s)) for s in shapes]
    for p, gr in zip(params, grads):
        p.grad = gr.clone()
    total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type)
    tensors = {"total_norm": entry(total.reshape(1))}
    for j, (p, gr) in enumerate(zip(params, grads)):
        tensors[f"grad{j}.in"] = entry(gr)
        tensors[f"grad{j}.out"] = entry(p.grad)
    nt = "inf" if math.isinf(norm_type) else norm_type
    return {"config": {"kind": "clip_norm", "shapes": shapes, "max_norm": max_norm,
                       "norm_type": nt}, "tensors": tensors}


def clip_value_case(seed, clip_value):
    g = torch.Generator().manual_seed(seed)
    shapes = [[3, 4], [5], [7, 11]]
    grads = [torch.randn(s, generator=g) * 2 for s in shapes]
    grads[0][1, 1] = float("nan")
    params = [torch.nn.Parameter(torch.zeros(s)) for s in shapes]
    for p, gr in zip(params, grads):
        p.grad = gr.clone()
    torch.nn.utils.clip_grad_value_(params, clip_value)
    tensors = {}
    for j, (p, gr) in enumerate(zip(params, grads)):
        tensors[f"grad{j}.in"] = entry(gr)
        tensors[f"grad{j}.out"] = entry(p.grad)
    return {"config": {"kind": "clip_value", "shapes": shapes, "clip_value": clip_value},
            "tensors": tensors}


def sequential_case(parts, milestones, base_lr, steps):
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=base_lr)
    scheds = [getattr(L, name)(opt, **kw) for name, kw in parts]
    seq = L.SequentialLR(opt, scheds, milestones)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(steps):
        opt.step()
        seq.step()
        lrs.append(opt.param_groups[0]["lr"])
    return {"config": {"kind": "sequential", "parts": [[n, kw] for n, kw in parts],
                       "milestones": milestones, "base_lr": base_lr, "steps": steps},
            "tensors": {"lr": {"shape": [len(lrs)], "data": lrs}}}


def ce_case(seed, smoothing, reduction):
    g = torch.Generator().manual_seed(seed)
    logits = (torch.randn(6, 10, generator=g) * 3).requires_grad_()
    target = torch.randint(0, 10, (6,), generator=g)
    loss = torch.nn.CrossEntropyLoss(label_smoothing=smoothing, reduction=reduction)(logits, target)
    loss.backward()
    return {"config": {"kind": "cross_entropy", "label_smoothing": smoothing,
                       "reduction": reduction},
            "tensors": {"logits": entry(logits), "target": entry(target.to(torch.float32)),
                        "loss": entry(loss.reshape(1)), "grad": entry(logits.grad)}}


def main():
    cases = {}
    cases["clip_norm.l2_clipped"] = clip_norm_case(1, 1.0, 2.0, big=True)
    cases["clip_norm.l2_unclipped"] = clip_norm_case(2, 1000.0, 2.0)
    cases["clip_norm.inf"] = clip_norm_case(3, 0.5, math.inf, big=True)
    cases["clip_norm.l1"] = clip_norm_case(4, 10.0, 1.0)
    cases["clip_norm.l3"] = clip_norm_case(5, 2.0, 3.0)
    cases["clip_norm.nan"] = clip_norm_case(6, 1.0, 2.0, nan=True)
    cases["clip_norm.inf_nan"] = clip_norm_case(7, 1.0, math.inf, nan=True)
    cases["clip_value"] = clip_value_case(8, 0.75)
    cases["sequential.warmup_cosine"] = sequential_case(
        [("LinearLR", {"start_factor": 0.01, "end_factor": 1.0, "total_iters": 5}),
         ("CosineAnnealingLR", {"T_max": 15, "eta_min": 0.001})], [5], 0.1, 30)
    cases["sequential.three_parts"] = sequential_case(
        [("LinearLR", {"start_factor": 0.25, "end_factor": 1.0, "total_iters": 3}),
         ("StepLR", {"step_size": 2, "gamma": 0.5}),
         ("ExponentialLR", {"gamma": 0.9})], [3, 8], 0.05, 14)
    for s in (0.1, 0.3):
        for red in ("mean", "sum"):
            cases[f"ce_smoothing.{s}.{red}"] = ce_case(9, s, red)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recipe.json")
    with open(out, "w") as f:
        json.dump({"generator": f"tests/golden/make_recipe_golden.py, torch {torch.__version__}",
                   "cases": cases}, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {out}: {len(cases)} cases")


if __name__ == "__main__":
    main()
