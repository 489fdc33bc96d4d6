"""Set-up time: rewrite the int8 MiniLM graph so onnxruntime keeps its embedding tables int8.

The PyPI model stores each weight as int8 with a float scale, dequantised in the graph
(``Cast`` to float, ``Mul`` by the scale). onnxruntime folds those constants at load,
so the word-embedding table (30,522 x 384) lives in memory as float32: ~47 MB for a
table of which a query reads a dozen rows. The rewrite gathers the int8 rows and their
per-row scales first, then casts and scales only the rows looked up: the same float
operations on the same values, so the vectors are bit-identical (tested), and the
session's RSS drops ~30 MB, its peak while loading ~85 MB.

Left alone: the weight matrices (per-column scales) are folded to float32 too (~42 MB).
``MatMulNBits`` (8 bits) keeps them int8 (session ~40 MB instead of ~155) but is either
2.3x slower per query (float activations) or, with int8 activations, makes a text's
vector depend on the other texts in its batch (up to 5e-3 per component): measured and
not adopted.

The only module that imports ``onnx``; the daemon never imports it. Because the output
is bit-identical, the model signature stays the source file's (a store embedded before
the rewrite opens as it did); a rewrite that changes numbers must change the signature.
"""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

# Bump when the rewrite changes: the model manifest records it, so set-up rebuilds.
COMPACT_VERSION = "gather-int8-rows/1"


class CompactError(Exception):
    """The graph is not the shape this rewrite knows; set-up stops rather than guess."""


def compact_file(src: Path, dst: Path) -> None:
    model = onnx.load(str(src))
    onnx.save(compact(model), str(dst))


def compact(model: onnx.ModelProto) -> onnx.ModelProto:
    """The rewritten model (a copy)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    inits = {i.name: i for i in graph.initializer}
    users: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(name, []).append(node)
    removed: set[int] = set()
    added: list[onnx.NodeProto] = []
    for cast in graph.node:
        table = inits.get(cast.input[0]) if cast.op_type == "Cast" and cast.input else None
        if table is None or table.data_type != TensorProto.INT8:
            continue
        mul = _only(users.get(cast.output[0], []), "Mul", cast.name)
        scale_name = next(x for x in mul.input if x != cast.output[0])
        scale = inits.get(scale_name)
        consumers = users.get(mul.output[0], [])
        if scale is None or not consumers or any(c.op_type != "Gather" for c in consumers):
            continue  # a weight matrix (its MatMul folds it), not an embedding table
        if tuple(scale.dims) != (table.dims[0], 1):
            raise CompactError(f"{table.name}: expected per-row scales, got {scale.dims}")
        for gather in consumers:
            added += _gather_rows(gather, table.name, scale_name)
        removed |= {id(cast), id(mul), *(id(c) for c in consumers)}
    if not added:
        raise CompactError("no int8 embedding table found: not the expected MiniLM graph")
    nodes = _topological([n for n in graph.node if id(n) not in removed] + added,
                         {i.name for i in graph.input} | set(inits))
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(out)
    return out


def _only(nodes: list[onnx.NodeProto], op: str, after: str) -> onnx.NodeProto:
    if len(nodes) != 1 or nodes[0].op_type != op:
        raise CompactError(f"{after}: expected one {op} after it, got "
                           f"{[n.op_type for n in nodes]}")
    return nodes[0]


def _gather_rows(gather: onnx.NodeProto, table: str, scale: str) -> list[onnx.NodeProto]:
    axis = next((helper.get_attribute_value(a) for a in gather.attribute if a.name == "axis"), 0)
    if axis != 0 or len(gather.input) != 2:
        raise CompactError(f"{gather.name}: expected a row lookup (axis 0)")
    ids, out = gather.input[1], gather.output[0]
    rows, scales, floats = f"{out}/q", f"{out}/scale", f"{out}/float"
    return [helper.make_node("Gather", [table, ids], [rows], axis=0),
            helper.make_node("Gather", [scale, ids], [scales], axis=0),
            helper.make_node("Cast", [rows], [floats], to=TensorProto.FLOAT),
            helper.make_node("Mul", [floats, scales], [out])]


def _topological(nodes: list[onnx.NodeProto], available: set[str]) -> list[onnx.NodeProto]:
    have = {*available, ""}
    order: list[onnx.NodeProto] = []
    pending = nodes
    while pending:
        waiting = []
        for node in pending:
            if all(x in have for x in node.input):
                order.append(node)
                have.update(node.output)
            else:
                waiting.append(node)
        if len(waiting) == len(pending):
            raise CompactError(f"graph has unresolvable inputs at {waiting[0].name}")
        pending = waiting
    return order
