#!/usr/bin/env python3
"""Plots one or more cohort metrics files (JSON Lines written by --metrics FILE) into a PNG:
training loss and images/s against step, and test accuracy against epoch, one line per file.

    /usr/bin/python3 tools/plot_metrics.py run1.jsonl [run2.jsonl ...] -o curves.png

Needs Debian's python3-matplotlib. Lines that are not JSON objects are reported and skipped."""
import argparse
import json
import os
import sys


def load(path):
    train, evals = [], []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                print(f"plot_metrics: {path}:{n}: not JSON ({e}); skipped", file=sys.stderr)
                continue
            if row.get("kind") == "train":
                train.append(row)
            elif row.get("kind") == "eval":
                evals.append(row)
    return train, evals


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="metrics JSON Lines files")
    ap.add_argument("-o", "--output", default="metrics.png", help="PNG to write")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_metrics: needs matplotlib (apt-get install python3-matplotlib)")

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    plotted = 0
    for path in args.files:
        if not os.path.exists(path):
            sys.exit(f"plot_metrics: no such file: {path}")
        train, evals = load(path)
        label = os.path.basename(path)
        steps = [r["step"] for r in train if r.get("loss") is not None]
        if steps:
            axes[0].plot(steps, [r["loss"] for r in train if r.get("loss") is not None], label=label)
            ips = [(r["step"], r["images_per_s"]) for r in train if r.get("images_per_s")]
            if ips:
                axes[1].plot(*zip(*ips), label=label)
            plotted += 1
        acc = [(r["epoch"], 100.0 * r["accuracy"]) for r in evals if r.get("accuracy") is not None]
        if acc:
            axes[2].plot(*zip(*acc), marker="o", label=label)
    if plotted == 0:
        sys.exit("plot_metrics: no training rows (\"kind\": \"train\") in " + ", ".join(args.files))
    for ax, title, xl in zip(axes, ["training loss", "images/s", "test accuracy (%)"],
                             ["step", "step", "epoch"]):
        ax.set_title(title)
        ax.set_xlabel(xl)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output, dpi=100)
    print(f"plot_metrics: wrote {args.output}")


if __name__ == "__main__":
    main()
