#!/usr/bin/env bash
# Configuring the project with a tuning database that asks for an fma-contract kernel on a target
# without fused multiply-add must fail at configure time with the rule, before anything is built.
#   refuse_database_test.sh CMAKE NINJA SOURCE_DIR WORK_DIR
set -euo pipefail
cmake="$1" ninja="$2" source="$3" work="$4"
rm -rf "$work"
if "$cmake" -S "$source" -B "$work" -G Ninja -DCMAKE_MAKE_PROGRAM="$ninja" -DMMTUNE_BUILD_TESTS=OFF \
     -DMMTUNE_BUILD_BENCHMARKS=OFF -DMMTUNE_EXTRA_TARGETS= \
     -DMMTUNE_DATABASE="$source/tests/install/fma_without_fma.json" > "$work.log" 2>&1; then
  echo "FAIL: the configure step accepted an fma kernel for x86-64-linux-sse41"
  exit 1
fi
# CMake wraps long messages: compare with the lines joined.
joined="$(tr '\n' ' ' < "$work.log" | tr -s ' ')"
if ! grep -q "contract=fma needs a fused multiply-add, which target x86-64-linux-sse41 lacks" <<< "$joined"; then
  echo "FAIL: the configure step failed for another reason:"
  tail -20 "$work.log"
  exit 1
fi
grep -o "contract=fma needs a fused multiply-add, which target [^ ]* lacks" <<< "$joined"
echo "refuse_database_test: refused at configure time, as it must be"
