#!/usr/bin/env python3
"""Bar charts of a cohort-swap run (its swap.csv, one row per run): median images/s per backend,
and median ms per step split into the wait for gradient all-reduces and the rest, one group of
bars per rank count; the spread over rounds as error bars (min to max).

    /usr/bin/python3 share/cohort/tools/plot_swap.py swap-results/swap.csv swap.png
    (cohort-swap runs it; needs Debian's python3-matplotlib)"""
import csv
import statistics
import sys

if len(sys.argv) != 3:
    sys.exit(__doc__)
try:
    import matplotlib
except ImportError:
    sys.exit("plot_swap.py: needs matplotlib (Debian: apt-get install python3-matplotlib)")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

cells = {}  # (label, ranks) -> rows, in first-seen order
with open(sys.argv[1]) as f:
    for row in csv.DictReader(f):
        try:
            cells.setdefault((row["label"], int(row["ranks"])), []).append(row)
        except (KeyError, ValueError) as e:
            sys.exit(f"plot_swap.py: {sys.argv[1]}: not a cohort-swap swap.csv ({e})")
if not cells:
    sys.exit(f"plot_swap.py: {sys.argv[1]}: no runs")
labels = list(dict.fromkeys(k[0] for k in cells))
ranks = sorted({k[1] for k in cells})


def col(rows, name):
    return [float(r[name]) for r in rows]


fig, ax = plt.subplots(1, 2, figsize=(12, 4))
width = 0.8 / len(labels)
for i, label in enumerate(labels):
    xs, ips, lo, hi, comm, rest = [], [], [], [], [], []
    for j, n in enumerate(ranks):
        rows = cells.get((label, n))
        if not rows:
            continue
        v = col(rows, "images_per_s")
        m = statistics.median(v)
        xs.append(j - 0.4 + width * (i + 0.5))
        ips.append(m)
        lo.append(m - min(v))
        hi.append(max(v) - m)
        c = statistics.median(col(rows, "comm_ms"))
        comm.append(c)
        rest.append(statistics.median(col(rows, "step_ms")) - c)
    color = f"C{i % 10}"
    ax[0].bar(xs, ips, width, yerr=[lo, hi], capsize=3, label=label, color=color)
    ax[1].bar(xs, rest, width, color=color, label=label)
    ax[1].bar(xs, comm, width, bottom=rest, color=color, alpha=0.45, hatch="//",
              label="comm wait (hatched)" if i == 0 else None)
for a, title in ((ax[0], "training images/s (median, min-max)"),
                 (ax[1], "ms per step (median)")):
    a.set_xticks(range(len(ranks)), [f"{n} ranks" for n in ranks])
    a.set_title(title)
ax[0].set_ylabel("images/s")
ax[1].set_ylabel("ms")
# Legends below the panels, clear of the bars.
ax[0].legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=4)
ax[1].legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=100)
print("wrote", sys.argv[2])
