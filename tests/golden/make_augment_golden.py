#!/usr/bin/env python3
"""Writes tests/golden/augment.json: what torchvision.transforms.v2 makes of float32 CHW images in
[0, 1] (the tensor path, not PIL) for the colour and geometric ops behind TrivialAugmentWide,
RandAugment, AutoAugment and ColorJitter, plus resize / resized_crop with nearest, bilinear and
bicubic, for the C++ augmentations (cohort's data library).

Made with torch 2.15.0+cu132, torchvision 0.29.2+cu132, Pillow 13.0.0, numpy 2.4.6 on an
AVX-512 x86-64 CPU, from .venv-peers (tools/setup.sh --peers). Run from the repository root:

    .venv-peers/bin/python tests/golden/make_augment_golden.py

Deterministic: the inputs come from tests/golden/images/rgb.png (written by make_image_golden.py)
and numpy's legacy RandomState with fixed seeds; torch runs single-threaded; ColorJitter's draws
come from torch.manual_seed. The script also checks, and fails if they stop holding, the float32
formulas that the "notes" state as exact (on CPUs whose capability is AVX2 or AVX512; elsewhere
those checks are reported, not enforced).

Number formats: every tensor ("data", input "data", "spaces" magnitude lists) holds float32
values, each written as the shortest decimal that reads back to the same float32 (parse as
float). Scalar params ("params", "magnitude", "factors", ColorJitter ranges, affine "matrix") are
the exact Python floats (doubles) that were passed to / computed by torchvision, written with
Python's repr (parse as double). Factors, angles and magnitudes were chosen as float32 values
(float(numpy.float32(x))), so reading them as float gives the same value too; only derived
doubles (shear angles in degrees, affine matrices, ColorJitter ranges) need double parsing.

augment.json (compact JSON; every image is {"shape": [C, H, W], "data": C*H*W floats, row-major}):
  generator, versions {torch, torchvision, PIL, numpy, cpu_capability}
  inputs {name: {shape, data, "how"}}:
    rgb    3x23x29  img_f = pil_to_tensor(Image.open("images/rgb.png").convert("RGB")).float() / 255
    square 3x20x20  img_f[:, :20, 3:23].contiguous()
    gray   1x23x29  img_f[:1]
    flat   3x6x7    constant 0.5
    few    3x9x11   k / 255 (float32 division), k from RandomState(20).choice([10, 40, 41, 200])
    half_flat 3x23x29  rgb with channel 1 set to 0.25 (per-channel degenerate equalize/autocontrast)
    tiny   3x2x5    img_f[:, :2, :5].contiguous() (adjust_sharpness's height <= 2 early return)
    checker 3x6x7   hard 0/1 blocks of 2x2 (see "how"), for bicubic overshoot (no clamping)
  functional: [{name, op, input, params, shape, data}] = torchvision.transforms.v2.functional.<op>
      (inputs[input], **call) where call is params minus the informational keys. Informational
      keys: "magnitude" (the auto-augment magnitude an affine case came from), "torch_mean"
      (adjust_contrast: the torch.mean of the grayscale it blended with), "matrix" (the
      inverse affine matrix [a, b, c, d, e, f] from _get_inverse_affine_matrix, as used for the
      grid), "angle_mod_360" and "path" (rotate: "clone", "rot90 k=..." or "grid_sample"),
      "max_abs_diff_vs_float64_reference" (resize: against the antialiased separable resampler in
      float64 described in notes; nearest is compared exactly). ops: adjust_brightness,
      adjust_saturation, adjust_contrast, adjust_sharpness, adjust_hue, posterize, solarize,
      autocontrast, equalize, invert, affine, rotate, resize, resized_crop. Interpolations are
      InterpolationMode values by name ("nearest", "bilinear", "bicubic"); fill is None
      (grid_sample zero padding) everywhere, as the auto-augment classes use by default.
  augment_apply: [{name, op, magnitude, interpolation, input, shape, data}] =
      TrivialAugmentWide()._apply_image_or_video_transform(inputs[input], op, magnitude,
      interpolation=InterpolationMode(interpolation), fill=t._fill) (t._fill == {"others": None}).
      magnitude is the float32-exact value passed (already signed).
  color_jitter: {cases: [{name, params, ranges, order, factors {brightness, contrast, saturation,
      hue} (null when absent), input, shape, data, seed_check}], notes}
      params: the ColorJitter(...) constructor arguments; ranges: what _check_input made of them
      ([min, max] or null when the jitter is absent, e.g. brightness 0 or (1, 1)); order: the
      permutation (fn ids 0 brightness, 1 contrast, 2 saturation, 3 hue) and factors pinned here
      (float32 values, as make_params draws them); data: the functional ops applied in that order
      exactly as ColorJitter.transform does, skipping absent ones. seed_check {seed, order,
      factors, data}: ColorJitter(**params) under torch.manual_seed(seed) replayed (randperm(4),
      then one torch.empty(1).uniform_(lo, hi) per present jitter in the order brightness,
      contrast, saturation, hue); the script asserts the forward's output equals the replay.
  color_jitter_source {make_params, transform, _check_input, _generate_value, Transform.forward}
  spaces: {TrivialAugmentWide | RandAugment | AutoAugment: {num_bins, defaults, ops (the
      _AUGMENTATION_SPACE key order, which _get_random_item indexes), signed {op: bool},
      magnitudes {"HxW": {op: list or null}} for (H, W) in (23, 29), (224, 224), (300, 200)
      (float32 lists; Posterize as ints; null for ops without magnitudes)},
      imagenet_policy: [[[op, p, magnitude index or null], [...]], ...] (AutoAugmentPolicy.IMAGENET),
      forward_sources {TrivialAugmentWide.forward, RandAugment.forward, AutoAugment.forward,
      _AutoAugmentBase._get_random_item, _AutoAugmentBase._apply_image_or_video_transform},
      linspace: how torch.linspace fills float32 (checked against every space list)}
  notes: [str]: facts that matter to a C++ reimplementation, each checked by this script unless
      it says otherwise.
"""
import inspect
import json
import math
import os
import sys

import numpy as np
import PIL
import torch
import torchvision
import torchvision.transforms.v2 as v2
import torchvision.transforms.v2.functional as F
from PIL import Image
from torch.nn.functional import conv2d
from torchvision.transforms import InterpolationMode
from torchvision.transforms.v2.functional._color import _rgb_to_grayscale_image
from torchvision.transforms.v2.functional._geometry import _affine_grid, _get_inverse_affine_matrix

torch.set_num_threads(1)
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "augment.json")
CAP = torch.backends.cpu.get_cpu_capability()
STRICT = CAP in ("AVX2", "AVX512")  # the float32 emulations below are exact on these kernels
MODES = {"nearest": InterpolationMode.NEAREST, "bilinear": InterpolationMode.BILINEAR,
         "bicubic": InterpolationMode.BICUBIC}
f4 = np.float32
SOFT_FAILURES = []


def f32(x):
    """x rounded to float32, as a Python float (exact double of that float32)."""
    return float(np.float32(x))


from golden_floats import f32_list  # noqa: E402  (shared float writer)


def image_json(t):
    assert t.dtype == torch.float32, t.dtype
    return {"shape": [int(s) for s in t.shape], "data": f32_list(t)}


def check(cond, what):
    """Exact-emulation checks: enforced on AVX2/AVX-512 CPUs, reported elsewhere."""
    if cond:
        return
    if STRICT:
        raise AssertionError(what)
    SOFT_FAILURES.append(what)
    print("warning: not reproduced on this CPU (%s): %s" % (CAP, what))


def fma32(a, b, c):
    """float32 fused multiply-add, correctly rounded: the product of two float32 is exact in
    float64; the sum p + c is rounded to float64 (s) with its exact error (TwoSum), and where s
    lands exactly on a float32 rounding midpoint the error decides (avoids double rounding)."""
    a, b, c = np.broadcast_arrays(np.asarray(a, np.float32), np.asarray(b, np.float32), np.asarray(c, np.float32))
    p = a.astype(np.float64) * b.astype(np.float64)
    c = c.astype(np.float64)
    s = p + c
    bb = s - p
    err = (p - (s - bb)) + (c - bb)
    r = s.astype(np.float32)
    r64 = r.astype(np.float64)
    other = np.nextafter(r, np.where(s > r64, np.float32(np.inf), np.float32(-np.inf))).astype(np.float32)
    mid = (r64 + other.astype(np.float64)) / 2
    tie = (s != r64) & (s == mid) & (err != 0)
    # at a tie, the exact value lies on err's side of s
    toward_other = np.sign(err) == np.sign(other.astype(np.float64) - s)
    return np.where(tie & toward_other, other, r).astype(np.float32)


# ----------------------------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------------------------
def make_inputs():
    img_u8 = F.pil_to_tensor(Image.open(os.path.join(HERE, "images", "rgb.png")).convert("RGB"))
    img_f = img_u8.float() / 255
    rs = np.random.RandomState(20)
    few_u8 = torch.from_numpy(rs.choice(np.array([10, 40, 41, 200], np.uint8), size=(3, 9, 11)))
    ii, jj = torch.meshgrid(torch.arange(6), torch.arange(7), indexing="ij")
    c0 = ((ii // 2 + jj // 2) % 2).float()
    checker = torch.stack([c0, 1 - c0, 0.5 * c0])
    half_flat = img_f.clone()
    half_flat[1] = 0.25
    inputs = {
        "rgb": (img_f, 'pil_to_tensor(Image.open("tests/golden/images/rgb.png").convert("RGB")).float() / 255'),
        "square": (img_f[:, :20, 3:23].contiguous(), "rgb[:, :20, 3:23].contiguous()"),
        "gray": (img_f[:1].contiguous(), "rgb[:1]"),
        "flat": (torch.full((3, 6, 7), 0.5), "torch.full((3, 6, 7), 0.5)"),
        "few": (few_u8.float() / 255, "torch.from_numpy(RandomState(20).choice(uint8 [10, 40, 41, 200], "
                                       "size=(3, 9, 11))).float() / 255"),
        "half_flat": (half_flat, "rgb.clone() with [1] = 0.25"),
        "tiny": (img_f[:, :2, :5].contiguous(), "rgb[:, :2, :5].contiguous()"),
        "checker": (checker, "3x6x7: channel 0 = float((i // 2 + j // 2) % 2), channel 1 = 1 - channel "
                             "0, channel 2 = 0.5 * channel 0 (hard 0/1 edges: bicubic overshoot)"),
    }
    assert sorted(set(few_u8.flatten().tolist())) == [10, 40, 41, 200]
    return {k: v[0] for k, v in inputs.items()}, {k: v[1] for k, v in inputs.items()}


# ----------------------------------------------------------------------------------------------
# float32 emulations (the notes' formulas)
# ----------------------------------------------------------------------------------------------
def emu_gray(x):
    r, g, b = x[0], x[1], x[2]
    return fma32(b, f4(0.114), fma32(g, f4(0.587), r * f4(0.2989)))


def emu_blend(img1, img2, ratio):
    return np.clip(fma32(img2, f4(1.0 - ratio), img1 * f4(ratio)), 0, 1).astype(f4)


def emu_grid(matrix, w, h, ow, oh):
    theta = np.asarray(matrix, np.float32).reshape(2, 3)
    t = (theta.T / np.array([0.5 * w, 0.5 * h], np.float32)).astype(f4)  # 3x2
    xs = torch.linspace((1.0 - ow) * 0.5, (ow - 1.0) * 0.5, ow).numpy()
    ys = torch.linspace((1.0 - oh) * 0.5, (oh - 1.0) * 0.5, oh).numpy()
    X, Y = np.meshgrid(xs, ys)
    gx = (fma32(Y, t[1, 0], X * t[0, 0]) + t[2, 0]).astype(f4)
    gy = (fma32(Y, t[1, 1], X * t[0, 1]) + t[2, 1]).astype(f4)
    return gx, gy


def emu_grid_sample(im, gx, gy, mode):
    _, H, W = im.shape
    x = fma32(gx + f4(1), f4(W / 2), f4(-0.5))
    y = fma32(gy + f4(1), f4(H / 2), f4(-0.5))

    def get(xi, yi):
        ok = (xi >= 0) & (xi < W) & (yi >= 0) & (yi < H)
        return np.where(ok, im[:, np.clip(yi, 0, H - 1), np.clip(xi, 0, W - 1)], f4(0))

    if mode == "nearest":
        return get(np.rint(x).astype(np.int64), np.rint(y).astype(np.int64))
    x0, y0 = np.floor(x), np.floor(y)
    we = (x - x0).astype(f4)
    ea = (f4(1) - we).astype(f4)
    n = (y - y0).astype(f4)
    s = (f4(1) - n).astype(f4)
    nw, ne, sw, se = s * ea, s * we, n * ea, n * we
    xi, yi = x0.astype(np.int64), y0.astype(np.int64)
    out = get(xi, yi) * nw
    out = fma32(get(xi + 1, yi), ne, out)
    out = fma32(get(xi, yi + 1), sw, out)
    return fma32(get(xi + 1, yi + 1), se, out)


def emu_hue(x, hue):
    r, g, b = x[0], x[1], x[2]
    maxc, minc = x.max(0), x.min(0)
    eqc = maxc == minc
    cr = (maxc - minc).astype(f4)
    s = (cr / np.where(eqc, f4(1), maxc)).astype(f4)
    crd = np.where(eqc, f4(1), cr)
    rc, gc, bc = ((maxc[None] - x) / crd[None]).astype(f4)
    neq_r, eq_g = maxc != r, maxc == g
    hg = ((rc + f4(2)) - bc) * (eq_g & neq_r)
    hr = (bc - gc) * (~neq_r)
    hb = ((gc + f4(4)) - rc) * (neq_r & ~eq_g)
    h = ((hr + hg) + hb).astype(f4)
    h = np.fmod((h * f4(1.0 / 6.0)).astype(f4) + f4(1), f4(1)).astype(f4)
    h = (h + f4(hue)).astype(f4)
    m = np.fmod(h, f4(1))
    h = np.where(m < 0, m + f4(1), m).astype(f4)  # torch.remainder
    h6 = h * f4(6)
    i = np.floor(h6)
    fr = (h6 - i).astype(f4)
    i = i.astype(np.int64) % 6
    sxf = s * fr
    oms = f4(1) - s
    q = np.clip((f4(1) - sxf) * maxc, 0, 1).astype(f4)
    t = np.clip((sxf + oms) * maxc, 0, 1).astype(f4)
    p = np.clip(oms * maxc, 0, 1).astype(f4)
    vpqt = np.stack([maxc, p, q, t])
    sel = np.array([[0, 2, 1, 1, 3, 0], [3, 0, 0, 2, 1, 1], [1, 1, 3, 0, 0, 2]])
    return np.stack([np.take_along_axis(vpqt, sel[c][i][None], 0)[0] for c in range(3)])


def aa_weights(in_size, out_size, kind):
    """torch's _compute_indices_min_size_weights_aa (align_corners=False, no explicit scale) in
    float64: triangle filter (bilinear, interp_size 2) or Keys cubic a = -0.5 (bicubic, 4)."""
    def tri(x):
        x = abs(x)
        return 1.0 - x if x < 1.0 else 0.0

    def cub(x, a=-0.5):
        x = abs(x)
        if x < 1.0:
            return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
        if x < 2.0:
            return (((x - 5.0) * x + 8.0) * x - 4.0) * a
        return 0.0

    filt, interp = (tri, 2) if kind == "bilinear" else (cub, 4)
    scale = in_size / out_size
    support = interp / 2 * scale if scale >= 1.0 else interp / 2
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    rows = []
    for i in range(out_size):
        center = scale * (i + 0.5)
        xmin = max(int(center - support + 0.5), 0)
        xsize = min(int(center + support + 0.5), in_size) - xmin
        w = [filt((j + xmin - center + 0.5) * invscale) for j in range(xsize)]
        tot = sum(w)
        rows.append((xmin, [v / tot for v in w] if tot != 0 else w))
    return rows


def ref_resize(x, oh, ow, kind):
    """Separable, width pass first (only if the width changes), then height; float64."""
    a = x.astype(np.float64)
    for axis, n_out in ((2, ow), (1, oh)):
        n_in = a.shape[axis]
        if n_in == n_out:
            continue
        a = np.moveaxis(a, axis, -1)
        if kind == "nearest":
            if n_out == 2 * n_in:
                idx = np.arange(n_out) >> 1
            else:
                scale = f4(n_in) / f4(n_out)
                idx = np.minimum(np.floor(np.arange(n_out).astype(f4) * scale).astype(np.int64), n_in - 1)
            out = a[..., idx]
        else:
            out = np.stack([sum(wj * a[..., xmin + j] for j, wj in enumerate(w))
                            for xmin, w in aa_weights(n_in, n_out, kind)], -1)
        a = np.moveaxis(out, -1, axis)
    return a


def emu_linspace(start, end, steps):
    """torch.linspace in float32: step = (end - start) / (steps - 1) in float32; the first
    steps // 2 values are fma(i, step, start), the rest fma(-(steps - 1 - i), step, end)."""
    s, e = f4(start), f4(end)
    step = f4((e - s) / f4(steps - 1)) if steps > 1 else f4(0)
    half = steps // 2
    i = np.arange(steps).astype(np.float32)
    return np.where(np.arange(steps) < half, fma32(i, step, s),
                    fma32(-(f4(steps - 1) - i), step, e)).astype(np.float32)


# ----------------------------------------------------------------------------------------------
# functional
# ----------------------------------------------------------------------------------------------
INFO_KEYS = ("magnitude", "matrix", "angle_mod_360", "path", "max_abs_diff_vs_float64_reference", "torch_mean")


def functional_section(inp, facts):
    cases = []

    def add(name, op, input_name, params, extra=None):
        call = {k: v for k, v in params.items() if k not in INFO_KEYS}
        if "interpolation" in call:
            call["interpolation"] = MODES[call["interpolation"]]
        out = getattr(F, op)(inp[input_name], **call)
        assert out.dtype == torch.float32
        c = {"name": name, "op": op, "input": input_name, "params": params}
        c.update(image_json(out))
        if extra:
            c.update(extra)
        cases.append(c)
        return out

    x = inp["rgb"]
    xn = x.numpy()
    gray_rgb = emu_gray(xn)
    check(np.array_equal(_rgb_to_grayscale_image(x, 1, False)[0].numpy(), gray_rgb), "grayscale fma")

    # --- colour ------------------------------------------------------------------------------
    for fac in (0.0, 0.3, 1.0, 1.99):
        fac = f32(fac)
        out = add("brightness_%g" % fac, "adjust_brightness", "rgb", {"brightness_factor": fac})
        check(np.array_equal(out.numpy(), np.clip(xn * f4(fac), 0, 1)), "brightness")
    for fac in (0.0, 0.5, 1.7):
        fac = f32(fac)
        out = add("saturation_%g" % fac, "adjust_saturation", "rgb", {"saturation_factor": fac})
        check(np.array_equal(out.numpy(), emu_blend(xn, gray_rgb[None], fac)), "saturation blend")
    add("saturation_gray_0.5", "adjust_saturation", "gray", {"saturation_factor": 0.5})
    mean_facts, contrast_off = [], []
    for input_name in ("rgb", "gray", "flat"):
        xi = inp[input_name]
        g = emu_gray(xi.numpy()) if xi.shape[0] == 3 else xi.numpy()[0]
        tmean = torch.mean(torch.from_numpy(np.ascontiguousarray(g)))
        m64 = f4(np.asarray(g, np.float64).mean())
        mean_facts.append("%s: torch mean %r, float32(float64 mean) %r" % (input_name, float(tmean), float(m64)))
        for fac in (0.0, 0.4, 1.9):
            fac = f32(fac)
            out = add("contrast_%s_%g" % (input_name, fac), "adjust_contrast", input_name,
                      {"contrast_factor": fac, "torch_mean": float(tmean)})
            emu = emu_blend(xi.numpy(), tmean.numpy(), fac)
            ulp = np.spacing(np.maximum(np.abs(emu), np.abs(out.numpy())))
            assert np.all(np.abs(out.numpy() - emu) <= ulp), ("contrast blend", input_name, fac)
            n_off = int((out.numpy() != emu).sum())
            contrast_off.append("%s f=%g: %d of %d" % (input_name, fac, n_off, emu.size))
    facts["contrast_means"] = mean_facts
    facts["contrast_off"] = contrast_off

    sharp_diffs = []
    for input_name, facs in (("rgb", (0.0, 0.5, 1.99)), ("gray", (0.0, 0.5, 1.99)), ("tiny", (0.5,))):
        for fac in facs:
            fac = f32(fac)
            out = add("sharpness_%s_%g" % (input_name, fac), "adjust_sharpness", input_name,
                      {"sharpness_factor": fac})
            xi = inp[input_name].numpy()
            if xi.shape[1] <= 2 or xi.shape[2] <= 2:
                assert np.array_equal(out.numpy(), xi)
                continue
            # float64 reference: 3x3 kernel [1 1 1; 1 5 1; 1 1 1] / 13 on the interior, border kept
            k = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], np.float64) / 13.0
            a = xi.astype(np.float64)
            blur = sum(k[i, j] * a[:, i:a.shape[1] - 2 + i, j:a.shape[2] - 2 + j]
                       for i in range(3) for j in range(3))
            ref = a.copy()
            inner = a[:, 1:-1, 1:-1]
            ref[:, 1:-1, 1:-1] = inner + (1.0 - fac) * (blur - inner)
            ref = np.clip(ref, 0, 1)
            d = float(np.abs(ref - out.numpy()).max())
            assert d < 1e-6, d
            sharp_diffs.append(d)
            # with torch's own conv2d result, the blend is exactly fma(blur - x, 1 - f, x)
            kt = torch.tensor([[1 / 13, 1 / 13, 1 / 13], [1 / 13, 5 / 13, 1 / 13], [1 / 13, 1 / 13, 1 / 13]],
                              dtype=torch.float32).expand(xi.shape[0], 1, 3, 3)
            bl = conv2d(torch.from_numpy(xi), kt, groups=xi.shape[0]).numpy()
            emu = xi.copy()
            emu[:, 1:-1, 1:-1] = fma32((bl - xi[:, 1:-1, 1:-1]).astype(f4), f4(1.0 - fac), xi[:, 1:-1, 1:-1])
            check(np.array_equal(np.clip(emu, 0, 1), out.numpy()), "sharpness blend")
    facts["sharpness_max_diff"] = max(sharp_diffs)

    for fac in (-0.5, -0.2, 0.1, 0.45):
        fac = f32(fac)
        out = add("hue_%g" % fac, "adjust_hue", "rgb", {"hue_factor": fac})
        check(np.array_equal(out.numpy(), emu_hue(xn, fac)), "hue float32 emulation %g" % fac)
    add("hue_gray_0.3", "adjust_hue", "gray", {"hue_factor": f32(0.3)})

    for bits in (0, 1, 4, 7, 8):
        out = add("posterize_%d" % bits, "posterize", "rgb", {"bits": bits})
        lv = 1 << bits
        check(np.array_equal(out.numpy(), np.clip(np.floor(xn * f4(lv)), 0, lv - 1) * f4(1.0 / lv)), "posterize")
    for thr in (0.0, 0.5, 1.0):
        out = add("solarize_%g" % thr, "solarize", "rgb", {"threshold": thr})
        assert np.array_equal(out.numpy(), np.where(xn >= f4(thr), f4(1) - xn, xn))
    for input_name in ("rgb", "flat", "few", "gray", "half_flat"):
        out = add("autocontrast_" + input_name, "autocontrast", input_name, {})
        xi = inp[input_name].numpy()
        mn, mx = xi.min((1, 2), keepdims=True), xi.max((1, 2), keepdims=True)
        eq = mn == mx
        emu = np.clip((xi - np.where(eq, f4(0), mn)) / np.where(eq, f4(1), (mx - mn) * f4(1.0)), 0, 1)
        check(np.array_equal(out.numpy(), emu), "autocontrast " + input_name)
    for input_name in ("rgb", "flat", "few", "gray", "half_flat"):
        out = add("equalize_" + input_name, "equalize", input_name, {})
        xi = inp[input_name]
        q = xi.mul(f32(255.999)).to(torch.uint8)
        assert torch.equal(q, xi.mul(255 + 1.0 - 1e-3).to(torch.uint8))
        ref = F.equalize(q).to(torch.float32).mul(1.0 / 255)
        assert torch.equal(out, ref), input_name
        # and the PIL-style LUT written out
        qn = q.numpy().reshape(q.shape[0], -1).astype(np.int64)
        lut_out = np.empty_like(qn)
        for c in range(qn.shape[0]):
            hist = np.bincount(qn[c], minlength=256)
            last = hist[np.nonzero(hist)[0][-1]]
            step = (qn.shape[1] - last) // 255
            if step == 0:
                lut_out[c] = qn[c]
                continue
            cum = np.cumsum(hist)
            lut = np.concatenate([[0], np.clip((cum[:-1] + step // 2) // step, 0, 255)])
            lut_out[c] = lut[qn[c]]
        emu = lut_out.reshape(q.shape).astype(f4) * f4(1.0 / 255)
        assert np.array_equal(out.numpy(), emu), input_name
    add("invert_rgb", "invert", "rgb", {})
    add("invert_gray", "invert", "gray", {})

    # --- affine as the auto-augment ops call it ------------------------------------------------
    H, W = x.shape[-2:]
    grid_cases = []

    def add_affine(name, params, input_name="rgb"):
        h, w = inp[input_name].shape[-2:]
        center = params["center"]
        center_f = [0.0, 0.0] if center is None else [c - s * 0.5 for c, s in zip(center, [w, h])]
        m = _get_inverse_affine_matrix(center_f, params["angle"], [float(t) for t in params["translate"]],
                                       params["scale"], params["shear"])
        params["matrix"] = m
        out = add(name, "affine", input_name, params)
        grid_cases.append((out, input_name, m, params["interpolation"]))

    for mode in ("nearest", "bilinear"):
        for mag in (0.3, -0.3, 0.99, -0.5):
            mag = f32(mag)
            sh = math.degrees(math.atan(mag))
            for axis, shear in (("X", [sh, 0.0]), ("Y", [0.0, sh])):
                add_affine("shear%s_%g_%s" % (axis, mag, mode),
                           {"angle": 0.0, "translate": [0, 0], "scale": 1.0, "shear": shear,
                            "interpolation": mode, "fill": None, "center": [0, 0], "magnitude": mag})
        for mag in (5.7, -12.0, 32.0):
            mag = f32(mag)
            for axis in ("X", "Y"):
                tr = [int(mag), 0] if axis == "X" else [0, int(mag)]
                add_affine("translate%s_%g_%s" % (axis, mag, mode),
                           {"angle": 0.0, "translate": tr, "scale": 1.0, "shear": [0.0, 0.0],
                            "interpolation": mode, "fill": None, "center": None, "magnitude": mag})
        for input_name, angles in (("rgb", (30, -30, 135, -97.3, 90, 180, 270, 360)), ("square", (90, 270, 45))):
            for ang in angles:
                ang = f32(ang)
                xi = inp[input_name]
                h, w = xi.shape[-2:]
                a = ang % 360
                if a == 0:
                    path = "clone"
                elif a == 180:
                    path = "rot90 k=2"
                elif h == w and a in (90, 270):
                    path = "rot90 k=%d" % (1 if a == 90 else 3)
                else:
                    path = "grid_sample"
                m = _get_inverse_affine_matrix([0.0, 0.0], -a, [0.0, 0.0], 1.0, [0.0, 0.0])
                params = {"angle": ang, "interpolation": mode, "expand": False, "center": None, "fill": None,
                          "angle_mod_360": a, "path": path, "matrix": m}
                out = add("rotate_%s_%g_%s" % (input_name, ang, mode), "rotate", input_name, params)
                if path == "clone":
                    assert torch.equal(out, xi)
                elif path.startswith("rot90"):
                    assert torch.equal(out, torch.rot90(xi, k=int(path[-1]), dims=(-2, -1)))
                else:
                    grid_cases.append((out, input_name, m, mode))
    for out, input_name, m, mode in grid_cases:
        xi = inp[input_name].numpy()
        h, w = xi.shape[-2:]
        gx, gy = emu_grid(m, w, h, w, h)
        theta = torch.tensor(m, dtype=torch.float32).reshape(1, 2, 3)
        tg = _affine_grid(theta, w=w, h=h, ow=w, oh=h)[0].numpy()
        check(np.array_equal(tg[..., 0], gx) and np.array_equal(tg[..., 1], gy),
              "affine grid fma %s %r: %d %d" % (input_name, m, (tg[..., 0] != gx).sum(), (tg[..., 1] != gy).sum()))
        check(np.array_equal(emu_grid_sample(xi, tg[..., 0], tg[..., 1], mode), out.numpy()),
              "grid_sample %s emulation" % mode)
    facts["grid_cases_checked"] = len(grid_cases)

    # --- resize / resized_crop -----------------------------------------------------------------
    extremes = {}
    for mode in ("nearest", "bilinear", "bicubic"):
        for size in ([11, 13], [40, 50], [23, 60]):
            p = {"size": size, "interpolation": mode, "max_size": None, "antialias": True}
            out = F.resize(x, size, interpolation=MODES[mode], antialias=True)
            ref = ref_resize(xn, size[0], size[1], mode)
            d = float(np.abs(ref - out.numpy().astype(np.float64)).max())
            if mode == "nearest":
                assert d == 0.0, d
            else:
                assert d < 2e-6, (mode, size, d)
            p["max_abs_diff_vs_float64_reference"] = d
            add("resize_%s_%dx%d" % (mode, size[0], size[1]), "resize", "rgb", p)
            extremes["%s_%dx%d" % (mode, size[0], size[1])] = (float(out.min()), float(out.max()))
    for mode in ("bilinear", "bicubic"):
        size = [15, 16]
        p = {"size": size, "interpolation": mode, "max_size": None, "antialias": True}
        out = F.resize(inp["checker"], size, interpolation=MODES[mode], antialias=True)
        ref = ref_resize(inp["checker"].numpy(), size[0], size[1], mode)
        d = float(np.abs(ref - out.numpy().astype(np.float64)).max())
        assert d < 2e-6, (mode, d)
        p["max_abs_diff_vs_float64_reference"] = d
        add("resize_%s_checker_%dx%d" % (mode, size[0], size[1]), "resize", "checker", p)
        extremes["%s_checker_%dx%d" % (mode, size[0], size[1])] = (float(out.min()), float(out.max()))
    for mode, (top, left, h, w, size) in (("nearest", (2, 3, 15, 17, [24, 24])),
                                          ("bicubic", (2, 3, 15, 17, [24, 24])),
                                          ("bilinear", (-3, 20, 10, 12, [7, 7]))):
        p = {"top": top, "left": left, "height": h, "width": w, "size": size, "interpolation": mode,
             "antialias": True}
        out = F.resized_crop(x, top, left, h, w, size, interpolation=MODES[mode], antialias=True)
        crop = np.zeros((3, h, w), np.float32)
        ys, xs = slice(max(top, 0), min(top + h, H)), slice(max(left, 0), min(left + w, W))
        crop[:, ys.start - top:ys.stop - top, xs.start - left:xs.stop - left] = xn[:, ys, xs]
        ref = ref_resize(crop, size[0], size[1], mode)
        d = float(np.abs(ref - out.numpy().astype(np.float64)).max())
        assert d < 2e-6 and (mode != "nearest" or d == 0.0), (mode, d)
        p["max_abs_diff_vs_float64_reference"] = d
        add("resized_crop_%s_%d_%d_%d_%d" % (mode, top, left, h, w), "resized_crop", "rgb", p)
    facts["resize_extremes"] = extremes
    return cases


# ----------------------------------------------------------------------------------------------
# augment_apply
# ----------------------------------------------------------------------------------------------
def augment_apply_section(inp):
    t = v2.TrivialAugmentWide()
    assert t._fill == {"others": None}
    geometric = ("ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate")
    mags = {
        "Identity": (0.0,), "ShearX": (0.3, -0.99), "ShearY": (0.99, -0.3),
        "TranslateX": (10.7, -3.2), "TranslateY": (-10.7, 3.2), "Rotate": (30.0, -135.0),
        "Brightness": (0.5, -0.5), "Color": (0.5, -0.5), "Contrast": (0.5, -0.5),
        "Sharpness": (0.5, -0.5), "Posterize": (4.0, 8.0), "Solarize": (0.6, 1.0),
        "AutoContrast": (0.0,), "Equalize": (0.0,), "Invert": (0.0,),
    }
    known = set(v2.TrivialAugmentWide._AUGMENTATION_SPACE) | set(v2.AutoAugment._AUGMENTATION_SPACE)
    assert known == set(mags), known ^ set(mags)
    cases = []
    for op, ms in mags.items():
        for mag in ms:
            mag = f32(mag)
            for mode in (("nearest", "bilinear") if op in geometric else ("nearest",)):
                out = t._apply_image_or_video_transform(inp["rgb"], op, mag, interpolation=MODES[mode],
                                                        fill=t._fill)
                c = {"name": "%s_%g_%s" % (op, mag, mode), "op": op, "magnitude": mag,
                     "interpolation": mode, "input": "rgb"}
                c.update(image_json(out))
                cases.append(c)
    # Also on the gray input for the colour ops whose 1-channel behaviour differs
    for op, mag in (("Color", 0.5), ("Contrast", 0.5), ("Equalize", 0.0), ("Solarize", 0.6)):
        mag = f32(mag)
        out = t._apply_image_or_video_transform(inp["gray"], op, mag, interpolation=MODES["nearest"],
                                                fill=t._fill)
        c = {"name": "%s_%g_gray" % (op, mag), "op": op, "magnitude": mag, "interpolation": "nearest",
             "input": "gray"}
        c.update(image_json(out))
        cases.append(c)
    return cases


# ----------------------------------------------------------------------------------------------
# ColorJitter
# ----------------------------------------------------------------------------------------------
def jitter_apply(img, order, b, c, s, h):
    out = img
    for fn_id in order:
        if fn_id == 0 and b is not None:
            out = F.adjust_brightness(out, brightness_factor=b)
        elif fn_id == 1 and c is not None:
            out = F.adjust_contrast(out, contrast_factor=c)
        elif fn_id == 2 and s is not None:
            out = F.adjust_saturation(out, saturation_factor=s)
        elif fn_id == 3 and h is not None:
            out = F.adjust_hue(out, hue_factor=h)
    return out


def color_jitter_section(inp):
    x = inp["rgb"]
    specs = [
        ("all_0.4_0.4_0.4_0.1", dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
         [2, 0, 3, 1], (1.2, 0.7, 1.35, -0.06)),
        ("brightness_only_0.8", dict(brightness=0.8, contrast=0, saturation=0, hue=0),
         [1, 3, 0, 2], (1.7, None, None, None)),
        ("hue_only_0.5", dict(brightness=0, contrast=0, saturation=0, hue=0.5),
         [3, 1, 2, 0], (None, None, None, 0.41)),
        ("tuples", dict(brightness=(0.5, 1.5), contrast=(0.2, 0.3), saturation=0, hue=(-0.2, 0.1)),
         [0, 1, 2, 3], (0.6, 0.25, None, -0.15)),
        ("contrast_saturation_0.9", dict(brightness=0, contrast=0.9, saturation=0.9, hue=0),
         [3, 2, 1, 0], (None, 1.8, 0.15, None)),
        ("identity_range_and_edges", dict(brightness=0.2, contrast=(1.0, 1.0), saturation=(0.0, 2.0), hue=0.5),
         [1, 0, 3, 2], (0.81, None, 0.0, 0.5)),
    ]
    cases = []
    for i, (name, params, order, facs) in enumerate(specs):
        cj = v2.ColorJitter(**params)
        ranges = {k: (None if getattr(cj, k) is None else list(getattr(cj, k)))
                  for k in ("brightness", "contrast", "saturation", "hue")}
        b, c, s, h = [None if v is None else f32(v) for v in facs]
        for key, v in zip(("brightness", "contrast", "saturation", "hue"), (b, c, s, h)):
            assert (v is None) == (ranges[key] is None), (name, key)
            if v is not None:
                assert ranges[key][0] <= v <= ranges[key][1], (name, key, v)
        out = jitter_apply(x, order, b, c, s, h)
        case = {"name": name, "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in params.items()},
                "ranges": ranges, "order": order,
                "factors": {"brightness": b, "contrast": c, "saturation": s, "hue": h}, "input": "rgb"}
        case.update(image_json(out))

        # seeded: replay make_params' draws and compare with the transform's own forward
        seed = 1000 + i
        torch.manual_seed(seed)
        fwd = cj(x)
        torch.manual_seed(seed)
        perm = [int(v) for v in torch.randperm(4)]
        drawn = {}
        for key in ("brightness", "contrast", "saturation", "hue"):
            r = ranges[key]
            drawn[key] = None if r is None else float(torch.empty(1).uniform_(r[0], r[1]).item())
        rep = jitter_apply(x, perm, drawn["brightness"], drawn["contrast"], drawn["saturation"], drawn["hue"])
        assert torch.equal(fwd, rep), name
        torch.manual_seed(seed)
        mp = cj.make_params([x])
        assert [int(v) for v in mp["fn_idx"]] == perm
        assert [mp[k + "_factor"] for k in ("brightness", "contrast", "saturation", "hue")] == \
            [drawn[k] for k in ("brightness", "contrast", "saturation", "hue")]
        sc = {"seed": seed, "order": perm, "factors": drawn}
        sc.update(image_json(fwd))
        case["seed_check"] = sc
        cases.append(case)
    notes = [
        "_check_input: a number v gives [center - v, center + v] (center 1, hue 0), the lower end "
        "clipped at 0 except for hue; a pair is taken as given; bounds (0, inf) or (-0.5, 0.5) for hue; "
        "the jitter is None (skipped, no draw) when min == max == center, e.g. brightness=0, "
        "contrast=(1, 1), hue=0.",
        "make_params: fn_idx = torch.randperm(4) first, then one float(torch.empty(1).uniform_(lo, hi)"
        ".item()) for each present jitter in the order brightness, contrast, saturation, hue "
        "(absent ones draw nothing). The factor is therefore a float32 value. Checked: the forward "
        "under torch.manual_seed(seed) equals the replay.",
        "transform: for fn_id in fn_idx: 0 -> adjust_brightness, 1 -> adjust_contrast, 2 -> "
        "adjust_saturation, 3 -> adjust_hue, each only when its factor is not None.",
    ]
    source = {
        "make_params": inspect.getsource(v2.ColorJitter.make_params),
        "transform": inspect.getsource(v2.ColorJitter.transform),
        "_check_input": inspect.getsource(v2.ColorJitter._check_input),
        "_generate_value": inspect.getsource(v2.ColorJitter._generate_value),
        "Transform.forward": inspect.getsource(v2.Transform.forward),
    }
    return {"cases": cases, "notes": notes}, source


# ----------------------------------------------------------------------------------------------
# spaces
# ----------------------------------------------------------------------------------------------
def spaces_section():
    out = {}
    lin_checked = 0
    for cls, bins, defaults in ((v2.TrivialAugmentWide, 31, {"num_magnitude_bins": 31, "interpolation": "nearest",
                                                              "fill": None}),
                                (v2.RandAugment, 31, {"num_ops": 2, "magnitude": 9, "num_magnitude_bins": 31,
                                                      "interpolation": "nearest", "fill": None}),
                                (v2.AutoAugment, 10, {"policy": "imagenet", "interpolation": "nearest",
                                                      "fill": None, "num_bins (fixed in forward)": 10})):
        inst = cls()
        for k, v in defaults.items():
            if k in ("num_magnitude_bins", "num_ops", "magnitude"):
                assert getattr(inst, k) == v, (cls.__name__, k)
        assert inst.interpolation in ("nearest", InterpolationMode.NEAREST)
        space = cls._AUGMENTATION_SPACE
        entry = {"num_bins": bins, "defaults": defaults, "ops": list(space.keys()),
                 "signed": {k: bool(v[1]) for k, v in space.items()}, "magnitudes": {}}
        for (h, w) in ((23, 29), (224, 224), (300, 200)):
            mags = {}
            for op, (fn, _) in space.items():
                m = fn(bins, h, w)
                if m is None:
                    mags[op] = None
                elif m.dtype == torch.int32:
                    mags[op] = [int(v) for v in m]
                else:
                    assert m.dtype == torch.float32
                    mags[op] = f32_list(m)
                    # every float space is torch.linspace(0 or 1, end, bins): recover the end points
                    lo, hi = float(m[0]), float(m[-1])
                    check(np.array_equal(emu_linspace(lo, hi, bins), m.numpy()), "linspace " + op)
                    lin_checked += 1
            entry["magnitudes"]["%dx%d" % (h, w)] = mags
        out[cls.__name__] = entry
    aa = v2.AutoAugment(v2.AutoAugmentPolicy.IMAGENET)
    out["imagenet_policy"] = [[[op, p, idx] for (op, p, idx) in pol] for pol in aa._policies]
    out["forward_sources"] = {
        "TrivialAugmentWide.forward": inspect.getsource(v2.TrivialAugmentWide.forward),
        "RandAugment.forward": inspect.getsource(v2.RandAugment.forward),
        "AutoAugment.forward": inspect.getsource(v2.AutoAugment.forward),
        "_AutoAugmentBase._get_random_item": inspect.getsource(v2.TrivialAugmentWide._get_random_item),
        "_AutoAugmentBase._apply_image_or_video_transform":
            inspect.getsource(v2.TrivialAugmentWide._apply_image_or_video_transform),
    }
    out["linspace"] = ("torch.linspace(start, end, n) in float32 (checked on %d lists): s = float32(start), "
                       "e = float32(end), step = (e - s) / float32(n - 1) in float32; value i = fma(i, step, s) "
                       "for i < n // 2, else fma(-(n - 1 - i), step, e) (fused: plain s + i * step differs "
                       "for a few entries, e.g. linspace(0, 0.99, 31)[19]). The end value "
                       "150/331*W is computed in double, then rounded to float32." % lin_checked)
    return out


# ----------------------------------------------------------------------------------------------
def notes(facts, inp):
    k = torch.arange(256, dtype=torch.float32)
    n_div_mul = int((k / 255 != k.mul(1.0 / 255)).sum())
    ex = facts["resize_extremes"]
    bic = ["%s: [%r, %r]" % (key, lo, hi) for key, (lo, hi) in ex.items() if key.startswith("bicubic")]
    assert any(lo < 0 or hi > 1 for key, (lo, hi) in ex.items() if key.startswith("bicubic"))
    # nearest half-way rounding in grid_sample
    img = torch.arange(8.0).view(1, 1, 1, 8)
    xs = torch.tensor([0.5, 1.5, 2.5, 3.5, 4.5, 5.5])
    g = torch.stack([(2 * xs + 1) / 8 - 1, torch.zeros(6)], -1).view(1, 1, 6, 2)
    half = torch.nn.functional.grid_sample(img, g, mode="nearest", align_corners=False).flatten().tolist()
    assert half == [0.0, 2.0, 2.0, 4.0, 4.0, 6.0], half
    sq = inp["square"]
    assert torch.equal(F.rotate(sq, 90.0), torch.rot90(sq, 1, (-2, -1)))
    return [
        "Precision conventions (CPU, float32): a tensor op with a Python float scalar (mul, add, clamp, "
        "comparisons) rounds the scalar to float32 first. x.add_(y, alpha=a) is one fused multiply-add "
        "fma(y, float32(a), x) on this CPU (AVX-512 kernels; AVX2 too), so: grayscale = fma(b, 0.114f, "
        "fma(g, 0.587f, r * 0.2989f)); _blend(img1, img2, ratio) = clamp(fma(img2, float32(1 - ratio), "
        "img1 * float32(ratio)), 0, 1) where 1 - ratio is computed in double from the double ratio. "
        "Checked exactly for brightness (clamp(x * float32(f), 0, 1)) and saturation (blend with the "
        "grayscale, an (1, H, W) tensor).",
        "adjust_contrast = _blend(img, mean) with mean = torch.mean of the float32 grayscale (of the image "
        "itself when it has 1 channel), a (1, 1, 1) tensor broadcast over the image. With that broadcast "
        "operand torch fuses (fma) in its vector loop but not for a few tail elements, so against the "
        "all-fma formula a few values are 1 ulp off (%s; never more than 1 ulp). torch.mean itself is "
        "torch's own float32 cascade reduction and matches neither float32(sum64 / n) nor torch.sum / n "
        "(%s): each contrast case records it as params.torch_mean (informational, not an argument). "
        "Compare contrast with a small tolerance (a few ulps, or ~1e-6 absolute)." % (
            "; ".join(facts["contrast_off"]), "; ".join(facts["contrast_means"])),
        "adjust_saturation and adjust_hue return a 1-channel image unchanged; adjust_contrast on 1 channel "
        "blends with the plain mean. adjust_sharpness returns the input unchanged when H <= 2 or W <= 2; "
        "otherwise blur = conv2d with [[1,1,1],[1,5,1],[1,1,1]] / 13 (float32 kernel values, torch's "
        "conv2d summation order), interior = fma(blur - x, float32(1 - f), x), the one-pixel border is "
        "kept, then clamp(0, 1). Against a float64 reference the max abs difference was %.3g; given "
        "torch's conv2d output the blend is exact." % facts["sharpness_max_diff"],
        "adjust_hue: reproduced bit-exactly by a float32 emulation of _rgb_to_hsv / _hsv_to_rgb with "
        "plain (non-fused) float32 ops: h = fmod(h_raw * float32(1/6) + 1, 1); h = remainder(h + "
        "float32(hue), 1) (fmod, plus 1 if negative); h6 = h * 6, i = floor(h6), f = h6 - i, i mod 6; "
        "p, q, t clamped to [0, 1]; (r, g, b) chosen from (v, p, q, t) by i.",
        "posterize on float: floor(x * 2^bits) clamped to [0, 2^bits - 1], times 2^-bits. bits = 8 is NOT "
        "the identity for float input (it quantises to multiples of 1/256); bits = 0 gives all zeros "
        "(the uint8 path returns the image unchanged for bits >= 8).",
        "solarize: where(x >= float32(threshold), 1 - x, x); threshold 0 inverts everything, threshold 1 "
        "inverts only exact 1.0. Via the auto-augment op the threshold is 1.0 * magnitude.",
        "autocontrast on float: per channel min/max over H, W; where max == min: min := 0, scale := 1 (the "
        "channel is only clamped); else (x - min) / ((max - min) * 1.0), a true division, then "
        "clamp(0, 1). Checked exactly.",
        "equalize on float quantises: q = uint8(trunc(x * float32(255.999))) (mul(255 + 1 - 1e-3), then "
        ".to(uint8)), PIL-style per-channel LUT on q (hist; step = (N - count of the largest present "
        "value) // 255; step == 0 -> channel unchanged; else lut[0] = 0, lut[k] = min((cumhist[k-1] + "
        "step // 2) // step, 255)), and back with q_out.to(float32) * float32(1/255) (a multiply, not a "
        "division: for %d of the 256 codes k * float32(1/255) != k / 255.f). So equalize is never the "
        "identity on float input: the constant 0.5 image becomes 127 * float32(1/255) everywhere, and "
        "'few' (99 pixels per channel, step 0) just comes back quantised. Checked exactly." % n_div_mul,
        "rotate: angle %= 360 (Python float modulo, -97.3 -> 262.7); center None: 0 -> clone, 180 -> "
        "rot90 k=2 (exact, any shape), 90 / 270 -> rot90 k=1 / 3 ONLY if the image is square (or "
        "expand=True); on a non-square image 90 and 270 go through the affine grid and grid_sample "
        "(same size, zero fill), like every other angle. The grid uses _get_inverse_affine_matrix(center "
        "(0, 0) = image centre, -angle, ...).",
        "Auto-augment affine calls: ShearX/ShearY use shear = [degrees(atan(m)), 0] / [0, degrees(atan(m))] "
        "with center=[0, 0] (the top-left corner, i.e. center_f = (-W/2, -H/2)); TranslateX/Y use "
        "translate = [int(m), 0] / [0, int(m)] (truncation toward zero) and center None (image centre); "
        "angle 0, scale 1, fill None (zeros outside).",
        "Affine grid (exact on this CPU): theta = float32(matrix) (2x3), t = theta^T / float32([W/2, "
        "H/2]) column-wise (3x2, the translation row divided too); base x_j = linspace((1 - W)/2, (W - "
        "1)/2, W) (float32, here exact half-integers), y_i likewise; grid = fma(y, t[1][k], x * t[0][k]) + "
        "t[2][k] for k = 0 (x), 1 (y). grid_sample (align_corners=False, zeros padding): ix = fma(gx + 1, "
        "float32(W/2), -0.5), iy likewise. Nearest: index = nearbyint(ix) (round half to even: grid "
        "coordinates 0.5, 1.5, 2.5, 3.5 pick 0, 2, 2, 4), zero if outside. Bilinear: x0 = floor(ix), we = "
        "ix - x0, e = 1 - we, n = iy - y0, s = 1 - n; nw = s*e, ne = s*we, sw = n*e, se = n*we; out = "
        "fma(v_se, se, fma(v_sw, sw, fma(v_ne, ne, v_nw * nw))) with out-of-image taps = 0. Checked "
        "bit-exactly on all %d grid_sample cases (float rounding of the grid matters for nearest: do the "
        "same float32 ops)." % facts["grid_cases_checked"],
        "resize(antialias=True): nearest ignores antialias: src = min(floor(float32(i) * (float32(in) / "
        "float32(out))), in - 1), or i >> 1 when out == 2 * in, identity when out == in (checked exactly). "
        "bilinear and bicubic use the antialiased separable kernel for shrinking AND enlarging: width pass "
        "first (only if the width changes), then height; per axis scale = in/out, support = (interp/2) * "
        "max(scale, 1), invscale = 1/scale if scale >= 1 else 1, center = scale*(i + 0.5), xmin = "
        "max(int(center - support + 0.5), 0), xsize = min(int(center + support + 0.5), in) - xmin, w_j = "
        "filter((xmin + j - center + 0.5) * invscale), normalised to sum 1. Bilinear: triangle filter "
        "(interp 2). Bicubic: Keys cubic with a = -0.5 (interp 4), NOT the a = -0.75 of non-antialiased "
        "bicubic interpolate. Max abs diff against that float64 reference is recorded per case (< 2e-6).",
        "Bicubic float results are NOT clamped (the clamp in resize_image is only for uint8 through the "
        "float path): observed ranges %s." % "; ".join(bic),
        "resized_crop whose box leaves the image is allowed: crop_image zero-pads the missing part (left "
        "= max(min(right, 0) - left, 0), right = max(right - max(W, left), 0), top/bottom likewise), then "
        "resizes.",
        "uint8 -> float conversions inside torchvision (to_dtype_image scale=True) multiply by float32(1/255); "
        "the inputs here were made with a true division by 255.",
        "TrivialAugmentWide's space has no Invert (AutoAugment's has); _apply_image_or_video_transform still "
        "handles it. Posterize's magnitude is passed as int(magnitude); Brightness/Color/Contrast/Sharpness "
        "use factor 1.0 + magnitude (double).",
    ]


def main():
    inp, how = make_inputs()
    facts = {}
    doc = {
        "generator": "tests/golden/make_augment_golden.py",
        "versions": {"torch": torch.__version__, "torchvision": torchvision.__version__,
                     "PIL": PIL.__version__, "numpy": np.__version__, "cpu_capability": CAP},
        "inputs": {k: dict(image_json(v), how=how[k]) for k, v in inp.items()},
    }
    doc["functional"] = functional_section(inp, facts)
    doc["augment_apply"] = augment_apply_section(inp)
    doc["color_jitter"], doc["color_jitter_source"] = color_jitter_section(inp)
    doc["spaces"] = spaces_section()
    doc["notes"] = notes(facts, inp)
    if SOFT_FAILURES:
        doc["notes"].append("Not reproduced on the generating CPU (%s): %s" % (CAP, "; ".join(SOFT_FAILURES)))
    for sec in ("functional", "augment_apply"):
        ns = [c["name"] for c in doc[sec]]
        assert len(ns) == len(set(ns)), sec
    with open(OUT, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print("wrote %s (%d bytes)" % (OUT, os.path.getsize(OUT)))
    print("inputs: %d, functional: %d, augment_apply: %d, color_jitter: %d, spaces: %d classes + "
          "imagenet_policy (%d), notes: %d" % (len(doc["inputs"]), len(doc["functional"]),
                                               len(doc["augment_apply"]), len(doc["color_jitter"]["cases"]),
                                               3, len(doc["spaces"]["imagenet_policy"]), len(doc["notes"])))


if __name__ == "__main__":
    sys.exit(main())
