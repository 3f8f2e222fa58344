#!/usr/bin/env python3
"""Runs torchvision's reference classification script (references/classification/train.py of the
pytorch/vision repository) on CPU under torchrun with the Gloo backend: the peer of
examples/classify.cpp in the side-by-side comparison. It exists because train.py only runs
distributed on CUDA GPUs, and its code must not be copied into this project: it is run, unchanged,
from a fetched copy beside the project, and this wrapper changes at run time only what ties it to
CUDA (utils.py of that folder hard-codes the NCCL backend, torch.cuda.set_device and a CUDA
tensor for its cross-rank sums; train.py hands DistributedDataParallel device_ids=[LOCAL_RANK]):

  torch.distributed.init_process_group  backend forced to "gloo" (utils.init_distributed_mode
                                         passes "nccl")
  torch.cuda.set_device                  a no-op (init_distributed_mode calls it with LOCAL_RANK)
  utils.reduce_across_processes          the same barrier + all_reduce of torch.tensor(val), on a
                                         CPU tensor instead of device="cuda" (evaluate() and
                                         MetricLogger.synchronize_between_processes use it)
  torch.nn.parallel.DistributedDataParallel  device_ids / output_device dropped for a module whose
                                         parameters are on the CPU (DDP refuses them there)
  torch.serialization                    argparse.Namespace allowlisted for weights_only loads:
                                         train.py saves its args in every checkpoint but reads
                                         --resume with torch.load(..., weights_only=True), which
                                         refuses that class ("Unsupported global: GLOBAL
                                         argparse.Namespace"), so --resume fails without it

Everything else is train.py's own: flags, data pipeline, model, optimizer, schedule, EMA, log
lines, checkpoints. Not supported on CPU by PyTorch itself: --sync-bn (DistributedDataParallel
refuses the converted model: "SyncBatchNorm layers only work with GPU modules"; past that,
SyncBatchNorm.forward raises "SyncBatchNorm expected input tensor to be on GPU or XPU or
privateuseone" for CPU input, and its kernels, e.g. aten::batch_norm_stats, have no CPU
implementation); --amp turns into fp32 with warnings (torch.cuda.amp's autocast and GradScaler
disable themselves without CUDA).

    VISION_REFS=/work/vision-refs/references/classification \\
    OMP_NUM_THREADS=1 .venv-peers/bin/torchrun --nproc_per_node 2 bench/torchvision_train.py \\
        --device cpu --data-path /work/imgs --model resnet18 -b 32 --epochs 4 ...

VISION_REFS (default /work/vision-refs/references/classification) is the folder holding train.py
and its siblings (presets.py, transforms.py, utils.py, sampler.py); every other argument goes to
train.py as it is. One line per rank on stderr says what was patched and the thread count.
"""
import argparse
import os
import runpy
import sys

import torch
import torch.distributed as dist

refs = os.path.abspath(os.environ.get("VISION_REFS", "/work/vision-refs/references/classification"))
train_py = os.path.join(refs, "train.py")
if not os.path.isfile(train_py):
    sys.exit(f"torchvision_train: no train.py in {refs} (set VISION_REFS to the fetched "
             "pytorch/vision repository's references/classification folder)")
sys.path.insert(0, refs)  # train.py imports presets, transforms, utils, sampler from its folder

_init_process_group = dist.init_process_group


def _gloo_init_process_group(*args, **kwargs):
    if args:  # backend is the first positional parameter
        args = ("gloo",) + args[1:]
    else:
        kwargs["backend"] = "gloo"
    return _init_process_group(*args, **kwargs)


dist.init_process_group = _gloo_init_process_group
torch.cuda.set_device = lambda device: None

import utils  # noqa: E402  (the fetched folder's utils.py: the module train.py will import)


def _cpu_reduce_across_processes(val):
    if not utils.is_dist_avail_and_initialized():
        return torch.tensor(val)
    t = torch.tensor(val)  # Gloo reduces CPU tensors; upstream puts this one on "cuda"
    dist.barrier()
    dist.all_reduce(t)
    return t


utils.reduce_across_processes = _cpu_reduce_across_processes

_DDP = torch.nn.parallel.DistributedDataParallel


class _CpuDDP(_DDP):
    def __init__(self, module, device_ids=None, output_device=None, *args, **kwargs):
        if all(p.device.type == "cpu" for p in module.parameters()):
            device_ids, output_device = None, None
        super().__init__(module, device_ids, output_device, *args, **kwargs)


torch.nn.parallel.DistributedDataParallel = _CpuDDP
torch.serialization.add_safe_globals([argparse.Namespace])

print(f"[torchvision_train] rank {os.environ.get('RANK', '0')}: {train_py} | gloo | "
      f"torch {torch.__version__} | {torch.get_num_threads()} intra-op threads "
      f"(OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')})", file=sys.stderr, flush=True)

sys.argv = [train_py] + sys.argv[1:]
runpy.run_path(train_py, run_name="__main__")
