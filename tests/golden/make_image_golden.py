#!/usr/bin/env python3
"""Writes the image-folder goldens: small sample images in tests/golden/images/ and
tests/golden/images.json, what the current torchvision (PyPI) and Pillow make of them, for the
C++ image decoders (JPEG, PNG), the geometric transforms and the image-folder data set.

Made with torch 2.15.0+cu132, torchvision 0.29.2+cu132, Pillow 13.0.0 (libjpeg-turbo 3.2.0),
numpy 2.4.6 on an AVX-512 x86-64 CPU, from .venv-peers (tools/setup.sh --peers). Run from the
repository root:

    .venv-peers/bin/python tests/golden/make_image_golden.py

Deterministic: image content is smooth gradients plus noise from numpy's legacy RandomState
with fixed seeds; the tensor path runs single-threaded. The JPEG bytes depend on the Pillow
build's libjpeg-turbo, so the images and the JSON are written together and belong together.

images/ (good files; W x H):
  rgb.jpg 29x23 (quality 90, baseline, 4:2:0), UPPER.JPG (the same bytes), rgb_progressive.jpg
  37x23, gray.jpg 23x29 (L), cmyk.jpg 25x19 (CMYK, Pillow writes Adobe-inverted samples and
  reads them back inverted), rgb.png 29x23, rgba.png 21x27, gray.png 27x17, gray_alpha.png
  19x25 (LA), palette.png 33x17 (P, 16 colours: Pillow writes a 4-bit palette PNG),
  palette_trns.png 17x33 (P, tRNS: index 3 transparent), gray16.png 15x21 (16-bit grey, up to
  1000).
  Bad files: not_an_image.jpg (text), truncated.jpg / truncated.png (first 60% of rgb.jpg /
  rgb.png), empty.png (0 bytes).

images.json (compact JSON; every image tensor is a flat list, row-major):
  generator, versions {torch, torchvision, PIL, numpy, libjpeg_turbo, cpu_capability}
  decoded {file: {mode, format, height, width, rgb: H*W*3 ints (HWC) =
      numpy.asarray(Image.open(file).convert("RGB")), what ImageFolder's default loader gives;
      cmyk.jpg also "cmyk": H*W*4 (C, M, Y, K as Pillow holds them, i.e. already un-inverted);
      gray16.png also "gray16": H*W ints; JPEGs also "progressive" and "subsampling"}}
  bad_files {file: {bytes, pil_error}}: what Pillow raises opening/converting it
  transforms: source, uint8_path, and cases [{name, op, params, height, width,
      u8: C*H*W ints = op(img_u8), f32: C*H*W floats = op(img_f), resized_crop cases also
      pil_u8: C*H*W ints from transforms.functional.resized_crop on the PIL image}], where
      img_u8 = pil_to_tensor(Image.open("rgb.png").convert("RGB")) (3x23x29) and
      img_f = img_u8.float() / 255; ops from torchvision.transforms.v2.functional with
      InterpolationMode.BILINEAR, antialias=True. Floats are float32 values written as the
      shortest decimal that reads back to the same float32.
  normalize_example {mean, std, input: "img_f", data: C*H*W floats}
  random_resized_crop_defaults {scale, ratio, get_params_source, v2_make_params_source}
  image_folder {img_extensions, tree: [relative file paths], classes, class_to_idx,
      samples: [[relative path, class index]], sorting, symlinks, symlink_example {...}}

The script also checks, and fails if they stop holding, the algorithms the report in the JSON's
"notes" describes: the antialiased bilinear resampling (uint8 and float), Pillow's CMYK and I;16
conversions to RGB.
"""
import inspect
import json
import math
import os
import shutil
import sys
import tempfile
import warnings

import numpy as np
import PIL
import torch
import torchvision
from PIL import Image, JpegImagePlugin, features
from torchvision.transforms import InterpolationMode
import torchvision.transforms.functional as F1
import torchvision.transforms.v2.functional as F2

torch.set_num_threads(1)
HERE = os.path.dirname(os.path.abspath(__file__))
IMG_DIR = os.path.join(HERE, "images")
OUT = os.path.join(HERE, "images.json")
BILINEAR = InterpolationMode.BILINEAR


# ----------------------------------------------------------------------------------------------
# Sample content
# ----------------------------------------------------------------------------------------------
def gradient(h, w, channels, seed, noise=6.0):
    """Smooth gradients (a different direction per channel) plus a gentle ripple and seeded
    Gaussian noise, clipped to 0..255, uint8 HWC (or HW for channels == 1)."""
    rs = np.random.RandomState(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    u, v = x / (w - 1), y / (h - 1)
    planes = [
        30 + 200 * u,
        20 + 210 * v,
        240 - 120 * u - 100 * v,
        128 + 100 * np.sin(2 * math.pi * (u + 0.5 * v)),
    ]
    out = []
    for c in range(channels):
        p = planes[c % 4] + 12 * np.sin(3.1 * u * (c + 1) + 2.3 * v) + rs.normal(0, noise, (h, w))
        out.append(np.clip(np.rint(p), 0, 255))
    a = np.stack(out, axis=-1).astype(np.uint8)
    return a[..., 0] if channels == 1 else a


def from_array(a, mode):
    """Image.frombytes (Pillow 13's fromarray no longer takes every mode): a is C-order HWC/HW."""
    a = np.ascontiguousarray(a)
    if mode == "I;16":
        return Image.frombytes(mode, (a.shape[1], a.shape[0]), a.astype("<u2").tobytes())
    return Image.frombytes(mode, (a.shape[1], a.shape[0]), a.astype(np.uint8).tobytes())


def save(img, name, **kw):
    path = os.path.join(IMG_DIR, name)
    img.save(path, **kw)
    return path


def make_images():
    if os.path.isdir(IMG_DIR):
        shutil.rmtree(IMG_DIR)
    os.makedirs(IMG_DIR)
    good = []

    rgb = from_array(gradient(23, 29, 3, seed=1), "RGB")
    save(rgb, "rgb.jpg", quality=90, progressive=False, optimize=False)
    good.append("rgb.jpg")
    shutil.copyfile(os.path.join(IMG_DIR, "rgb.jpg"), os.path.join(IMG_DIR, "UPPER.JPG"))
    good.append("UPPER.JPG")
    save(from_array(gradient(23, 37, 3, seed=2), "RGB"), "rgb_progressive.jpg",
         quality=90, progressive=True)
    good.append("rgb_progressive.jpg")
    save(from_array(gradient(29, 23, 1, seed=3), "L"), "gray.jpg", quality=90)
    good.append("gray.jpg")
    save(from_array(gradient(19, 25, 4, seed=4), "CMYK"), "cmyk.jpg", quality=90)
    good.append("cmyk.jpg")

    save(rgb, "rgb.png")
    good.append("rgb.png")
    rgba = gradient(27, 21, 4, seed=5)
    rgba[..., 3] = np.rint(np.linspace(0, 255, 21)).astype(np.uint8)[None, :]  # alpha ramp
    rgba[0, 0, 3], rgba[-1, -1, 3] = 0, 255
    save(from_array(rgba, "RGBA"), "rgba.png")
    good.append("rgba.png")
    save(from_array(gradient(17, 27, 1, seed=6), "L"), "gray.png")
    good.append("gray.png")
    la = gradient(25, 19, 2, seed=7)
    la[..., 1] = np.rint(np.linspace(255, 10, 25))[:, None]
    save(from_array(la, "LA"), "gray_alpha.png")
    good.append("gray_alpha.png")

    # 16-colour palette: a fixed ramp of colours, indices from a noisy diagonal gradient.
    pal = []
    for k in range(16):
        pal += [(17 * k) % 256, (255 - 13 * k) % 256, (40 + 53 * k) % 256]
    for name, (h, w), seed in (("palette.png", (17, 33), 8), ("palette_trns.png", (33, 17), 9)):
        g = gradient(h, w, 1, seed=seed, noise=20.0).astype(np.int32)
        idx = np.clip(g * 16 // 256, 0, 15).astype(np.uint8)
        p = from_array(idx, "P")
        p.putpalette(pal)
        if name == "palette_trns.png":
            save(p, name, transparency=3)
        else:
            save(p, name)
        good.append(name)

    g16 = (gradient(21, 15, 1, seed=10).astype(np.uint16) * 1000 // 255).astype(np.uint16)
    g16[0, 0], g16[0, 1], g16[1, 0] = 0, 255, 256
    im16 = from_array(g16, "I;16")
    save(im16, "gray16.png")
    good.append("gray16.png")

    bad = []
    with open(os.path.join(IMG_DIR, "not_an_image.jpg"), "w") as f:
        f.write("this is not an image, just text with a .jpg name\n")
    bad.append("not_an_image.jpg")
    for src, dst in (("rgb.jpg", "truncated.jpg"), ("rgb.png", "truncated.png")):
        with open(os.path.join(IMG_DIR, src), "rb") as f:
            data = f.read()
        with open(os.path.join(IMG_DIR, dst), "wb") as f:
            f.write(data[: len(data) * 6 // 10])
        bad.append(dst)
    open(os.path.join(IMG_DIR, "empty.png"), "wb").close()
    bad.append("empty.png")
    return good, bad


# ----------------------------------------------------------------------------------------------
# Reference models of what Pillow and torch compute (checked below)
# ----------------------------------------------------------------------------------------------
def muldiv255(a, b):
    t = a * b + 128
    return ((t >> 8) + t) >> 8


def pil_cmyk_to_rgb(cmyk):
    """Pillow's cmyk2rgb (libImaging/Convert.c): nk = 255 - K; X = clip(nk - muldiv255(C, nk))."""
    c = cmyk.astype(np.int64)
    nk = 255 - c[..., 3:4]
    return np.clip(nk - muldiv255(c[..., :3], nk), 0, 255).astype(np.uint8)


def aa_bilinear_weights(in_size, out_size, real):
    """torch's HelperInterpBase::_compute_indices_min_size_weights_aa with the bilinear (triangle)
    filter, align_corners=False, no explicit scale: per output i -> (xmin, [weights])."""
    scale = real(in_size) / real(out_size)
    support = scale if scale >= 1.0 else real(1.0)  # interp_size/2 * scale, interp_size = 2
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    max_interp = int(math.ceil(support)) * 2 + 1
    rows = []
    for i in range(out_size):
        center = scale * (i + 0.5)
        xmin = max(int(center - support + 0.5), 0)  # int(): truncation toward zero, as C++
        xsize = min(int(center + support + 0.5), in_size) - xmin
        xsize = min(max(xsize, 0), max_interp)
        w = [max(0.0, 1.0 - abs((j + xmin - center + 0.5) * invscale)) for j in range(xsize)]
        total = sum(w)
        if total != 0.0:
            w = [x / total for x in w]
        rows.append((xmin, w))
    return rows


def int16_weights(rows):
    """_compute_index_ranges_int16_weights: precision = the first p in 0..21 with
    int(0.5 + wt_max * 2^(p+1)) >= 2^15 (22 if none); w16 = int(0.5 + w * 2^p)."""
    wt_max = max(max(w) if w else 0.0 for _, w in rows)
    p = 0
    while p < 22:
        if int(0.5 + wt_max * (1 << (p + 1))) >= (1 << 15):
            break
        p += 1
    return p, [(xmin, [int(0.5 + x * (1 << p)) for x in w]) for xmin, w in rows]


def pil_fixed_weights(rows):
    """Pillow's normalize_coeffs_8bpc: PRECISION_BITS = 32 - 8 - 2 = 22, w = trunc(0.5 + w*2^22)."""
    p = 22
    return p, [(xmin, [int(0.5 + x * (1 << p)) for x in w]) for xmin, w in rows]


def resample_u8_axis(a, axis, rows, p):
    a = np.moveaxis(a.astype(np.int64), axis, -1)
    out = np.empty(a.shape[:-1] + (len(rows),), np.int64)
    for i, (xmin, w) in enumerate(rows):
        acc = np.full(a.shape[:-1], 1 << (p - 1), np.int64)
        for j, wj in enumerate(w):
            acc += wj * a[..., xmin + j]
        out[..., i] = np.clip(acc >> p, 0, 255)
    return np.moveaxis(out, -1, axis).astype(np.uint8)


def resample_f_axis(a, axis, rows):
    a = np.moveaxis(a.astype(np.float64), axis, -1)
    out = np.empty(a.shape[:-1] + (len(rows),), np.float64)
    for i, (xmin, w) in enumerate(rows):
        out[..., i] = sum(wj * a[..., xmin + j] for j, wj in enumerate(w))
    return np.moveaxis(out, -1, axis)


def ref_resize(chw, oh, ow, kind):
    """Separable: width first (if it changes), then height (if it changes). kind: "u8" (torch's
    native int16 path), "pil" (Pillow, 22 fixed bits), "f" (float, in float64)."""
    _, h, w = chw.shape
    x = chw
    for axis, n_in, n_out in ((2, w, ow), (1, h, oh)):
        if n_in == n_out:
            continue
        if kind == "f":
            x = resample_f_axis(x, axis, aa_bilinear_weights(n_in, n_out, float))
        else:
            rows = aa_bilinear_weights(n_in, n_out, float)
            p, rows = (int16_weights if kind == "u8" else pil_fixed_weights)(rows)
            x = resample_u8_axis(x, axis, rows, p)
    return x


# ----------------------------------------------------------------------------------------------
# JSON helpers
# ----------------------------------------------------------------------------------------------
from golden_floats import f32_list  # noqa: E402  (shared float writer)


def u8_list(t):
    a = t.detach().cpu().numpy() if torch.is_tensor(t) else np.asarray(t)
    assert a.dtype == np.uint8, a.dtype
    return [int(v) for v in np.ascontiguousarray(a).ravel()]


# ----------------------------------------------------------------------------------------------
def decoded_section(good):
    out = {}
    for name in good:
        path = os.path.join(IMG_DIR, name)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with open(path, "rb") as f:  # as torchvision.datasets.folder.pil_loader
                im = Image.open(f)
                mode, fmt = im.mode, im.format
                extra = {}
                if fmt == "JPEG":
                    extra["progressive"] = bool(im.info.get("progressive", 0))
                    # get_sampling: -1 unless 3 components (then no chroma subsampling)
                    extra["subsampling"] = {0: "4:4:4", 1: "4:2:2", 2: "4:2:0"}.get(
                        JpegImagePlugin.get_sampling(im))
                if mode == "CMYK":
                    raw = np.asarray(im)
                    extra["cmyk"] = u8_list(raw)
                if mode in ("I;16", "I"):
                    raw = np.asarray(im).astype(np.int64)
                    extra["gray16"] = [int(v) for v in raw.ravel()]
                    assert raw.max() > 255
                rgb = np.asarray(im.convert("RGB"))
        if mode == "CMYK":
            assert np.array_equal(rgb, pil_cmyk_to_rgb(np.asarray(Image.open(path)))), "cmyk2rgb"
        if mode in ("I;16", "I"):
            clip = np.minimum(np.asarray(Image.open(path)).astype(np.int64), 255)
            assert np.array_equal(rgb, np.repeat(clip[..., None], 3, -1)), "I;16 -> RGB is min(v, 255)"
        if mode == "P":
            p = Image.open(path)
            pal = np.asarray(p.getpalette("RGB"), np.uint8).reshape(-1, 3)
            assert np.array_equal(rgb, pal[np.asarray(p)]), "P -> RGB is the palette lookup"
        if mode in ("RGBA", "LA"):
            a = np.asarray(Image.open(path))
            exp = a[..., :3] if mode == "RGBA" else np.repeat(a[..., :1], 3, -1)
            assert np.array_equal(rgb, exp), "alpha is dropped, not composited"
        h, w = rgb.shape[:2]
        entry = {"mode": mode, "format": fmt, "height": h, "width": w, "rgb": u8_list(rgb)}
        entry.update(extra)
        if caught:
            entry["convert_warnings"] = [str(c.message) for c in caught]
        out[name] = entry
    return out


def bad_files_section(bad):
    """What Pillow (torchvision's default loader) raises for each bad file."""
    out = {}
    for name in bad:
        path = os.path.join(IMG_DIR, name)
        try:
            with open(path, "rb") as f:
                Image.open(f).convert("RGB")
            err = None
        except Exception as e:  # noqa: BLE001 - recorded, not handled
            err = "%s: %s" % (type(e).__name__, str(e).replace(path, name))
        assert err is not None, name
        out[name] = {"bytes": os.path.getsize(path), "pil_error": err}
    return out


def transform_cases():
    pil_img = Image.open(os.path.join(IMG_DIR, "rgb.png")).convert("RGB")
    img_u8 = F1.pil_to_tensor(pil_img)
    img_f = img_u8.float() / 255
    H, W = img_u8.shape[-2:]
    cases = []

    def add(name, op, params, fn, pil_fn=None, ref=None):
        u8 = fn(img_u8)
        f = fn(img_f)
        assert u8.dtype == torch.uint8 and f.dtype == torch.float32
        c = {"name": name, "op": op, "params": params, "height": int(u8.shape[-2]),
             "width": int(u8.shape[-1]), "u8": u8_list(u8), "f32": f32_list(f)}
        if pil_fn is not None:
            pil_out = F1.pil_to_tensor(pil_fn(pil_img))
            c["pil_u8"] = u8_list(pil_out)
        if ref is not None:  # the reference models, on the crop
            crop_u8, oh, ow = ref
            native = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")
            r_u8 = ref_resize(crop_u8.numpy(), oh, ow, "u8")
            if native:
                assert np.array_equal(r_u8, u8.numpy()), name + ": uint8 reference"
            r_f = ref_resize(crop_u8.numpy().astype(np.float64) / 255.0, oh, ow, "f")
            err = float(np.abs(r_f - f.numpy().astype(np.float64)).max())
            assert err < 2e-6, (name, err)
            c["f32_max_abs_diff_vs_float64_reference"] = err
            if pil_fn is not None:
                r_pil = ref_resize(crop_u8.numpy(), oh, ow, "pil")
                assert np.array_equal(r_pil, pil_out.numpy()), name + ": Pillow reference"
                c["pil_u8_vs_u8_differing_values"] = int((pil_out != u8).sum())
        cases.append(c)
        return c

    for top, left, h, w, size, tag in ((3, 5, 15, 20, [11, 13], "down"),
                                       (2, 1, 8, 6, [24, 17], "up"),
                                       (0, 0, H, W, [7, 9], "whole"),
                                       (4, 2, 12, 25, [12, 25], "same_size")):
        params = {"top": top, "left": left, "height": h, "width": w, "size": size,
                  "interpolation": "bilinear", "antialias": True}
        add("resized_crop_" + tag, "resized_crop", params,
            lambda x, a=(top, left, h, w, size): F2.resized_crop(
                x, *a, interpolation=BILINEAR, antialias=True),
            pil_fn=lambda p, a=(top, left, h, w, size): F1.resized_crop(
                p, *a, interpolation=BILINEAR),
            ref=(img_u8[:, top:top + h, left:left + w].contiguous(), size[0], size[1]))

    for size, tag in ((16, "16"), (40, "40"), ([10, 31], "10x31")):
        oh, ow = F2.resize(img_u8, size, interpolation=BILINEAR, antialias=True).shape[-2:]
        add("resize_" + tag, "resize", {"size": size, "interpolation": "bilinear",
                                        "antialias": True, "max_size": None},
            lambda x, s=size: F2.resize(x, s, interpolation=BILINEAR, antialias=True),
            ref=(img_u8.contiguous(), int(oh), int(ow)))

    for size in ([16, 16], [9, 30], [31, 31]):
        add("center_crop_%dx%d" % tuple(size), "center_crop", {"output_size": size},
            lambda x, s=size: F2.center_crop(x, s))
    add("horizontal_flip", "horizontal_flip", {}, F2.horizontal_flip)

    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    norm = F2.normalize(img_f, mean, std)
    normalize = {"mean": mean, "std": std, "input": "img_f", "height": H, "width": W,
                 "formula": "(x - float32(mean[c])) / float32(std[c]) in float32",
                 "data": f32_list(norm)}
    return {"input": {"file": "rgb.png", "height": H, "width": W}, "cases": cases}, normalize


def rrc_section():
    t = torchvision.transforms.RandomResizedCrop(224)
    import torchvision.transforms.v2 as v2
    return {"scale": [float(v) for v in t.scale], "ratio": [float(v) for v in t.ratio],
            "interpolation": str(t.interpolation.value), "antialias": t.antialias,
            "get_params_source": inspect.getsource(torchvision.transforms.RandomResizedCrop.get_params),
            "v2_make_params_source": inspect.getsource(v2.RandomResizedCrop.make_params)}


def image_folder_section():
    from torchvision.datasets import ImageFolder
    from torchvision.datasets.folder import IMG_EXTENSIONS

    tree = [
        "root_file.jpg",                 # not in a class folder: ignored
        "b_cls/img1.jpg", "b_cls/IMG0.JPG", "b_cls/zeta.png", "b_cls/notes.txt",
        "b_cls/anim.gif", "b_cls/B.jpeg", "b_cls/a.JPEG", "b_cls/photo.jpg.txt",
        "a_cls/x.jpeg", "a_cls/Y.PNG", "a_cls/sub/deep.jpg", "a_cls/sub/deeper/z.png",
        "a_cls/sub-x/w.jpg", "a_cls/sub_y/v.bmp", "a_cls/sub.z/u.webp", "a_cls/.hidden.jpg",
        "C_upper/one.webp", "C_upper/two.Tif", "C_upper/three.ppm", "C_upper/four.pgm",
        "C_upper/five.tiff",
    ]
    empty_dirs = ["a_cls/empty_sub"]
    tmp = tempfile.mkdtemp(prefix="imgfolder_")
    try:
        root = os.path.join(tmp, "root")
        for rel in tree:
            p = os.path.join(root, *rel.split("/"))
            os.makedirs(os.path.dirname(p), exist_ok=True)
            open(p, "wb").close()
        for d in empty_dirs:
            os.makedirs(os.path.join(root, *d.split("/")), exist_ok=True)
        ds = ImageFolder(root)
        samples = [[os.path.relpath(p, root).replace(os.sep, "/"), int(c)] for p, c in ds.samples]
        section = {
            "img_extensions": list(IMG_EXTENSIONS),
            "tree": tree, "empty_dirs": empty_dirs,
            "classes": list(ds.classes), "class_to_idx": dict(ds.class_to_idx),
            "samples": samples,
            "sorting": ("classes = sorted(entry.name for entry in os.scandir(root) if "
                        "entry.is_dir()): Python str order = code-point order (for ASCII: byte "
                        "order, upper case before lower case), so 'C_upper' < 'a_cls' < 'b_cls'; "
                        "class_to_idx is the index in that list. samples: for each class in that "
                        "order, for root, _, fnames in sorted(os.walk(class_dir, followlinks=True)): "
                        "for fname in sorted(fnames): keep os.path.join(root, fname) if "
                        "path.lower().endswith(any of IMG_EXTENSIONS). The directories are "
                        "therefore ordered by their whole path string, not depth-first: "
                        "'a_cls/sub' < 'a_cls/sub-x' < 'a_cls/sub.z' < 'a_cls/sub/deeper' < "
                        "'a_cls/sub_y' ('-' 0x2D, '.' 0x2E < '/' 0x2F < '_' 0x5F), and a "
                        "directory's own files come before its subdirectories' files. Hidden "
                        "files are included. A class folder with no valid file raises "
                        "FileNotFoundError (allow_empty=False); files directly in root are "
                        "ignored; files are not opened while listing."),
        }

        # Symlinks (a separate tree: a C++ test may skip it where links cannot be made)
        sroot = os.path.join(tmp, "sroot")
        outside = os.path.join(tmp, "outside")
        for rel in ("real_cls/a.jpg", "real_cls/b.png"):
            p = os.path.join(sroot, *rel.split("/"))
            os.makedirs(os.path.dirname(p), exist_ok=True)
            open(p, "wb").close()
        os.makedirs(outside)
        open(os.path.join(outside, "o.png"), "wb").close()
        links = [["link_cls", "real_cls"],                 # directory link as a class
                 ["real_cls/linked_sub", "../../outside"],  # directory link inside a class
                 ["real_cls/f_link.jpg", "a.jpg"],          # file link
                 ["real_cls/dangling.jpg", "missing.jpg"]]  # dangling file link
        for rel, target in links:
            os.symlink(target, os.path.join(sroot, *rel.split("/")))
        sds = ImageFolder(sroot)
        section["symlinks"] = ("Followed: class folders come from DirEntry.is_dir() (follows "
                               "links), os.walk(followlinks=True) descends into linked "
                               "directories, and file links (even dangling ones) are listed by "
                               "name like files; see symlink_example.")
        section["symlink_example"] = {
            "files": ["real_cls/a.jpg", "real_cls/b.png"],
            "outside_files": ["outside/o.png (next to the root, not in it)"],
            "links": links,
            "classes": list(sds.classes), "class_to_idx": dict(sds.class_to_idx),
            "samples": [[os.path.relpath(p, sroot).replace(os.sep, "/"), int(c)]
                        for p, c in sds.samples],
        }
    finally:
        shutil.rmtree(tmp)
    return section


NOTES = {
    "resize_output_size": (
        "torchvision.transforms.functional._compute_resized_output_size: size [s] (or int s): "
        "short, long = (w, h) if w <= h else (h, w); new_short = s; new_long = int(s * long / "
        "short) (Python float division, truncated); (max_size: if new_long > max_size: "
        "new_short, new_long = int(max_size * new_short / new_long), max_size); new_w, new_h = "
        "(new_short, new_long) if w <= h else (new_long, new_short). size [h, w]: exactly that. "
        "If (new_h, new_w) equals the input size the image is returned unchanged."),
    "center_crop": (
        "v2 center_crop_image: if crop_h > H or crop_w > W: zero-pad (value 0) left = (cw - W) // 2, "
        "top = (ch - H) // 2, right = (cw - W + 1) // 2, bottom = (ch - H + 1) // 2 (each only when "
        "that dimension is too small; 0 otherwise); if the padded image is the crop size, done. "
        "Then top = int(round((H' - ch) / 2.0)), left = int(round((W' - cw) / 2.0)) with Python's "
        "round (half to even: 3.5 -> 4, 6.5 -> 6) on the (padded) size H', W'."),
    "antialiased_bilinear": (
        "interpolate(mode='bilinear', align_corners=False, antialias=True), no scale factor. "
        "Separable: the width pass first (only if the width changes), then the height pass (only "
        "if the height changes), each over the other pass's output. Per axis (in -> out): scale = "
        "in / out; support = scale if scale >= 1 else 1; invscale = 1/scale if scale >= 1 else 1; "
        "for output i: center = scale * (i + 0.5); xmin = max(trunc(center - support + 0.5), 0); "
        "xsize = min(trunc(center + support + 0.5), in) - xmin (clamped to [0, 2*ceil(support)+1]); "
        "w[j] = max(0, 1 - |(xmin + j - center + 0.5) * invscale|), j < xsize; w /= sum(w). "
        "out[i] = sum_j w[j] * in[xmin + j]. float32 input: scale, center and weights in float32 "
        "(with some double intermediates), sum in float32, the width pass kept in float32. "
        "uint8 input on AVX2/AVX-512 (and arm64) CPUs (the native path; uint8_path says which one "
        "made this file): weights computed in double as above, then per axis precision p = the "
        "first p in 0..21 with int(0.5 + max_w * 2^(p+1)) >= 2^15 (max_w = the largest "
        "normalised weight of that axis; 22 if none), w16 = int(0.5 + w * 2^p) (int16); out = "
        "clamp((sum_j w16[j] * in[xmin + j] + 2^(p-1)) >> p, 0, 255) in int32, and the width "
        "pass's result is stored as uint8 before the height pass. Other CPUs (and CUDA) instead "
        "go through float32 and round half to even (torch.round) before the cast to uint8. "
        "Pillow (the pil_u8 field) uses the same weights with fixed p = 22 (int(0.5 + w * 2^22)), "
        "the same rounding, clamping and width-then-height order; that is the only difference."),
    "pil_to_rgb": (
        "Image.convert('RGB'): L -> (v, v, v); LA, RGBA -> alpha dropped (not composited); P -> "
        "palette lookup, the tRNS transparency dropped; I;16 (16-bit grey PNG) -> min(v, 255) "
        "replicated (clipped, not scaled); CMYK -> nk = 255 - K, X = clip(nk - muldiv255(C, nk)) "
        "with muldiv255(a, b) = (t + (t >> 8)) >> 8, t = a*b + 128. Pillow reads every CMYK JPEG "
        "as inverted (rawmode 'CMYK;I', Adobe convention, whether or not there is an Adobe "
        "marker) and writes CMYK JPEGs inverted: the samples libjpeg returns are 255 - C etc.; "
        "decoded[cmyk.jpg].cmyk holds the un-inverted values Pillow works with. JPEG: "
        "libjpeg-turbo defaults (JDCT_ISLOW, fancy upsampling). No EXIF orientation is applied "
        "by ImageFolder's loader."),
}


def main():
    good, bad = make_images()
    doc = {
        "generator": "tests/golden/make_image_golden.py",
        "versions": {"torch": torch.__version__, "torchvision": torchvision.__version__,
                     "PIL": PIL.__version__, "numpy": np.__version__,
                     "libjpeg_turbo": features.version_feature("libjpeg_turbo"),
                     "cpu_capability": torch.backends.cpu.get_cpu_capability()},
        "decoded": decoded_section(good),
        "bad_files": bad_files_section(bad),
    }
    transforms, normalize = transform_cases()
    native = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")
    transforms["source"] = ("torchvision.transforms.v2.functional (resized_crop, resize, "
                            "center_crop, horizontal_flip), InterpolationMode.BILINEAR, "
                            "antialias=True; pil_u8: torchvision.transforms.functional."
                            "resized_crop on the PIL image (Pillow's resize)")
    transforms["uint8_path"] = ("native int16 (AVX2/AVX-512)" if native else
                                "float32 then round half to even")
    doc["transforms"] = transforms
    doc["normalize_example"] = normalize
    doc["random_resized_crop_defaults"] = rrc_section()
    doc["image_folder"] = image_folder_section()
    doc["notes"] = NOTES
    with open(OUT, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print("wrote %s (%d bytes) and %d files in %s" % (OUT, os.path.getsize(OUT),
                                                       len(os.listdir(IMG_DIR)), IMG_DIR))


if __name__ == "__main__":
    sys.exit(main())
