"""gen_kernels.py: the example Halide pipelines for the Hexagon platform layer.

Usage (one object per process: libHalide may abort on an LLVM assertion):
  python gen_kernels.py runtime  OUT.o TARGET           # Halide runtime alone
  python gen_kernels.py KERNEL   OUT.o TARGET [options] # kernel, no runtime
KERNEL is one of:
  mm_u8s8  C(n, m) = sum_k i32(A(k, m)) * i32(B(k, n)), A uint8 (k fastest),
           B int8 packed in groups of four k: Bp(k % 4, n, k / 4); K % 4 == 0.
           The reduction over the group runs .atomic().vectorize() -> vrmpy.
  mm_f32   C(n, m) = sum_k A(k, m) * B(n, k), float32, k = 0, 1, ... in order.
  mm_f64   the same in float64 (scalar: HVX has no float64).
Options: --scalar (no vectors; float kernels), --parallel (parallel over m),
         --strict (strict_float: no fused multiply-add).
--parallel computes each row of C inside a parallel loop of an output stage:
parallel() directly on mm_u8s8's atomic vrmpy update aborts libHalide on
Hexagon (LLVM assertion "Invalid cast!"; the same schedule compiles for
x86), while this form compiles and keeps vrmpy.
Each kernel also gets KERNEL.h next to OUT.o (its C prototypes). TARGET is
e.g. hexagon-32-noos-hvx-hvx_128-hvx_v66; -no_runtime is added here.
"""
import os
import sys

import halide as hl


def mm_u8s8(name):
    a = hl.ImageParam(hl.UInt(8), 2, "A")
    bp = hl.ImageParam(hl.Int(8), 3, "Bp")
    # Tell Halide the packed layout, so a group of 32 columns is one
    # contiguous 128-byte vector load.
    bp.dim(0).set_bounds(0, 4).set_stride(1)
    bp.dim(1).set_stride(4)
    bp.dim(2).set_stride(4 * bp.dim(1).extent())
    x, y, xo, xi = hl.Var("x"), hl.Var("y"), hl.Var("xo"), hl.Var("xi")
    r = hl.RDom([(0, 4), (0, a.dim(0).extent() // 4)], "r")
    c = hl.Func(name)
    c[x, y] = hl.i32(0)
    c[x, y] += hl.i32(a[4 * r.y + r.x, y]) * hl.i32(bp[r.x, x, r.y])
    # 32 int32 lanes per 128-byte vector; each lane sums its group of four.
    c.update().split(x, xo, xi, 32).reorder(r.x, xi, r.y, xo, y)
    c.update().atomic().vectorize(r.x).vectorize(xi)
    return c, [a, bp], y


def mm_float(name, t, scalar):
    a = hl.ImageParam(t, 2, "A")
    b = hl.ImageParam(t, 2, "B")
    x, y, xo, xi = hl.Var("x"), hl.Var("y"), hl.Var("xo"), hl.Var("xi")
    r = hl.RDom([(0, a.dim(0).extent())], "r")
    c = hl.Func(name)
    c[x, y] = hl.cast(t, 0)
    c[x, y] += a[r.x, y] * b[x, r.x]
    if not scalar:
        lanes = 128 // t.bytes()
        c.vectorize(x, lanes)
        c.update().split(x, xo, xi, lanes).reorder(xi, r.x, xo, y).vectorize(xi)
    return c, [a, b], y


def main(argv):
    what, out, target = argv[1], argv[2], argv[3]
    opts = set(argv[4:])
    if what == "runtime":
        hl.compile_standalone_runtime(out, hl.Target(target))
        return
    t = hl.Target(target).with_feature(hl.TargetFeature.NoRuntime)
    if "--strict" in opts:
        t = t.with_feature(hl.TargetFeature.StrictFloat)
    inner = "C_row" if "--parallel" in opts else "C"
    if what == "mm_u8s8":
        c, args, y = mm_u8s8(inner)
    elif what == "mm_f32":
        c, args, y = mm_float(inner, hl.Float(32), "--scalar" in opts)
    elif what == "mm_f64":
        c, args, y = mm_float(inner, hl.Float(64), True)
    else:
        sys.exit("unknown kernel " + what)
    if "--parallel" in opts:
        x = hl.Var("x")
        rows = hl.Func("C")
        rows[x, y] = c[x, y]
        rows.parallel(y)
        c.compute_at(rows, y)
        c = rows
    c.compile_to_object(out, args, what, t)
    c.compile_to_header(os.path.join(os.path.dirname(out) or ".", what + ".h"), args, what, t)


if __name__ == "__main__":
    main(sys.argv)
