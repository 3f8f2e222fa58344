#!/usr/bin/env python3
"""bench/ddp_projection checked against an independent reimplementation of its sums.

The parameter counts are torchvision's resnet50(num_classes=1000) and PyTorch's examples/mnist
Net; NCCL's times follow src/graph/tuning.cc (NVIDIA/nccl 5067397c) as written out here, and
cohort's ring and hierarchical times the textbook formulas with the tool's default links. Bad
arguments must exit non-zero naming the argument.

    test_ddp_projection.py BIN
"""
import math
import re
import subprocess
import sys

tool = sys.argv[1]
fail = 0


def check(name, ok):
    global fail
    print(("ok    " if ok else "FAIL  ") + name)
    fail |= not ok


def nccl_ring(b, p, n):
    alg_bw = 12.0 * p / (2 * (p - 1))
    lat = 8.4 + (2 * (p - 1) - 2 * (n - 1)) * 3.4 + 2 * (n - 1) * 14.0
    if b / (2 * p) >= 64:
        lat *= 1.4
    return lat + b / (1000 * alg_bw)


TREE_FACTOR = [.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9]


def nccl_tree(b, p, n):
    bw = min(12.0 * 0.92, 72.0) / 2
    log_size = int(b) >> 6
    if log_size > 0 and log_size.bit_length() - 1 < 23:
        bw *= TREE_FACTOR[log_size.bit_length() - 1]
    return 8.4 + 2 * ((p // n - 1) * 4.0 + int(math.log2(n)) * 14.0) + b / (1000 * bw)


INTRA = (0.3446, 0.117283e-3)  # us, us per byte
INTER = (14.0, 1e-3 / 12.0)


def ring(link, b, p):
    return 0 if p <= 1 else 2 * (p - 1) * link[0] + 2 * (p - 1) / p * b * link[1]


def doubling(link, b, p):
    return 0 if p <= 1 else math.ceil(math.log2(p)) * (link[0] + b * link[1])


def flat_doubling(b, p, n):
    """Recursive doubling over ranks placed host by host: distances below the ranks per host stay
    on the host; the others cross with all of a host's ranks sharing its link."""
    if n == 1:
        return doubling(INTRA, b, p)
    local = p // n
    steps = [1 << k for k in range(math.ceil(math.log2(p)))]
    return sum(INTER[0] + local * b * INTER[1] if d >= local else INTRA[0] + b * INTRA[1] for d in steps)


def hier(b, p, n):
    return ring(INTRA, b, p // n) + min(ring(INTER, b, n), doubling(INTER, b, n)) + INTRA[0] + b * INTRA[1]


def run(*args):
    r = subprocess.run([tool, *args], capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


rc, out = run("--model", "resnet50", "--model", "mnist_net", "--ranks", "8,64,4096")
check(f"runs (exit {rc})", rc == 0)
check("says what it prints is modelled", "MODELLED, not measured" in out)
blocks = [b.lstrip("# ") for b in out.split("\n\n")[1:]]
for name, params in (("resnet50", 25557032), ("mnist_net", 1199882)):
    block = next((b for b in blocks if b.startswith(name + ":")), "")
    m = re.search(r": (\d+) parameters", block)
    check(f"{name}: {m and m[1]} parameters (torch: {params})", bool(m) and int(m[1]) == params)
    sizes = [float(x) for x in re.search(r"bucket bytes: ([\d ]+)", block)[1].split()]
    check(f"{name}: {len(sizes)} buckets hold every gradient ({sum(sizes):.0f} B)", sum(sizes) == 4 * params)
    check(f"{name}: bucket 0 at most 1 MiB, the rest at most 25 MiB or one parameter",
          sizes[0] <= 1 << 20 and all(s <= 25 << 20 or s == max(sizes) for s in sizes[1:]))
    for row in re.findall(r"^ *(\d+) +(\d+) \|(.*)$", block, re.M):
        p, n = int(row[0]), int(row[1])
        cols = row[2].replace("|", " ").split()
        got = {"ring": float(cols[0]), "rd": float(cols[1]), "hier": cols[3]}
        want_ring = sum(ring(INTER if n > 1 else INTRA, b, p) for b in sizes) / 1e3
        check(f"{name} {p} ranks: cohort ring {got['ring']} ms (recomputed {want_ring:.2f})",
              abs(got["ring"] - want_ring) <= 0.006 + 1e-4 * want_ring)
        want_rd = sum(flat_doubling(b, p, n) for b in sizes) / 1e3
        check(f"{name} {p} ranks: cohort rd {got['rd']} ms (recomputed {want_rd:.2f})",
              abs(got["rd"] - want_rd) <= 0.006 + 1e-4 * want_rd)
        if n == 1:
            check(f"{name} {p} ranks, one host: no hier and no NCCL figure", cols[3] == "nan" and "-" in cols[6:])
            continue
        want_hier = sum(hier(b, p, n) for b in sizes) / 1e3
        check(f"{name} {p} ranks: cohort hier {got['hier']} ms (recomputed {want_hier:.2f})",
              abs(float(got["hier"]) - want_hier) <= 0.006 + 1e-4 * want_hier)
        r = sum(nccl_ring(b, p, n) for b in sizes) / 1e3
        t = sum(nccl_tree(b, p, n) for b in sizes) / 1e3
        best = sum(min(nccl_ring(b, p, n), nccl_tree(b, p, n)) for b in sizes) / 1e3
        got_n = [float(x) for x in cols[6:9]]
        check(f"{name} {p} ranks: NCCL ring/tree/best {got_n} ms (recomputed {r:.2f} {t:.2f} {best:.2f})",
              all(abs(a - b) <= 0.006 + 1e-4 * b for a, b in zip(got_n, (r, t, best))))

rc, out = run("--model", "mnist_net", "--ranks", "64", "--backward-ms", "5")
check("--backward-ms adds the exposed columns", rc == 0 and "exp:pick" in out)

for args, says in ((("--model", "vgg16"), "--model 'vgg16': known models are resnet50 and mnist_net"),
                   (("--ranks", "12"), "--ranks 12 is not a whole number of hosts of 8"),
                   (("--ranks", "8,x"), "--ranks 'x' is not a positive number"),
                   (("--inter-gbyte-s", "0"), "--inter-gbyte-s '0' is not a positive number"),
                   (("--cost-model", "/nonexistent/m.txt"), "/nonexistent/m.txt: cannot read it")):
    rc, out = run(*args)
    check(f"bad input {' '.join(args)}: exit {rc}, says '{says}'", rc != 0 and says in out)
sys.exit(fail)
