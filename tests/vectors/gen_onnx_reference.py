#!/usr/bin/env python3
"""Expected results from the ONNX reference evaluator (onnx.reference.ReferenceEvaluator) for
tests/reference/onnx_reference_conformance_test.cpp: mmtune's requant=float64 mode and its Gemm
rules (SEMANTICS.md §1.4, §2.1, §3.2, §8.1, §8.3, §8.4).

Every case is one ONNX node built in memory and run by the evaluator on random inputs drawn with a
fixed seed (crc32 of the case name, printed). Files, case.json and index.json as in gen_ort.py (whose
helpers and QLinearMatMul case list this script imports). Nothing here is derived from mmtune's code.

Cases, all compared bit for bit unless stated:
  QLinearMatMul requant=float64, float32 scales (opset 10): gen_ort.py's 20 cases for each of the 8
    (a, b, y) combinations of uint8/int8 (the evaluator takes them all; b over its whole range),
    plus per-row a parameters ([M,1], [..., M, 1]; ORT lacks them) combined with per-column b.
  QLinearMatMul requant=float64 with float16 scales and with bfloat16 scales (opset 21): the same
    shapes, the 8 combinations in turn; M = fl16(fl16(as*bs)/ys) (resp. bfloat16) and, by NumPy
    promotion of int32 x float16/bfloat16 arrays, fl64(acc * M). One float16 case has a subnormal
    a_scale*b_scale.
  The requant-split case of gen_ort.py (acc 540153 / 427881, M = float32 0x39D22420): the evaluator
    must give 217 / 171 where ORT gives 216 / 172.
  Gemm-13 for float16, bfloat16, int32, int64, uint32, uint64: transA/transB x C absent, (), (1), (N),
    (1,N), (M,1), (M,N), (M,N) with beta = 0, x alpha = beta = 1 and alpha, beta != 1.
    float16 / bfloat16: NumPy's HALF dot and ml_dtypes' dot sum exact products sequentially in
    float32 and round once; under NumPy 2 the epilogue runs in float32 (a float32 scalar is "strong")
    with one final rounding: exactly SEMANTICS.md §8.3. Two more cases each: sums that overflow to
    +Inf (all values positive, no Inf - Inf) and subnormal results.
    Integers: |values| < 2^53 everywhere and the results fit the type, so the evaluator's float64
    epilogue (and C-cast truncation toward zero) is exact; unsigned types get alpha, beta > 0.
  Gemm-13 float32 and float64 twice: "exact" data (small integers or dyadic values with few bits, so
    every product and partial sum is exact and any BLAS order gives the same bits) compared bit for
    bit, which checks the epilogue, alpha/beta, C broadcasting and transposes; and random data in
    [-1, 1) compared with a tolerance (float32 rtol 1e-5, atol 1e-6 * K; float64 rtol 1e-12,
    atol 1e-14 * K), BLAS's order being neither sequential nor reproducible.
"""

import argparse
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from gen_ort import (  # noqa: E402
    DTYPES, GEMM_C_KINDS, GEMM_SHAPES, QLM_CASES, QLM_NAMES, SHORT, SPLIT_FLOAT64, SPLIT_ACCS,
    SPLIT_M_BITS, Writer, attr_float, gemm_c_shape, gemm_tolerance, make_model, qlm_group,
    qlm_inputs, seed_for, split_inputs)

QTYPES = ("uint8", "int8")
ALL_QLM_COMBOS = [(a, b, y) for a in QTYPES for b in QTYPES for y in QTYPES]

# Per-row a parameters (evaluator only): name, a, b, a_params, b_scale, b_zero_point, mode.
PER_ROW_CASES = [
    ("per_row_2d", [33, 70], [70, 29], [33, 1], [29], [29], "normal"),
    ("per_row_per_tensor_b", [40, 100], [100, 17], [40, 1], "", "", "normal"),
    ("per_row_nd", [2, 1, 13, 70], [3, 70, 21], [2, 1, 13, 1], [3, 1, 21], [3, 1, 21], "normal"),
    ("per_row_batch_shared", [3, 12, 40], [40, 9], [12, 1], [9], [9], "normal"),
    ("per_row_ties", [20, 9], [9, 30], [20, 1], [30], [1, 30], "ties"),
]


def run_evaluator(op, names, inputs, out_dtype, attrs, opset):
    feeds = {n: (arr, dt) for n, arr, dt in inputs}
    model = make_model(op, names, feeds, out_dtype, attrs, opset)
    return ReferenceEvaluator(model).run(None, {n: arr for n, arr, _ in inputs})[0]


def per_row(ap):
    return ap != "" and int(np.prod(ap)) > 1


# ---------------------------------------------------------------------------------------------
# QLinearMatMul.

def gen_qlinear_matmul(w):
    for combo in ALL_QLM_COMBOS:
        g = qlm_group(combo, "float64")
        w.group(g, note="ONNX reference evaluator, float32 scales")
        tag = "".join(SHORT[t] for t in combo)
        for name, a_shape, b_shape, ap, bsp, bzp, mode in QLM_CASES + PER_ROW_CASES:
            case = f"qlm_{tag}_{name}"
            seed = seed_for(case)
            rng = np.random.default_rng(seed)
            inputs = qlm_inputs(rng, combo, a_shape, b_shape, ap, bsp, bzp, mode,
                                a_param_per_row=per_row(ap))
            y = run_evaluator("QLinearMatMul", QLM_NAMES, inputs, combo[2], {}, 10)
            w.add(case, g, "QLinearMatMul", {"opset": 10, "requant": "float64"}, inputs, y, combo[2],
                  seed, note=f"mode {mode}" + ("; per-row a parameters" if per_row(ap) else ""))

    for sdt in ("float16", "bfloat16"):
        g = f"QLinearMatMul scales={sdt} requant=float64"
        w.group(g, note=f"ONNX reference evaluator, opset 21, {sdt} scales; type combinations in turn")
        cases = QLM_CASES + PER_ROW_CASES
        for i, (name, a_shape, b_shape, ap, bsp, bzp, mode) in enumerate(cases):
            combo = ALL_QLM_COMBOS[i % len(ALL_QLM_COMBOS)]
            case = f"qlm_{''.join(SHORT[t] for t in combo)}_{sdt}_scales_{name}"
            seed = seed_for(case)
            rng = np.random.default_rng(seed)
            inputs = qlm_inputs(rng, combo, a_shape, b_shape, ap, bsp, bzp, mode,
                                a_param_per_row=per_row(ap), scale_dtype=sdt)
            y = run_evaluator("QLinearMatMul", QLM_NAMES, inputs, combo[2], {}, 21)
            w.add(case, g, "QLinearMatMul", {"opset": 21, "requant": "float64"}, inputs, y, combo[2],
                  seed, note=f"mode {mode}; {sdt} scales, M computed in {sdt}")
        if sdt == "float16":
            # a_scale * b_scale below float16's smallest normal (2^-14): M's first rounding is subnormal.
            case = "qlm_u8u8u8_float16_scales_subnormal_product"
            seed = seed_for(case)
            rng = np.random.default_rng(seed)
            inputs = qlm_inputs(rng, ("uint8", "uint8", "uint8"), [16, 20], [20, 16], "", [16], [16],
                                "normal", scale_dtype="float16")
            d = {n: i for i, (n, _, _) in enumerate(inputs)}
            old = float(inputs[d["a_scale"]][1]) * np.mean(inputs[d["b_scale"]][1].astype(np.float64))
            a_scale = np.array(0.003, np.float16)
            b_scale = (rng.uniform(0.004, 0.012, size=[16])).astype(np.float16)
            prod = a_scale * b_scale
            assert np.all(prod < np.float16(2.0**-14)), prod
            ys = float(inputs[d["y_scale"]][1]) * float(np.mean(prod.astype(np.float64))) / old
            inputs[d["a_scale"]] = ("a_scale", a_scale, "float16")
            inputs[d["b_scale"]] = ("b_scale", b_scale, "float16")
            inputs[d["y_scale"]] = ("y_scale", np.array(ys, np.float16), "float16")
            y = run_evaluator("QLinearMatMul", QLM_NAMES, inputs, "uint8", {}, 21)
            w.add(case, g, "QLinearMatMul", {"opset": 21, "requant": "float64"}, inputs, y, "uint8",
                  seed, note="a_scale * b_scale is a float16 subnormal")

    g = "QLinearMatMul requant split (SEMANTICS.md 1.6)"
    w.group(g, min_outputs=2, note="same M as SEMANTICS.md 1.6, in-range accumulators")
    inputs = split_inputs()
    y = run_evaluator("QLinearMatMul", QLM_NAMES, inputs, "uint8", {}, 10)
    if tuple(int(v) for v in y.flat) != SPLIT_FLOAT64:
        sys.exit(f"the evaluator gives {y.tolist()} for the requant-split case, "
                 f"expected {SPLIT_FLOAT64}")
    w.add("qlm_requant_split", g, "QLinearMatMul", {"opset": 10, "requant": "float64"}, inputs, y,
          "uint8", 0, note=f"acc {SPLIT_ACCS}, M bits 0x{SPLIT_M_BITS:08X}: float64 mode "
          f"{SPLIT_FLOAT64} (ORT, float32 mode: the gen_ort.py case)")


# ---------------------------------------------------------------------------------------------
# Gemm.

INT_RANGES = {  # value range of A, B and C per integer type: |acc| and results stay far below 2^53
    "int32": (-1000, 1000),
    "uint32": (0, 1000),
    "int64": (-(2**20), 2**20),
    "uint64": (0, 2**20),
}


def gemm_values(rng, dtype, shape, kind):
    """Inputs of one Gemm operand. kind: random (float), exact (few-bit values), int."""
    npdt = DTYPES[dtype][0]
    if dtype in INT_RANGES:
        lo, hi = INT_RANGES[dtype]
        return rng.integers(lo, hi + 1, size=shape).astype(npdt)
    if kind == "exact_int":  # small integers: every product and partial sum exact
        lim = 8 if dtype == "float32" else 2**15
        return rng.integers(-lim, lim + 1, size=shape).astype(npdt)
    if kind == "exact_dyadic":  # k / 2^p, few significant bits
        lim, p = (16, 3) if dtype == "float32" else (2**15, 10)
        return (rng.integers(-lim, lim + 1, size=shape) / float(2**p)).astype(npdt)
    return rng.uniform(-1, 1, size=shape).astype(npdt)


def gemm_case_set(w, dtype, group, kind, compare_for_k, alpha_beta, note):
    idx = 0
    for trans_a, trans_b in ((0, 0), (1, 0), (0, 1), (1, 1)):
        for c_kind in GEMM_C_KINDS + ["mn_beta0"]:
            for scaled in (False, True):
                m, k, n = GEMM_SHAPES[idx % len(GEMM_SHAPES)]
                idx += 1
                alpha, beta = (1.0, 1.0) if not scaled else alpha_beta
                if c_kind == "mn_beta0":
                    beta = 0.0
                vkind = kind if kind != "exact" else ("exact_int" if idx % 2 else "exact_dyadic")
                case = (f"gemm_{dtype}{'_' + kind if kind else ''}_t{trans_a}{trans_b}"
                        f"_c{c_kind or 'none'}{'_scaled' if scaled else ''}_{m}x{k}x{n}")
                seed = seed_for(case)
                rng = np.random.default_rng(seed)
                a = gemm_values(rng, dtype, [k, m] if trans_a else [m, k], vkind)
                b = gemm_values(rng, dtype, [n, k] if trans_b else [k, n], vkind)
                inputs = [("A", a, dtype), ("B", b, dtype)]
                names = ["A", "B"]
                cs = gemm_c_shape(c_kind, m, n)
                if cs is not None:
                    inputs.append(("C", gemm_values(rng, dtype, cs, vkind), dtype))
                    names.append("C")
                gemm_add(w, case, group, dtype, names, inputs, alpha, beta, trans_a, trans_b, seed,
                         compare_for_k(k), f"{note}; values {vkind or 'random'}")


def gemm_add(w, case, group, dtype, names, inputs, alpha, beta, trans_a, trans_b, seed, compare, note):
    attrs = {"alpha": alpha, "beta": beta, "transA": trans_a, "transB": trans_b}
    y = run_evaluator("Gemm", names, inputs, dtype, attrs, 13)
    w.add(case, group, "Gemm",
          {"alpha": attr_float(alpha), "beta": attr_float(beta), "transA": trans_a, "transB": trans_b,
           "contract": "strict"},
          inputs, y, dtype, seed, compare=compare, note=note)


def narrow_float_extras(w, dtype, group):
    """Sums near the top of the type's range (some outputs overflow to +Inf: all values positive and
    C finite, so no Inf - Inf), and results in the subnormal range."""
    npdt = DTYPES[dtype][0]
    big = 52.0 if dtype == "float16" else 2.0**61.7  # alpha * sum ~ the largest finite value
    tiny = 2.0**-10 if dtype == "float16" else 2.0**-66  # products ~ 2^-20 / 2^-132: subnormal
    for label, alpha, beta in (("overflow", 1.5, 1.0), ("subnormal", 0.75, 0.5)):
        case = f"gemm_{dtype}_{label}_16x64x16"
        seed = seed_for(case)
        rng = np.random.default_rng(seed)
        if label == "overflow":
            a = rng.uniform(0, big, size=[16, 64]).astype(npdt)
            b = rng.uniform(0, big, size=[64, 16]).astype(npdt)
            c = (rng.uniform(-1, 1, size=[16]) * big * big).astype(npdt)
        else:
            a = (rng.uniform(-1, 1, size=[16, 64]) * tiny).astype(npdt)
            b = (rng.uniform(-1, 1, size=[64, 16]) * tiny).astype(npdt)
            c = (rng.uniform(-1, 1, size=[16]) * tiny * tiny * 8).astype(npdt)
        gemm_add(w, case, group, dtype, ["A", "B", "C"],
                 [("A", a, dtype), ("B", b, dtype), ("C", c, dtype)], alpha, beta, 0, 0, seed, "exact",
                 f"{label}: |A|, |B| <= {big if label == 'overflow' else tiny:g}")


def gen_gemm(w):
    for dtype in ("float16", "bfloat16"):
        g = f"Gemm {dtype}"
        w.group(g, note="NumPy HALF dot / ml_dtypes dot (float32 sequential sum, one rounding), "
                        "NumPy 2 float32 epilogue")
        gemm_case_set(w, dtype, g, "", lambda k: "exact", (0.7, -1.3), "random normal-range values")
        narrow_float_extras(w, dtype, g)
    for dtype in ("int32", "int64", "uint32", "uint64"):
        g = f"Gemm {dtype}"
        w.group(g, note="integer dot, float64 epilogue exact (|values| < 2^53), truncation toward zero")
        ab = (0.7, -1.3) if dtype.startswith("int") else (0.7, 1.3)
        gemm_case_set(w, dtype, g, "", lambda k: "exact", ab,
                      f"values in [{INT_RANGES[dtype][0]}, {INT_RANGES[dtype][1]}]")
    for dtype in ("float32", "float64"):
        g = f"Gemm {dtype} exact data"
        w.group(g, note="products and partial sums exact: any BLAS order gives the same bits")
        gemm_case_set(w, dtype, g, "exact", lambda k: "exact", (0.1, -0.35),
                      "every product and partial sum exact")
        g = f"Gemm {dtype} (tolerance)"
        w.group(g, note="BLAS order differs from mmtune's sequential sum: compared with a tolerance")
        gemm_case_set(w, dtype, g, "random", lambda k, d=dtype: gemm_tolerance(d, k), (0.7, -1.3),
                      "inputs uniform in [-1, 1)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    args = p.parse_args()
    w = Writer(args.out, "gen_onnx_reference.py")
    gen_qlinear_matmul(w)
    gen_gemm(w)
    w.finish()


if __name__ == "__main__":
    main()
