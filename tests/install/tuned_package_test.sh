#!/usr/bin/env bash
# The package of tuned kernels, as a user makes and uses it: a small tuning run on this machine,
# `mmtune emit` into a folder, then examples/tuned_consumer configured with find_package(mmtune-kernels)
# against DIR/package, built and run. Every call must run a kernel the package's manifest lists (the
# tuned one, and its prepacked twin) and equal the reference bit for bit. Then the package survives
# failed emits untouched (no source tree; a tree whose configure step fails) and is replaced by a
# successful one.
#   tuned_package_test.sh CMAKE NINJA MMTUNE SOURCE_DIR WORK_DIR PYTHON
set -euo pipefail
cmake="$1" ninja="$2" mmtune="$3" source="$4" work="$5" python="$6"
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

start=$SECONDS
"$mmtune" autotune --op Gemm:float32 --shape 16,64,64 --max-candidates 2 --baselines none \
  --finalists 0 --jobs 2 --quiet --no-package --out "$work/tune" > "$work/autotune.log"
[ ! -e "$work/tune/package" ] || fail "autotune --no-package wrote a package"
tuned_s=$((SECONDS - start))

emitted="$work/emitted"
pkg="$emitted/package"
start=$SECONDS
"$mmtune" emit --db "$work/tune/tuning.jsonl" --out "$emitted" | tee "$work/emit.log"
emit_s=$((SECONDS - start))
grep -q "find_package(mmtune-kernels REQUIRED)" "$work/emit.log" || fail "emit printed no find_package hint"
for f in include/mmtune/mmtune.h include/mmtune/reference/gemm.h lib/libmmtune_kernels.a \
         lib/cmake/mmtune-kernels/mmtune-kernelsConfig.cmake \
         lib/cmake/mmtune-kernels/mmtune-kernelsConfigVersion.cmake manifest.json; do
  [ -f "$pkg/$f" ] || fail "the package lacks $f"
done
if find "$pkg/include" -name 'Halide*' | grep -q .; then fail "Halide headers in the package"; fi
if ls -d "$emitted"/package.tmp-* 2> /dev/null; then fail "emit left its temporary folder"; fi

# The manifest lists every kernel of the emitted database with its target, and what built them.
"$python" - "$pkg/manifest.json" "$emitted"/tuned/*.json << 'EOF'
import json, sys
manifest = json.load(open(sys.argv[1]))
for key in ("mmtune", "halide", "levels", "kernels"):
    assert manifest.get(key), f"manifest.json: no {key}"
names = {k["name"]: k for k in manifest["kernels"]}
for path in sys.argv[2:]:
    db = json.load(open(path))
    assert db["target"] in manifest["levels"], f"{db['target']} is not a level of the manifest"
    for k in db["kernels"]:
        m = names.get(k["name"])
        assert m, f"{k['name']} of {path} is not in manifest.json"
        for field in ("op", "params", "bucket", "schedule", "provenance"):
            assert m[field] == k[field], f"{k['name']}: manifest {field} {m[field]} != {k[field]}"
        assert m["target"] == db["target"], f"{k['name']}: target {m['target']}"
print(f"manifest.json: {len(names)} kernels, mmtune {manifest['mmtune']}, Halide {manifest['halide']}")
EOF

"$cmake" -S "$source/examples/tuned_consumer" -B "$work/consumer" -G Ninja -DCMAKE_MAKE_PROGRAM="$ninja" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$pkg" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON > "$work/configure.log"
"$cmake" --build "$work/consumer" > "$work/build.log"
if grep -o -- '-I[^ "]*\|-isystem [^ "]*' "$work/consumer/compile_commands.json" | grep -v "^-I$pkg\|^-isystem $pkg" | grep .; then
  fail "the consumer compiles with include paths outside the package"
fi
"$work/consumer/mmtune_tuned_consumer" 16 64 64 | tee "$work/run.log" || fail "the consumer failed"
# Each call ran a kernel of this package: the first the emitted database's, the second its twin.
"$python" - "$pkg/manifest.json" "$work/run.log" "$emitted"/tuned/*.json << 'EOF'
import json, sys
manifest = {k["name"] for k in json.load(open(sys.argv[1]))["kernels"]}
ran = [l.split(": ", 1)[1].strip() for l in open(sys.argv[2]) if l.startswith("ran: ")]
tuned = {k["name"] for path in sys.argv[3:] for k in json.load(open(path))["kernels"]}
assert len(ran) == 2, f"the consumer reported {len(ran)} calls"
for name in ran:
    assert name in manifest, f"{name} ran, and it is not a kernel of the package's manifest"
assert ran[0] in tuned, f"{ran[0]} ran, and the emitted database has no such kernel"
print("the emitted kernels ran:", ", ".join(ran))
EOF

# Failed emits leave the package as it was.
before="$(cd "$pkg" && find . -type f -exec sha256sum {} + | sort)"
if MMTUNE_SOURCE_DIR="$work/nowhere" "$mmtune" emit --db "$work/tune/tuning.jsonl" --out "$emitted" \
     > "$work/nowhere.log" 2>&1; then
  fail "emit succeeded without a source tree"
fi
grep -q "MMTUNE_SOURCE_DIR='$work/nowhere' is not one" "$work/nowhere.log" || { cat "$work/nowhere.log"; fail "no reason given"; }
mkdir -p "$work/broken/cmake"
touch "$work/broken/cmake/MmtuneKernels.cmake"
printf 'cmake_minimum_required(VERSION 3.28)\nproject(broken NONE)\nmessage(FATAL_ERROR "this tree cannot be configured")\n' \
  > "$work/broken/CMakeLists.txt"
set +e
MMTUNE_SOURCE_DIR="$work/broken" "$mmtune" emit --db "$work/tune/tuning.jsonl" --out "$emitted" \
  > "$work/broken.log" 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] || { cat "$work/broken.log"; fail "a failed configure step exited with $rc, not 1"; }
for want in "the package's configure step failed" "configure.log" "this tree cannot be configured"; do
  grep -q "$want" "$work/broken.log" || { cat "$work/broken.log"; fail "the error lacks '$want'"; }
done
[ "$before" = "$(cd "$pkg" && find . -type f -exec sha256sum {} + | sort)" ] || fail "a failed emit changed the package"
if find "$emitted" -path '*package.tmp-*/install' | grep -q .; then fail "a failed emit left a partial install"; fi
rm -rf "$emitted"/package.tmp-*

# A successful emit (here of the one target, named) replaces it.
target="$(basename "$emitted"/tuned/*.json .json)"
"$mmtune" emit --db "$work/tune/tuning.jsonl" --out "$emitted" --target "$target" > "$work/again.log"
grep -q "package: replaced $pkg" "$work/again.log" || { cat "$work/again.log"; fail "the second emit did not replace the package"; }
[ -f "$pkg/manifest.json" ] || fail "the replaced package lacks manifest.json"
echo "tuned_package_test: tuned in ${tuned_s} s, emitted in ${emit_s} s, built and ran find_package(mmtune-kernels): OK"
