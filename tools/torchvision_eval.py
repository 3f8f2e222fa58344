"""Evaluates a cohort checkpoint with torchvision's own model: loads MODEL_FILE (a safetensors
model file from classify's --output-dir, the zoo's --model-folder or --save-model) into
torchvision.models.<MODEL>(num_classes=K) with strict=True and prints Acc@1 and Acc@5 on
ROOT/val/ read by torchvision.datasets.ImageFolder, with the evaluation transforms of the
reference recipe on float tensors (cohort's path: decode, to float in [0, 1], Resize(resize,
bilinear, antialias), CenterCrop(crop), Normalize with ImageNet's statistics), in train.py's
words ("Test:  Acc@1 .. Acc@5 ..").

    .venv-peers/bin/python tools/torchvision_eval.py out/model_3.safetensors resnet18 my_images \\
        --resize 36 --crop 32
"""
import argparse
import json
import struct
import sys

import torch
import torchvision

try:  # PyPI's safetensors (.venv-peers); Debian 12 packages none: the format read by hand
    from safetensors.torch import load_file
except ImportError:
    def load_file(path):
        dtypes = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64,
                  "I32": torch.int32, "BF16": torch.bfloat16, "F16": torch.float16,
                  "U8": torch.uint8}
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
            data = bytearray(f.read())
        out = {}
        for name, t in header.items():
            if name == "__metadata__":
                continue
            a, e = t["data_offsets"]
            flat = torch.frombuffer(data[a:e], dtype=dtypes[t["dtype"]]) if e > a else \
                torch.empty(0, dtype=dtypes[t["dtype"]])
            out[name] = flat.reshape(t["shape"]).clone()
        return out

p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
p.add_argument("model_file")
p.add_argument("model", help="a torchvision.models name: resnet18, resnet50, ...")
p.add_argument("root", help="the image folder (ROOT/val/<class>/...)")
p.add_argument("--resize", type=int, default=256)
p.add_argument("--crop", type=int, default=224)
p.add_argument("--batch-size", type=int, default=100)
a = p.parse_args()

try:  # torchvision >= 0.15
    from torchvision.transforms import v2
    transform = v2.Compose([
        v2.ToDtype(torch.float32, scale=True),
        v2.Resize(a.resize, interpolation=v2.InterpolationMode.BILINEAR, antialias=True),
        v2.CenterCrop(a.crop),
        v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    read = lambda path: torchvision.io.decode_image(path, mode=torchvision.io.ImageReadMode.RGB)
except ImportError:  # Debian 12's 0.14: the same ops on tensors
    from torchvision import transforms as T
    transform = T.Compose([
        T.ConvertImageDtype(torch.float32),
        T.Resize(a.resize, interpolation=T.InterpolationMode.BILINEAR, antialias=True),
        T.CenterCrop(a.crop),
        T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    read = lambda path: torchvision.io.read_image(path, mode=torchvision.io.ImageReadMode.RGB)
val = torchvision.datasets.ImageFolder(f"{a.root}/val", loader=read, transform=transform)
state = load_file(a.model_file)
model = getattr(torchvision.models, a.model)(num_classes=len(val.classes))
try:
    model.load_state_dict(state, strict=True)
except RuntimeError as e:
    sys.exit(f"torchvision_eval: {a.model_file} does not load into torchvision.models.{a.model}: {e}")
model.eval()
top1 = top5 = n = 0
with torch.inference_mode():
    for x, y in torch.utils.data.DataLoader(val, batch_size=a.batch_size):
        out = model(x)
        top = out.topk(min(5, out.shape[1]), dim=1).indices
        top1 += (top[:, 0] == y).sum().item()
        top5 += (top == y[:, None]).any(dim=1).sum().item()
        n += len(y)
print(f"torchvision.models.{a.model} loaded {a.model_file} with strict=True; {n} images of {a.root}/val")
print(f"Test:  Acc@1 {100.0 * top1 / n:.3f} Acc@5 {100.0 * top5 / n:.3f}")
