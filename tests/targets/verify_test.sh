#!/usr/bin/env bash
# mmtune verify on one target: every kernel of the default identities (or those given after the
# target) built for it and run there through its default runner; passes when every kernel ran
# cases on the target and matched the reference, and when a planted fault (every kernel's last
# output left unwritten) is counted as mismatches with exit status 4.
#   verify_test.sh MMTUNE WORK TARGET [--op SPEC]...
set -euo pipefail
mmtune="$1" work="$2" target="$3"
shift 3
mkdir -p "$work"
"$mmtune" verify --target "$target" --work "$work/build" --json "$work/verify.json" "$@" | tee "$work/verify.log"
python3 - "$work/verify.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ks = r["kernels"]
assert ks, "no kernels"
for k in ks:
    assert k["cases"] > 0 and k["outputs"] > 0, f"{k['name']}: no case ran on the target"
    assert k["mismatches"] == 0 and not k["error"], f"{k['name']}: {k}"
print(f"verify_test: {r['target']}: {len(ks)} kernels, {sum(k['cases'] for k in ks)} cases, "
      f"{sum(k['outputs'] for k in ks)} outputs, 0 mismatches")
PY
# The planted fault: one identity, every kernel's last output element unwritten.
set +e
"$mmtune" verify --target "$target" --work "$work/build" --json "$work/fault.json" \
  --op QLinearMatMul:uint8,int8,uint8 --inject-fault drop_tail > "$work/fault.log" 2>&1
rc=$?
set -e
if [ "$rc" != 4 ]; then
  echo "verify_test: the planted fault exited with $rc, not 4"; cat "$work/fault.log"; exit 1
fi
python3 - "$work/fault.json" <<'PY'
import json, sys
ks = json.load(open(sys.argv[1]))["kernels"]
assert ks and all(k["mismatches"] >= k["cases"] > 0 for k in ks), ks
print(f"verify_test: the planted fault: {sum(k['mismatches'] for k in ks)} mismatches counted")
PY
