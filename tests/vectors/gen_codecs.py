#!/usr/bin/env python3
"""Expected results for the float16 / bfloat16 / float8 codecs (reference/codecs.h), from NumPy
and ml_dtypes, for tests/reference/codecs_test.cpp.

Everything here is derived from NumPy / ml_dtypes and the tables of SEMANTICS.md §6 and §8, never
from mmtune's code. Files written into --out (all little-endian, no header):

  decode_<fmt>.f32      float32 bit patterns (uint32) of every pattern of <fmt>, as NumPy /
                        ml_dtypes decode it (256 or 65536 entries).
  special_inputs.u32    float32 bit patterns of the edge-case inputs: every representable value
                        of each format, the midpoints (ties) between neighbours, quarter points,
                        the float32 neighbours of all these, overflow thresholds, +-0, +-Inf,
                        NaNs, powers of 2.
  special_<enc>.bin     expected encoding of each special input (uint8 or uint16 per input).
  sweep_<enc>.runs      expected encoding of the float32 patterns i * stride (i = 0 .. count-1,
                        both signs), run-length coded as uint32 pairs (first index of run, value).
  index.json            what the files are, and the counts.

<enc> is float16, float16_saturate, bfloat16, and for each float8 type <fmt> and <fmt>_saturate.

Expected values:
  float16 / bfloat16 / float8 saturate=false: NumPy / ml_dtypes astype from float32; for NaN
    inputs the canonical rule of SEMANTICS.md §8 (float16 0x7E00, bfloat16 0x7FC0 whatever sign or
    payload; float8 keeps what ml_dtypes gives, checked against the §6 rule: E4M3FN 0x7F/0xFF,
    E5M2 0x7E/0xFE, FNUZ 0x80).
  float16_saturate: the float16 result with +-Inf replaced by +-65504.
  float8 saturate=true (ONNX saturate=1 table, §6): the ml_dtypes result, except a finite input
    that ml_dtypes sends to Inf/NaN (rounded |x| > max) -> +-max, and +-Inf -> +-max (E4M3FN,
    E5M2) or NaN 0x80 (FNUZ). Cross-checked against ONNX's np.clip-based saturate_cast, which must
    differ exactly on the +-Inf inputs of the FNUZ formats (SEMANTICS.md §8 rule 7).
"""
import argparse
import json
import os
import warnings

import ml_dtypes
import numpy as np

STRIDE = 97  # the sweep visits float32 patterns 0, 97, 194, ... < 2^32
CHUNK = 1 << 22

FLOAT8 = {
    # name (reference/dtype.h), ml_dtypes type, §6: max finite, min subnormal, NaN for +NaN / -NaN
    "float8e4m3fn": (ml_dtypes.float8_e4m3fn, 448.0, 2.0**-9, 0x7F, 0xFF),
    "float8e4m3fnuz": (ml_dtypes.float8_e4m3fnuz, 240.0, 2.0**-10, 0x80, 0x80),
    "float8e5m2": (ml_dtypes.float8_e5m2, 57344.0, 2.0**-16, 0x7E, 0xFE),
    "float8e5m2fnuz": (ml_dtypes.float8_e5m2fnuz, 57344.0, 2.0**-17, 0x80, 0x80),
}
FORMATS = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
FORMATS.update({name: spec[0] for name, spec in FLOAT8.items()})


def uint_type(t):
    return np.uint8 if np.dtype(t).itemsize == 1 else np.uint16


def f32(bits):
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def bits32(x):
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def decode_all(t):
    """float32 values of every pattern of t, in pattern order."""
    u = uint_type(t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid-value warnings of NaN patterns
        return np.arange(np.iinfo(u).max + 1, dtype=np.uint64).astype(u).view(t).astype(np.float32)


def astype_bits(x, t):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # overflow / invalid-value warnings of the casts
        return np.asarray(x, dtype=np.float32).astype(t).view(uint_type(t))


def encoders():
    """(name, function float32 array -> expected uint array) for every encoder under test."""
    out = []

    def plain(name, t):
        def f(x):
            y = astype_bits(x, t)
            nan_in = np.isnan(x)
            # NumPy / ml_dtypes must say NaN for a NaN input; the expected bits are the canonical
            # ones.
            assert np.all(np.isnan(y[nan_in].view(t).astype(np.float32))), name
            if name == "float16":
                y[nan_in] = 0x7E00
            elif name == "bfloat16":
                y[nan_in] = 0x7FC0
            else:
                _, _, _, pos_nan, neg_nan = FLOAT8[name]
                expect = np.where(np.signbit(x[nan_in]), neg_nan, pos_nan).astype(np.uint8)
                assert np.array_equal(y[nan_in], expect), f"{name}: ml_dtypes NaN encoding changed"
            return y

        return f

    def float16_saturate(x):
        y = plain("float16", np.float16)(x)
        inf = np.isinf(y.view(np.float16))
        y[inf] = np.where(np.signbit(x[inf]), 0xFBFF, 0x7BFF).astype(np.uint16)
        return y

    def float8_saturate(name):
        t, max_value, _, _, _ = FLOAT8[name]
        fnuz = name.endswith("fnuz")
        pos_max = astype_bits(np.float32(ml_dtypes.finfo(t).max), t)[()]
        neg_max = astype_bits(-np.float32(ml_dtypes.finfo(t).max), t)[()]
        assert float(ml_dtypes.finfo(t).max) == max_value, name
        nan80 = np.uint8(0x80)

        def f(x):
            y = plain(name, t)(x)
            special = ~np.isfinite(y.view(t).astype(np.float32))
            overflow = np.isfinite(x) & special  # rounded |x| > max
            y[overflow] = np.where(np.signbit(x[overflow]), neg_max, pos_max)
            inf_in = np.isinf(x)
            y[inf_in] = nan80 if fnuz else np.where(np.signbit(x[inf_in]), neg_max, pos_max)
            # Cross-check with ONNX numpy_helper.saturate_cast (np.clip, then astype).
            lo, hi = np.float32(ml_dtypes.finfo(t).min), np.float32(ml_dtypes.finfo(t).max)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clipped = np.clip(x, lo, hi).astype(t).view(np.uint8)
            differ = clipped != y
            assert np.array_equal(differ, inf_in if fnuz else np.zeros_like(differ)), name
            return y

        return f

    out.append(("float16", plain("float16", np.float16)))
    out.append(("float16_saturate", float16_saturate))
    out.append(("bfloat16", plain("bfloat16", ml_dtypes.bfloat16)))
    for name in FLOAT8:
        out.append((name, plain(name, FLOAT8[name][0])))
        out.append((name + "_saturate", float8_saturate(name)))
    return out


def width(enc):
    return 2 if enc.startswith("float16") or enc.startswith("bfloat16") else 1


def special_inputs():
    """float32 bit patterns of the edge cases, sorted and without duplicates."""
    vals = []  # float64 arrays whose values are all exact float32 values
    for name, t in FORMATS.items():
        v = decode_all(t).astype(np.float64)
        grid = np.unique(np.abs(v[np.isfinite(v)]))  # 0 .. max, ascending
        top = grid[-1] + (grid[-1] - grid[-2])  # the step after max (the overflow side)
        grid = np.append(grid, top)
        mid = (grid[:-1] + grid[1:]) / 2  # ties
        quarter = np.concatenate([(3 * grid[:-1] + grid[1:]) / 4, (grid[:-1] + 3 * grid[1:]) / 4])
        for a in (grid, mid, quarter):
            a = a[a <= np.finfo(np.float32).max]  # drops bfloat16's step after max, 2^128
            a32 = a.astype(np.float32)
            assert np.array_equal(a32.astype(np.float64), a), name  # all exact float32 values
            vals += [a32, np.nextafter(a32, np.float32(np.inf)), np.nextafter(a32, np.float32(0))]
    pow2 = np.ldexp(np.float32(1), np.arange(-149, 128)).astype(np.float32)
    vals += [pow2, np.nextafter(pow2, np.float32(np.inf)), np.nextafter(pow2, np.float32(0))]
    x = np.concatenate([np.asarray(a, np.float32) for a in vals])
    x = np.concatenate([x, -x])
    extra = [
        0x00000000, 0x80000000, 0x7F800000, 0xFF800000,  # +-0, +-Inf
        0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,  # float32 tiny
        0x7F7FFFFF, 0xFF7FFFFF,  # float32 max
        0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF,  # NaNs
        0x7FA00000, 0xFFA00000, 0x7FC00001, 0xFFC00001, 0x7FE00000, 0xFF802000,
    ]
    b = np.concatenate([bits32(x), np.array(extra, np.uint32)])
    return np.unique(b)


class Runs:
    """Run-length code of a long uint sequence fed in chunks: (first index, value) per run."""

    def __init__(self):
        self.parts = []
        self.last = None

    def add(self, offset, y):
        y = y.astype(np.uint32)
        starts = np.concatenate(([0], np.flatnonzero(y[1:] != y[:-1]) + 1))
        values = y[starts]
        if self.last is not None and values[0] == self.last:
            starts, values = starts[1:], values[1:]
        self.parts.append(np.stack([starts + offset, values], axis=1).astype("<u4"))
        self.last = y[-1]

    def array(self):
        return np.concatenate(self.parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    def write(name, a, dtype):
        np.ascontiguousarray(a, dtype=dtype).tofile(os.path.join(args.out, name))

    index = {"generator": "tests/vectors/gen_codecs.py", "numpy": np.__version__,
             "ml_dtypes": ml_dtypes.__version__, "decode": [], "encode": []}

    # 1. Decoding: every pattern.
    for name, t in FORMATS.items():
        d = decode_all(t)
        write(f"decode_{name}.f32", bits32(d), "<u4")
        index["decode"].append({"format": name, "file": f"decode_{name}.f32", "count": int(d.size),
                                "nan_count": int(np.isnan(d).sum())})

    # 2. Encoding: edge cases and the strided sweep.
    special = special_inputs()
    write("special_inputs.u32", special, "<u4")
    sx = f32(special)
    count = -(-(1 << 32) // STRIDE)
    index["special"] = {"file": "special_inputs.u32", "count": int(special.size),
                        "nan_count": int(np.isnan(sx).sum())}
    index["sweep"] = {"stride": STRIDE, "count": count}
    for enc, fn in encoders():
        w = width(enc)
        dt = "<u2" if w == 2 else "u1"
        write(f"special_{enc}.bin", fn(sx), dt)
        runs = Runs()
        for start in range(0, count, CHUNK):
            i = np.arange(start, min(start + CHUNK, count), dtype=np.uint64)
            runs.add(start, fn(f32((i * STRIDE).astype(np.uint32))))
        r = runs.array()
        write(f"sweep_{enc}.runs", r, "<u4")
        index["encode"].append({"name": enc, "width": w, "special_file": f"special_{enc}.bin",
                                "sweep_file": f"sweep_{enc}.runs", "sweep_runs": int(r.shape[0])})

    with open(os.path.join(args.out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)


if __name__ == "__main__":
    main()
