#!/usr/bin/env bash
# mmtune verify on CUDA: every default identity the template computes exactly is built (PTX for
# sm_80), linked into the runner with the host Halide runtime, and listed by it; with a GPU the
# gate runs as on the other targets (verify_test.sh), without one it reports "not run: no GPU".
#   verify_cuda_test.sh MMTUNE WORK
set -euo pipefail
mmtune="$1" work="$2" target=x86-64-linux-cuda-cuda_capability_80
if [ -e /dev/nvidiactl ] || [ -e /dev/nvidia0 ]; then
  exec "$(dirname "$0")/verify_test.sh" "$mmtune" "$work" "$target" qlinear_matmul_s8_s8_s8:dp4a
fi
mkdir -p "$work"
"$mmtune" verify --target "$target" --work "$work/build" --json "$work/verify.json" | tee "$work/verify.log"
grep -q "dp4a" "$work/verify.log" || { echo "verify_cuda_test: no kernel uses dp4a"; exit 1; }
python3 - "$work/verify.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["not_run"].startswith("no GPU"), r
assert r["built"] > 0 and r["built"] == r["listed"] and r["failed"] == 0, r
print(f"verify_cuda_test: {r['built']} kernels built, linked and listed by the runner; not run: {r['not_run']}")
PY
