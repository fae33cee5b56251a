#!/bin/bash
# probe.sh: re-measures the facts in README.md ("Measured here"). Every
# Halide compile runs in its own process (libHalide aborts the process on
# an LLVM assertion), under nice. Prints one line per fact; about 3 min.
#   targets/hexagon/probe.sh [WORKDIR]     (default /tmp/mmtune-hexagon-probe)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
W=${1:-/tmp/mmtune-hexagon-probe}
mkdir -p "$W"
PYTHON=${PYTHON:-python3}
[ -x "$HERE/../../.venv/bin/python" ] && PYTHON=$HERE/../../.venv/bin/python
export PYTHON
OBJDUMP=$(command -v llvm-objdump-14 || command -v llvm-objdump)
T62=hexagon-32-noos-hvx-hvx_128
T66=$T62-hvx_v66
T68=$T62-hvx_v68
fact() { printf '%-44s %s\n' "$1" "$2"; }
last() { grep -m1 -oE '(Error|Assertion)[^(]*' "$1" | cut -c1-150; }
hx() { nice -n 10 "$PYTHON" "$@"; }

# -- qemu CPU models
qemu-hexagon -cpu help >"$W/cpu_help.txt" 2>&1
fact "qemu-hexagon -cpu help" "exit $?, output: '$(head -c 80 "$W/cpu_help.txt")'"

# -- build.sh at each level (kernels, runtime, link, run, error path)
for L in v62 v66 v68; do
    OUT=$W/$L "$HERE/build.sh" $L >"$W/build_$L.log" 2>&1
    rc=$?
    fact "build.sh $L" "exit $rc; $(grep -E 'vrmpy instructions' "$W/build_$L.log"); $(grep -E '^[0-9]+ passed' "$W/build_$L.log" | head -1)"
    fact "  mm_f32 (scalar) $L" "$(grep -m1 '^mm_f32:' "$W/build_$L.log")"
    fact "  mm_f64 $L helper calls" "$(llvm-nm-14 "$W/$L/mm_f64.o" | awk '$1=="U" && $2 ~ /^__hexagon/ {printf "%s ", $2}')"
done
for c in v66 v67 v68; do
    echo "8 32 8" | qemu-hexagon -cpu "$c" "$W/v66/test.elf" >/dev/null 2>"$W/cpu_$c.txt"
    fact "qemu-hexagon -cpu $c (v66 test.elf)" "exit $? $(head -c 80 "$W/cpu_$c.txt")"
done

# -- strict_float: does the scalar float32 kernel stop fusing?
OUT=$W/strict KERNEL_OPTS=--strict "$HERE/build.sh" v66 >"$W/strict.log" 2>&1
fact "mm_f32 --strict v66" "exit $?; $(grep -m1 '^mm_f32:' "$W/strict.log")"

# -- HVX float32: the matmul with vectors, per level; v68 also run
for T in $T62 $T66 $T68; do
    hx "$HERE/gen_kernels.py" mm_f32 "$W/vf32_${T##*-}.o" "$T" >"$W/vf32.log" 2>&1
    fact "vector mm_f32 compile ${T#hexagon-32-noos-}" "exit $? $(last "$W/vf32.log")"
done
OUT=$W/v68vec F32_OPTS= "$HERE/build.sh" v68 >"$W/v68vec.log" 2>&1
fact "vector mm_f32 v68 run under qemu" "exit $? $(grep -m1 -o 'ERROR:.*' "$W/v68vec.log")"
fact "  its HVX float ops" "$("$OBJDUMP" -d --mcpu=hexagonv68 --mattr=+hvxv68,+hvx-length128b "$W/v68vec/mm_f32.o" |
    grep -oE 'v[0-9]+\.(qf32|sf) = [a-z]*(\([^)]*\)|v[0-9]+\.qf32)' | sed -E 's/v[0-9]+/v/g' | sort -u | tr '\n' ';')"

# -- elementwise float32 vector ops (32 lanes) on v66: compiled how?
for op in add sub min div sqrt convert mul; do
    hx - "$T66" "$op" "$W/ew_$op.o" >"$W/ew.log" 2>&1 <<'EOF'
import sys, halide as hl
t = hl.Target(sys.argv[1]).with_feature(hl.TargetFeature.NoRuntime)
x = hl.Var("x")
a, b = hl.ImageParam(hl.Float(32), 1, "a"), hl.ImageParam(hl.Float(32), 1, "b")
e = {"add": a[x] + b[x], "sub": a[x] - b[x], "min": hl.min(a[x], b[x]), "div": a[x] / b[x],
     "sqrt": hl.sqrt(a[x]), "convert": hl.f32(hl.i32(a[x])), "mul": a[x] * b[x]}[sys.argv[2]]
f = hl.Func("f")
f[x] = e
f.vectorize(x, 32)
f.compile_to_object(sys.argv[3], [a, b], "f", t)
EOF
    if [ $? -eq 0 ]; then
        d=$("$OBJDUMP" -d --mcpu=hexagonv66 --mattr=+hvxv66,+hvx-length128b "$W/ew_$op.o")
        fact "vector f32 $op v66" "compiles: $(echo "$d" | grep -cE 'sf(add|sub|cmp|recipa|invsqrta)|convert_w2sf|convert_sf2w') scalar sf* instrs, $(echo "$d" | grep -cE 'v[0-9]+\.(sf|qf32)') HVX float instrs; calls: $(llvm-nm-14 "$W/ew_$op.o" | awk '$1=="U" && $2 ~ /^__hexagon/ {printf "%s ", $2}')"
    else
        fact "vector f32 $op v66" "fails: $(last "$W/ew.log")"
    fi
done

# -- parallel(): directly on mm_u8s8's vrmpy update, and as gen_kernels --parallel does it
hx - "$T66" >"$W/par.log" 2>&1 <<EOF
import sys, halide as hl
sys.path.insert(0, "$HERE")
import gen_kernels
c, args, y = gen_kernels.mm_u8s8("C")
c.update().parallel(y)
c.compile_to_object("$W/par_direct.o", args, "mm", hl.Target(sys.argv[1]).with_feature(hl.TargetFeature.NoRuntime))
EOF
fact "mm_u8s8 update().parallel(y) compile" "exit $? $(grep -m1 -o 'Assertion.*' "$W/par.log")"
OUT=$W/par KERNEL_OPTS=--parallel "$HERE/build.sh" v66 >"$W/par_build.log" 2>&1
fact "build.sh v66 KERNEL_OPTS=--parallel" "exit $?; $(grep -E 'vrmpy instructions' "$W/par_build.log"); $(grep -E '^[0-9]+ passed' "$W/par_build.log" | head -1)"
echo "8 32 8" | HL_NUM_THREADS=4 qemu-hexagon "$W/par/test.elf" >"$W/par_threads.log" 2>&1
fact "  same, HL_NUM_THREADS=4" "exit $?; $(grep -E '^[0-9]+ passed' "$W/par_threads.log")"

# -- async(): needs halide_do_parallel_tasks
hx - "$T66" >"$W/async.log" 2>&1 <<EOF
import sys, halide as hl
x, y = hl.Var("x"), hl.Var("y")
a = hl.ImageParam(hl.Int(32), 2, "A")
p, c = hl.Func("p"), hl.Func("C")
p[x, y] = a[x, y] * 2
c[x, y] = p[x, y] + 1
p.compute_at(c, y).async_()
c.compile_to_object("$W/async.o", [a], "as", hl.Target(sys.argv[1]).with_feature(hl.TargetFeature.NoRuntime))
EOF
cat >"$W/async_main.c" <<'EOF'
#include "HalideRuntime.h"
int as_argv(void**);
int main(void) {
    static int32_t a[32], c[32];
    halide_dimension_t d[2] = {{0, 8, 1, 0}, {0, 4, 8, 0}};
    halide_buffer_t ba = {0}, bc;
    ba.host = (uint8_t*)a;
    ba.type.code = halide_type_int;
    ba.type.bits = 32;
    ba.type.lanes = 1;
    ba.dimensions = 2;
    ba.dim = d;
    bc = ba;
    bc.host = (uint8_t*)c;
    void* args[2] = {&ba, &bc};
    return -as_argv(args); /* exit status: minus Halide's error code */
}
EOF
CF="--target=hexagon-unknown-none-elf -mcpu=hexagonv66 -O2 -ffreestanding -G0 -I$HERE -I$HERE/../runner -I$HERE/include
    -I$("$PYTHON" -c 'import halide, os; print(os.path.dirname(halide.__file__))')/include"
nice -n 10 clang $CF -c "$W/async_main.c" -o "$W/async_main.o" &&
    ld.lld -static --gc-sections -e _start -o "$W/async.elf" "$W/v66/"{start,platform,builtins}.o \
        "$W/async_main.o" "$W/async.o" "$W/v66/halide_runtime.o" &&
    qemu-hexagon "$W/async.elf" 2>"$W/async_run.log"
fact "async() producer, run" "exit $? (20 = halide_error_code_unimplemented); stderr: $(tr '\n' ' ' <"$W/async_run.log")"

# -- the link without --gc-sections: everything the runtime references
cd "$W/v66" && ld.lld -static -e _start -o full.elf start.o platform.o builtins.o test_main.o mm_u8s8.o \
    mm_f32.o mm_f64.o halide_runtime.o >"$W/nogc.log" 2>&1
fact "link without --gc-sections" "exit $? $(head -c 200 "$W/nogc.log")"
echo "8 32 8" | qemu-hexagon ./full.elf >"$W/nogc_run.log" 2>&1
fact "  and its run" "exit $? $(grep -E '^[0-9]+ passed' "$W/nogc_run.log")"
fact "live allocation at once (v66 run)" "$(grep -m1 'live at once' "$W/build_v66.log")"
