#!/usr/bin/env bash
# `mmtune autotune --target` for a target this machine cannot run (ARM64 under qemu): candidates
# built with the cross toolchain, gated on the target, costed by the qemu instruction count (the
# proxy, named so in the records, the tuned database and the report); the count is repeatable (a
# second, independent run gives every schedule the same count); a planted fault makes every
# candidate `incorrect`; a target with neither device nor emulator is refused with the reason.
#   autotune_cross_test.sh MMTUNE WORK
set -euo pipefail
mmtune="$1" work="$2"
target=arm-64-linux-arm_dot_prod
rm -rf "$work" && mkdir -p "$work"
args=(--target "$target" --op QLinearMatMul:int8,int8,int8 --shape 16,128,96 --finalists 1 --jobs 2
      --quiet)
"$mmtune" autotune "${args[@]}" --max-candidates 3 --out "$work/a" > "$work/a.log" 2>&1 || { cat "$work/a.log"; exit 1; }
"$mmtune" autotune "${args[@]}" --max-candidates 3 --out "$work/b" --no-emit > "$work/b.log" 2>&1 || { cat "$work/b.log"; exit 1; }
python3 - "$work" "$target" <<'PY'
import json, sys
work, target = sys.argv[1], sys.argv[2]
def records(run):
    return [json.loads(l) for l in open(f"{work}/{run}/tuning.jsonl")]
a, b = records("a"), records("b")
passed = [r for r in a if r["outcome"] == "passed"]
assert passed, [r["outcome"] for r in a]
for r in passed:
    c = r["cost"]
    assert c["kind"] == "qemu_instructions" and c["instructions"] > 0, c
    ops = 2 * 16 * 128 * 96
    assert abs(r["rate"] - ops / c["instructions"]) < 1e-9 * r["rate"], (r["rate"], c)
    assert r["gate"]["outputs"] > 0 and r["gate"]["cases"] > 0, r["gate"]
    assert r["samples_s"] == [], "a proxy-costed record has no timing samples"
count = {}
for r in a + b:
    if r["outcome"] == "passed":
        key = json.dumps(r["schedule"], sort_keys=True)
        count.setdefault(key, set()).add(r["cost"]["instructions"])
assert all(len(v) == 1 for v in count.values()), count
shared = [k for k in count if any(json.dumps(r["schedule"], sort_keys=True) == k for r in b)]
assert shared, "the two runs share no schedule"
db = json.load(open(f"{work}/a/tuned/{target}.json"))
assert "qemu_instructions" in db.get("cost", {}), db.keys()
assert all("proxy" in k["provenance"] for k in db["kernels"]), [k["provenance"] for k in db["kernels"]]
html = open(f"{work}/a/report.html").read()
assert "op/instr" in html and "proxy cost, not time" in html
print(f"autotune_cross_test: {len(passed)} passed candidates costed by qemu instruction counts; "
      f"{len(shared)} schedules measured by both runs, each with one count")
PY
# A planted fault: every candidate's last output left unwritten is caught on the target.
"$mmtune" autotune "${args[@]}" --max-candidates 2 --out "$work/fault" --no-emit \
  --inject-fault drop_tail > "$work/fault.log" 2>&1 || { cat "$work/fault.log"; exit 1; }
python3 - "$work/fault/tuning.jsonl" <<'PY'
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
assert rs and all(r["outcome"] == "incorrect" for r in rs), [r["outcome"] for r in rs]
print(f"autotune_cross_test: the planted fault: {len(rs)} candidates incorrect")
PY
# CUDA without a GPU: no device, no emulator; refused before anything is built.
set +e
"$mmtune" autotune --target x86-64-linux-cuda-cuda_capability_80 --op Gemm:int32 --shape 8,8,8 \
  --out "$work/cuda" > "$work/cuda.log" 2>&1
rc=$?
set -e
if [ -e /dev/nvidiactl ] || [ -e /dev/nvidia0 ]; then
  echo "autotune_cross_test: a GPU is present; the refusal is not checked"
elif [ "$rc" != 1 ] || ! grep -q "no GPU" "$work/cuda.log"; then
  echo "autotune_cross_test: CUDA without a GPU: exit $rc"; cat "$work/cuda.log"; exit 1
else
  echo "autotune_cross_test: CUDA without a GPU refused: $(grep -o 'no GPU[^;]*' "$work/cuda.log" | head -1)"
fi
