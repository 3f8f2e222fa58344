#!/usr/bin/env python3
"""Writes tests/golden/autocast.json: PyTorch's CPU autocast (bf16) outputs of the ops on cohort's
low-precision list, for fixed inputs stored beside them.

Run with the peers' venv (tools/setup.sh --peers):
  .venv-peers/bin/python tests/golden/make_autocast_golden.py
The output is committed; CI never needs torch. Format: tests/common/golden.hpp.

Cases, each under torch.autocast("cpu", dtype=torch.bfloat16), inputs f32 (uniform in [-1, 1]):
  conv2d   y = conv2d(x, w, b, padding 1); then (y.float() * g).sum().backward(), so dx and dw are
           conv's backward with dy = bf16(g), as cohort's backward with dy = g rounds it
  linear   y = linear(x, w, b), and its backward with dy = g (dx, dw)
  bmm      y = bmm(a, b)
PyTorch writes each result in bf16 (then stored here as the float it equals); cohort writes f32
from the same bf16 products, so the two differ by PyTorch's final rounding (half a bf16 ulp) and
the order of the f32 sums: tests/layers/test_autocast.cpp allows that.
"""
import json
import os

import torch

CONV = dict(n=2, c=3, h=8, w=8, k=4, r=3, s=3, pad=1)
LINEAR = dict(n=5, inp=16, out=7)
BMM = dict(b=2, m=4, k=8, n=3)


def tensor(t):
    t = t.detach().float().contiguous()
    return {"shape": list(t.shape), "data": [float(v) for v in t.reshape(-1).tolist()]}


def uni(gen, *shape):
    return torch.rand(*shape, generator=gen) * 2 - 1


def conv2d(gen):
    c = CONV
    x = uni(gen, c["n"], c["c"], c["h"], c["w"]).requires_grad_()
    w = uni(gen, c["k"], c["c"], c["r"], c["s"]).requires_grad_()
    b = uni(gen, c["k"])
    g = uni(gen, c["n"], c["k"], c["h"], c["w"])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = torch.nn.functional.conv2d(x, w, b, padding=c["pad"])
    assert y.dtype == torch.bfloat16
    (y.float() * g).sum().backward()
    return {"config": c, "tensors": {"x": tensor(x), "w": tensor(w), "b": tensor(b), "g": tensor(g),
                                     "y": tensor(y), "dx": tensor(x.grad), "dw": tensor(w.grad)}}


def linear(gen):
    c = LINEAR
    x = uni(gen, c["n"], c["inp"]).requires_grad_()
    w = uni(gen, c["out"], c["inp"]).requires_grad_()
    b = uni(gen, c["out"])
    g = uni(gen, c["n"], c["out"])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = torch.nn.functional.linear(x, w, b)
    assert y.dtype == torch.bfloat16
    (y.float() * g).sum().backward()
    return {"config": c, "tensors": {"x": tensor(x), "w": tensor(w), "b": tensor(b), "g": tensor(g),
                                     "y": tensor(y), "dx": tensor(x.grad), "dw": tensor(w.grad)}}


def bmm(gen):
    c = BMM
    a = uni(gen, c["b"], c["m"], c["k"])
    b = uni(gen, c["b"], c["k"], c["n"])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = torch.bmm(a, b)
    assert y.dtype == torch.bfloat16
    return {"config": c, "tensors": {"a": tensor(a), "b": tensor(b), "y": tensor(y)}}


def main():
    gen = torch.Generator().manual_seed(33)
    cases = {"conv2d": conv2d(gen), "linear": linear(gen), "bmm": bmm(gen)}
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "autocast.json")
    with open(out, "w") as f:
        json.dump({"generator": f"torch {torch.__version__}, torch.autocast('cpu', torch.bfloat16)",
                   "cases": cases}, f, indent=None)
        f.write("\n")
    print(f"wrote {out} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
