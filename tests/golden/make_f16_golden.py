#!/usr/bin/python3
"""Writes tests/golden/f16.json: PyTorch's float32 <-> float16 conversions, as digests, for
tests/test_dtype_f16.cpp (cohort::float_to_f16 / f16_to_float).

    /usr/bin/python3 tests/golden/make_f16_golden.py   # Debian's python3-torch (PyTorch 1.13 CPU)

The inputs are given by formulas that the C++ test repeats, so only digests are committed:
  to_float: every one of the 65536 f16 bit patterns, in order, widened to float32;
  to_f16:   for every finite f16 value v >= 0 below the largest (bit patterns 0 .. 0x7bfe) and its
            successor w: v, the midpoint m = (v + w) / 2 (exact in float32) and the float32
            neighbours of m just below and just above it; then the same four with the sign bit
            set. The results for SPECIALS (float32 bit patterns) are kept one by one.
Digest: FNV-1a 64 over the results' bytes, little-endian (uint32 per float32, uint16 per f16),
in input order. The file also keeps a few results in clear, for a readable failure.
PyTorch turns every NaN into the canonical 0x7e00 (sign kept); cohort keeps the payload's upper
bits as x86's F16C does, so the test compares NaN specials by NaN-ness and sign only.
"""
import json
import os
import struct

import torch

SPECIALS = [
    0x00000000, 0x80000000,  # +0, -0
    0x00000001, 0x807fffff,  # float32 subnormals: round to +-0
    0x33000000, 0x33000001,  # 2^-25 (half the smallest f16 subnormal: tie to 0), just above
    0x337fffff, 0x33800000,  # just below 2^-24, 2^-24 (smallest f16 subnormal)
    0x387fc000, 0x387fe000,  # around 2^-14 (the subnormal/normal boundary)
    0x477fe000, 0x477fefff, 0x477ff000,  # 65504 (largest f16), just below 65520, 65520 (-> inf)
    0x4f000000, 0x7f7fffff,  # 2^31, largest float32
    0x7f800000, 0xff800000,  # +-inf
    0x7fc00000, 0xffc00000, 0x7f800001, 0x7fbfffff,  # NaNs (quiet, signalling, payloads)
]


def fnv1a64(data: bytes) -> str:
    h = 0xcbf29ce484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xffffffffffffffff
    return "%016x" % h


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def main():
    all_h = torch.arange(0, 65536, dtype=torch.int32).to(torch.int16)
    widened = all_h.view(torch.float16).to(torch.float32)
    # The bits themselves (a NaN's payload would not survive a trip through Python floats).
    wid_bits = [int(x) & 0xffffffff for x in widened.view(torch.int32).tolist()]
    inputs = []
    for sign in (0, 0x80000000):
        for h in range(0, 0x7bff):
            v = wid_bits[h]
            w = wid_bits[h + 1]
            fv = struct.unpack("<f", struct.pack("<I", v))[0]
            fw = struct.unpack("<f", struct.pack("<I", w))[0]
            m = f32_bits((fv + fw) / 2)
            assert struct.unpack("<f", struct.pack("<I", m))[0] == (fv + fw) / 2
            inputs += [v | sign, m | sign, (m - 1) | sign, (m + 1) | sign]
    formula_count = len(inputs)
    inputs += SPECIALS
    x = torch.tensor([i if i < 0x80000000 else i - 0x100000000 for i in inputs], dtype=torch.int32)
    out = x.view(torch.float32).to(torch.float16).view(torch.int16).tolist()
    out = [o & 0xffff for o in out]
    doc = {
        "generator": "tests/golden/make_f16_golden.py, PyTorch " + torch.__version__,
        "to_float": {"count": 65536,
                     "fnv1a64": fnv1a64(b"".join(struct.pack("<I", b) for b in wid_bits)),
                     "samples": {"%04x" % h: "%08x" % wid_bits[h]
                                 for h in (0x0001, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0x7c00, 0x8001,
                                           0xfc00, 0x7e00)}},
        "to_f16": {"count": formula_count,
                   "fnv1a64": fnv1a64(b"".join(struct.pack("<H", o) for o in out[:formula_count])),
                   "specials": {"%08x" % i: "%04x" % o
                                for i, o in zip(SPECIALS, out[len(out) - len(SPECIALS):])}},
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "f16.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
