#!/usr/bin/python3
"""Writes tests/golden/optim.json: golden vectors for cohort::optim from PyTorch 1.13.

Run with Debian's python3-torch (not a pyenv python):  /usr/bin/python3 tests/golden/make_optim_golden.py
The output is committed; CI never needs torch. Format: tests/common/golden.hpp.

Optimizer cases ("kind": "optimizer"): two parameters of shapes [3, 4] and [5] (one group unless
the case says otherwise), 5 steps with fixed gradients. Tensors: param<j>.init, and for each step
s = 1..5: grad<j>.step<s> (the gradient given at that step) and param<j>.step<s> (the parameter
after it). config: optimizer class, options (torch's keyword names), steps, groups.

Scheduler cases ("kind": "scheduler"): an SGD optimizer (lr = base_lr) stepped `steps` times;
tensor "lr" holds the lr after construction (epoch 0) and after every step (steps + 1 values);
OneCycleLR cases also hold "momentum" (SGD's momentum, or Adam's beta1) at the same points.

"onecycle_sgd_params": OneCycleLR driving SGD (momentum cycled from 0 to 0.95, ...) for 5 steps,
parameters recorded like an optimizer case: checks that the schedule reaches the update.
"""
import json
import math
import os
import sys

import torch

assert torch.__version__.startswith("1.13"), f"expected PyTorch 1.13, got {torch.__version__}"
torch.set_default_dtype(torch.float32)

SHAPES = [[3, 4], [5]]
STEPS = 5


def tensor_entry(t):
    t = t.detach().to(torch.float32).contiguous()
    return {"shape": list(t.shape), "data": [float(v) for v in t.reshape(-1).tolist()]}


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    params = [torch.randn(s, generator=g) for s in SHAPES]
    grads = [[torch.randn(s, generator=g) for s in SHAPES] for _ in range(STEPS)]
    return params, grads


def optimizer_case(name, cls, options, seed, groups=None):
    """groups: None (one group with every parameter) or a list of per-group option overrides,
    group i holding parameter i."""
    init, grads = make_inputs(seed)
    params = [torch.nn.Parameter(p.clone()) for p in init]
    if groups is None:
        opt = cls(params, **options)
    else:
        opt = cls([dict(params=[params[i]], **groups[i]) for i in range(len(params))], **options)
    tensors = {}
    for j, p in enumerate(init):
        tensors[f"param{j}.init"] = tensor_entry(p)
    for s in range(1, STEPS + 1):
        for j, p in enumerate(params):
            p.grad = grads[s - 1][j].clone()
            tensors[f"grad{j}.step{s}"] = tensor_entry(grads[s - 1][j])
        opt.step()
        for j, p in enumerate(params):
            tensors[f"param{j}.step{s}"] = tensor_entry(p)
    config = {"kind": "optimizer", "optimizer": name, "options": options, "steps": STEPS,
              "groups": groups if groups is not None else []}
    return config, tensors


def scheduler_case(name, make, base_lr, steps, optimizer="SGD", momentum=0.0):
    p = torch.nn.Parameter(torch.zeros(1))
    if optimizer == "SGD":
        opt = torch.optim.SGD([p], lr=base_lr, momentum=momentum)
    elif optimizer == "Adam":
        opt = torch.optim.Adam([p], lr=base_lr)
    else:
        raise ValueError(optimizer)
    sched, args = make(opt)
    lrs = [opt.param_groups[0]["lr"]]
    moms = [momentum_of(opt)]
    for _ in range(steps):
        p.grad = torch.zeros(1)
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
        moms.append(momentum_of(opt))
        assert sched.get_last_lr()[0] == lrs[-1]
    tensors = {"lr": {"shape": [len(lrs)], "data": lrs}}
    if name == "OneCycleLR":
        tensors["momentum"] = {"shape": [len(moms)], "data": moms}
    config = {"kind": "scheduler", "scheduler": name, "args": args, "optimizer": optimizer,
              "base_lr": base_lr, "momentum": momentum, "steps": steps}
    return config, tensors


def momentum_of(opt):
    g = opt.param_groups[0]
    return g["betas"][0] if "betas" in g else g["momentum"]


def main():
    out_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optim.json")
    cases = {}
    S = torch.optim
    opt_cases = [
        # name, class name, torch class, options
        ("sgd_plain", "SGD", S.SGD, dict(lr=0.1)),
        ("sgd_momentum", "SGD", S.SGD, dict(lr=0.1, momentum=0.9)),
        ("sgd_nesterov", "SGD", S.SGD, dict(lr=0.05, momentum=0.9, nesterov=True)),
        ("sgd_weight_decay", "SGD", S.SGD, dict(lr=0.1, weight_decay=0.01)),
        ("sgd_dampening", "SGD", S.SGD, dict(lr=0.1, momentum=0.8, dampening=0.3)),
        ("sgd_all", "SGD", S.SGD,
         dict(lr=0.07, momentum=0.9, nesterov=True, weight_decay=0.05, maximize=True)),
        ("adam_plain", "Adam", S.Adam, dict(lr=0.01)),
        ("adam_defaults", "Adam", S.Adam, dict()),
        ("adam_amsgrad", "Adam", S.Adam, dict(lr=0.02, betas=(0.8, 0.99), amsgrad=True)),
        ("adam_weight_decay", "Adam", S.Adam, dict(lr=0.01, weight_decay=0.1)),
        ("adam_all", "Adam", S.Adam,
         dict(lr=0.03, betas=(0.85, 0.95), eps=1e-6, weight_decay=0.05, amsgrad=True,
              maximize=True)),
        ("adamw_defaults", "AdamW", S.AdamW, dict()),
        ("adamw", "AdamW", S.AdamW, dict(lr=0.01, weight_decay=0.1)),
        ("adamw_amsgrad", "AdamW", S.AdamW, dict(lr=0.02, weight_decay=0.05, amsgrad=True)),
        ("adadelta_defaults", "Adadelta", S.Adadelta, dict()),
        ("adadelta", "Adadelta", S.Adadelta, dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.01)),
        ("adadelta_maximize", "Adadelta", S.Adadelta, dict(lr=1.0, maximize=True)),
        ("rmsprop_plain", "RMSprop", S.RMSprop, dict()),
        ("rmsprop_centered", "RMSprop", S.RMSprop, dict(lr=0.01, centered=True)),
        ("rmsprop_momentum", "RMSprop", S.RMSprop, dict(lr=0.01, momentum=0.9)),
        ("rmsprop_all", "RMSprop", S.RMSprop,
         dict(lr=0.005, alpha=0.9, eps=1e-6, weight_decay=0.02, momentum=0.5, centered=True,
              maximize=True)),
    ]
    for seed, (case, name, cls, options) in enumerate(opt_cases, start=1000):
        config, tensors = optimizer_case(name, cls, options, seed)
        cases[case] = {"config": config, "tensors": tensors}

    # Parameter groups: each parameter its own group with its own hyper-parameters.
    config, tensors = optimizer_case(
        "SGD", S.SGD, dict(lr=0.1, momentum=0.9), 2000,
        groups=[dict(), dict(lr=0.01, weight_decay=0.1, momentum=0.0)])
    cases["sgd_param_groups"] = {"config": config, "tensors": tensors}
    config, tensors = optimizer_case(
        "Adam", S.Adam, dict(lr=0.01), 2001,
        groups=[dict(amsgrad=True), dict(lr=0.05, betas=(0.5, 0.9), weight_decay=0.01)])
    cases["adam_param_groups"] = {"config": config, "tensors": tensors}

    L = torch.optim.lr_scheduler
    sched_cases = [
        ("steplr", "StepLR", lambda o: (L.StepLR(o, step_size=3, gamma=0.5),
                                        dict(step_size=3, gamma=0.5)), 0.1, 12),
        ("steplr_default_gamma", "StepLR", lambda o: (L.StepLR(o, step_size=2),
                                                      dict(step_size=2, gamma=0.1)), 1.0, 7),
        ("exponentiallr", "ExponentialLR", lambda o: (L.ExponentialLR(o, gamma=0.9),
                                                      dict(gamma=0.9)), 0.1, 20),
        ("cosine", "CosineAnnealingLR", lambda o: (L.CosineAnnealingLR(o, T_max=10),
                                                   dict(T_max=10, eta_min=0.0)), 0.1, 35),
        ("cosine_eta_min", "CosineAnnealingLR",
         lambda o: (L.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
                    dict(T_max=7, eta_min=0.001)), 0.05, 30),
        ("linearlr_defaults", "LinearLR", lambda o: (L.LinearLR(o),
                                                     dict(start_factor=1.0 / 3, end_factor=1.0,
                                                          total_iters=5)), 0.1, 9),
        ("linearlr_warmup", "LinearLR",
         lambda o: (L.LinearLR(o, start_factor=0.01, end_factor=1.0, total_iters=10),
                    dict(start_factor=0.01, end_factor=1.0, total_iters=10)), 0.3, 14),
        ("linearlr_decay", "LinearLR",
         lambda o: (L.LinearLR(o, start_factor=1.0, end_factor=0.25, total_iters=4),
                    dict(start_factor=1.0, end_factor=0.25, total_iters=4)), 0.2, 8),
    ]
    for case, name, make, base_lr, steps in sched_cases:
        config, tensors = scheduler_case(name, make, base_lr, steps)
        cases[case] = {"config": config, "tensors": tensors}

    onecycle = [
        ("onecycle_cos", dict(max_lr=0.1, total_steps=20), "SGD", 0.9),
        ("onecycle_linear", dict(max_lr=0.5, total_steps=25, pct_start=0.4,
                                 anneal_strategy="linear", div_factor=10.0,
                                 final_div_factor=100.0), "SGD", 0.9),
        ("onecycle_three_phase", dict(max_lr=0.2, total_steps=30, three_phase=True,
                                      base_momentum=0.8, max_momentum=0.9), "SGD", 0.0),
        ("onecycle_adam", dict(max_lr=0.01, total_steps=16, pct_start=0.25), "Adam", 0.0),
        ("onecycle_no_momentum", dict(max_lr=1.0, total_steps=10, cycle_momentum=False,
                                      anneal_strategy="linear"), "SGD", 0.5),
    ]
    for case, args, optimizer, momentum in onecycle:
        # Stepped total_steps times: torch allows exactly that many steps after construction.
        config, tensors = scheduler_case(
            "OneCycleLR", lambda o, a=args: (L.OneCycleLR(o, **a), a), 0.123,
            args["total_steps"], optimizer=optimizer, momentum=momentum)
        cases[case] = {"config": config, "tensors": tensors}

    # OneCycleLR feeding SGD: lr and momentum change every step (momentum starts at 0.95 although
    # SGD was built without momentum, as in torch).
    init, grads = make_inputs(3000)
    params = [torch.nn.Parameter(p.clone()) for p in init]
    opt = torch.optim.SGD(params, lr=0.01)
    args = dict(max_lr=0.2, total_steps=8, pct_start=0.5)
    sched = L.OneCycleLR(opt, **args)
    tensors = {f"param{j}.init": tensor_entry(p) for j, p in enumerate(init)}
    for s in range(1, STEPS + 1):
        for j, p in enumerate(params):
            p.grad = grads[s - 1][j].clone()
            tensors[f"grad{j}.step{s}"] = tensor_entry(grads[s - 1][j])
        opt.step()
        sched.step()
        for j, p in enumerate(params):
            tensors[f"param{j}.step{s}"] = tensor_entry(p)
    cases["onecycle_sgd_params"] = {
        "config": {"kind": "optimizer_with_scheduler", "optimizer": "SGD",
                   "options": dict(lr=0.01), "scheduler": "OneCycleLR", "args": args,
                   "steps": STEPS, "groups": []},
        "tensors": tensors}

    with open(out_path, "w") as f:
        json.dump({"generator": "tests/golden/make_optim_golden.py",
                   "torch": torch.__version__, "cases": cases}, f, indent=None,
                  separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(cases)} cases to {out_path}", file=sys.stderr)


if __name__ == "__main__":
    main()
