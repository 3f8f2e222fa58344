# The PyTorch DDP script examples/custom_ddp.cpp mirrors (and whose length it is measured against):
#   torchrun --nproc-per-node 2 examples/custom_ddp_torch.py
import os
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from torchvision import datasets, transforms

dist.init_process_group("gloo")
torch.manual_seed(1)
model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
ddp = DDP(model)
tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.2860,), (0.3530,))])
root = os.environ.get("FASHION_MNIST_ROOT", "data")
train_set = datasets.FashionMNIST(root, train=True, download=False, transform=tf)
test_set = datasets.FashionMNIST(root, train=False, download=False, transform=tf)
train = DataLoader(train_set, batch_size=64, sampler=DistributedSampler(train_set))
test = DataLoader(test_set, batch_size=1000)
opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()
for x, y in train:
    opt.zero_grad()
    loss_fn(ddp(x), y).backward()
    opt.step()
if dist.get_rank() == 0:
    ddp.eval()
    correct = 0
    with torch.no_grad():
        for x, y in test:
            correct += (ddp(x).argmax(1) == y).sum().item()
    print(f"test accuracy {100 * correct / len(test_set):.2f}%")
    torch.save(model.state_dict(), "custom_ddp.pt")
dist.destroy_process_group()
