"""The PyTorch definitions of cohort's model zoo (models/*.cpp are their C++ twins).

CNN-A, CNN-B and ResNet9 are defined here; ResNet-50 and the ViT are torchvision's own. Used by
tests/golden/make_model_names.py (state_dict names and shapes the C++ models must match) and by
the side-by-side benchmarks in bench/ (accuracy and throughput against the current PyTorch).
"""
import torch
from torch import nn


class CnnA(nn.Module):
    """Two conv blocks and two linear layers."""

    def __init__(self, num_classes=10, in_channels=3, image_size=32):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * (image_size // 4) ** 2, 256)
        self.fc2 = nn.Linear(256, num_classes)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


class CnnB(nn.Module):
    """VGG-style: three stages of two conv-bn-relu and a max-pool, then a two-layer classifier."""

    def __init__(self, num_classes=10, in_channels=3, image_size=32):
        super().__init__()
        layers, c = [], in_channels
        for width in (64, 128, 256):
            for _ in range(2):
                layers += [nn.Conv2d(c, width, 3, padding=1, bias=False), nn.BatchNorm2d(width),
                           nn.ReLU(inplace=True)]
                c = width
            layers.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*layers)
        s = image_size // 8
        self.classifier = nn.Sequential(nn.Linear(256 * s * s, 512), nn.ReLU(inplace=True),
                                        nn.Dropout(0.5), nn.Linear(512, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def conv_block(c_in, c_out, pool=False):
    layers = [nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True)]
    if pool:
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers)


class ResNet9(nn.Module):
    """The common fast CIFAR-10 ResNet9 (residuals after layer 1 and layer 3)."""

    def __init__(self, num_classes=10, in_channels=3, image_size=32):
        super().__init__()
        self.conv1 = conv_block(in_channels, 64)
        self.conv2 = conv_block(64, 128, pool=True)
        self.res1 = nn.Sequential(conv_block(128, 128), conv_block(128, 128))
        self.conv3 = conv_block(128, 256, pool=True)
        self.conv4 = conv_block(256, 512, pool=True)
        self.res2 = nn.Sequential(conv_block(512, 512), conv_block(512, 512))
        self.classifier = nn.Sequential(nn.MaxPool2d(image_size // 8), nn.Flatten(), nn.Dropout(0.2),
                                        nn.Linear(512, num_classes))

    def forward(self, x):
        out = self.conv2(self.conv1(x))
        out = self.res1(out) + out
        out = self.conv4(self.conv3(out))
        out = self.res2(out) + out
        return self.classifier(out)


def make(name, num_classes=10, in_channels=3, image_size=32):
    """The model cohort::models::make(name, ...) builds, in PyTorch."""
    if name == "cnn_a":
        return CnnA(num_classes, in_channels, image_size)
    if name == "cnn_b":
        return CnnB(num_classes, in_channels, image_size)
    if name == "resnet9":
        return ResNet9(num_classes, in_channels, image_size)
    import torchvision
    if name in ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "wide_resnet50_2"):
        m = getattr(torchvision.models, name)(num_classes=num_classes)
        if in_channels != 3:
            m.conv1 = nn.Conv2d(in_channels, 64, 7, 2, 3, bias=False)
        return m
    if name == "vit":
        return torchvision.models.VisionTransformer(image_size=image_size, patch_size=4, num_layers=6,
                                                    num_heads=8, hidden_dim=256, mlp_dim=512,
                                                    num_classes=num_classes)
    raise ValueError(f"unknown model {name!r}")
