#!/usr/bin/env python3
"""PyTorch peer for cohort's image-folder data loading: torchvision's DataLoader over
torchvision.datasets.ImageFolder(ROOT/train) with the ImageNet training transforms of torchvision's
reference script (references/classification/presets.py, ClassificationPresetTrain with its
defaults and backend "pil", use_v2 False: RandomResizedCrop(224, BILINEAR, antialias=True),
RandomHorizontalFlip(0.5), PILToTensor, ConvertImageDtype(float), Normalize(ImageNet mean/std)).
No model: only the iteration of the loader is timed (decode + augment + collate).

    .venv-peers/bin/python bench/imagefolder_torch.py /tmp/synth --workers 2 --batch-size 32 \\
        --epochs 2 --warmup-batches 3

ROOT is what tools/make_image_folder.py makes. Prints one line per epoch, then
    RESULT images_per_s=<float> workers=<W> batch=<B> torch=<ver> torchvision=<ver>
where images/s counts the images of all epochs after the first K batches of the run, divided by
the seconds spent iterating the loader over them (the clock runs from the arrival of batch K to
the end of its epoch, then over each later epoch from creating its iterator to its last batch;
what happens between epochs is not timed). As in the reference script the sampler shuffles
and the last partial batch is kept; unlike it pin_memory is off (no accelerator here). Workers are
persistent when W > 0 and run one torch thread each (as does the main process, which does all the
work when W = 0); OMP_NUM_THREADS and OPENBLAS_NUM_THREADS are 1.
"""
import argparse
import os
import sys
import time

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"
import torch  # noqa: E402
import torchvision  # noqa: E402
from torchvision import transforms  # noqa: E402
from torchvision.transforms import InterpolationMode  # noqa: E402

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def train_transform(crop_size=224, auto_augment=None):
    """ClassificationPresetTrain(crop_size=224, auto_augment_policy=...) of the reference script
    with the PIL backend: the PIL image is cropped, resized, flipped (and augmented), then turned
    into a float tensor."""
    bilinear = InterpolationMode.BILINEAR
    aug = []
    if auto_augment == "ta_wide":
        aug = [transforms.TrivialAugmentWide(interpolation=bilinear)]
    elif auto_augment == "ra":
        aug = [transforms.RandAugment(interpolation=bilinear, magnitude=9)]
    elif auto_augment:
        aug = [transforms.AutoAugment(policy=transforms.AutoAugmentPolicy(auto_augment),
                                      interpolation=bilinear)]
    return transforms.Compose([
        transforms.RandomResizedCrop(crop_size, interpolation=bilinear, antialias=True),
        transforms.RandomHorizontalFlip(0.5),
        *aug,
        transforms.PILToTensor(),
        transforms.ConvertImageDtype(torch.float),
        transforms.Normalize(mean=MEAN, std=STD),
    ])


def one_thread(_worker_id):
    torch.set_num_threads(1)


def positive(name, minimum):
    def parse(s):
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} wants a whole number, got '{s}'")
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be >= {minimum}, got {v}")
        return v
    return parse


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", metavar="ROOT", help="image folder; ROOT/train/<class>/<image> is read")
    ap.add_argument("--workers", type=positive("--workers", 0), default=2, metavar="W")
    ap.add_argument("--batch-size", type=positive("--batch-size", 1), default=32, metavar="B")
    ap.add_argument("--epochs", type=positive("--epochs", 1), default=2, metavar="E")
    ap.add_argument("--warmup-batches", type=positive("--warmup-batches", 0), default=3,
                    metavar="K", help="batches at the start of epoch 1 left out of the timing")
    ap.add_argument("--seed", type=int, default=0, help="torch.manual_seed (shuffle and crops)")
    ap.add_argument("--auto-augment", choices=["ta_wide", "ra", "imagenet"], default=None,
                    help="after the flip, as the reference script's presets")
    a = ap.parse_args()

    train_dir = os.path.join(a.root, "train")
    if not os.path.isdir(train_dir):
        print(f"imagefolder_torch: {train_dir} is not a directory (make one with "
              "tools/make_image_folder.py)", file=sys.stderr)
        return 1
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    dataset = torchvision.datasets.ImageFolder(train_dir, transform=train_transform(auto_augment=a.auto_augment))
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=a.batch_size, shuffle=True, num_workers=a.workers,
        pin_memory=False, persistent_workers=a.workers > 0, drop_last=False,
        worker_init_fn=one_thread if a.workers > 0 else None)
    batches_per_epoch = len(loader)
    if a.warmup_batches >= batches_per_epoch * a.epochs:
        print(f"imagefolder_torch: --warmup-batches {a.warmup_batches} leaves nothing to time "
              f"({batches_per_epoch} batches per epoch x {a.epochs} epochs)", file=sys.stderr)
        return 1
    print(f"imagefolder_torch: {len(dataset)} images, {len(dataset.classes)} classes in {train_dir}; "
          f"workers {a.workers}, batch {a.batch_size}, {batches_per_epoch} batches/epoch, "
          f"warm-up {a.warmup_batches} batches; torch {torch.__version__}, "
          f"torchvision {torchvision.__version__}", flush=True)

    timed_images, timed_s = 0, 0.0
    seen_batches = 0
    for epoch in range(1, a.epochs + 1):
        epoch_images, epoch_timed_images = 0, 0
        t_epoch = time.perf_counter()
        t_clock = t_epoch if seen_batches >= a.warmup_batches else None
        for images, labels in loader:
            n = labels.shape[0]
            seen_batches += 1
            epoch_images += n
            if t_clock is None:
                if seen_batches == a.warmup_batches:
                    t_clock = time.perf_counter()  # the clock starts after the K-th batch
            else:
                epoch_timed_images += n
        t_end = time.perf_counter()
        epoch_timed_s = t_end - t_clock if t_clock is not None else 0.0
        timed_images += epoch_timed_images
        timed_s += epoch_timed_s
        rate = epoch_timed_images / epoch_timed_s if epoch_timed_s > 0 else float("nan")
        print(f"epoch {epoch}: {epoch_images} images in {t_end - t_epoch:.3f} s; timed "
              f"{epoch_timed_images} images in {epoch_timed_s:.3f} s = {rate:.1f} images/s",
              flush=True)

    rate = timed_images / timed_s if timed_s > 0 else float("nan")
    print(f"RESULT images_per_s={rate:.2f} workers={a.workers} batch={a.batch_size} "
          f"torch={torch.__version__} torchvision={torchvision.__version__}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
