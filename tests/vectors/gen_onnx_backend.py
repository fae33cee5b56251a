#!/usr/bin/env python3
"""The ONNX backend test cases for QLinearMatMul and Gemm, laid out like the backend test data, for
tests/reference/onnx_backend_test.cpp.

The installed onnx wheel does not ship the node tests' .pb files, only their generators
(onnx/backend/test/case/node/{qlinearmatmul,gemm}.py). They are run here through
onnx.backend.test.case.node.collect_testcases(), which seeds NumPy with 0 before every export (so the
Gemm inputs are the official ones) and builds the same single-node models that `backend-test-tools
generate-data` (onnx/backend/test/cmd_tools.py) serializes; the .pb files are written the same way
(numpy_helper.from_array named after the graph input/output). Expected outputs are the generators':
hard-coded for QLinearMatMul, computed with NumPy (BLAS) for Gemm.

The wheel does ship real .pb data for the legacy model tests. Every stored model is scanned; a model
is used only when its graph is a single Gemm or QLinearMatMul node, and its .pb files are copied byte
for byte. Graph inputs that the model initializes (test_Linear's weight and bias) have no .pb file in
the data set; they are written as input_<i>.pb from the model's initializer TensorProto. Everything
else that contains one of the two operators is listed in index.json under "excluded" with the reason.

Files written into --out:
  <case>/input_<i>.pb    serialized onnx.TensorProto of graph input i (i = 0, 1, ...)
  <case>/output_0.pb     serialized onnx.TensorProto of the expected output
  <case>/node.json       {"op_type", "opset", "inputs": node input names in node order ("" for omitted),
                          "output", "attributes": {name: value as text}, "source", "kind"}
  index.json             {"onnx_version", "cases": [names], "excluded": [{"name", "reason"}], counts}
"""
import argparse
import collections
import glob
import json
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper

OPS = ("Gemm", "QLinearMatMul")
GENERATOR = {"Gemm": "gemm.py", "QLinearMatMul": "qlinearmatmul.py"}


def onnx_opset(model):
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if len(versions) != 1:
        raise SystemExit(f"{model.graph.name}: expected one ai.onnx opset import, got {versions}")
    return int(versions[0])


def attribute_text(case, a):
    if a.type == onnx.AttributeProto.FLOAT:
        text = str(np.float32(a.f))  # shortest text that reads back as the same float32
        if np.float32(float(text)) != np.float32(a.f):
            raise SystemExit(f"{case}: attribute {a.name}={a.f!r} does not round-trip as {text}")
        return text
    if a.type == onnx.AttributeProto.INT:
        return str(int(a.i))
    raise SystemExit(f"{case}: attribute {a.name} has type {a.type}, not FLOAT or INT")


def all_op_types(graph):
    ops = []
    for n in graph.node:
        ops.append(n.op_type)
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                ops += all_op_types(a.g)
            for g in a.graphs:
                ops += all_op_types(g)
    return ops


def describe_graph(ops):
    """'2 nodes: Gemm, Gemm' or, for large graphs, '40 nodes: Conv x5, Gemm x3, ...'."""
    if len(ops) <= 6:
        return f"{len(ops)} nodes: {', '.join(ops)}"
    counts = collections.Counter(ops)
    return f"{len(ops)} nodes: " + ", ".join(f"{op} x{n}" for op, n in sorted(counts.items()))


def single_node(model):
    """The graph's node if the graph is exactly one Gemm/QLinearMatMul node, else None."""
    g = model.graph
    if len(g.node) == 1 and g.node[0].op_type in OPS and g.node[0].domain in ("", "ai.onnx"):
        return g.node[0]
    return None


def write_node_json(path, model, node, source, kind):
    present = [x for x in node.input if x != ""]
    graph_inputs = [i.name for i in model.graph.input]
    if graph_inputs != present:
        raise SystemExit(f"{model.graph.name}: graph inputs {graph_inputs} != node inputs {present}")
    if len(node.output) != 1 or [o.name for o in model.graph.output] != list(node.output):
        raise SystemExit(f"{model.graph.name}: expected one output, got {list(node.output)}")
    doc = {
        "op_type": node.op_type,
        "opset": onnx_opset(model),
        "inputs": list(node.input),
        "output": node.output[0],
        "attributes": {a.name: attribute_text(model.graph.name, a) for a in node.attribute},
        "source": source,
        "kind": kind,
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


def write_pb(path, tensor_proto):
    with open(path, "wb") as f:
        f.write(tensor_proto.SerializeToString())


def generated_cases(out, excluded):
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # One collection of every node test (a second call in the same process would find the
        # generator modules already imported and return nothing new).
        cases = collect_testcases(None)
    names = []
    for case in cases:
        model = case.model
        ops = all_op_types(model.graph)
        if not any(op in OPS for op in ops):
            continue
        node = single_node(model)
        if node is None:
            excluded.append({"name": case.name, "reason": f"node test graph has {describe_graph(ops)}"})
            continue
        if len(case.data_sets) != 1:
            raise SystemExit(f"{case.name}: {len(case.data_sets)} data sets, expected 1")
        inputs, outputs = case.data_sets[0]
        d = os.path.join(out, case.name)
        os.makedirs(d)
        for j, x in enumerate(inputs):
            t = x if isinstance(x, onnx.TensorProto) else numpy_helper.from_array(x, model.graph.input[j].name)
            write_pb(os.path.join(d, f"input_{j}.pb"), t)
        if len(outputs) != 1:
            raise SystemExit(f"{case.name}: {len(outputs)} outputs, expected 1")
        y = outputs[0]
        t = y if isinstance(y, onnx.TensorProto) else numpy_helper.from_array(y, model.graph.output[0].name)
        write_pb(os.path.join(d, "output_0.pb"), t)
        source = (f"generated by onnx {onnx.__version__} from case/node/{GENERATOR[node.op_type]} "
                  f"(numpy {np.__version__}, seed 0)")
        write_node_json(os.path.join(d, "node.json"), model, node, source, "node")
        names.append(case.name)
    return names


def shipped_cases(out, excluded):
    data_dir = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    names = []
    models = sorted(glob.glob(os.path.join(data_dir, "*", "*", "model.onnx")))
    models += sorted(glob.glob(os.path.join(data_dir, "light", "*.onnx")))
    for path in models:
        rel = os.path.relpath(path, data_dir)
        model = onnx.load(path, load_external_data=False)
        ops = all_op_types(model.graph)
        if not any(op in OPS for op in ops):
            if os.path.basename(os.path.dirname(path)) == "test_Linear_no_bias":
                excluded.append({"name": rel, "reason": f"graph has {describe_graph(ops)}: no Gemm or QLinearMatMul"})
            continue
        node = single_node(model)
        if node is None:
            excluded.append({"name": rel, "reason": f"graph has {describe_graph(ops)}, not a single node"})
            continue
        case_dir = os.path.dirname(path)
        kind = os.path.basename(os.path.dirname(case_dir))
        name = f"{kind}_{os.path.basename(case_dir)}"
        sets = sorted(glob.glob(os.path.join(case_dir, "test_data_set_*")))
        if len(sets) != 1:
            raise SystemExit(f"{rel}: {len(sets)} data sets, expected 1")
        d = os.path.join(out, name)
        os.makedirs(d)
        inits = {t.name: t for t in model.graph.initializer}
        from_init = []
        for j, gi in enumerate(model.graph.input):
            src = os.path.join(sets[0], f"input_{j}.pb")
            dst = os.path.join(d, f"input_{j}.pb")
            if os.path.exists(src):
                shutil.copyfile(src, dst)
            elif gi.name in inits:
                write_pb(dst, inits[gi.name])
                from_init.append(j)
            else:
                raise SystemExit(f"{rel}: graph input {j} ({gi.name}) has neither a .pb file nor an initializer")
        if os.path.exists(os.path.join(sets[0], "output_1.pb")):
            raise SystemExit(f"{rel}: more than one output")
        shutil.copyfile(os.path.join(sets[0], "output_0.pb"), os.path.join(d, "output_0.pb"))
        source = f"shipped .pb data ({rel.replace('model.onnx', os.path.basename(sets[0]))}, onnx {onnx.__version__} wheel)"
        if from_init:
            source += "; " + ", ".join(f"input_{j}.pb" for j in from_init) + " serialized from the initializers of the shipped model.onnx"
        write_node_json(os.path.join(d, "node.json"), model, node, source, kind)
        names.append(name)
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)

    excluded = []
    generated = generated_cases(args.out, excluded)
    shipped = shipped_cases(args.out, excluded)
    by_op = {op: 0 for op in OPS}
    for name in generated + shipped:
        with open(os.path.join(args.out, name, "node.json")) as f:
            by_op[json.load(f)["op_type"]] += 1
    index = {
        "onnx_version": onnx.__version__,
        "numpy_version": np.__version__,
        "cases": generated + shipped,
        "generated": len(generated),
        "shipped": len(shipped),
        "by_op_type": by_op,
        "excluded": excluded,
    }
    with open(os.path.join(args.out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    print(f"onnx {onnx.__version__}: {len(generated) + len(shipped)} cases "
          f"({len(generated)} generated node tests, {len(shipped)} shipped legacy), "
          f"Gemm {by_op['Gemm']}, QLinearMatMul {by_op['QLinearMatMul']}; {len(excluded)} excluded:")
    for e in excluded:
        print(f"  excluded {e['name']}: {e['reason']}")
    if not generated or not shipped:
        sys.exit("no cases found")


if __name__ == "__main__":
    main()
