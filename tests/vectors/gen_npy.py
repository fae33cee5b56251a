#!/usr/bin/env python3
"""Writes .npy files with numpy itself (np.save / np.lib.format.write_array) for tests/cli/npy_test.cpp.

--out DIR receives the .npy files and index.json:
  "read":   files read_npy must accept: {file, as (null or an mmtune dtype name), dtype (the Tensor's
            dtype), shape, values}. `values` are the elements in C order, as exact integers for integer
            types and as the bit patterns (unsigned integers) for float types. They are the Python lists
            the arrays were built from, never values read back from the files.
  "write":  np.save output of C-ordered arrays: write_npy of {dtype, shape, values} must produce exactly
            these bytes (narrow floats are saved as their uint16/uint8 bit patterns, as mmtune writes them).
  "reject": files numpy wrote that read_npy must refuse: {file, as, contains: [substrings of the message]}.
"""

import argparse
import json
import os
import random
import sys
import warnings

import ml_dtypes
import numpy as np

# mmtune dtype name -> (numpy storage dtype, width in bytes, kind) for the types numpy stores natively.
NUMPY_TYPES = {
    "int8": (np.int8, 1, "i"),
    "uint8": (np.uint8, 1, "u"),
    "int16": (np.int16, 2, "i"),
    "uint16": (np.uint16, 2, "u"),
    "int32": (np.int32, 4, "i"),
    "uint32": (np.uint32, 4, "u"),
    "int64": (np.int64, 8, "i"),
    "uint64": (np.uint64, 8, "u"),
    "float16": (np.float16, 2, "f"),
    "float32": (np.float32, 4, "f"),
    "float64": (np.float64, 8, "f"),
}
# Narrow floats mmtune writes as bit patterns.
BIT_TYPES = {
    "bfloat16": 2,
    "float8e4m3fn": 1,
    "float8e4m3fnuz": 1,
    "float8e5m2": 1,
    "float8e5m2fnuz": 1,
}
UINT_OF_WIDTH = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

# Bit patterns of special float values per width, from the IEEE layouts (not from numpy).
SPECIAL_FLOAT_BITS = {
    2: [0x0000, 0x8000, 0x3C00, 0xBC00, 0x7BFF, 0x0001, 0x03FF, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE5A],
    4: [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x7F7FFFFF, 0x00000001, 0x007FFFFF,
        0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFC12345],
    8: [0x0, 0x8000000000000000, 0x3FF0000000000000, 0xBFF0000000000000, 0x7FEFFFFFFFFFFFFF, 0x1,
        0x000FFFFFFFFFFFFF, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
        0x7FF0000000000001, 0xFFF8123456789ABC],
}


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def values_for(name, shape, seed):
    """Elements (C order) for `name`: exact ints for integer types, bit patterns for float types."""
    rng = random.Random(f"{name}/{shape}/{seed}")
    n = numel(shape)
    if name in NUMPY_TYPES:
        _, width, kind = NUMPY_TYPES[name]
    else:
        width, kind = BIT_TYPES[name], "f"
    if kind == "i":
        lo, hi = -(1 << (8 * width - 1)), (1 << (8 * width - 1)) - 1
        special = [lo, hi, 0, -1, 1]
        pick = lambda: rng.randint(lo, hi)  # noqa: E731
    elif kind == "u":
        lo, hi = 0, (1 << (8 * width)) - 1
        special = [hi, 0, 1, hi - 1]
        pick = lambda: rng.randint(lo, hi)  # noqa: E731
    else:
        special = SPECIAL_FLOAT_BITS.get(width, [0x00, 0x80, 0x7F, 0xFF, 0x01, 0x38])
        pick = lambda: rng.getrandbits(8 * width)  # noqa: E731
    vals = [special[i] if i < len(special) else pick() for i in range(n)]
    if n > len(special):
        rng.shuffle(vals)
    return vals


def c_array(name, shape, values):
    """The C-ordered numpy array of `values` (narrow floats: their unsigned bit-pattern array)."""
    if name in NUMPY_TYPES:
        np_type, width, kind = NUMPY_TYPES[name]
        if kind == "f":
            arr = np.array(values, dtype=UINT_OF_WIDTH[width]).view(np_type)
        else:
            arr = np.array(values, dtype=np_type)
    else:
        arr = np.array(values, dtype=UINT_OF_WIDTH[BIT_TYPES[name]])
    arr = arr.reshape(shape)
    assert arr.flags.c_contiguous
    return arr


def big_endian(arr):
    """Same values, stored big-endian (bytes swapped explicitly so that every bit is kept)."""
    return arr.byteswap().view(arr.dtype.newbyteorder(">"))


class Writer:
    def __init__(self, out):
        self.out = out
        self.index = {"read": [], "write": [], "reject": []}
        self.names = set()

    def path(self, file):
        assert file not in self.names, file
        self.names.add(file)
        return os.path.join(self.out, file)

    def read_case(self, file, arr, dtype, shape, values, as_=None, version=None, check_descr=None):
        p = self.path(file)
        if version is None:
            np.save(p, arr, allow_pickle=False)
        else:
            with open(p, "wb") as f:
                np.lib.format.write_array(f, arr, version=version, allow_pickle=False)
        with open(p, "rb") as f:
            head = f.read(256)
        if check_descr is not None:
            assert f"'descr': '{check_descr}'".encode() in head, (file, head)
        if version is not None:
            assert head[6:8] == bytes(version), (file, head[:8])
        self.index["read"].append(
            {"file": file, "as": as_, "dtype": dtype, "shape": list(shape), "values": values})

    def reject_case(self, file, arr, contains, as_=None, pickle=False):
        p = self.path(file)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.save(p, arr, allow_pickle=pickle)
        self.index["reject"].append({"file": file, "as": as_, "contains": contains})


def descr_of(name, order="<"):
    np_type, width, _ = NUMPY_TYPES[name]
    return np.dtype(np_type).newbyteorder(order if width > 1 else "|").str


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    w = Writer(args.out)

    shapes = [(), (0,), (0, 3), (5,), (2, 3, 4)]

    # Every numpy type, every shape, C order, little-endian (np.save's default output).
    for name in NUMPY_TYPES:
        for shape in shapes + [(3, 5), (1, 1, 1, 7)]:
            vals = values_for(name, shape, "c")
            tag = "x".join(map(str, shape)) or "scalar"
            w.read_case(f"r_{name}_{tag}.npy", c_array(name, shape, vals), name, shape, vals,
                        check_descr=descr_of(name))

    # Big-endian variants (multi-byte types).
    for name, (_, width, _) in NUMPY_TYPES.items():
        if width == 1:
            continue
        for shape in [(5,), (2, 3, 4)]:
            vals = values_for(name, shape, "be")
            tag = "x".join(map(str, shape))
            w.read_case(f"r_{name}_be_{tag}.npy", big_endian(c_array(name, shape, vals)), name, shape, vals,
                        check_descr=descr_of(name, ">"))

    # Fortran order (np.save writes fortran_order True for F- but not C-contiguous arrays), also
    # combined with big-endian storage.
    for name, (_, width, _) in NUMPY_TYPES.items():
        for shape in [(3, 5), (2, 3, 4), (2, 1, 3, 2)]:
            vals = values_for(name, shape, "f")
            tag = "x".join(map(str, shape))
            arr = np.asfortranarray(c_array(name, shape, vals))
            assert arr.flags.f_contiguous and not arr.flags.c_contiguous
            w.read_case(f"r_{name}_fortran_{tag}.npy", arr, name, shape, vals)
            if width > 1 and shape == (2, 3, 4):
                arr = np.asfortranarray(big_endian(c_array(name, shape, vals)))
                assert arr.flags.f_contiguous and arr.dtype.byteorder == ">"
                w.read_case(f"r_{name}_fortran_be_{tag}.npy", arr, name, shape, vals)

    # Format versions 2.0 and 3.0 (4-byte header length; 3.0 = utf-8 header).
    for version in [(2, 0), (3, 0)]:
        for name in ["float32", "int16", "uint64"]:
            shape = (2, 3, 4)
            vals = values_for(name, shape, f"v{version[0]}")
            w.read_case(f"r_{name}_v{version[0]}.npy", c_array(name, shape, vals), name, shape, vals,
                        version=version)
        vals = values_for("float64", (3, 5), "v-fortran")
        w.read_case(f"r_float64_fortran_v{version[0]}.npy", np.asfortranarray(c_array("float64", (3, 5), vals)),
                    "float64", (3, 5), vals, version=version)

    # Narrow floats stored as bit patterns ('<u2' / '|u1') and read with `as`. The bit patterns come from
    # the formats' layouts (1.0, -2.0, 0.5, max finite, smallest subnormal, NaN); ml_dtypes must agree.
    narrow = {
        "bfloat16": (ml_dtypes.bfloat16, [1.0, -2.0, 0.5, 3.3895313892515355e38, 9.183549615799121e-41],
                     [0x3F80, 0xC000, 0x3F00, 0x7F7F, 0x0001]),
        "float16": (np.float16, [1.0, -2.0, 0.5, 65504.0, 5.960464477539063e-08], [0x3C00, 0xC000, 0x3800,
                                                                                    0x7BFF, 0x0001]),
        "float8e4m3fn": (ml_dtypes.float8_e4m3fn, [1.0, -2.0, 0.5, 448.0, 0.001953125], [0x38, 0xC0, 0x30, 0x7E,
                                                                                       0x01]),
        "float8e4m3fnuz": (ml_dtypes.float8_e4m3fnuz, [1.0, -2.0, 0.5, 240.0, 0.0009765625],
                           [0x40, 0xC8, 0x38, 0x7F, 0x01]),
        "float8e5m2": (ml_dtypes.float8_e5m2, [1.0, -2.0, 0.5, 57344.0, 1.52587890625e-05],
                       [0x3C, 0xC0, 0x38, 0x7B, 0x01]),
        "float8e5m2fnuz": (ml_dtypes.float8_e5m2fnuz, [1.0, -2.0, 0.5, 57344.0, 7.62939453125e-06],
                           [0x40, 0xC4, 0x3C, 0x7F, 0x01]),
    }
    for name, (np_type, floats, bits) in narrow.items():
        width = 2 if name in ("bfloat16", "float16") else 1
        uint = UINT_OF_WIDTH[width]
        from_ml = np.array(floats, dtype=np_type).view(uint)
        assert [int(b) for b in from_ml] == bits, (name, [hex(int(b)) for b in from_ml])
        arr = np.array(bits, dtype=uint).reshape(5)
        w.read_case(f"as_{name}.npy", arr, name, (5,), bits, as_=name,
                    check_descr="<u2" if width == 2 else "|u1")
        if width == 2:
            w.read_case(f"as_{name}_be.npy", big_endian(arr), name, (5,), bits, as_=name, check_descr=">u2")
    # `as` equal to the stored dtype.
    for name in ["float32", "int8", "uint16"]:
        vals = values_for(name, (2, 3), "as-self")
        w.read_case(f"as_self_{name}.npy", c_array(name, (2, 3), vals), name, (2, 3), vals, as_=name)

    # np.save output of C-ordered arrays of every mmtune dtype and shape, for byte comparison with write_npy.
    for name in list(NUMPY_TYPES) + list(BIT_TYPES):
        for shape in shapes + [(1, 70), (3, 1)]:
            vals = values_for(name, shape, "w")
            tag = "x".join(map(str, shape)) or "scalar"
            file = f"w_{name}_{tag}.npy"
            np.save(w.path(file), c_array(name, shape, vals), allow_pickle=False)
            w.index["write"].append({"file": file, "dtype": name, "shape": list(shape), "values": vals})

    # Files numpy writes that mmtune refuses, with the words the message must contain.
    rej = w.reject_case
    rej("no_bool.npy", np.array([True, False, True]), ["no_bool.npy: ", "'|b1'", "bool", "not supported"])
    rej("no_complex64.npy", np.zeros(3, np.complex64), ["no_complex64.npy: ", "'<c8'", "complex", "not supported",
                                                         "mmtune reads int8, uint8"])
    rej("no_complex128.npy", np.zeros((2, 2), np.complex128), ["no_complex128.npy: ", "'<c16'", "complex"])
    rej("no_object.npy", np.array([1, "a", None], dtype=object), ["no_object.npy: ", "'|O'", "object"],
        pickle=True)
    rej("no_unicode.npy", np.array(["ab", "c"]), ["no_unicode.npy: ", "'<U2'", "string"])
    rej("no_bytes.npy", np.array([b"ab", b"c"]), ["no_bytes.npy: ", "'|S2'", "string"])
    rej("no_structured.npy", np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")]),
        ["no_structured.npy: ", "structured", "not supported"])
    rej("no_datetime.npy", np.array(["2020-01-01"], dtype="M8[D]"), ["no_datetime.npy: ", "'<M8[D]'", "datetime"])
    rej("no_ml_bfloat16.npy", np.zeros(3, ml_dtypes.bfloat16), ["no_ml_bfloat16.npy: ", "'<V2'", "void",
                                                                 "view(np.uint16)"])
    rej("no_ml_float8.npy", np.zeros(3, ml_dtypes.float8_e4m3fn), ["no_ml_float8.npy: ", "'<V1'", "void"])
    if np.dtype(np.longdouble).itemsize == 16:
        rej("no_float128.npy", np.zeros(2, np.longdouble), ["no_float128.npy: ", "'<f16'", "not supported"])
    rej("no_as_f32_i8.npy", np.zeros(2, np.float32), ["no_as_f32_i8.npy: ", "float32", "int8"], as_="int8")
    rej("no_as_int16_bf16.npy", np.zeros(2, np.int16), ["no_as_int16_bf16.npy: ", "int16", "bfloat16",
                                                        "cannot read"], as_="bfloat16")
    rej("no_as_f32_f16.npy", np.zeros(2, np.float32), ["no_as_f32_f16.npy: ", "float32", "float16"],
        as_="float16")
    rej("no_as_u16_f8.npy", np.zeros(2, np.uint16), ["no_as_u16_f8.npy: ", "uint16", "float8e4m3fn"],
        as_="float8e4m3fn")
    rej("no_as_u8_bf16.npy", np.zeros(2, np.uint8), ["no_as_u8_bf16.npy: ", "uint8", "bfloat16"], as_="bfloat16")
    rej("no_as_f16_bf16.npy", np.zeros(2, np.float16), ["no_as_f16_bf16.npy: ", "float16", "bfloat16"],
        as_="bfloat16")

    with open(os.path.join(args.out, "index.json"), "w") as f:
        json.dump(w.index, f, indent=1)
    print(f"gen_npy: {len(w.index['read'])} read, {len(w.index['write'])} write, "
          f"{len(w.index['reject'])} reject cases in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
