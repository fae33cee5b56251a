#!/bin/sh
# build.sh: the exact commands that build a static Hexagon ELF from Halide
# kernels + the Halide runtime + this platform layer + a C program, and run
# it under qemu-hexagon. Also the example: it ends with "N passed, N failed".
#
#   targets/hexagon/build.sh [v62|v66|v68]    (default v66)
#
# v62 = hexagon-32-noos-hvx-hvx_128 (Halide's default HVX level), v66 and v68
# add -hvx_v66 / -hvx_v68. mm_f32 is built --scalar at every level: v62 and
# v66 have no HVX float multiply, and v68's (qfloat) makes qemu 7.2 abort
# (README.md). Needs: clang with the Hexagon backend (14 here), ld.lld,
# qemu-hexagon (qemu-user), llvm-objdump, and a Python with the halide
# wheel (PYTHON=..., default: the repo's .venv).
# Output goes to $OUT (default targets/hexagon/build/<level>).
# KERNEL_OPTS (e.g. --parallel, --strict) is passed to every kernel;
# F32_OPTS replaces mm_f32's default options (set it empty for vectors).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
LEVEL=${1:-v66}
case $LEVEL in
v62) TARGET=hexagon-32-noos-hvx-hvx_128 F32=--scalar ;;
v66) TARGET=hexagon-32-noos-hvx-hvx_128-hvx_v66 F32=--scalar ;;
v68) TARGET=hexagon-32-noos-hvx-hvx_128-hvx_v68 F32=--scalar ;;
*) echo "usage: $0 [v62|v66|v68]" >&2; exit 2 ;;
esac
OUT=${OUT:-$HERE/build/$LEVEL}
if [ -z "${PYTHON:-}" ]; then
    PYTHON=python3
    [ -x "$HERE/../../.venv/bin/python" ] && PYTHON=$HERE/../../.venv/bin/python
fi
OBJDUMP=$(command -v llvm-objdump-14 || command -v llvm-objdump)
HALIDE_INCLUDE=$("$PYTHON" -c 'import halide, os; print(os.path.join(os.path.dirname(halide.__file__), "include"))')
mkdir -p "$OUT"
say() { echo "+ $*" >&2; }

# 1. Halide objects, one process each (libHalide can abort the process on
#    an LLVM assertion). Kernels are compiled -no_runtime (gen_kernels.py
#    adds it); the runtime comes once, from the same target string.
F32=${F32_OPTS-$F32}
KOPTS=${KERNEL_OPTS:-}
for k in "mm_u8s8" "mm_f32 $F32" "mm_f64"; do
    set -- $k
    say "$PYTHON gen_kernels.py $* $OUT/$1.o $TARGET $KOPTS"
    nice -n 10 "$PYTHON" "$HERE/gen_kernels.py" "$1" "$OUT/$1.o" "$TARGET" ${2:-} $KOPTS
done
say "$PYTHON gen_kernels.py runtime $OUT/halide_runtime.o $TARGET"
nice -n 10 "$PYTHON" "$HERE/gen_kernels.py" runtime "$OUT/halide_runtime.o" "$TARGET"

# 2. The platform layer and the test program. -mcpu matches the kernels'
#    level (clang 14 knows hexagonv62..v68); -ffreestanding: no libc
#    (implies -fno-builtin, so memset's loop stays a loop); -G0: no small
#    data (GP is not set up); -ffp-contract=off: the scalar references do
#    separate multiply and add unless they call fmaf; -ffunction-sections
#    lets --gc-sections drop what nothing calls.
CFLAGS="--target=hexagon-unknown-none-elf -mcpu=hexagon$LEVEL -O2 -ffreestanding -G0 -ffp-contract=off -ffunction-sections
        -Wall -Wextra -I$HERE -I$HERE/../runner -I$HERE/include -I$HALIDE_INCLUDE"
for src in start.S platform.c builtins.c test_main.c; do
    say "clang $CFLAGS -c $src"
    nice -n 10 clang $CFLAGS -c "$HERE/$src" -o "$OUT/${src%.*}.o"
done

# 3. One static ELF. --gc-sections drops the unused parts of the runtime.
say "ld.lld -static --gc-sections -e _start -o $OUT/test.elf ..."
cd "$OUT"
ld.lld -static --gc-sections -e _start -o test.elf \
    start.o platform.o builtins.o test_main.o mm_u8s8.o mm_f32.o mm_f64.o halide_runtime.o

# 4. The u8 x s8 reduction must have become vrmpy.
n=$("$OBJDUMP" -d --mcpu=hexagon$LEVEL --mattr=+hvx$LEVEL,+hvx-length128b mm_u8s8.o | grep -c vrmpy || true)
echo "vrmpy instructions in mm_u8s8.o: $n"
[ "$n" -gt 0 ]

# 5. Run: sizes on stdin ("M N K" per line, K % 4 == 0); results on stdout.
#    qemu 7.2 has a single Hexagon CPU model, v67 (the default).
say "qemu-hexagon -cpu v67 test.elf < sizes"
printf '32 64 16\n7 96 44\n64 128 256\n' | qemu-hexagon -cpu v67 ./test.elf
# A kernel error with the default handler must reach stderr.
if qemu-hexagon -cpu v67 ./test.elf error-to-stderr 2>stderr.txt >/dev/null; then
    echo "FAIL: error-to-stderr run exited 0" >&2; exit 1
fi
grep -q '^Error: Output buffer C has type int32' stderr.txt
echo "stderr of the error run: $(cat stderr.txt)"

# 6. The float64/integer helpers of builtins.c against the emulated core.
#    Built for v67, where float64 add and multiply are instructions (on a
#    host: cc -O2 -ffp-contract=off builtins_test.c builtins.c -lm).
say "builtins_test (v67 build) under qemu-hexagon"
nice -n 10 clang $CFLAGS -mcpu=hexagonv67 -c "$HERE/builtins_test.c" -o builtins_test67.o
nice -n 10 clang $CFLAGS -mcpu=hexagonv67 -c "$HERE/builtins.c" -o builtins67.o
ld.lld -static --gc-sections -e _start -o builtins_test.elf start.o platform.o builtins67.o builtins_test67.o
qemu-hexagon -cpu v67 ./builtins_test.elf
