"""Writes model_names.json: the state_dict (name, shape) lists of the model zoo's PyTorch
definitions (models/torch_models.py; torchvision for its ResNet family), which tests/models checks the C++
models against, entry by entry and in order.

    /usr/bin/python3 tests/golden/make_model_names.py   # Debian's python3-torch + torchvision
"""
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "models"))
import torch_models  # noqa: E402

CASES = [  # (model, classes, channels, size)
    ("cnn_a", 10, 3, 32),
    ("cnn_b", 10, 3, 32),
    ("resnet9", 10, 3, 32),
    ("resnet50", 10, 3, 32),
    ("resnet50", 200, 3, 64),
    ("resnet18", 10, 3, 32),
    ("resnet34", 100, 3, 32),
    ("resnet101", 10, 3, 32),
    ("resnet152", 10, 3, 32),
    ("wide_resnet50_2", 10, 3, 32),
]

out = []
for name, k, c, s in CASES:
    m = torch_models.make(name, k, c, s)
    out.append({"model": name, "num_classes": k, "in_channels": c, "image_size": s,
                "state": [[n, list(t.shape)] for n, t in m.state_dict().items()]})
with open(os.path.join(here, "model_names.json"), "w") as f:  # one state entry per line
    f.write("[\n" + ",\n".join(
        json.dumps({k: v for k, v in m.items() if k != "state"})[:-1] + ', "state": [\n' +
        ",\n".join(json.dumps(e) for e in m["state"]) + "]}" for m in out) + "\n]\n")
print("wrote", len(out), "models")
