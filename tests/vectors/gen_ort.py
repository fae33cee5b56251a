#!/usr/bin/env python3
"""Expected results from ONNX Runtime (CPUExecutionProvider, one intra-op thread, default session
settings, hence float32 requantization) for tests/reference/ort_conformance_test.cpp.

Every case is one ONNX node built in memory and run by ORT on random inputs drawn with a fixed seed
(crc32 of the case name, printed). Nothing here is derived from mmtune's code. --out DIR receives

  DIR/<case>/<input>.npy      one file per input, named as in mmtune's registry (reference/registry.h);
                              bfloat16 as its uint16 bits in <input>.bfloat16.npy, float16 as '<f2' 
  DIR/<case>/expected.npy     ORT's output
  DIR/<case>/case.json        {"op", "attributes" (strings, as mmtune's registry takes them), "inputs":
                              {name: {"file", "dtype"}}, "expected": {"file", "dtype"}, "seed",
                              "compare": "exact" | {"rtol", "atol"}, "group", "note"}
  DIR/index.json              the cases, the groups (combinations) with their minimum output counts,
                              versions, seconds taken, and diagnostics

Cases (SEMANTICS.md §1.5, §3.3, §4):
  QLinearMatMul-10, requant float32, exact: u8*u8->u8, s8*s8->s8, u8*s8->u8; per-tensor ([] and [1])
    and per-column b parameters ([N], [1,N], and [...,1,N] for N-D b: ORT's only forms), N-D batch
    broadcasting, 1-D a and/or b, M or N = 1, odd sizes, K up to 300, plus cases built for exact .5
    ties with an odd zero point, heavy saturation, |acc| > 2^24 (K = 600, 800 for u8*s8; float32
    mode rounds acc before scaling), and the two-column requant-split case (acc 540153 and 427881
    with M = float32 0x39D22420: float32 gives 216 / 172, float64 would give 217 / 171).
    Not covered because ORT lacks it: per-row a parameters, float16/bfloat16 scales (see
    gen_onnx_reference.py).
  QGemm (com.microsoft, 1), exact: (u8,u8), (u8,s8), (s8,s8) x float / quantized output x C absent,
    full (M,N), broadcast (N) (plus a few (), (1), (1,N), (M,1)) x per-tensor / per-column b x the four
    transA/transB settings; alpha != 1 in half of them; B as an initializer (ORT prepacks it) in some;
    y_scale without y_zero_point (float output divided by y_scale) in some; C near the int32 limits so
    that C + sum wraps. K is never 0 (ORT's HandleZeroKCase differs from SEMANTICS.md §8.5).
  Gemm-13 float32 and float64, with a tolerance (MLAS blocks and fuses the K sum, so its order differs
    from mmtune's sequential one): float32 rtol 1e-5, atol 1e-6 * K; float64 rtol 1e-12,
    atol 1e-14 * K (inputs in [-1, 1)); the C++ test also reports how many outputs are bit-identical.

ORT behaviour the inputs are restricted for (documented, not mimicked):
  * x86-64 AVX2/AVX512 without VNNI multiplies u8*s8 with VPMADDUBSW, whose int16 pair sums saturate
    (|sum| > 32767 when |b| > 64). Every u8*s8 case keeps |b| <= 64 (and |b_zero_point| <= 64), where
    no pair sum can saturate. A full-range u8*s8 run is made as a diagnostic only: its count of
    outputs that differ from exact int32 arithmetic is printed and stored in index.json (0 on CPUs
    with AVX-VNNI / AVX512-VNNI, whose VPDPBUSD does not saturate).
  * QGemm with K = 0 (bugs in ORT's HandleZeroKCase) and y_zero_point without y_scale (undefined)
    are never generated.

gen_onnx_reference.py imports the shared helpers and the QLinearMatMul case list from this file.
"""

import argparse
import json
import os
import shutil
import sys
import time
import zlib

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper

# mmtune dtype name -> (numpy dtype of the values, ONNX element type)
DTYPES = {
    "uint8": (np.uint8, TensorProto.UINT8),
    "int8": (np.int8, TensorProto.INT8),
    "int32": (np.int32, TensorProto.INT32),
    "uint32": (np.uint32, TensorProto.UINT32),
    "int64": (np.int64, TensorProto.INT64),
    "uint64": (np.uint64, TensorProto.UINT64),
    "float16": (np.float16, TensorProto.FLOAT16),
    "bfloat16": (ml_dtypes.bfloat16, TensorProto.BFLOAT16),
    "float32": (np.float32, TensorProto.FLOAT),
    "float64": (np.float64, TensorProto.DOUBLE),
}
SHORT = {"uint8": "u8", "int8": "s8"}
MIN_OUTPUTS = 10000  # per group (combination)


def seed_for(name):
    """The fixed seed of a case: crc32 of its name (stable when cases are added or reordered)."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def attr_float(x):
    """A float32 attribute value as text that strtof reads back to the same float32."""
    return repr(float(np.float32(x)))


def storage(arr, dtype):
    """The array as it is saved: bfloat16 as its uint16 bit patterns, everything else as is."""
    arr = np.array(arr, dtype=DTYPES[dtype][0], order="C")  # (ascontiguousarray would make 0-d 1-d)
    return arr.view(np.uint16) if dtype == "bfloat16" else arr


def npy_name(name, dtype):
    return name + (".bfloat16.npy" if dtype == "bfloat16" else ".npy")


class Writer:
    """Writes the case folders and index.json; checks every group reaches its minimum output count."""

    def __init__(self, out, generator):
        self.out = out
        self.generator = generator
        self.cases = []
        self.groups = {}
        self.diagnostics = {}
        self.start = time.monotonic()
        if os.path.isdir(out):
            shutil.rmtree(out)
        os.makedirs(out)

    def group(self, name, min_outputs=MIN_OUTPUTS, note=""):
        self.groups.setdefault(name, {"min_outputs": min_outputs, "note": note})

    def add(self, name, group, op, attributes, inputs, expected, expected_dtype, seed, compare="exact",
            note=""):
        """inputs: list of (name, array, mmtune dtype) in ONNX order (absent inputs left out)."""
        assert name not in {c["name"] for c in self.cases}, name
        assert group in self.groups, group
        d = os.path.join(self.out, name)
        os.makedirs(d)
        spec = {}
        for iname, arr, dt in inputs:
            f = npy_name(iname, dt)
            np.save(os.path.join(d, f), storage(arr, dt))
            spec[iname] = {"file": f, "dtype": dt}
        ef = npy_name("expected", expected_dtype)
        expected = storage(expected, expected_dtype)
        np.save(os.path.join(d, ef), expected)
        case = {
            "op": op,
            "attributes": {k: str(v) for k, v in attributes.items()},
            "inputs": spec,
            "expected": {"file": ef, "dtype": expected_dtype},
            "seed": seed,
            "compare": compare,
            "group": group,
            "note": note,
        }
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump(case, f, indent=1)
        outputs = int(expected.size)
        self.cases.append({"name": name, "group": group, "op": op, "seed": seed, "outputs": outputs})
        print(f"  {name}: seed {seed}, {outputs} outputs", flush=True)

    def finish(self):
        counts = {g: 0 for g in self.groups}
        ncases = {g: 0 for g in self.groups}
        for c in self.cases:
            counts[c["group"]] += c["outputs"]
            ncases[c["group"]] += 1
        for g, spec in self.groups.items():
            spec["cases"] = ncases[g]
            spec["outputs"] = counts[g]
            if counts[g] < spec["min_outputs"]:
                sys.exit(f"group {g}: {counts[g]} outputs < {spec['min_outputs']}")
        seconds = time.monotonic() - self.start
        index = {
            "generator": self.generator,
            "versions": versions(),
            "seconds": round(seconds, 2),
            "groups": self.groups,
            "diagnostics": self.diagnostics,
            "cases": self.cases,
        }
        with open(os.path.join(self.out, "index.json"), "w") as f:
            json.dump(index, f, indent=1)
        print(f"{self.generator}: {len(self.cases)} cases, "
              f"{sum(counts.values())} outputs in {len(self.groups)} groups, {seconds:.1f} s")
        for g, spec in self.groups.items():
            print(f"  {g}: {spec['cases']} cases, {spec['outputs']} outputs")


def versions():
    v = {"numpy": np.__version__, "onnx": onnx.__version__, "ml_dtypes": ml_dtypes.__version__}
    if "onnxruntime" in sys.modules:
        v["onnxruntime"] = sys.modules["onnxruntime"].__version__
    return v


def make_model(op, names, feeds, out_dtype, attrs, opset, domain="", initializers=()):
    """One-node model. names: ONNX input list ('' for an absent optional input); feeds: name -> (array,
    mmtune dtype); initializers: names stored as constants instead of graph inputs."""
    node = helper.make_node(op, list(names), ["Y"], domain=domain, **attrs)
    graph_inputs, inits = [], []
    for n in names:
        if not n:
            continue
        arr, dt = feeds[n]
        if n in initializers:
            t = helper.make_tensor(n, DTYPES[dt][1], arr.shape,
                                   storage(arr, dt).tobytes(), raw=True)
            inits.append(t)
        else:
            graph_inputs.append(helper.make_tensor_value_info(n, DTYPES[dt][1], list(arr.shape)))
    out = helper.make_tensor_value_info("Y", DTYPES[out_dtype][1], None)
    graph = helper.make_graph([node], f"mmtune_{op}", graph_inputs, [out], initializer=inits)
    opsets = [helper.make_opsetid("", opset)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


# ---------------------------------------------------------------------------------------------
# QLinearMatMul case list (shared with gen_onnx_reference.py).
#
# Each entry: name, a shape, b shape, shapes of a_scale/a_zero_point, b_scale, b_zero_point
# ("" = scalar []), and a mode:
#   normal    random values over the whole type range (u8*s8 on ORT: |b| <= 64), y_scale and
#             y_zero_point chosen (fit_output) so that the outputs spread over the range, a few
#             saturating;
#   saturate  a multiplier ten times larger: most outputs clamp;
#   ties      values within +-4 of the zero points, scales 0.25 * 0.5 / 0.25 (M = 0.5 exactly) and
#             odd y_zero_point: about half of the products are exact .5 ties (float32 mode rounds
#             before adding the zero point, float64 mode after: they differ on these);
#   bigacc    values at the far end of the range, zero points at the other: |acc| > 2^24 for most
#             outputs (float32 mode rounds acc to float32 first).

def qshape(s):
    return [] if s == "" else list(s)


QLM_CASES = [
    # name, a, b, a_params, b_scale, b_zero_point, mode
    ("2d_64x300x65", [64, 300], [300, 65], "", "", "", "normal"),
    ("2d_m1_per_column", [1, 257], [257, 97], "", [97], [97], "normal"),
    ("2d_n1_params_1", [101, 33], [33, 1], [1], [1], [1], "normal"),
    ("2d_odd_per_column_mixed", [37, 129], [129, 63], "", [63], [1, 63], "normal"),
    ("2d_1x1x1", [1, 1], [1, 1], "", "", "", "normal"),
    ("2d_k2_small", [5, 2], [2, 7], "", [1, 7], [1, 7], "normal"),
    ("nd_broadcast", [2, 1, 13, 70], [3, 70, 21], "", "", "", "normal"),
    ("nd_broadcast_per_column", [2, 1, 13, 70], [3, 70, 21], "", [3, 1, 21], [3, 1, 21], "normal"),
    ("nd_a3d_b2d_per_column", [3, 31, 64], [64, 40], "", [40], [40], "normal"),
    ("nd_a2d_b3d_per_column", [31, 64], [2, 64, 40], "", [2, 1, 40], [2, 1, 40], "normal"),
    ("nd_4d_both", [2, 3, 9, 17], [2, 3, 17, 11], [1], [2, 3, 1, 11], [2, 3, 1, 11], "normal"),
    ("1d_a", [150], [150, 77], "", "", "", "normal"),
    ("1d_a_per_column", [150], [150, 77], "", [77], [77], "normal"),
    ("1d_b", [45, 150], [150], "", "", "", "normal"),
    ("1d_both", [200], [200], "", "", "", "normal"),
    ("1d_b_batch", [4, 6, 31], [31], "", "", "", "normal"),
    ("saturate", [16, 80], [80, 16], "", [16], [16], "saturate"),
    ("ties", [24, 40], [40, 24], "", "", "", "ties"),
    ("ties_per_column", [20, 9], [9, 30], "", [30], [30], "ties"),
    ("bigacc", [4, 600], [600, 8], "", "", "", "bigacc"),
]


def qrange(dt):
    i = np.iinfo(DTYPES[dt][0])
    return int(i.min), int(i.max)


def fit_output(acc, ylo, yhi):
    """A multiplier M and a zero point in [ylo, yhi] mapping the 1st..99th percentile of the
    accumulators onto most of the output range (as far as a zero point inside the range allows)."""
    acc = np.asarray(acc, dtype=np.float64)
    lo, hi = (float(v) for v in np.percentile(acc, [1, 99]))
    center = (lo + hi) / 2
    rng_ = yhi - ylo
    m = 0.9 * rng_ / (hi - lo + 1.0)
    if abs(center) > 0:
        m = min(m, 0.45 * rng_ / abs(center))
    zp = int(np.clip(np.rint((ylo + yhi) / 2 - center * m), ylo, yhi))
    return m, zp


def positive_float32(rng, lo, hi, shape):
    """Random float32 values in [lo, hi) with full 24-bit significands (not round decimals)."""
    return np.exp(rng.uniform(np.log(lo), np.log(hi), size=shape)).astype(np.float32)


def qlm_inputs(rng, combo, a_shape, b_shape, ap, bsp, bzp, mode, a_param_per_row=False,
               b_limit=None, scale_dtype="float32"):
    """Inputs of one QLinearMatMul case as [(name, array, dtype)], in ONNX order.

    b_limit: |b| and |b_zero_point| bound (u8*s8 on ORT). a_param_per_row: the a parameter shape has
    per-row values (else one value broadcast to that shape). scale_dtype: float32, float16 or bfloat16.
    """
    ta, tb, ty = combo
    npa, npb = DTYPES[ta][0], DTYPES[tb][0]
    alo, ahi = qrange(ta)
    blo, bhi = qrange(tb)
    if b_limit is not None:
        blo, bhi = max(blo, -b_limit), min(bhi, b_limit)
    ylo, yhi = qrange(ty)

    def rand_int(lo, hi, shape):
        return rng.integers(lo, hi + 1, size=shape)

    if mode == "bigacc":
        # a near one end of its range with the zero point at the other end, same for b: every
        # (a - za)(b - zb) is large and positive, and |acc| mostly exceeds 2^24.
        za = np.full(qshape(ap), alo, dtype=np.int64)
        a = rand_int(ahi - 60, ahi, a_shape)
        zb = np.full(qshape(bzp), blo, dtype=np.int64)
        b = rand_int(bhi - 40, bhi, b_shape)
    elif mode == "ties":
        # Values within +-4 of the zero points (which stay 4 away from the type's ends).
        za = rand_int(alo + 4, ahi - 4, qshape(ap)) if a_param_per_row else \
            np.full(qshape(ap), rand_int(alo + 4, ahi - 4, []), dtype=np.int64)
        zb = rand_int(blo + 4, bhi - 4, qshape(bzp))
        a = za + rand_int(-4, 4, a_shape)
        b = zb + rand_int(-4, 4, b_shape)
    else:
        if a_param_per_row:
            za = rand_int(alo, ahi, qshape(ap))
        else:
            za = np.full(qshape(ap), rand_int(alo, ahi, []), dtype=np.int64)
        zb = rand_int(blo, bhi, qshape(bzp))
        a = rand_int(alo, ahi, a_shape)
        b = rand_int(blo, bhi, b_shape)
    a = np.asarray(a).astype(npa)
    b = np.asarray(b).astype(npb)
    za = za.astype(npa)
    zb = zb.astype(npb)

    # Scales.
    sdt = DTYPES[scale_dtype][0]
    if mode == "ties":
        a_scale = np.full(qshape(ap), 0.25, dtype=sdt)
        b_scale = np.full(qshape(bsp), 0.5, dtype=sdt)
        y_scale = np.array(0.25, dtype=sdt)
        yz = int(rand_int(ylo + 20, yhi - 20, [])) | 1  # odd
    else:
        if a_param_per_row:
            a_scale = positive_float32(rng, 0.02, 0.2, qshape(ap)).astype(sdt)
        else:
            a_scale = np.full(qshape(ap), positive_float32(rng, 0.02, 0.2, []), dtype=sdt)
        b_scale = positive_float32(rng, 0.02, 0.2, qshape(bsp)).astype(sdt)
        # Spread the outputs over the range (a few saturating): see fit_output.
        A = a.astype(np.int64) - za.astype(np.int64)
        B = b.astype(np.int64) - zb.astype(np.int64)
        acc = np.matmul(A, B)
        if mode == "bigacc":
            m = 0.9 * (yhi - ylo) / float(np.max(acc))
            yz = ylo
        else:
            m, yz = fit_output(acc, ylo, yhi)
            if mode == "saturate":
                m *= 10
        ys = float(np.mean(a_scale.astype(np.float64))) * float(np.mean(b_scale.astype(np.float64)))
        y_scale = np.array(ys / m * float(rng.uniform(0.9, 1.1)), dtype=sdt)
    y_zp = np.array(yz, dtype=DTYPES[ty][0])
    return [("a", a, ta), ("a_scale", a_scale, scale_dtype), ("a_zero_point", za, ta),
            ("b", b, tb), ("b_scale", b_scale, scale_dtype), ("b_zero_point", zb, tb),
            ("y_scale", y_scale, scale_dtype), ("y_zero_point", y_zp, ty)]


# The requant-split case: M = float32 bits 0x39D22420 (SEMANTICS.md §1.6). The §1.6 accumulator
# 1807579 gives 724.50001412 (float64 725, float32 724), which no 8-bit output can show: any zero
# point leaves it saturated. With the same M these in-range accumulators split the two modes:
#   540153 * M = 216.50000145 -> float64 217, fl32 = 216.5 tie -> float32 216
#   427881 * M = 171.49999560 -> float64 171, fl32 = 171.5 tie -> float32 172
SPLIT_M_BITS = 0x39D22420
SPLIT_ACCS = (540153, 427881)
SPLIT_FLOAT32 = (216, 172)
SPLIT_FLOAT64 = (217, 171)


def split_inputs():
    """uint8 a [1,10] x b [10,2], zero points 0, a_scale = M, b_scale = y_scale = 1: acc = SPLIT_ACCS."""
    k = 10
    a = np.full([1, k], 255, dtype=np.int64)
    a[0, k - 1] = 1
    b = np.zeros([k, 2], dtype=np.int64)
    for j, acc in enumerate(SPLIT_ACCS):
        s, r = divmod(acc, 255)
        for i in range(k - 1):
            b[i, j] = min(255, s)
            s -= b[i, j]
        assert s == 0
        b[k - 1, j] = r
    assert tuple(int(x) for x in (a @ b)[0]) == SPLIT_ACCS
    m = np.array(SPLIT_M_BITS, dtype=np.uint32).view(np.float32)
    return [("a", a.astype(np.uint8), "uint8"), ("a_scale", np.array(m, np.float32), "float32"),
            ("a_zero_point", np.array(0, np.uint8), "uint8"), ("b", b.astype(np.uint8), "uint8"),
            ("b_scale", np.array(1.0, np.float32), "float32"),
            ("b_zero_point", np.array(0, np.uint8), "uint8"),
            ("y_scale", np.array(1.0, np.float32), "float32"),
            ("y_zero_point", np.array(0, np.uint8), "uint8")]


def float32_requant(inputs):
    """numpy model of ORT's float32 rule y = sat(RNE(fl32(fl32(acc) * M)) + zp), per-tensor a and y
    parameters, exact int32 accumulation (used only for the saturation diagnostic)."""
    d = {n: arr for n, arr, _ in inputs}
    A = d["a"].astype(np.int64) - d["a_zero_point"].astype(np.int64)
    B = d["b"].astype(np.int64) - d["b_zero_point"].astype(np.int64)
    acc = np.matmul(A, B).astype(np.int32)
    m = (d["a_scale"] * d["b_scale"]).astype(np.float32) / d["y_scale"]
    f = (acc.astype(np.float32) * m.astype(np.float32)).astype(np.float32)
    lo, hi = np.iinfo(d["y_zero_point"].dtype).min, np.iinfo(d["y_zero_point"].dtype).max
    return np.clip(np.rint(f).astype(np.int64) + int(d["y_zero_point"]), lo, hi)


# ---------------------------------------------------------------------------------------------
# ORT.

def ort_session(model):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def run_ort(op, names, inputs, out_dtype, attrs, opset, domain="", initializers=()):
    feeds = {n: (arr, dt) for n, arr, dt in inputs}
    model = make_model(op, names, feeds, out_dtype, attrs, opset, domain, initializers)
    sess = ort_session(model)
    run_feeds = {n: storage(arr, dt) for n, arr, dt in inputs if n not in initializers}
    return sess.run(None, run_feeds)[0]


QLM_NAMES = ["a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"]
ORT_QLM_COMBOS = [("uint8", "uint8", "uint8"), ("int8", "int8", "int8"), ("uint8", "int8", "uint8")]


def qlm_group(combo, requant):
    ta, tb, ty = combo
    return f"QLinearMatMul {SHORT[ta]}*{SHORT[tb]}->{SHORT[ty]} requant={requant}"


def gen_qlinear_matmul(w):
    for combo in ORT_QLM_COMBOS:
        g = qlm_group(combo, "float32")
        u8s8 = combo[0] == "uint8" and combo[1] == "int8"
        w.group(g, note="ORT QLinearMatMul-10" + (", |b| <= 64 (VPMADDUBSW)" if u8s8 else ""))
        for name, a_shape, b_shape, ap, bsp, bzp, mode in QLM_CASES:
            if u8s8 and mode == "bigacc":
                a_shape, b_shape = [a_shape[0], 800], [800, b_shape[1]]  # |b - zb| <= 128: longer K
            case = f"qlm_{SHORT[combo[0]]}{SHORT[combo[1]]}{SHORT[combo[2]]}_{name}"
            seed = seed_for(case)
            rng = np.random.default_rng(seed)
            inputs = qlm_inputs(rng, combo, a_shape, b_shape, ap, bsp, bzp, mode,
                                b_limit=64 if u8s8 else None)
            y = run_ort("QLinearMatMul", QLM_NAMES, inputs, combo[2], {}, 10)
            note = f"mode {mode}" + ("; |b|, |b_zero_point| <= 64: VPMADDUBSW pair sums cannot "
                                     "saturate" if u8s8 else "")
            w.add(case, g, "QLinearMatMul", {"opset": 10, "requant": "float32"}, inputs, y, combo[2],
                  seed, note=note)

    g = "QLinearMatMul requant split (SEMANTICS.md 1.6)"
    w.group(g, min_outputs=2, note="same M as SEMANTICS.md 1.6, in-range accumulators")
    inputs = split_inputs()
    y = run_ort("QLinearMatMul", QLM_NAMES, inputs, "uint8", {}, 10)
    if tuple(int(v) for v in y.flat) != SPLIT_FLOAT32:
        sys.exit(f"ORT gives {y.tolist()} for the requant-split case, expected {SPLIT_FLOAT32}")
    w.add("qlm_requant_split", g, "QLinearMatMul", {"opset": 10, "requant": "float32"}, inputs, y,
          "uint8", 0, note=f"acc {SPLIT_ACCS}, M bits 0x{SPLIT_M_BITS:08X}: float32 mode "
          f"{SPLIT_FLOAT32}, float64 mode {SPLIT_FLOAT64}")

    # Diagnostic only: full-range u8*s8 through ORT against exact int32 arithmetic.
    seed = seed_for("diag_u8s8_full_range")
    rng = np.random.default_rng(seed)
    inputs = qlm_inputs(rng, ("uint8", "int8", "uint8"), [64, 256], [256, 64], "", "", "", "normal")
    d = {n: arr for n, arr, _ in inputs}
    d["a"][:] = 255  # maximal a, b at the int8 ends: the pair sums VPMADDUBSW would saturate
    d["a_zero_point"][...] = 0
    d["b"][:] = np.where(rng.integers(0, 2, size=d["b"].shape) == 1, 127, -128).astype(np.int8)
    d["b_zero_point"][...] = 0
    y = run_ort("QLinearMatMul", QLM_NAMES, inputs, "uint8", {}, 10)
    exact = float32_requant(inputs)
    n_diff = int(np.count_nonzero(y.astype(np.int64) != exact))
    w.diagnostics["u8s8_full_range"] = {
        "seed": seed, "outputs": int(y.size), "differ_from_exact_int32": n_diff,
        "note": "a = 255, b = +-127/-128: ORT vs numpy float32 rule with exact int32 sums; "
                "non-zero means this CPU's u8*s8 path saturates (VPMADDUBSW)"}
    print(f"  diagnostic u8*s8 full range: {n_diff} of {y.size} outputs differ from exact int32",
          flush=True)


# ---------------------------------------------------------------------------------------------
# QGemm.

QGEMM_COMBOS = [("uint8", "uint8"), ("uint8", "int8"), ("int8", "int8")]
# (M, K, N) cycled over the configurations of one combination.
QGEMM_SHAPES = [(17, 300, 33), (1, 37, 64), (33, 64, 1), (24, 129, 24), (7, 5, 130), (40, 200, 40),
                (1, 1, 1), (13, 2, 77), (29, 31, 23), (3, 257, 5), (64, 48, 16), (11, 100, 19)]
QGEMM_NAMES = ["A", "a_scale", "a_zero_point", "B", "b_scale", "b_zero_point", "C", "y_scale",
               "y_zero_point"]


def qgemm_case(rng, ta, tb, m, k, n, trans_a, trans_b, c_shape, per_column, output, alpha,
               c_wrap=False):
    b_limit = 64 if (ta == "uint8" and tb == "int8") else None
    alo, ahi = qrange(ta)
    blo, bhi = qrange(tb)
    if b_limit:
        blo, bhi = -b_limit, b_limit
    a = rng.integers(alo, ahi + 1, size=[k, m] if trans_a else [m, k]).astype(DTYPES[ta][0])
    b = rng.integers(blo, bhi + 1, size=[n, k] if trans_b else [k, n]).astype(DTYPES[tb][0])
    za = np.array(rng.integers(alo, ahi + 1), dtype=DTYPES[ta][0])
    bshape = [n] if per_column else []
    zb = rng.integers(blo, bhi + 1, size=bshape).astype(DTYPES[tb][0])
    a_scale = positive_float32(rng, 0.002, 0.05, [])
    b_scale = positive_float32(rng, 0.002, 0.05, bshape)
    A = (a.T if trans_a else a).astype(np.int64) - int(za)
    B = (b.T if trans_b else b).astype(np.int64) - zb.astype(np.int64)
    acc = A @ B
    spread = float(np.sqrt(np.mean(np.square(acc.astype(np.float64))))) + 1.0
    inputs = [("A", a, ta), ("a_scale", a_scale, "float32"), ("a_zero_point", za, ta),
              ("B", b, tb), ("b_scale", b_scale, "float32"), ("b_zero_point", zb, tb)]
    names = list(QGEMM_NAMES[:6])
    if c_shape is not None:
        if c_wrap:
            # C near the int32 limits: C + sum wraps mod 2^32 in the int32 accumulator.
            near_max = 2**31 - 1 - rng.integers(0, 1000, c_shape)
            near_min = -(2**31) + rng.integers(0, 1000, c_shape)
            c = np.where(rng.integers(0, 2, size=c_shape) == 1, near_max, near_min).astype(np.int32)
        else:
            lim = int(spread)
            c = rng.integers(-lim, lim + 1, size=c_shape).astype(np.int32)
        inputs.append(("C", c, "int32"))
        names.append("C")
    else:
        names.append("")
    out_dtype = "float32"
    total = (acc + (np.broadcast_to(inputs[-1][1], acc.shape) if c_shape is not None else 0))
    total = total.astype(np.float64)
    if output in ("quantized", "y_scale_only"):
        ylo, yhi = qrange(ta)
        s, yz = fit_output(total, ylo, yhi)
        ys = float(a_scale) * float(np.mean(b_scale)) * abs(alpha) / s * float(rng.uniform(0.9, 1.1))
        inputs.append(("y_scale", np.array(ys, np.float32), "float32"))
        names.append("y_scale")
        if output == "quantized":
            inputs.append(("y_zero_point", np.array(yz, dtype=DTYPES[ta][0]), ta))
            names.append("y_zero_point")
            out_dtype = ta
    while names and names[-1] == "":
        names.pop()
    return names, inputs, out_dtype


def gen_qgemm(w):
    configs = []
    for output in ("float", "quantized"):
        for c_kind in (None, "full", "row"):
            for per_column in (False, True):
                for trans_a, trans_b in ((0, 0), (1, 0), (0, 1), (1, 1)):
                    configs.append((output, c_kind, per_column, trans_a, trans_b))
    # Extra forms: other C broadcasts, y_scale without y_zero_point, wrapping C.
    extras = [("float", "scalar", False, 0, 0), ("quantized", "one", True, 1, 0),
              ("float", "1n", True, 0, 1), ("quantized", "m1", False, 1, 1),
              ("y_scale_only", None, False, 0, 0), ("y_scale_only", "full", True, 1, 1),
              ("float", "full_wrap", False, 0, 0), ("float", "m1_wrap", True, 0, 1)]
    for ta, tb in QGEMM_COMBOS:
        u8s8 = ta == "uint8" and tb == "int8"
        for out_kind in ("float", "quantized"):
            g = f"QGemm {SHORT[ta]}*{SHORT[tb]}->{'f32' if out_kind == 'float' else SHORT[ta]}"
            w.group(g, note="ORT com.microsoft QGemm" + (", |B| <= 64 (VPMADDUBSW)" if u8s8 else ""))
        for idx, (output, c_kind, per_column, trans_a, trans_b) in enumerate(configs + extras):
            m, k, n = QGEMM_SHAPES[idx % len(QGEMM_SHAPES)]
            if idx in (0, 24):  # the first float and the first quantized case: large
                m, k, n = 64, 300, 65
            alpha = 1.0 if idx % 2 == 0 else float(np.float32([0.75, 1.6, 2.5, 0.3][(idx // 2) % 4]))
            wrap = c_kind is not None and c_kind.endswith("_wrap")
            ck = c_kind[:-5] if wrap else c_kind
            c_shape = {None: None, "full": [m, n], "row": [n], "scalar": [], "one": [1], "1n": [1, n],
                       "m1": [m, 1]}[ck]
            prepack = idx % 5 == 3  # B as an initializer: ORT prepacks it
            tag = (f"{output}_c{ck or 'none'}{'wrap' if wrap else ''}_{'pc' if per_column else 'pt'}"
                   f"_t{trans_a}{trans_b}{'_alpha' if alpha != 1 else ''}"
                   f"{'_prepack' if prepack else ''}")
            case = f"qgemm_{SHORT[ta]}{SHORT[tb]}_{tag}_{m}x{k}x{n}"
            seed = seed_for(case)
            rng = np.random.default_rng(seed)
            names, inputs, out_dtype = qgemm_case(rng, ta, tb, m, k, n, trans_a, trans_b, c_shape,
                                                  per_column, output, alpha, c_wrap=wrap)
            attrs = {"transA": trans_a, "transB": trans_b, "alpha": float(np.float32(alpha))}
            y = run_ort("QGemm", names, inputs, out_dtype, attrs, 13, domain="com.microsoft",
                        initializers=("B",) if prepack else ())
            g = f"QGemm {SHORT[ta]}*{SHORT[tb]}->{'f32' if out_dtype == 'float32' else SHORT[ta]}"
            notes = []
            if u8s8:
                notes.append("|B|, |b_zero_point| <= 64: VPMADDUBSW pair sums cannot saturate")
            if prepack:
                notes.append("B is an initializer (ORT prepacks it)")
            if output == "y_scale_only":
                notes.append("y_scale without y_zero_point: float output divided by y_scale")
            if wrap:
                notes.append("C near the int32 limits: C + sum wraps mod 2^32")
            w.add(case, g, "QGemm", {"transA": trans_a, "transB": trans_b, "alpha": attr_float(alpha)},
                  inputs, y, out_dtype, seed, note="; ".join(notes))


# ---------------------------------------------------------------------------------------------
# Gemm float32 / float64 (tolerance).

GEMM_C_KINDS = [None, "scalar", "one", "n", "1n", "m1", "mn"]
GEMM_SHAPES = [(7, 33, 9), (16, 64, 16), (1, 100, 31), (29, 1, 1), (13, 300, 17), (31, 17, 40),
               (2, 5, 3), (24, 129, 24)]


def gemm_c_shape(kind, m, n):
    return {None: None, "scalar": [], "one": [1], "n": [n], "1n": [1, n], "m1": [m, 1], "mn": [m, n],
            "mn_beta0": [m, n]}[kind]


def gemm_tolerance(dtype, k):
    if dtype == "float64":
        return {"rtol": 1e-12, "atol": 1e-14 * max(k, 1)}
    return {"rtol": 1e-5, "atol": 1e-6 * max(k, 1)}


def gen_gemm(w):
    for dtype in ("float32", "float64"):
        g = f"Gemm {dtype} (tolerance)"
        w.group(g, note="ORT Gemm-13 via MLAS: summation order differs, compared with a tolerance")
        npdt = DTYPES[dtype][0]
        idx = 0
        for trans_a, trans_b in ((0, 0), (1, 0), (0, 1), (1, 1)):
            for c_kind in GEMM_C_KINDS + ["mn_beta0"]:
                for scaled in (False, True):
                    m, k, n = GEMM_SHAPES[idx % len(GEMM_SHAPES)]
                    idx += 1
                    alpha, beta = (1.0, 1.0) if not scaled else (0.7, -1.3)
                    if c_kind == "mn_beta0":
                        beta = 0.0
                    case = (f"gemm_{dtype}_t{trans_a}{trans_b}_c{c_kind or 'none'}"
                            f"{'_scaled' if scaled else ''}_{m}x{k}x{n}")
                    seed = seed_for(case)
                    rng = np.random.default_rng(seed)
                    a = rng.uniform(-1, 1, size=[k, m] if trans_a else [m, k]).astype(npdt)
                    b = rng.uniform(-1, 1, size=[n, k] if trans_b else [k, n]).astype(npdt)
                    inputs = [("A", a, dtype), ("B", b, dtype)]
                    names = ["A", "B"]
                    cs = gemm_c_shape(c_kind, m, n)
                    if cs is not None:
                        inputs.append(("C", rng.uniform(-1, 1, size=cs).astype(npdt), dtype))
                        names.append("C")
                    attrs = {"alpha": alpha, "beta": beta, "transA": trans_a, "transB": trans_b}
                    y = run_ort("Gemm", names, inputs, dtype, attrs, 13)
                    w.add(case, g, "Gemm",
                          {"alpha": attr_float(alpha), "beta": attr_float(beta), "transA": trans_a,
                           "transB": trans_b, "contract": "strict"},
                          inputs, y, dtype, seed, compare=gemm_tolerance(dtype, k),
                          note="inputs uniform in [-1, 1); MLAS order differs from mmtune's")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    args = p.parse_args()
    import onnxruntime  # noqa: F401  (recorded in index.json versions)

    w = Writer(args.out, "gen_ort.py")
    gen_qlinear_matmul(w)
    gen_qgemm(w)
    gen_gemm(w)
    w.finish()


if __name__ == "__main__":
    main()
