#!/usr/bin/env python3
"""Writes the committed seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/): small valid
inputs and near-misses, so that each fuzzer starts from the formats' real structure. Standard
library only. Run from anywhere: python3 tests/fuzz/make_seeds.py"""
import json
import os
import struct

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# IDX: magic 0x0000 | type 0x08 (u8) | ndims, big-endian dims, values.
def idx(dims, values, type_code=0x08):
    return bytes([0, 0, type_code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + bytes(values)


put("idx", "images_2x3x3", idx([2, 3, 3], range(18)))
put("idx", "labels_5", idx([5], [0, 1, 2, 3, 9]))
put("idx", "empty_dims", idx([0], []))
put("idx", "short_values", idx([4, 4], range(10)))
put("idx", "float_type", idx([2], [0] * 8, type_code=0x0D))

# CIFAR-10 binary batch: records of label byte + 3072 pixel bytes.
rec = lambda label: bytes([label]) + bytes((i * 7 + label) % 256 for i in range(3072))
put("cifar", "two_records", rec(3) + rec(9))
put("cifar", "bad_label", rec(11))
put("cifar", "partial_record", rec(1)[:1000])


# safetensors: u64 header length, JSON header, data.
def safetensors(header, data):
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


put("safetensors", "two_tensors", safetensors(
    {"__metadata__": {"step": "3"}, "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
     "b": {"dtype": "I64", "shape": [1], "data_offsets": [16, 24]}},
    struct.pack("<4f", 1, 2, 3, 4) + struct.pack("<q", 7)))
put("safetensors", "bf16_empty", safetensors(
    {"e": {"dtype": "BF16", "shape": [0, 3], "data_offsets": [0, 0]}}, b""))
put("safetensors", "overlap", safetensors(
    {"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
     "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}}, bytes(6)))


# Store frames: u32 length | payload; payload = command byte, fields (u32-length strings, i64s).
def frame(payload):
    return struct.pack("<I", len(payload)) + payload


def s(x):
    x = x.encode() if isinstance(x, str) else x
    return struct.pack("<I", len(x)) + x


hello = frame(b"\x06" + struct.pack("<II", 0x53484F43, 2) + s("fuzz"))
put("store", "hello_set_get", hello + frame(b"\x01" + s("k") + s(b"\x01\x02")) + frame(b"\x02" + s("k")))
put("store", "hello_add_check_wait", hello + frame(b"\x03" + s("n") + struct.pack("<q", 5)) +
    frame(b"\x04" + struct.pack("<I", 1) + s("n")) +
    frame(b"\x05" + struct.pack("<I", 2) + s("n") + s("m") + struct.pack("<q", 1)))
put("store", "wrong_token", frame(b"\x06" + struct.pack("<II", 0x53484F43, 2) + s("nope")))
put("store", "no_hello", frame(b"\x02" + s("k")))
