#!/usr/bin/env python3
"""Reads the TensorBoard event file of a real `mnist_cnn --tensorboard DIR` run with TensorBoard's
own reader (EventAccumulator, from PyPI) and checks the curves against what the run printed.

  test_tensorboard.py MNIST_CNN_BINARY WORK_DIR
Exit 77 (skipped) when the tensorboard package is not importable, saying so.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

try:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
except ImportError as e:
    print(f"SKIP: TensorBoard's reader is not importable here ({e}); "
          "tools/setup.sh --peers installs it in .venv-peers")
    sys.exit(77)

binary, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
logdir = os.path.join(work, "tb")
run = subprocess.run([binary, "--epochs", "2", "--max-steps-per-epoch", "30", "--log-interval", "10",
                      "--clip-grad-norm", "100", "--tensorboard", logdir], capture_output=True, text=True, timeout=600)
print(run.stdout[-2000:], run.stderr[-2000:])
assert run.returncode == 0, f"mnist_cnn exited {run.returncode}"
accuracies = [float(a) / 100 for a in re.findall(r"Accuracy: \d+/\d+ \(([\d.]+)%\)", run.stdout)]
assert len(accuracies) == 2, run.stdout

files = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
assert len(files) == 1, files
acc = EventAccumulator(logdir)
acc.Reload()
tags = set(acc.Tags()["scalars"])
print("tags:", sorted(tags))
for tag in ["train/loss", "train/lr", "train/images_per_s", "epoch/loss", "epoch/images_per_s",
            "epoch/phase_ms_forward", "epoch/phase_ms_backward", "eval/accuracy", "eval/loss",
            "train/grad_norm"]:
    assert tag in tags, f"{tag} missing from {sorted(tags)}"
loss = acc.Scalars("train/loss")
assert [e.step for e in loss] == [10, 20, 30, 40, 50, 60], [e.step for e in loss]
lr = [e.value for e in acc.Scalars("train/lr")]
assert abs(lr[0] - 1.0) < 1e-6 and abs(lr[-1] - 0.7) < 1e-6, lr  # StepLR gamma 0.7 after epoch 1
got = [e.value for e in acc.Scalars("eval/accuracy")]
assert all(abs(g - a) < 1e-4 for g, a in zip(got, accuracies)), (got, accuracies)
print(f"TensorBoard read {len(tags)} curves; eval/accuracy {got} matches the printed {accuracies}")
