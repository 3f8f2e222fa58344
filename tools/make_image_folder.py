#!/usr/bin/python3
"""Makes an image folder in torchvision's ImageFolder layout (ROOT/train/<class>/<file>,
ROOT/val/<class>/<file>) from what this machine has, for the data-loading benchmarks.

    # Fashion-MNIST (Debian's dataset-fashion-mnist): 28x28 greyscale PNGs, the first N per class
    # of the train split into train/, the first M per class of the test split into val/ (default all)
    /usr/bin/python3 tools/make_image_folder.py fashion-mnist /tmp/fmnist
    /usr/bin/python3 tools/make_image_folder.py fashion-mnist /tmp/fmnist-small --per-class 100 --val-per-class 20

    # synthetic photo-like JPEGs (quality 90), each side drawn uniformly from [min-side, max-side]
    /usr/bin/python3 tools/make_image_folder.py synthetic /tmp/synth --classes 10 \\
        --train-per-class 40 --val-per-class 10 --seed 1
    /usr/bin/python3 tools/make_image_folder.py synthetic /tmp/synth-mixed --classes 100 \\
        --train-per-class 100 --val-per-class 10 --min-side 200 --max-side 600 --png-fraction 0.1 --force

Fashion-MNIST class folders are named after the classes ("T-shirt_top", "Trouser", ...,
"Ankle_boot"); files are <index in the IDX file, 5 digits>.png. Note that ImageFolder numbers
classes in sorted order of folder names, so its labels are not Fashion-MNIST's label numbers
("Ankle_boot" is 0 there). Synthetic class folders are class_000, class_001, ...; files are
<index, 5 digits>.jpg (or .png for the --png-fraction share).

Synthetic images are smooth random fields: a multi-octave luminance texture, a low-frequency
colour field, a few soft-edged elliptical blobs and a gradient, plus mild pixel noise, tinted by
a class-dependent hue (so the classes are learnable from colour). At quality 90 a 400x400 image
is a few tens of KB, about what a photo of that size is. Output is a function of --seed and the
numbers alone (each image has its own random stream), whatever --jobs is.

OUT must not exist or be empty; --force writes into a non-empty OUT after deleting OUT/train and
OUT/val (nothing else in OUT is touched). Needs Debian's python3-numpy and python3-pil. Ends with
one summary line: files, classes, bytes, seconds.
"""
import argparse
import colorsys
import gzip
import multiprocessing
import os
import shutil
import struct
import sys
import time

PROG = "make_image_folder"

FASHION_CLASSES = ["T-shirt_top", "Trouser", "Pullover", "Dress", "Coat",
                   "Sandal", "Shirt", "Sneaker", "Bag", "Ankle_boot"]
FASHION_DIR = "/usr/share/datasets/fashion-mnist"


class Failure(Exception):
    """A problem with the input or the arguments: reported as one line, exit status 1."""


def need_modules():
    try:
        import numpy  # noqa: F401
        from PIL import Image  # noqa: F401
    except ImportError as e:
        raise Failure(f"{e.name} is missing: run with Debian's /usr/bin/python3 and "
                      "apt-get install python3-numpy python3-pil")


# ---------------------------------------------------------------- output folder

def prepare_out(out, force):
    if os.path.exists(out):
        if not os.path.isdir(out):
            raise Failure(f"OUT {out} exists and is not a directory")
        if os.listdir(out):
            if not force:
                raise Failure(f"OUT {out} exists and is not empty (pass --force to replace its "
                              "train/ and val/)")
            for sub in ("train", "val"):
                p = os.path.join(out, sub)
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p)
                elif os.path.lexists(p):
                    os.remove(p)
    os.makedirs(out, exist_ok=True)


def tree_bytes(out):
    files = total = 0
    for sub in ("train", "val"):
        for dirpath, _, names in os.walk(os.path.join(out, sub)):
            for n in names:
                files += 1
                total += os.path.getsize(os.path.join(dirpath, n))
    return files, total


def human(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n:.0f} B"
        n /= 1024.0


# ---------------------------------------------------------------- Fashion-MNIST

def read_idx(path, want_magic, ndim):
    """The array in one gzipped IDX file (uint8 data), checking magic number and size."""
    import numpy as np
    if not os.path.isfile(path):
        raise Failure(f"Fashion-MNIST file {path} is missing (apt-get install dataset-fashion-mnist, "
                      "or pass --data DIR)")
    try:
        with gzip.open(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise Failure(f"cannot read {path}: {e}")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise Failure(f"{path}: too short for an IDX header")
    magic = struct.unpack(">I", data[:4])[0]
    if magic != want_magic:
        raise Failure(f"{path}: IDX magic 0x{magic:08x}, expected 0x{want_magic:08x}")
    dims = struct.unpack(f">{ndim}I", data[4:header])
    count = 1
    for d in dims:
        count *= d
    if len(data) - header != count:
        raise Failure(f"{path}: {len(data) - header} data bytes, dimensions {dims} need {count}")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims)


def first_per_class(labels, n, split, arg):
    """Indices of the first n samples of each class (all when n is None), in file order."""
    import numpy as np
    picked = []
    for c in range(len(FASHION_CLASSES)):
        idx = np.flatnonzero(labels == c)
        if n is not None:
            if n > len(idx):
                raise Failure(f"{arg} {n}: the {split} split has only {len(idx)} images of class "
                              f"{FASHION_CLASSES[c]}")
            idx = idx[:n]
        picked.append(idx)
    return picked


def fashion_mnist(a):
    from PIL import Image
    counts = {}  # split -> (images, indices per class)
    for split, prefix, n, arg in (("train", "train", a.per_class, "--per-class"),
                                  ("val", "t10k", a.val_per_class, "--val-per-class")):
        images = read_idx(os.path.join(a.data, f"{prefix}-images-idx3-ubyte.gz"), 0x803, 3)
        labels = read_idx(os.path.join(a.data, f"{prefix}-labels-idx1-ubyte.gz"), 0x801, 1)
        if images.shape[0] != labels.shape[0]:
            raise Failure(f"{a.data}/{prefix}-*: {images.shape[0]} images but {labels.shape[0]} labels")
        if labels.max(initial=0) >= len(FASHION_CLASSES):
            raise Failure(f"{a.data}/{prefix}-labels-idx1-ubyte.gz: label {labels.max()} out of range")
        counts[split] = (images, first_per_class(labels, n, prefix, arg))
    prepare_out(a.out, a.force)  # only once every argument has been checked against the files
    for split, (images, picked) in counts.items():
        for c, idx in enumerate(picked):
            d = os.path.join(a.out, split, FASHION_CLASSES[c])
            os.makedirs(d, exist_ok=True)
            for i in idx:
                Image.fromarray(images[i], mode="L").save(os.path.join(d, f"{i:05d}.png"))
    return len(FASHION_CLASSES)


# ---------------------------------------------------------------- synthetic

SPLIT_ID = {"train": 0, "val": 1}


def class_tint(k, classes):
    """An RGB offset (-1..1 per channel) for class k: hues spread round the colour wheel, with
    lightness and saturation varied too so that many classes stay distinguishable."""
    h = (k * 0.618033988749895) % 1.0 if classes > 12 else k / classes
    light = 0.5 + 0.12 * ((k // 12) % 3 - 1) if classes > 12 else 0.5
    r, g, b = colorsys.hls_to_rgb(h, light, 0.85)
    return (2 * r - 1, 2 * g - 1, 2 * b - 1)


def upsample(small, w, h):
    """Bicubic resize of a float32 2-D array to (h, w) through PIL's 'F' mode."""
    import numpy as np
    from PIL import Image
    return np.asarray(Image.fromarray(small, mode="F").resize((w, h), Image.BICUBIC))


def synth_pixels(rng, w, h, tint):
    """One photo-like HxWx3 uint8 image."""
    import numpy as np
    f32 = np.float32
    # luminance: octaves of smooth noise, coarse ones strongest (roughly 1/f like photos)
    lum = np.zeros((h, w), f32)
    for cell, amp in ((128, 1.0), (48, 0.55), (16, 0.3), (5, 0.16), (2, 0.07)):
        small = rng.standard_normal((h // cell + 3, w // cell + 3)).astype(f32)
        lum += amp * upsample(small, w, h)
    # a gradient across the frame (light falling off one way)
    ang = rng.uniform(0, 2 * np.pi)
    ys = np.linspace(-1, 1, h, dtype=f32)[:, None]
    xs = np.linspace(-1, 1, w, dtype=f32)[None, :]
    lum += f32(rng.uniform(0.3, 1.0)) * (np.cos(ang) * xs + np.sin(ang) * ys)
    img = np.empty((h, w, 3), f32)
    img[:] = (lum * 38.0)[:, :, None]
    # low-frequency colour: each channel its own coarse field
    for c in range(3):
        small = rng.standard_normal((h // 96 + 3, w // 96 + 3)).astype(f32)
        img[:, :, c] += 22.0 * upsample(small, w, h)
    # a few soft-edged elliptical blobs ("objects") of random colour, leaning to the class tint
    tint = np.asarray(tint, f32)
    for _ in range(int(rng.integers(2, 6))):
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        ry, rx = rng.uniform(0.08, 0.35) * h, rng.uniform(0.08, 0.35) * w
        theta = rng.uniform(0, np.pi)
        edge = rng.uniform(4, 20)  # sharpness of the rim
        colour = (rng.uniform(-70, 70, 3) + 45 * tint).astype(f32)
        # only the blob's bounding box (the mask is 0 beyond 1.06 radii)
        ext_x = 1.1 * np.hypot(rx * np.cos(theta), ry * np.sin(theta))
        ext_y = 1.1 * np.hypot(rx * np.sin(theta), ry * np.cos(theta))
        x0, x1 = max(0, int(cx - ext_x)), min(w, int(cx + ext_x) + 1)
        y0, y1 = max(0, int(cy - ext_y)), min(h, int(cy + ext_y) + 1)
        if x0 >= x1 or y0 >= y1:
            continue
        yy = (np.arange(y0, y1, dtype=f32) - f32(cy))[:, None]
        xx = (np.arange(x0, x1, dtype=f32) - f32(cx))[None, :]
        u = (xx * f32(np.cos(theta) / rx) + yy * f32(np.sin(theta) / rx))
        v = (yy * f32(np.cos(theta) / ry) - xx * f32(np.sin(theta) / ry))
        mask = (u * u + v * v) * f32(-edge) + f32(edge + 0.5)  # linear ramp across the rim
        np.clip(mask, 0, 1, out=mask)
        img[y0:y1, x0:x1] += mask[:, :, None] * colour
    # class tint over the whole frame, then mild sensor noise
    img += 128.0 + 40.0 * tint
    img += rng.standard_normal((h, w, 3), dtype=f32) * f32(3.0)
    np.clip(img, 0, 255, out=img)
    return img.astype(np.uint8)


def synth_one(job):
    """Writes one synthetic image; returns its (width, height)."""
    import numpy as np
    from PIL import Image
    out, seed, split, k, classes, i, cls_name, lo, hi, png_fraction = job
    rng = np.random.default_rng(np.random.SeedSequence([seed, SPLIT_ID[split], k, i]))
    w = int(rng.integers(lo, hi + 1))
    h = int(rng.integers(lo, hi + 1))
    as_png = rng.random() < png_fraction
    pix = synth_pixels(rng, w, h, class_tint(k, classes))
    path = os.path.join(out, split, cls_name, f"{i:05d}.png" if as_png else f"{i:05d}.jpg")
    im = Image.fromarray(pix, mode="RGB")
    if as_png:
        im.save(path, format="PNG")
    else:
        im.save(path, format="JPEG", quality=90)
    return w, h


def synthetic(a):
    width = max(3, len(str(a.classes - 1)))
    names = [f"class_{k:0{width}d}" for k in range(a.classes)]
    prepare_out(a.out, a.force)
    jobs = []
    for split, n in (("train", a.train_per_class), ("val", a.val_per_class)):
        for k, name in enumerate(names):
            os.makedirs(os.path.join(a.out, split, name), exist_ok=True)
            for i in range(n):
                jobs.append((a.out, a.seed, split, k, a.classes, i, name,
                             a.min_side, a.max_side, a.png_fraction))
    jobs_n = min(a.jobs, max(1, len(jobs)))
    if jobs_n > 1:
        with multiprocessing.Pool(jobs_n) as pool:
            sizes = pool.map(synth_one, jobs, chunksize=max(1, len(jobs) // (jobs_n * 8)))
    else:
        sizes = [synth_one(j) for j in jobs]
    if sizes:
        a.mean_w = sum(s[0] for s in sizes) / len(sizes)
        a.mean_h = sum(s[1] for s in sizes) / len(sizes)
    return a.classes


# ---------------------------------------------------------------- arguments

def count_arg(name, allow_zero=True):
    def parse(s):
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} wants a whole number, got '{s}'")
        if v < 0 or (v == 0 and not allow_zero):
            raise argparse.ArgumentTypeError(
                f"{name} must be {'>= 0' if allow_zero else '>= 1'}, got {v}")
        return v
    return parse


def fraction_arg(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--png-fraction wants a number, got '{s}'")
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"--png-fraction must be within [0, 1], got {v}")
    return v


def parse_args(argv):
    paras = __doc__.split("\n\n")
    ap = argparse.ArgumentParser(prog=PROG, description=paras[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Examples:\n" + "\n\n".join(paras[1:3]))
    sub = ap.add_subparsers(dest="source", required=True, metavar="{fashion-mnist,synthetic}")
    fm = sub.add_parser("fashion-mnist", help="PNGs from Debian's dataset-fashion-mnist")
    fm.add_argument("out", metavar="OUT", help="folder to make (must not exist or be empty)")
    fm.add_argument("--per-class", type=count_arg("--per-class"), default=None, metavar="N",
                    help="first N images per class of the train split (default: all, 6000)")
    fm.add_argument("--val-per-class", type=count_arg("--val-per-class"), default=None,
                    metavar="M", help="first M images per class of the test split (default: all, 1000)")
    fm.add_argument("--data", default=FASHION_DIR, help=f"IDX files' folder (default {FASHION_DIR})")
    sy = sub.add_parser("synthetic", help="photo-like JPEGs of random sizes")
    sy.add_argument("out", metavar="OUT", help="folder to make (must not exist or be empty)")
    sy.add_argument("--classes", type=count_arg("--classes", False), required=True, metavar="K",
                    help="class folders class_000 ... (each with its own tint)")
    sy.add_argument("--train-per-class", type=count_arg("--train-per-class"), required=True,
                    metavar="N")
    sy.add_argument("--val-per-class", type=count_arg("--val-per-class"), required=True,
                    metavar="M")
    sy.add_argument("--min-side", type=count_arg("--min-side", False), default=300, metavar="PX",
                    help="width and height are each drawn from [min-side, max-side] (default 300)")
    sy.add_argument("--max-side", type=count_arg("--max-side", False), default=500, metavar="PX",
                    help="(default 500)")
    sy.add_argument("--seed", type=count_arg("--seed"), default=0, metavar="S")
    sy.add_argument("--png-fraction", type=fraction_arg, default=0.0, metavar="F",
                    help="share of images saved as PNG instead of JPEG (default 0)")
    sy.add_argument("--jobs", type=count_arg("--jobs", False), default=os.cpu_count() or 1,
                    help="processes (default: all CPUs); the output does not depend on it")
    for p in (fm, sy):
        p.add_argument("--force", action="store_true",
                       help="write into a non-empty OUT, deleting its train/ and val/ first")
    a = ap.parse_args(argv)
    if a.source == "synthetic":
        if a.min_side > a.max_side:
            sy.error(f"--min-side {a.min_side} is larger than --max-side {a.max_side}")
        if a.max_side > 16384:
            sy.error(f"--max-side {a.max_side} is too large (at most 16384)")
        if a.train_per_class + a.val_per_class == 0:
            sy.error("--train-per-class and --val-per-class are both 0: nothing to make")
        if a.classes > 100000:
            sy.error(f"--classes {a.classes} is too many (at most 100000)")
    return a


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    t0 = time.perf_counter()
    try:
        need_modules()
        classes = fashion_mnist(a) if a.source == "fashion-mnist" else synthetic(a)
    except Failure as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    files, total = tree_bytes(a.out)
    secs = time.perf_counter() - t0
    extra = ""
    if getattr(a, "mean_w", None):
        extra = f", mean {a.mean_w:.0f}x{a.mean_h:.0f} px"
    mean = f", mean {human(total / files)}" if files else ""
    print(f"{PROG}: {files} files in {classes} classes ({a.source}) under {a.out}: "
          f"{total} bytes ({human(total)}{mean}{extra}), {secs:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
