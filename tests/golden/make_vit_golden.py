#!/usr/bin/python3
"""Writes tests/golden/vit.json: PyTorch's results for what cohort's vision transformer is made
of, for tests/layers/test_attention.cpp and tests/models/test_vit.cpp:

  - the data-movement ops (torch.permute, torch.narrow, torch.cat, narrow(...).copy_/add_);
  - torch.nn.MultiheadAttention(batch_first=True) as self-attention, forward and backward;
  - torchvision's EncoderBlock, forward and backward;
  - a small torchvision VisionTransformer (image 8, patch 4, 2 layers, 4 heads, hidden 16,
    MLP 32), forward and backward, every parameter random (torchvision zeroes the head);
  - the state_dict names and shapes, in order, of the zoo's ViT: torchvision's
    VisionTransformer(image_size=32, patch_size=4, num_layers=6, num_heads=8, hidden_dim=256,
    mlp_dim=512, num_classes=10).

Run with Debian's python3-torch (PyTorch 1.13 CPU) and python3-torchvision (0.14), from the
repository root:

    /usr/bin/python3 tests/golden/make_vit_golden.py

As tests/golden/make_layers_golden.py: every case is computed in float64 from float32 inputs and
weights, fixed seeds (the file is reproducible byte for byte), the same format (tests/common/
golden.hpp): {"cases": {name: {"config": {...}, "tensors": {name: {"shape", "data"}}}}}, plus
"zoo_state_dict": {"config": {...}, "entries": [[name, shape], ...]}. Numbers are written with 9
significant digits ("%.9g"), which round-trips every float32 input and weight exactly and keeps
the float64 references to 5e-10 relative, far below the tests' 1e-5; the file stays small.

Tensor names of module cases are those of make_layers_golden.py: input, <state_dict key>,
output, grad_output, grad_input, grad.<parameter key>. Op cases: the op's operands by name and
"output"; their config names the op and its arguments.
"""
import collections
import json
import os
import sys

import torch
import torch.nn as nn
from torchvision.models.vision_transformer import EncoderBlock, VisionTransformer

torch.set_num_threads(1)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vit.json")


def f32(t):
    """The float64 tensor holding t's values rounded to float32."""
    return t.float().double()


def num(v):
    """v rounded to 9 significant digits: json writes the shortest repr, at most 9 digits."""
    return float("%.9g" % v)


def enc(t):
    t = t.detach().double().contiguous()
    return {"shape": list(t.shape), "data": [num(v) for v in t.reshape(-1).tolist()]}


cases = collections.OrderedDict()
seed = [2000]


def next_seed():
    seed[0] += 1
    return seed[0]


# ---- data-movement ops ----

def permute_case(name, shape, perm):
    torch.manual_seed(next_seed())
    x = f32(torch.randn(shape))
    cases[name] = {"config": {"op": "permute", "perm": perm},
                   "tensors": {"input": enc(x), "output": enc(x.permute(*perm).contiguous())}}


def slice_copy_case(name, src_shape, dst_shape, src_start, dst_start, length, axis, accumulate):
    """dst.narrow(axis, dst_start, length) (+)= src.narrow(axis, src_start, length), src
    broadcast over the axes before `axis` where it is 1."""
    torch.manual_seed(next_seed())
    src = f32(torch.randn(src_shape))
    dst = f32(torch.randn(dst_shape))
    out = dst.clone()
    block = src.narrow(axis, src_start, length).expand(
        *[dst_shape[i] if i < axis else -1 for i in range(len(dst_shape))])
    if accumulate:
        out.narrow(axis, dst_start, length).add_(block)
    else:
        out.narrow(axis, dst_start, length).copy_(block)
    cases[name] = {"config": {"op": "slice_copy", "src_start": src_start, "dst_start": dst_start,
                              "length": length, "axis": axis, "accumulate": accumulate},
                   "tensors": {"src": enc(src), "dst": enc(dst), "output": enc(out)}}


def narrow_case(name, shape, axis, start, length):
    torch.manual_seed(next_seed())
    x = f32(torch.randn(shape))
    cases[name] = {"config": {"op": "narrow", "axis": axis, "start": start, "length": length},
                   "tensors": {"input": enc(x), "output": enc(x.narrow(axis, start, length))}}


def cat_case(name, shapes, axis):
    torch.manual_seed(next_seed())
    xs = [f32(torch.randn(s)) for s in shapes]
    tensors = collections.OrderedDict(("input%d" % i, enc(x)) for i, x in enumerate(xs))
    tensors["output"] = enc(torch.cat(xs, axis))
    cases[name] = {"config": {"op": "cat", "axis": axis, "count": len(xs)}, "tensors": tensors}


permute_case("permute_split_heads", (2, 5, 3, 4), [0, 2, 1, 3])
permute_case("permute_tokens", (2, 6, 9), [0, 2, 1])
permute_case("permute_5d_qkv", (2, 3, 3, 2, 4), [2, 0, 3, 1, 4])
permute_case("permute_reverse_4d", (2, 3, 4, 5), [3, 2, 1, 0])
permute_case("permute_unit_axes", (1, 3, 1, 4), [3, 0, 1, 2])
slice_copy_case("slice_copy_class_token", (1, 1, 6), (3, 5, 6), 0, 0, 1, 1, False)
slice_copy_case("slice_copy_rows_accumulate", (2, 4, 3), (2, 6, 3), 1, 2, 3, 1, True)
slice_copy_case("slice_copy_axis0", (4, 3), (6, 3), 0, 1, 4, 0, False)
narrow_case("narrow_token0", (3, 5, 4), 1, 0, 1)
narrow_case("narrow_last_axis", (2, 3, 7), -1, 2, 4)
cat_case("cat_tokens", [(2, 1, 4), (2, 5, 4)], 1)
cat_case("cat_last_axis", [(3, 2), (3, 4), (3, 1)], -1)


# ---- modules ----

def module_case(name, config, m, input_shape):
    """Forward and backward of m (built with the current seed) on a random input."""
    with torch.no_grad():  # float32 values held in float64
        for p in m.parameters():
            p.copy_(f32(p))
    m = m.double()
    m.train(True)
    x = f32(torch.randn(input_shape)).requires_grad_(True)
    tensors = collections.OrderedDict()
    tensors["input"] = enc(x)
    for k, v in m.state_dict().items():
        tensors[k] = enc(v)
    y = m(x)
    if isinstance(y, tuple):  # MultiheadAttention returns (output, weights)
        y = y[0]
    g = f32(torch.randn(y.shape))
    y.backward(g)
    tensors["output"] = enc(y)
    tensors["grad_output"] = enc(g)
    tensors["grad_input"] = enc(x.grad)
    for k, p in m.named_parameters():
        tensors["grad." + k] = enc(p.grad)
    config["train"] = True
    cases[name] = {"config": config, "tensors": tensors}


class SelfAttention(nn.Module):
    """nn.MultiheadAttention called as a ViT encoder block calls it (query = key = value);
    registered as the module itself so the state_dict keys are MultiheadAttention's own."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def state_dict(self, *args, **kwargs):
        return self.mha.state_dict(*args, **kwargs)

    def named_parameters(self, *args, **kwargs):
        return self.mha.named_parameters(*args, **kwargs)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


def random_biases(m):
    """PyTorch zeroes the attention biases (and torchvision makes MLP biases ~1e-6): random ones
    make their gradients and their effect on the output visible."""
    with torch.no_grad():
        for k, p in m.named_parameters():
            if k.endswith("bias") and "ln_" not in k:
                p.uniform_(-0.5, 0.5)
            if k.startswith("ln_") or ".ln_" in k:
                p.uniform_(0.5, 1.5) if k.endswith("weight") else p.uniform_(-0.5, 0.5)


def mha_case(name, n, t, e, h):
    torch.manual_seed(next_seed())
    m = SelfAttention(e, h)
    random_biases(m.mha)
    module_case(name, {"module": {"type": "MultiheadAttention", "embed_dim": e, "num_heads": h}},
                m, (n, t, e))


def encoder_block_case(name, n, t, d, h, mlp):
    torch.manual_seed(next_seed())
    m = EncoderBlock(h, d, mlp, 0.0, 0.0)
    random_biases(m)
    module_case(name, {"module": {"type": "EncoderBlock", "hidden_dim": d, "num_heads": h,
                                  "mlp_dim": mlp, "eps": 1e-6}}, m, (n, t, d))


mha_case("mha_2_heads", 2, 5, 8, 2)
mha_case("mha_1_head", 3, 4, 6, 1)
mha_case("mha_4_heads_batch1", 1, 9, 12, 4)
encoder_block_case("encoder_block", 2, 5, 8, 2, 16)


# ---- a small whole ViT ----

VIT_SMALL = {"image_size": 8, "patch_size": 4, "num_layers": 2, "num_heads": 4, "hidden_dim": 16,
             "mlp_dim": 32, "num_classes": 10}


def vit_case(name, cfg, batch):
    torch.manual_seed(next_seed())
    m = VisionTransformer(**cfg)
    with torch.no_grad():  # torchvision zeroes the class token and the head: make them count
        m.class_token.normal_(0.0, 0.5)
        m.heads.head.weight.normal_(0.0, 0.2)
        m.heads.head.bias.normal_(0.0, 0.2)
    random_biases(m.encoder.layers)
    module_case(name, {"vit": cfg}, m, (batch, 3, cfg["image_size"], cfg["image_size"]))


vit_case("vit_small", VIT_SMALL, 2)

# ---- the zoo's state_dict ----

ZOO = {"image_size": 32, "patch_size": 4, "num_layers": 6, "num_heads": 8, "hidden_dim": 256,
       "mlp_dim": 512, "num_classes": 10}
zoo = VisionTransformer(**ZOO)
zoo_state = {"config": ZOO,
             "entries": [[k, list(v.shape)] for k, v in zoo.state_dict().items()]}

with open(OUT, "w") as f:
    json.dump({"generator": "tests/golden/make_vit_golden.py, PyTorch " + torch.__version__,
               "cases": cases, "zoo_state_dict": zoo_state}, f, separators=(",", ":"))
    f.write("\n")
print("wrote", OUT, os.path.getsize(OUT), "bytes,", len(cases), "cases,",
      len(zoo_state["entries"]), "zoo state_dict entries", file=sys.stderr)
