#!/usr/bin/env bash
# mmtune verify on one target: every kernel of the default identities built for it and run there
# through its default runner; passes when every kernel ran cases on the target and matched the
# reference, when the kernels whose names start with PREFIX use instruction INSTR (each
# PREFIX:INSTR given), and when a planted fault (every kernel's last output left unwritten) is
# counted as mismatches with exit status 4.
#   verify_test.sh MMTUNE WORK TARGET [PREFIX:INSTR]...
set -euo pipefail
mmtune="$1" work="$2" target="$3"
shift 3
expect="$*"
# MMTUNE_LONG=1: random schedules of the template too, every data kind on every gate shape.
long=()
if [ "${MMTUNE_LONG:-0}" = 1 ]; then long=(--schedules 5 --full --seed "${MMTUNE_SEED:-1}"); fi
mkdir -p "$work"
"$mmtune" verify --target "$target" --work "$work/build" --json "$work/verify.json" "${long[@]}" | tee "$work/verify.log"
python3 - "$work/verify.json" $expect <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for e in sys.argv[2:]:
    prefix, instr = e.split(":")
    named = [k for k in r["kernels"] if k["name"].startswith(prefix)]
    assert named, f"no kernel named {prefix}..."
    for k in named:
        assert k["instructions"].get(instr, 0) > 0, f"{k['name']} does not use {instr}: {k['instructions']}"
    print(f"verify_test: {len(named)} kernels {prefix}... use {instr}")
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
