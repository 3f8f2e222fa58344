#!/usr/bin/env python3
"""Bar charts of a backend_swap run: images/s, comm and overlap per step, all-reduce busbw.
    /usr/bin/python3 tools/plot_backend_swap.py swap.png.csv swap.png   (backend_swap --plot does this)"""
import csv
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

if len(sys.argv) != 3:
    sys.exit(__doc__)
rows = list(csv.DictReader(open(sys.argv[1])))
names = [r["backend"] for r in rows]
fig, ax = plt.subplots(1, 3, figsize=(13, 3.6))
ax[0].bar(names, [float(r["images_per_s"]) for r in rows])
ax[0].set_title("training images/s")
x = range(len(rows))
ax[1].bar([i - 0.2 for i in x], [float(r["comm_ms"]) for r in rows], 0.4, label="comm wait")
ax[1].bar([i + 0.2 for i in x], [float(r["overlap_ms"]) for r in rows], 0.4, label="overlapped")
ax[1].set_xticks(list(x), names)
ax[1].set_title("ms per step")
ax[1].legend()
ax[2].bar([i - 0.2 for i in x], [float(r["busbw_1m"]) for r in rows], 0.4, label="1 MiB")
ax[2].bar([i + 0.2 for i in x], [float(r["busbw_16m"]) for r in rows], 0.4, label="16 MiB")
ax[2].set_xticks(list(x), names)
ax[2].set_title("all-reduce busbw (GB/s)")
ax[2].legend()
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=100)
print("wrote", sys.argv[2])
