#!/usr/bin/env python3
"""Writes sample.safetensors straight from the format's specification (8-byte little-endian
header length, JSON header, raw little-endian data), independently of cohort's C++ writer, so
the C++ reader is checked against a file it did not produce.

Run: /usr/bin/python3 tests/golden/make_safetensors_golden.py  (standard library only)
The values are what tests/train/test_safetensors.cpp expects."""
import json
import os
import struct

tensors = [
    # name, safetensors dtype, struct code, shape, values
    ("conv1.weight", "F32", "f", [2, 1, 1, 2], [0.5, -1.25, 3.0, 1e-3]),
    ("fc.bias", "F64", "d", [3], [1.0, -2.0, 0.125]),
    ("labels", "I64", "q", [2], [7, -3]),
    ("counts", "I32", "i", [2, 2], [1, 2, 3, 4]),
    ("mask", "U8", "B", [3], [0, 1, 255]),
    ("half", "BF16", "H", [2], [0x3F80, 0xC020]),  # bf16 1.0 and -2.5
    ("fp16", "F16", "e", [3], [1.0, -2.5, 65504.0]),  # IEEE half (struct's "e")
]

header = {"__metadata__": {"format": "pt", "epoch": "3"}}
blobs = []
offset = 0
for name, dtype, code, shape, values in tensors:
    blob = struct.pack("<%d%s" % (len(values), code), *values)
    header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
    blobs.append(blob)
    offset += len(blob)

h = json.dumps(header).encode()
h += b" " * ((8 - (8 + len(h)) % 8) % 8)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sample.safetensors")
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(h)))
    f.write(h)
    for b in blobs:
        f.write(b)
print("wrote", out, os.path.getsize(out), "bytes")
