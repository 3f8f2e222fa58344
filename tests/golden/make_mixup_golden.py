#!/usr/bin/env python3
"""Writes tests/golden/mixup.json: golden vectors for batch MixUp / CutMix (torchvision.transforms.v2)
and for cross-entropy with probability ("soft") targets and label smoothing, for the C++ mixing
transforms and the soft-target loss.

Made with torch 2.15.0+cu132, torchvision 0.29.2+cu132, numpy 2.4.6 on an x86-64 CPU, from
.venv-peers (tools/setup.sh --peers). Run from the repository root:

    .venv-peers/bin/python tests/golden/make_mixup_golden.py

Deterministic: no random draw reaches the output. The batch and the logits are fixed arithmetic
sequences; MixUp's and CutMix's own draws (lam from a Beta, and CutMix's box centre from
torch.randint) are pinned by replacing, for one call, the transform instance's `_dist.sample` and
`torch.randint`, so the REAL torchvision forward / make_params / transform code runs with the
pinned values. The pinned lam is returned as a float32 tensor of shape [1], like the real
Beta(torch.tensor([a]), torch.tensor([a])).sample(()), so lam is always a float32 value widened to
a Python float (e.g. 0.3 -> 0.30000001192092896); the JSON records both.
The script runs single-threaded on the CPU.

mixup.json (compact JSON; every tensor is a flat row-major list; floats are float32 values written
as the shortest decimal that reads back to the same float32, except where noted as float64):
  generator, versions {torch, torchvision, numpy}
  batch {x_shape [4,3,5,6], x: 360 floats = float32((arange(360) * 0.37) % 1) (computed in
      float64, then rounded), labels [2,0,4,1], num_classes 5, pairing "..."}
  mixup {alpha 1.0, cases [{lam_nominal, lam (float64: the float32 lam widened), images: 360
      floats, targets: 4*5 floats}]}
  cutmix {alpha 1.0, H 5, W 6, cases [{lam_nominal, lam (float64), r_x, r_y, box [x1,y1,x2,y2],
      lam_adjusted (float64), images: 360 floats, targets: 20 floats}]}
  beta_note {text, mixup_make_params_source, mixup_transform_source, cutmix_make_params_source,
      cutmix_transform_source, mixup_label_source, init_source, labels_getter}: the exact torchvision
      code (inspect.getsource) and what the default labels_getter needs.
  formulas {mixup, cutmix, targets, scalar_rounding}: the arithmetic, checked by this script.
  soft_cross_entropy {formula, grad_formula, logits_shape [4,5], logits: 20 floats,
      soft_targets: 20 floats (= mixup targets for lam 0.3), hard_labels [2,0,4,1],
      cases [{name, target ("soft" | "one_hot" | "hard"), label_smoothing, reduction "mean"|"sum",
      value (float64 repr of the float32 loss), grad: 20 floats dL/dz}],
      one_hot_vs_hard {bit_identical_value, bit_identical_grad, max_abs_diff_value,
      max_abs_diff_grad}}

The script asserts, and fails if they stop holding: MixUp and CutMix outputs equal a float32
re-implementation bit for bit (scalars rounded to float32 before multiplying); the box and
lam_adjusted equal the formula; the torch cross-entropy values and gradients match the documented
formula computed in float64 (rtol 1e-6 / atol 1e-7); the one-hot soft path agrees with the hard
label path to 1e-6.
"""
import inspect
import json
import math
import os
import sys
from unittest import mock

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torchvision.transforms import v2
from torchvision.transforms.v2 import _augment, _utils

torch.set_num_threads(1)
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "mixup.json")

N, C, H, W = 4, 3, 5, 6
NUM_CLASSES = 5
LABELS = [2, 0, 4, 1]
MIXUP_LAMS = [0.3, 0.8]
CUTMIX_CASES = [(0.3, 2, 1), (0.8, 5, 4), (0.05, 0, 0), (0.999, 3, 2)]
SMOOTHINGS = [0.0, 0.1]


# ----------------------------------------------------------------------------------------------
# JSON helpers
# ----------------------------------------------------------------------------------------------
from golden_floats import f32_list  # noqa: E402  (shared float writer)


def f32(v):
    return np.float32(v)


# ----------------------------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------------------------
def make_batch():
    x64 = np.mod(np.arange(N * C * H * W, dtype=np.float64) * 0.37, 1.0)
    x = torch.from_numpy(x64.astype(np.float32).reshape(N, C, H, W))
    y = torch.tensor(LABELS, dtype=torch.int64)
    return x, y


def make_logits():
    z64 = (np.mod(np.arange(N * NUM_CLASSES, dtype=np.float64) * 0.7371, 1.0) - 0.5) * 4.0
    return torch.from_numpy(z64.astype(np.float32).reshape(N, NUM_CLASSES))


def pinned_lam_tensor(lam):
    """What Beta(tensor([a]), tensor([a])).sample(()) returns: a float32 tensor of shape [1]."""
    return torch.tensor([lam], dtype=torch.float32)


# ----------------------------------------------------------------------------------------------
# Float32 re-implementations (the checks)
# ----------------------------------------------------------------------------------------------
def ref_one_hot_mix(labels, lam):
    """_mixup_label: one_hot(label).float(); label.roll(1,0).mul_(1.0 - lam).add_(label.mul(lam)),
    with the Python-float scalars rounded to float32 by the CPU kernels."""
    oh = np.zeros((len(labels), NUM_CLASSES), np.float32)
    oh[np.arange(len(labels)), labels] = 1
    rolled = np.roll(oh, 1, axis=0)
    return (rolled * f32(1.0 - lam)).astype(np.float32) + (oh * f32(lam)).astype(np.float32)


def ref_mixup(x, lam):
    x = x.numpy()
    rolled = np.roll(x, 1, axis=0)  # rolled[i] = x[i-1], rolled[0] = x[N-1]
    return (rolled * f32(1.0 - lam)).astype(np.float32) + (x * f32(lam)).astype(np.float32)


def ref_box(lam, r_x, r_y):
    r = 0.5 * math.sqrt(1.0 - lam)
    r_w_half = int(r * W)  # truncation toward zero (r >= 0)
    r_h_half = int(r * H)
    x1 = max(r_x - r_w_half, 0)
    y1 = max(r_y - r_h_half, 0)
    x2 = min(r_x + r_w_half, W)
    y2 = min(r_y + r_h_half, H)
    lam_adjusted = float(1.0 - (x2 - x1) * (y2 - y1) / (W * H))
    return (x1, y1, x2, y2), lam_adjusted


def ref_cutmix(x, box):
    x1, y1, x2, y2 = box
    x = x.numpy()
    out = x.copy()
    out[..., y1:y2, x1:x2] = np.roll(x, 1, axis=0)[..., y1:y2, x1:x2]
    return out


# ----------------------------------------------------------------------------------------------
# Sections
# ----------------------------------------------------------------------------------------------
def mixup_section(x, y):
    cases = []
    for lam_nominal in MIXUP_LAMS:
        t = v2.MixUp(alpha=1.0, num_classes=NUM_CLASSES)
        calls = []

        def sample(*args, **kwargs):
            calls.append((args, kwargs))
            return pinned_lam_tensor(lam_nominal)

        with mock.patch.object(t._dist, "sample", side_effect=sample):
            out_x, out_y = t(x, y)  # two positional args: forward packs them into a tuple
        assert calls == [(((),), {})], calls  # exactly one draw: self._dist.sample(())
        lam = float(pinned_lam_tensor(lam_nominal))
        assert out_x.dtype == torch.float32 and out_y.dtype == torch.float32
        assert tuple(out_x.shape) == (N, C, H, W) and tuple(out_y.shape) == (N, NUM_CLASSES)
        assert np.array_equal(out_x.numpy(), ref_mixup(x, lam)), "mixup images"
        assert np.array_equal(out_y.numpy(), ref_one_hot_mix(LABELS, lam)), "mixup targets"
        cases.append({"lam_nominal": lam_nominal, "lam": lam,
                      "images": f32_list(out_x), "targets": f32_list(out_y)})
    return {"alpha": 1.0, "num_classes": NUM_CLASSES, "cases": cases}


def cutmix_section(x, y):
    cases = []
    real_randint = torch.randint
    for lam_nominal, r_x, r_y in CUTMIX_CASES:
        t = v2.CutMix(alpha=1.0, num_classes=NUM_CLASSES)
        order = []
        queue = [r_x, r_y]

        def sample(*args, **kwargs):
            order.append(("beta", args))
            return pinned_lam_tensor(lam_nominal)

        def randint(*args, **kwargs):
            order.append(("randint", args, kwargs))
            v = queue.pop(0)
            ref = real_randint(*args, **kwargs)  # same dtype / shape as the real draw
            return torch.full_like(ref, v)

        captured = {}
        real_make_params = t.make_params

        def make_params(flat_inputs):
            p = real_make_params(flat_inputs)
            captured.update(p)
            return p

        with mock.patch.object(t._dist, "sample", side_effect=sample), \
                mock.patch("torch.randint", side_effect=randint), \
                mock.patch.object(t, "make_params", side_effect=make_params):
            out_x, out_y = t(x, y)
        # Draw order: lam first, then r_x = randint(W, size=(1,)), then r_y = randint(H, size=(1,)).
        assert order == [("beta", ((),)), ("randint", (W,), {"size": (1,)}),
                         ("randint", (H,), {"size": (1,)})], order
        lam = float(pinned_lam_tensor(lam_nominal))
        box, lam_adjusted = ref_box(lam, r_x, r_y)
        assert tuple(captured["box"]) == box, (captured["box"], box)
        assert captured["lam_adjusted"] == lam_adjusted, (captured["lam_adjusted"], lam_adjusted)
        assert np.array_equal(out_x.numpy(), ref_cutmix(x, box)), "cutmix images"
        assert np.array_equal(out_y.numpy(), ref_one_hot_mix(LABELS, lam_adjusted)), "cutmix targets"
        cases.append({"lam_nominal": lam_nominal, "lam": lam, "r_x": r_x, "r_y": r_y,
                      "box": list(box), "lam_adjusted": lam_adjusted,
                      "images": f32_list(out_x), "targets": f32_list(out_y)})
    return {"alpha": 1.0, "num_classes": NUM_CLASSES, "H": H, "W": W, "cases": cases}


def scalar_rounding_check(x):
    """The CPU mul kernel rounds a Python-float scalar to float32 (opmath of float is float)
    before multiplying. Find a lam where that differs from multiplying in float64 and show which
    one torch does."""
    xs = x.numpy().ravel()
    for lam in (0.30000001192092896, 1.0 - 0.30000001192092896, 0.1, 1.0 / 3.0):
        got = (x.reshape(-1) * lam).numpy()
        as_f32 = (xs * f32(lam)).astype(np.float32)
        as_f64 = (xs.astype(np.float64) * lam).astype(np.float32)
        assert np.array_equal(got, as_f32), lam
        if not np.array_equal(as_f32, as_f64):
            return ("tensor(float32).mul(python_float) multiplies by float32(python_float): checked "
                    "against float64 multiplication, which differs for lam=%r on this batch" % lam)
    return "tensor(float32).mul(python_float) multiplies by float32(python_float) (checked)"


def beta_note():
    t = v2.MixUp(alpha=1.0, num_classes=NUM_CLASSES)
    # A single tensor argument: the default labels_getter takes the tensor itself as the labels
    # (it only indexes [1] for tuples/lists) and the 4-D "labels" are rejected.
    x, y = make_batch()
    try:
        t(x)
        single = "accepted"
    except ValueError as e:
        single = "ValueError: %s" % e
    try:
        t({"image": x, "labels": y})
        as_dict = "accepted (dict with a label-like key)"
    except ValueError as e:
        as_dict = "ValueError: %s" % e
    src = lambda f: inspect.getsource(f)
    return {
        "text": (
            "lam draw: __init__ builds self._dist = torch.distributions.Beta(torch.tensor([alpha]), "
            "torch.tensor([alpha])); MixUp.make_params returns dict(lam=float(self._dist.sample(()))) "
            "(a float32 sample of shape [1] widened to a Python float). CutMix.make_params draws "
            "lam = float(self._dist.sample(())) first, then H, W = query_size(flat_inputs), "
            "r_x = torch.randint(W, size=(1,)), r_y = torch.randint(H, size=(1,)) (global torch RNG). "
            "One draw per batch, shared by all samples. Pairing: sample i is mixed with sample i-1 "
            "(x.roll(1, 0); sample 0 with sample N-1); no permutation is drawn. "
            "labels_getter='default' (_find_labels_default_heuristic): if the input is a tuple/list "
            "it takes item [1]; that (or the input itself) must be a pure tensor, else a dict with a "
            "'labels' key (case-insensitive) or a key containing 'label'. forward(*inputs) packs "
            "several positional arguments into a tuple, so t(images, labels) and t((images, labels)) "
            "both work; labels must be 1-D class indices (num_classes required) or 2-D "
            "[batch, num_classes] probabilities; images must be 4-D (5-D for Video) with the labels' "
            "batch size; PIL images, boxes, masks, keypoints are rejected. The C++ side only needs "
            "the math."),
        "single_tensor_call": single,
        "dict_call": as_dict,
        "init_source": src(_augment._BaseMixUpCutMix.__init__),
        "mixup_label_source": src(_augment._BaseMixUpCutMix._mixup_label),
        "mixup_make_params_source": src(_augment.MixUp.make_params),
        "mixup_transform_source": src(_augment.MixUp.transform),
        "cutmix_make_params_source": src(_augment.CutMix.make_params),
        "cutmix_transform_source": src(_augment.CutMix.transform),
        "labels_getter_source": src(_utils._find_labels_default_heuristic),
    }


FORMULAS = {
    "mixup": ("lam = float(float32 Beta(alpha, alpha) sample); out = x.roll(1, 0).mul_(1.0 - lam)"
              ".add_(x.mul(lam)), i.e. out[i] = f32(f32(x[i-1] * f32(1 - lam)) + f32(x[i] * f32(lam))) "
              "with x[-1] = x[N-1]; 1 - lam is computed in float64 then rounded to float32; two "
              "separate roundings (no FMA)."),
    "cutmix": ("r = 0.5 * sqrt(1 - lam) (float64); r_w_half = int(r * W); r_h_half = int(r * H) "
               "(truncation); x1 = max(r_x - r_w_half, 0); y1 = max(r_y - r_h_half, 0); "
               "x2 = min(r_x + r_w_half, W); y2 = min(r_y + r_h_half, H) (torch.clamp on the int64 "
               "draws, then int); box = (x1, y1, x2, y2), half-open; out = x.clone(); "
               "out[..., y1:y2, x1:x2] = x.roll(1, 0)[..., y1:y2, x1:x2]; "
               "lam_adjusted = 1.0 - (x2 - x1) * (y2 - y1) / (W * H) (float64). "
               "The box can be empty (r_*_half = 0, then lam_adjusted = 1.0)."),
    "targets": ("label = one_hot(labels, num_classes).float() (int64 -> float32); "
                "target = label.roll(1, 0).mul_(1.0 - lam).add_(label.mul(lam)), i.e. "
                "target[i] = f32(onehot[i-1] * f32(1 - lam)) + f32(onehot[i] * f32(lam)); "
                "MixUp uses lam, CutMix lam_adjusted. 2-D float labels are mixed the same way "
                "without one_hot."),
}


def soft_ce_section(soft_targets):
    z = make_logits()
    hard = torch.tensor(LABELS, dtype=torch.int64)
    one_hot = F.one_hot(hard, NUM_CLASSES).float()
    cases = []
    results = {}

    def run(name, target, kind, ls, reduction):
        zz = z.clone().requires_grad_(True)
        loss = F.cross_entropy(zz, target, label_smoothing=ls, reduction=reduction)
        loss.backward()
        assert loss.dtype == torch.float32 and zz.grad.dtype == torch.float32
        value = float(loss.item())
        grad = zz.grad.detach().clone()
        results[(kind, ls, reduction)] = (loss.detach().clone(), grad)
        # Formula check in float64 from the float32 inputs.
        z64 = z.double().numpy()
        if kind == "hard":
            t64 = np.zeros((N, NUM_CLASSES))
            t64[np.arange(N), LABELS] = 1.0
        else:
            t64 = target.double().numpy()
        ts = t64 * (1.0 - ls) + ls / NUM_CLASSES if ls > 0 else t64
        m = z64.max(axis=1, keepdims=True)
        logp = z64 - m - np.log(np.exp(z64 - m).sum(axis=1, keepdims=True))
        p = np.exp(logp)
        div = N if reduction == "mean" else 1.0
        ref_loss = -(ts * logp).sum() / div
        ref_grad = (p * ts.sum(axis=1, keepdims=True) - ts) / div
        assert math.isclose(value, ref_loss, rel_tol=1e-6, abs_tol=1e-7), (name, value, ref_loss)
        assert np.allclose(grad.double().numpy(), ref_grad, rtol=1e-6, atol=1e-7), name
        cases.append({"name": name, "target": kind, "label_smoothing": ls, "reduction": reduction,
                      "value": value, "grad": f32_list(grad)})

    for ls in SMOOTHINGS:
        for red in ("mean", "sum"):
            run("soft_ls%g_%s" % (ls, red), soft_targets, "soft", ls, red)
    for red in ("mean", "sum"):
        run("one_hot_ls0.1_%s" % red, one_hot, "one_hot", 0.1, red)
        run("hard_ls0.1_%s" % red, hard, "hard", 0.1, red)

    cmp = {}
    for red in ("mean", "sum"):
        lo, go = results[("one_hot", 0.1, red)]
        lh, gh = results[("hard", 0.1, red)]
        dv = abs(float(lo) - float(lh))
        dg = float((go - gh).abs().max())
        assert dv <= 1e-6 * max(1.0, abs(float(lh))) and dg <= 1e-6, (red, dv, dg)
        cmp[red] = {"bit_identical_value": bool(torch.equal(lo, lh)),
                    "bit_identical_grad": bool(torch.equal(go, gh)),
                    "max_abs_diff_value": dv, "max_abs_diff_grad": dg}

    return {
        "formula": (
            "Probability targets (input and target shapes equal; aten cross_entropy_loss_prob_target): "
            "logp = log_softmax(z, dim=1); if ls > 0: t = target * (1 - ls) + ls / C; "
            "mean: loss = -sum(t * logp) / N (N = z.numel() / C, no division by the target mass), "
            "sum: loss = -sum(t * logp). Class-index targets with ls > 0 "
            "(cross_entropy_loss_label_smoothing): loss = (1 - ls) * nll_loss(logp, y) + "
            "(ls / C) * smooth, smooth = sum_i(-sum_c logp[i, c]) / N (mean) or the plain sum; "
            "ls = 0 with class indices is nll_loss(log_softmax(z), y). Checked here in float64 "
            "against torch's float32 results."),
        "grad_formula": ("dL/dz[i, c] = (softmax(z)[i, c] * sum_k t[i, k] - t[i, c]) / D, "
                         "D = N for mean, 1 for sum (sum_k t[i, k] = 1 for mixup/one-hot targets)."),
        "logits_shape": [N, NUM_CLASSES],
        "logits": f32_list(z),
        "logits_recipe": "float32(((arange(20) * 0.7371) % 1 - 0.5) * 4) in float64, reshaped [4, 5]",
        "soft_targets": f32_list(soft_targets),
        "soft_targets_from": "mixup cases[lam_nominal 0.3].targets",
        "hard_labels": LABELS,
        "cases": cases,
        "one_hot_vs_hard_ls0.1": cmp,
    }


# ----------------------------------------------------------------------------------------------
def main():
    x, y = make_batch()
    x_before = x.clone()
    mixup = mixup_section(x, y)
    cutmix = cutmix_section(x, y)
    assert torch.equal(x, x_before)  # the transforms do not modify their input
    soft = torch.tensor(mixup["cases"][0]["targets"], dtype=torch.float32).reshape(N, NUM_CLASSES)
    assert mixup["cases"][0]["lam_nominal"] == 0.3
    formulas = dict(FORMULAS, scalar_rounding=scalar_rounding_check(x))
    doc = {
        "generator": "tests/golden/make_mixup_golden.py",
        "versions": {"torch": torch.__version__, "torchvision": torchvision.__version__,
                     "numpy": np.__version__},
        "batch": {"x_shape": [N, C, H, W], "x": f32_list(x),
                  "x_recipe": "float32((arange(360) * 0.37) % 1) in float64, reshaped [4, 3, 5, 6]",
                  "labels": LABELS, "num_classes": NUM_CLASSES,
                  "pairing": "sample i is mixed with sample (i - 1) mod N (x.roll(1, 0))"},
        "mixup": mixup,
        "cutmix": cutmix,
        "beta_note": beta_note(),
        "formulas": formulas,
        "soft_cross_entropy": soft_ce_section(soft),
    }
    with open(OUT, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    with open(OUT) as f:
        json.load(f)
    print("wrote %s (%d bytes)" % (OUT, os.path.getsize(OUT)))


if __name__ == "__main__":
    sys.exit(main())
