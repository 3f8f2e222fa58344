#!/usr/bin/python3
"""Writes tests/golden/layers.json: PyTorch's outputs and gradients for every layer and loss of
cohort's layer library, on small inputs, for tests/layers/test_golden.cpp.

Run with Debian's python3-torch (PyTorch 1.13 CPU), from the repository root:

    /usr/bin/python3 tests/golden/make_layers_golden.py

Every case is computed in float64 from float32 inputs and weights (each value is drawn in float32,
then widened), so the reference is exact to double precision and the C++ side (float32) is
compared against the true result rather than against another float32 rounding. Fixed seeds: the
file is reproducible byte for byte.

Format (tests/common/golden.hpp): {"cases": {name: {"config": {...}, "tensors": {name: {"shape",
"data"}}}}}. Tensor names:
  input, target (losses)                  the inputs
  <state_dict key>                        every parameter and buffer before the forward
                                          ("weight", "block.0.bias", "running_mean", ...)
  output                                  forward result (a loss is shape [])
  grad_output                             the gradient fed to backward (layers; losses use 1)
  grad_input                              d(sum(output * grad_output))/d(input)
  grad.<parameter key>                    the parameter gradients
  after.<buffer key>                      buffers after the forward (batch-norm running stats)
config: {"module": <module config>} or {"loss": ..., "reduction": ...}, plus "train".
"""
import collections
import json
import os
import sys

import torch
import torch.nn as nn

torch.set_num_threads(1)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers.json")


class Residual(nn.Module):
    """cohort::nn::Residual: y = block(x) + (shortcut(x) or x)."""

    def __init__(self, block, shortcut=None):
        super().__init__()
        self.block = block
        if shortcut is not None:
            self.shortcut = shortcut
        else:
            self.shortcut = None

    def forward(self, x):
        return self.block(x) + (self.shortcut(x) if self.shortcut is not None else x)


def pair(v):
    return list(v) if isinstance(v, (tuple, list)) else [v, v]


def build(cfg):
    """A torch module from a config dict (the same dict the C++ test builds from)."""
    t = cfg["type"]
    if t == "Linear":
        return nn.Linear(cfg["in"], cfg["out"], bias=cfg["bias"])
    if t == "Conv2d":
        return nn.Conv2d(cfg["in"], cfg["out"], cfg["kernel"], stride=cfg["stride"],
                         padding=cfg["padding"], dilation=cfg["dilation"], groups=cfg["groups"],
                         bias=cfg["bias"])
    if t == "ReLU":
        return nn.ReLU()
    if t == "LeakyReLU":
        return nn.LeakyReLU(cfg["negative_slope"])
    if t == "GELU":
        return nn.GELU()
    if t == "Sigmoid":
        return nn.Sigmoid()
    if t == "Tanh":
        return nn.Tanh()
    if t == "MaxPool2d":
        return nn.MaxPool2d(cfg["kernel"], stride=cfg["stride"], padding=cfg["padding"],
                            dilation=cfg["dilation"])
    if t == "AvgPool2d":
        return nn.AvgPool2d(cfg["kernel"], stride=cfg["stride"], padding=cfg["padding"],
                            count_include_pad=cfg["count_include_pad"])
    if t == "AdaptiveAvgPool2d":
        return nn.AdaptiveAvgPool2d(cfg["output"])
    if t == "BatchNorm2d":
        return nn.BatchNorm2d(cfg["features"], eps=cfg["eps"], momentum=cfg["momentum"],
                              affine=cfg["affine"], track_running_stats=cfg["track_running_stats"])
    if t == "Dropout":
        return nn.Dropout(cfg["p"])
    if t == "Flatten":
        return nn.Flatten(cfg["start_dim"], cfg["end_dim"])
    if t == "Softmax":
        return nn.Softmax(cfg["dim"])
    if t == "LogSoftmax":
        return nn.LogSoftmax(cfg["dim"])
    if t == "LayerNorm":
        return nn.LayerNorm(cfg["normalized_shape"], eps=cfg["eps"],
                            elementwise_affine=cfg["affine"])
    if t == "Sequential":
        return nn.Sequential(collections.OrderedDict((n, build(c)) for n, c in cfg["children"]))
    if t == "Residual":
        return Residual(build(cfg["block"]),
                        build(cfg["shortcut"]) if cfg["shortcut"] is not None else None)
    raise ValueError("unknown module type " + t)


def f32(t):
    """The float64 tensor holding t's values rounded to float32."""
    return t.float().double()


def enc(t):
    t = t.detach().double().contiguous()
    return {"shape": list(t.shape), "data": [float(v) for v in t.reshape(-1).tolist()]}


cases = collections.OrderedDict()
seed = [1000]


def next_seed():
    seed[0] += 1
    return seed[0]


def layer_case(name, cfg, input_shape, train=True, input_fn=None, init=None):
    torch.manual_seed(next_seed())
    m = build(cfg)
    if init is not None:
        init(m)
    with torch.no_grad():  # float32 values held in float64
        for p in m.parameters():
            p.copy_(f32(p))
        for n, b in m.named_buffers():
            if b.is_floating_point():
                b.copy_(f32(b))
    m = m.double()
    m.train(train)
    x = input_fn(input_shape) if input_fn else torch.randn(input_shape)
    x = f32(x).requires_grad_(True)
    tensors = collections.OrderedDict()
    tensors["input"] = enc(x)
    for k, v in m.state_dict().items():
        tensors[k] = enc(v)
    y = m(x)
    g = f32(torch.randn(y.shape))
    y.backward(g)
    tensors["output"] = enc(y)
    tensors["grad_output"] = enc(g)
    tensors["grad_input"] = enc(x.grad)
    for k, p in m.named_parameters():
        tensors["grad." + k] = enc(p.grad)
    for k, b in m.named_buffers():
        tensors["after." + k] = enc(b)
    cases[name] = {"config": {"module": cfg, "train": train}, "tensors": tensors}


def loss_case(name, loss, reduction, input_shape, classes=None, scale=1.0):
    torch.manual_seed(next_seed())
    x = f32(torch.randn(input_shape) * scale).requires_grad_(True)
    if loss == "CrossEntropyLoss":
        crit = nn.CrossEntropyLoss(reduction=reduction)
        target = torch.randint(0, classes, (input_shape[0],))
        inp = x
    elif loss == "NLLLoss":
        crit = nn.NLLLoss(reduction=reduction)
        target = torch.randint(0, classes, (input_shape[0],))
        inp = x
    else:
        crit = nn.MSELoss(reduction=reduction)
        target = f32(torch.randn(input_shape))
        inp = x
    out = crit(inp, target)
    out.backward()
    tensors = collections.OrderedDict()
    tensors["input"] = enc(x)
    tensors["target"] = enc(target)
    tensors["output"] = enc(out)
    tensors["grad_input"] = enc(x.grad)
    cases[name] = {"config": {"loss": loss, "reduction": reduction}, "tensors": tensors}


def conv(cin, cout, k, stride=1, padding=0, dilation=1, groups=1, bias=True):
    return {"type": "Conv2d", "in": cin, "out": cout, "kernel": pair(k), "stride": pair(stride),
            "padding": pair(padding), "dilation": pair(dilation), "groups": groups, "bias": bias}


def bn(c, eps=1e-5, momentum=0.1, affine=True, track=True):
    return {"type": "BatchNorm2d", "features": c, "eps": eps, "momentum": momentum,
            "affine": affine, "track_running_stats": track}


def maxpool(k, stride=None, padding=0, dilation=1):
    return {"type": "MaxPool2d", "kernel": pair(k), "stride": pair(stride or k),
            "padding": pair(padding), "dilation": pair(dilation)}


def avgpool(k, stride=None, padding=0, count_include_pad=True):
    return {"type": "AvgPool2d", "kernel": pair(k), "stride": pair(stride or k),
            "padding": pair(padding), "count_include_pad": count_include_pad}


def simple(t, **kw):
    d = {"type": t}
    d.update(kw)
    return d


def seq(*children):
    return {"type": "Sequential",
            "children": [[c[0], c[1]] if isinstance(c, tuple) else [str(i), c]
                         for i, c in enumerate(children)]}


def bn_stats(m):
    """Non-trivial running statistics, so the momentum update is visible."""
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d) and mod.track_running_stats:
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 2.0)
            mod.num_batches_tracked.fill_(2)
            if mod.affine:
                mod.weight.data.uniform_(0.5, 1.5)
                mod.bias.data.uniform_(-0.5, 0.5)


def distinct(shape):
    """Values on a 0.05 grid, all distinct: no ties in max pooling."""
    n = 1
    for d in shape:
        n *= d
    return (torch.randperm(n).double() - n / 2).mul(0.05).reshape(shape)


# ---- Linear ----
layer_case("linear", simple("Linear", **{"in": 7, "out": 5, "bias": True}), (4, 7))
layer_case("linear_nobias", simple("Linear", **{"in": 6, "out": 3, "bias": False}), (3, 6))
layer_case("linear_batch1", simple("Linear", **{"in": 5, "out": 4, "bias": True}), (1, 5))
layer_case("linear_3d_input", simple("Linear", **{"in": 4, "out": 6, "bias": True}), (2, 3, 4))

# ---- Conv2d ----
layer_case("conv2d_basic", conv(3, 4, 3), (2, 3, 6, 6))
layer_case("conv2d_stride2_pad1", conv(3, 4, 3, stride=2, padding=1), (2, 3, 7, 7))
layer_case("conv2d_dilation2_pad2", conv(2, 3, 3, padding=2, dilation=2), (2, 2, 7, 6))
layer_case("conv2d_groups2", conv(4, 6, 3, padding=1, groups=2), (2, 4, 5, 5))
layer_case("conv2d_depthwise", conv(4, 4, 3, stride=2, padding=1, groups=4), (2, 4, 6, 6))
layer_case("conv2d_nobias", conv(3, 2, 2, bias=False), (2, 3, 5, 4))
layer_case("conv2d_1x1", conv(5, 3, 1), (2, 5, 4, 3))
layer_case("conv2d_1x1_stride2", conv(4, 6, 1, stride=2), (2, 4, 5, 5))
layer_case("conv2d_rect", conv(2, 3, (2, 3), stride=(2, 1), padding=(1, 0)), (2, 2, 5, 6))
layer_case("conv2d_batch1", conv(2, 3, 3, padding=1), (1, 2, 4, 5))
layer_case("conv2d_big_padding", conv(1, 2, 3, padding=2, stride=3), (2, 1, 4, 4))

# ---- activations ----
layer_case("relu", simple("ReLU"), (3, 4, 5))
layer_case("leaky_relu", simple("LeakyReLU", negative_slope=0.1), (3, 4, 5))
layer_case("gelu", simple("GELU"), (3, 4, 5))
layer_case("sigmoid", simple("Sigmoid"), (3, 4, 5))
layer_case("tanh", simple("Tanh"), (3, 4, 5))

# ---- pooling ----
layer_case("maxpool2d_k2", maxpool(2), (2, 3, 6, 6), input_fn=distinct)
layer_case("maxpool2d_k3_s2_p1", maxpool(3, 2, 1), (2, 3, 7, 7), input_fn=distinct)
layer_case("maxpool2d_dilation2", maxpool(2, 1, 1, 2), (2, 2, 5, 5), input_fn=distinct)
layer_case("maxpool2d_k3_s1_overlap", maxpool(3, 1), (1, 2, 5, 6), input_fn=distinct)
layer_case("avgpool2d_k2", avgpool(2), (2, 3, 6, 6))
layer_case("avgpool2d_k3_s2_p1", avgpool(3, 2, 1), (2, 3, 7, 7))
layer_case("avgpool2d_k3_s2_p1_nopad", avgpool(3, 2, 1, False), (2, 3, 7, 7))
layer_case("adaptive_avgpool2d_1", simple("AdaptiveAvgPool2d", output=[1, 1]), (2, 5, 4, 3))
layer_case("adaptive_avgpool2d_2", simple("AdaptiveAvgPool2d", output=[2, 2]), (2, 3, 6, 4))

# ---- normalisation ----
layer_case("batchnorm2d_train", bn(4), (3, 4, 3, 5), init=bn_stats)
layer_case("batchnorm2d_train_batch1", bn(3), (1, 3, 4, 4), init=bn_stats)
layer_case("batchnorm2d_eval", bn(4), (3, 4, 3, 5), train=False, init=bn_stats)
layer_case("batchnorm2d_cumulative", bn(3, momentum=None), (2, 3, 4, 4), init=bn_stats)
layer_case("batchnorm2d_noaffine", bn(3, eps=1e-3, affine=False), (2, 3, 3, 3), init=bn_stats)
layer_case("batchnorm2d_no_running_stats_eval", bn(3, track=False), (2, 3, 3, 3), train=False,
           init=bn_stats)
layer_case("layernorm_last", simple("LayerNorm", normalized_shape=[6], eps=1e-5, affine=True),
           (3, 4, 6), init=lambda m: (m.weight.data.uniform_(0.5, 1.5), m.bias.data.uniform_(-1, 1)))
layer_case("layernorm_last2", simple("LayerNorm", normalized_shape=[3, 4], eps=1e-5, affine=True),
           (2, 3, 4), init=lambda m: (m.weight.data.uniform_(0.5, 1.5), m.bias.data.uniform_(-1, 1)))
layer_case("layernorm_noaffine", simple("LayerNorm", normalized_shape=[5], eps=1e-3,
                                        affine=False), (4, 5))

# ---- the rest ----
layer_case("dropout_eval", simple("Dropout", p=0.5), (3, 7), train=False)
layer_case("dropout_p0_train", simple("Dropout", p=0.0), (3, 7), train=True)
layer_case("flatten", simple("Flatten", start_dim=1, end_dim=-1), (2, 3, 2, 2))
layer_case("flatten_1_2", simple("Flatten", start_dim=1, end_dim=2), (2, 3, 2, 2))
layer_case("softmax_dim1", simple("Softmax", dim=1), (4, 7))
layer_case("log_softmax_dim1", simple("LogSoftmax", dim=1), (4, 7))
layer_case("softmax_channels_4d", simple("Softmax", dim=1), (2, 3, 2, 2))
layer_case("log_softmax_last_3d", simple("LogSoftmax", dim=-1), (2, 3, 5))

# ---- containers ----
layer_case("sequential_conv_bn_relu_pool_linear",
           seq(conv(2, 4, 3, padding=1), bn(4), simple("ReLU"), maxpool(2),
               simple("Flatten", start_dim=1, end_dim=-1),
               simple("Linear", **{"in": 16, "out": 3, "bias": True})),
           (2, 2, 4, 4), init=bn_stats)
layer_case("residual_identity",
           simple("Residual", block=seq(conv(3, 3, 3, padding=1, bias=False), bn(3),
                                        simple("ReLU"), conv(3, 3, 3, padding=1, bias=False),
                                        bn(3)), shortcut=None),
           (2, 3, 4, 4), init=bn_stats)
layer_case("residual_projection",
           simple("Residual", block=seq(conv(2, 4, 3, stride=2, padding=1, bias=False), bn(4),
                                        simple("ReLU"), conv(4, 4, 3, padding=1, bias=False),
                                        bn(4)),
                  shortcut=seq(conv(2, 4, 1, stride=2, bias=False), bn(4))),
           (2, 2, 6, 6), init=bn_stats)
# The MNIST CNN's layer sequence at toy widths (names as PyTorch's example Net), dropout in eval.
layer_case("mnist_like_net",
           seq(("conv1", conv(1, 4, 3)), ("relu1", simple("ReLU")), ("conv2", conv(4, 8, 3)),
               ("relu2", simple("ReLU")), ("pool", maxpool(2)),
               ("dropout1", simple("Dropout", p=0.25)),
               ("flatten", simple("Flatten", start_dim=1, end_dim=-1)),
               ("fc1", simple("Linear", **{"in": 32, "out": 16, "bias": True})),
               ("relu3", simple("ReLU")), ("dropout2", simple("Dropout", p=0.5)),
               ("fc2", simple("Linear", **{"in": 16, "out": 10, "bias": True})),
               ("log_softmax", simple("LogSoftmax", dim=1))),
           (2, 1, 8, 8), train=False)

# ---- losses ----
for red in ("mean", "sum"):
    loss_case("cross_entropy_" + red, "CrossEntropyLoss", red, (5, 7), classes=7)
    loss_case("nll_" + red, "NLLLoss", red, (5, 7), classes=7)
    loss_case("mse_" + red, "MSELoss", red, (3, 4, 2))
loss_case("cross_entropy_large_logits", "CrossEntropyLoss", "mean", (4, 6), classes=6, scale=300.0)
loss_case("cross_entropy_batch1", "CrossEntropyLoss", "mean", (1, 10), classes=10)

with open(OUT, "w") as f:
    json.dump({"generator": "tests/golden/make_layers_golden.py, PyTorch " + torch.__version__,
               "cases": cases}, f, separators=(",", ":"))
    f.write("\n")
print("wrote", OUT, os.path.getsize(OUT), "bytes,", len(cases), "cases", file=sys.stderr)
