#!/usr/bin/env bash
# Installs the build into a fresh prefix, then configures, builds and runs examples/consumer against
# it through find_package(mmtune): the installed headers must be self-contained (the consumer's
# compile lines name no folder of the source or build tree), the program must not need libHalide,
# and every call must match the reference (and run a linked kernel when the build has kernels).
#   consumer_test.sh CMAKE NINJA BUILD_DIR SOURCE_DIR WORK_DIR KERNELS (none: a build without kernels)
set -euo pipefail
cmake="$1" ninja="$2" build="$3" source="$4" work="$5" kernel_target="$6"
rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"

"$cmake" --install "$build" --prefix "$prefix" > "$work/install.log"
for f in include/mmtune/mmtune.h include/mmtune/reference/gemm.h lib/libmmtune_runtime.a \
         lib/cmake/mmtune/mmtuneConfig.cmake lib/cmake/mmtune/mmtuneConfigVersion.cmake; do
  [ -f "$prefix/$f" ] || { echo "FAIL: the install lacks $f"; exit 1; }
done
if find "$prefix/include" -name 'Halide*' | grep -q .; then
  echo "FAIL: Halide headers installed"; exit 1
fi

"$cmake" -S "$source/examples/consumer" -B "$work/build" -G Ninja -DCMAKE_MAKE_PROGRAM="$ninja" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON > "$work/configure.log"
"$cmake" --build "$work/build" > "$work/build.log"
# Only the consumer's own source may come from the source tree; no include path into it or the build.
if grep -o -- '-I[^ "]*\|-isystem [^ "]*' "$work/build/compile_commands.json" | grep -v "^-I$prefix\|^-isystem $prefix" | grep .; then
  echo "FAIL: the consumer compiles with include paths outside the install prefix"; exit 1
fi
if ldd "$work/build/mmtune_consumer" | grep -i halide; then
  echo "FAIL: the consumer links libHalide"; exit 1
fi
args=()
[ "$kernel_target" != none ] && args=(--require-kernels)
"$work/build/mmtune_consumer" "${args[@]}"
echo "consumer_test: installed to $prefix, consumer built with find_package(mmtune) and run: OK"
