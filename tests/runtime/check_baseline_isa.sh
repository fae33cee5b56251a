#!/usr/bin/env bash
# The Halide runtime linked into the runtime libraries must run on any CPU of the architecture (the
# library falls back to the reference where the kernels' features are missing, so its own runtime
# code may not need them): no AVX (VEX-encoded "v..." instructions, ymm/zmm registers) in it.
#   check_baseline_isa.sh OBJECT...
set -euo pipefail
status=0
for obj in "$@"; do
  [ -f "$obj" ] || { echo "FAIL: $obj does not exist"; exit 1; }
  bad="$(objdump -d --no-show-raw-insn "$obj" | grep -E $'^\s+[0-9a-f]+:\s+v[a-z]|%[yz]mm[0-9]' || true)"
  n="$(printf '%s' "$bad" | grep -c . || true)"
  if [ "$n" -gt 0 ]; then
    echo "FAIL: $obj has $n AVX instructions, e.g.:"
    printf '%s\n' "$bad" | head -5
    status=1
  else
    echo "ok: $obj: $(objdump -d "$obj" | grep -cE $'^\s+[0-9a-f]+:') instructions, none beyond the baseline ISA"
  fi
done
exit $status
