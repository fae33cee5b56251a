#!/usr/bin/env python3
"""Reads every #include of the project's C++ sources and fails on an edge against the direction of
dependencies (docs/architecture.md):

    reference <- schedules <- generators <- autotune        reference <- runtime <- autotune

and on three properties the folders promise:
  - libHalide stays out of what users link and of the tuner's Halide-free libraries: no file under
    reference/ or runtime/, and none of schedules' parameter files, reaches "Halide.h" (directly or
    through the project's headers);
  - the installed headers (<mmtune/mmtune.h>, <mmtune/reference/*.h>) are self-contained: each of their
    includes resolves inside the installed tree from <prefix>/include alone;
  - examples/ include the installed headers only.

Usage: check_includes.py [--root DIR] [--graph] | --self-test
Exit status 0 when the tree is clean, 1 with one line per violation otherwise.
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

# What each top-level folder may include besides itself.
ALLOWED = {
    "reference": set(),
    "schedules": {"reference"},
    "generators": {"schedules", "reference"},
    "runtime": {"reference"},
    "autotune": {"generators", "schedules", "reference", "runtime"},
    "tests": {"reference", "schedules", "generators", "runtime", "autotune", "benchmarks"},
    "benchmarks": {"reference", "schedules", "generators", "runtime", "autotune"},
    "examples": {"runtime"},
}
SOURCE_SUFFIXES = (".h", ".cc", ".cpp")
# Halide-free by design: the schedule templates' parameters (the tuner and tests link them without
# libHalide).
HALIDE_FREE_SCHEDULES = ("schedules/schedule.h", "schedules/schedule.cc", "schedules/target_info.h",
                         "schedules/target_info.cc", "schedules/knob_table.h", "schedules/matmul_layout.h",
                         "schedules/cpu/matmul_params.h", "schedules/cpu/matmul_params.cc")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def sources(root):
    for folder in ALLOWED:
        base = os.path.join(root, folder)
        for dirpath, _, files in os.walk(base):
            for f in sorted(files):
                if f.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(dirpath, f), root)


def includes(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            m = INCLUDE_RE.match(line)
            if m:
                yield n, m.group(1), m.group(2)


def resolve(root, rel, kind, name):
    """The project file an include names (as the build's include paths find it), or None."""
    candidates = []
    if kind == '"':
        candidates.append(os.path.normpath(os.path.join(os.path.dirname(rel), name)))
    candidates.append(os.path.normpath(name))
    candidates.append(os.path.normpath(os.path.join("runtime/include", name)))  # <mmtune/...>
    for c in candidates:
        if os.path.isfile(os.path.join(root, c)):
            return c
    return None


def top(rel):
    return rel.split(os.sep)[0]


def installed_headers(root):
    """install path -> source path of the headers `cmake --install` writes."""
    out = {}
    for dirpath, _, files in os.walk(os.path.join(root, "runtime/include")):
        for f in files:
            src = os.path.relpath(os.path.join(dirpath, f), root)
            out["include/" + os.path.relpath(src, "runtime/include")] = src
    text = open(os.path.join(root, "reference/CMakeLists.txt"), encoding="utf-8").read()
    m = re.search(r"set\(MMTUNE_REFERENCE_HEADERS(.*?)\)", text, re.S)
    for h in (m.group(1).split() if m else []):
        out["include/mmtune/reference/" + h] = "reference/" + h
    return out


def check(root):
    violations = []
    graph = {}
    direct = {}  # file -> project files it includes
    halide = set()  # files that include Halide.h themselves
    for rel in sources(root):
        src = top(rel)
        deps = []
        for line, kind, name in includes(root, rel):
            if name == "Halide.h":
                halide.add(rel)
            target = resolve(root, rel, kind, name)
            if target is None:
                if kind == '"' and name.split("/")[0] in ALLOWED:
                    violations.append(f"{rel}:{line}: includes {name}, which does not exist")
                continue  # a system or third-party header, or a generated one
            deps.append(target)
            dst = top(target)
            if dst == src:
                continue
            graph[(src, dst)] = graph.get((src, dst), 0) + 1
            if dst not in ALLOWED[src]:
                violations.append(f"{rel}:{line}: {src}/ includes {target} ({dst}/): against the direction "
                                  f"of dependencies ({src}/ may include {', '.join(sorted(ALLOWED[src])) or 'nothing'})")
            if src == "examples" and not name.startswith("mmtune/"):
                violations.append(f"{rel}:{line}: examples include installed headers only (<mmtune/...>), not {name}")
        direct[rel] = deps

    # libHalide reachability.
    reach = {}

    def reaches_halide(f, seen):
        if f in reach:
            return reach[f]
        if f in seen:
            return False
        seen.add(f)
        r = f in halide or any(reaches_halide(d, seen) for d in direct.get(f, []))
        reach[f] = r
        return r

    for rel in direct:
        must_not = top(rel) in ("reference", "runtime") or rel in HALIDE_FREE_SCHEDULES
        if must_not and reaches_halide(rel, set()):
            violations.append(f"{rel}: reaches \"Halide.h\" (libHalide), which this file's library must not need")

    # The installed headers, from the install prefix alone.
    installed = installed_headers(root)
    for dst, src in sorted(installed.items()):
        for line, kind, name in includes(root, src):
            if "Halide" in name:
                violations.append(f"{src}:{line}: an installed header includes {name}")
                continue
            tried = ([os.path.normpath(os.path.join(os.path.dirname(dst), name))] if kind == '"' else []) + \
                    [os.path.normpath("include/" + name)]
            found = any(t in installed for t in tried)
            if not found and (kind == '"' or name.startswith("mmtune/")):
                violations.append(f"{src}:{line}: installed as {dst}, its include {kind}{name} does not resolve "
                                  "inside the installed headers")
    return violations, graph


def self_test():
    """The checker must flag a planted bad edge, a libHalide leak and a broken installed header,
    and pass a clean tree."""
    tmp = tempfile.mkdtemp()
    try:
        def write(rel, text):
            path = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        write("reference/CMakeLists.txt", "set(MMTUNE_REFERENCE_HEADERS\n  tensor.h\n)\n")
        write("reference/tensor.h", "#pragma once\n#include <vector>\n")
        write("runtime/include/mmtune/mmtune.h", '#include "reference/tensor.h"\n')
        write("schedules/schedule.h", '#include "reference/tensor.h"\n')
        write("autotune/tuner.cc", '#include "schedules/schedule.h"\n#include "runtime/include/mmtune/mmtune.h"\n')
        clean, _ = check(tmp)
        assert clean == [], f"a clean tree was flagged: {clean}"
        write("runtime/src/bad.cc", '#include "autotune/tuner.h"\n')
        write("autotune/tuner.h", "#pragma once\n")
        write("schedules/cpu/matmul_params.h", '#include "Halide.h"\n')
        write("reference/extra.h", '#include "tensor.h"\n')
        write("reference/tensor.h", '#pragma once\n#include "extra.h"\n')
        bad, _ = check(tmp)
        text = "\n".join(bad)
        assert "runtime/src/bad.cc:1: runtime/ includes autotune/tuner.h" in text, text
        assert "schedules/cpu/matmul_params.h: reaches" in text, text
        assert "does not resolve inside the installed headers" in text, text
        assert len(bad) == 3, text
    finally:
        shutil.rmtree(tmp)
    print("check_includes self-test: a clean tree passes; a bad edge, a libHalide leak and an uninstalled "
          "include are each flagged")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.normpath(os.path.join(os.path.dirname(__file__), "../..")))
    ap.add_argument("--graph", action="store_true", help="print the folder include graph")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    violations, graph = check(args.root)
    if args.graph or violations:
        for (s, d), n in sorted(graph.items()):
            print(f"  {s} -> {d}: {n} includes")
    for v in violations:
        print(v)
    print(f"check_includes: {len(list(sources(args.root)))} files, {len(violations)} violations")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
