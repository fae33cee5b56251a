#!/usr/bin/env bash
# The shipped kernels of a cross target as the build made them (MMTUNE_CROSS_TARGETS: `mmtune
# build-library` into <build>/cross/<target>/): the library links into the kernel runner and every
# kernel of its manifest runs on the target (qemu) and matches the reference; for a target nothing
# here runs (CUDA without a GPU), every kernel is built, linked and listed by the runner.
#   verify_library_test.sh MMTUNE LIBRARY WORK TARGET
set -euo pipefail
mmtune="$1" library="$2" work="$3" target="$4"
mkdir -p "$work"
[ -f "$library/lib/libmmtune_kernels.a" ] || { echo "no $library/lib/libmmtune_kernels.a"; exit 1; }
"$mmtune" verify --target "$target" --library "$library" --work "$work/build" \
  --json "$work/verify.json" | tee "$work/verify.log"
python3 - "$library/manifest.json" "$work/verify.json" <<'PY'
import json, sys
manifest = json.load(open(sys.argv[1]))
r = json.load(open(sys.argv[2]))
names = sorted(k["name"] for k in manifest["kernels"])
assert names, "the library's manifest lists no kernels"
if "not_run" in r:
    assert r["built"] == r["listed"] == len(names) and r["failed"] == 0, r
    print(f"verify_library_test: {r['target']}: {len(names)} kernels linked from the library and "
          f"listed by the runner; not run: {r['not_run']}")
    sys.exit(0)
ks = r["kernels"]
assert sorted(k["name"] for k in ks) == names, (names, [k["name"] for k in ks])
for k in ks:
    assert k["cases"] > 0 and k["outputs"] > 0, f"{k['name']}: no case ran on the target"
    assert k["mismatches"] == 0 and not k["error"], f"{k['name']}: {k}"
print(f"verify_library_test: {r['target']}: the library's {len(ks)} kernels, "
      f"{sum(k['cases'] for k in ks)} cases, {sum(k['outputs'] for k in ks)} outputs, 0 mismatches")
PY
