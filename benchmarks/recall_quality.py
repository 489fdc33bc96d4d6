"""Recall quality on real conversations: the Grimoire beside BM25 and dense baselines.

Data: REALTALK (../shared/data/realtalk/, see its README; read from there, never
copied here). Protocol, as that README states it: every turn is one memory
("Speaker: text" at its date_time) stored with ``Grimoire.remember``; each
conversation gets its own data dir; every question is one ``Grimoire.recall(question,
k=max(K))`` at a golem clock one hour after the conversation's last turn; recall@k =
|gold evidence turns in the top k| / |evidence|, averaged per category (1 multi-hop,
2 temporal, 3 open-domain) and over all scored questions. A refused recall returns
nothing, so it scores 0. Refusal is measured on both sides: the refused share of the
chat's own (answerable) questions, and of the next chat's questions asked of this
chat's memory (other people's conversations: unanswerable here), as run and at other
thresholds of the best similarity. Some evidence ids name turns
the released files do not contain (gaps in the numbering): evidence is restricted to
turns that exist, and a question left with none is not scored.

Baselines, computed in the same run on the same turn texts:
- ``bm25``: bm25s (Lucene BM25, k1 1.5, b 0.75) with its English stopword list;
- ``dense``: the Grimoire's own embedder (MiniLM int8), exact cosine over every turn.

The Grimoire runs through its public API only, with the config the golem runs
(or ``--weights`` overriding the four retrieval weights). No parameter of the
Grimoire was chosen on this data: the numbers are a held-out measurement.

    .venv/bin/python benchmarks/recall_quality.py [--data DIR] [--chats 1-10] [--k 5,10,20]
        [--weights semantic=1,temporal=0,importance=0,emotional=0]

Prints one JSON object; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from machine import embed_compute, machine  # benchmarks/ is on sys.path when run

from golem.config import parse_config
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.logging import configure_logging

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "realtalk"
MODEL_DIR = REPO / "models" / "all-minilm-l6-v2-int8"
_RANGE = re.compile(r"^D(\d+):(\d+)\s*-\s*D(\d+):(\d+)$")
_ONE = re.compile(r"^D\d+:\d+$")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    text: str  # "Speaker: text"
    at: float  # UNIX seconds (the file's local times read as UTC: only order matters)


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True)
class Chat:
    name: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def parse_time(text: str) -> float:
    return datetime.strptime(text.strip(), "%d.%m.%Y, %H:%M:%S").replace(
        tzinfo=UTC).timestamp()


def evidence_ids(raw: list[str]) -> frozenset[str]:
    """Normalise evidence: "D12:3-D12:5" ranges within a session, "D8:6; D9:17" lists,
    stray punctuation ("D5:3."), two ids run together ("D13:45:D20:19"). A range across
    sessions counts its two ends."""
    out: set[str] = set()
    for item in raw:
        for piece in re.split(r"[;,]|(?<=\d):(?=D)", item):
            part = piece.strip().rstrip(".")
            if not part:
                continue
            ranged = _RANGE.match(part)
            if ranged and ranged.group(1) == ranged.group(3):
                session, lo, hi = ranged.group(1), int(ranged.group(2)), int(ranged.group(4))
                out.update(f"D{session}:{i}" for i in range(lo, hi + 1))
            elif ranged:
                out.update({f"D{ranged.group(1)}:{ranged.group(2)}",
                            f"D{ranged.group(3)}:{ranged.group(4)}"})
            elif _ONE.match(part):
                out.add(part)
    return frozenset(out)


def load_chat(path: Path) -> Chat:
    raw = json.loads(path.read_text())
    turns: list[Turn] = []
    seen: set[str] = set()
    sessions = sorted((k for k in raw if re.fullmatch(r"session_\d+", k)),
                      key=lambda k: int(k.split("_")[1]))
    for key in sessions:
        for t in raw[key]:
            text, dia = (t.get("clean_text") or "").strip(), t.get("dia_id")
            if not text or not dia or dia in seen:
                continue
            seen.add(dia)
            turns.append(Turn(dia, f"{t['speaker']}: {text}", parse_time(t["date_time"])))
    known = {t.dia_id for t in turns}
    questions = tuple(Question(q["question"], int(q["category"]),
                               evidence_ids(q["evidence"]) & known)
                      for q in raw["qa"] if evidence_ids(q["evidence"]) & known)
    return Chat(path.stem, tuple(turns), questions)


def entry_id(dia_id: str) -> str:
    return "turn-" + dia_id.replace(":", "-")


def recall_at(ranked: list[str], gold: frozenset[str], k: int) -> float:
    return len(gold & set(ranked[:k])) / len(gold)


@dataclass
class GrimoireRun:
    """One chat through the Grimoire: rankings, refusals and best similarities."""

    rankings: list[list[str]]
    refused: int
    ingest_s: float
    best_own: list[float]  # best similarity per own (answerable) question
    foreign_refused: int  # of the foreign (unanswerable here) questions
    best_foreign: list[float]


async def grimoire_rankings(chat: Chat, embedder: Embedder, weights: dict[str, float] | None,
                            k: int, workdir: Path, *, foreign: tuple[Question, ...] = (),
                            ) -> GrimoireRun:
    """The Grimoire's ranked dia ids per question, then the ``foreign`` questions (another
    chat's: nothing here answers them) asked of the same memory, for refusal."""
    weight_lines = "".join(f"weight_{name} = {value}\n" for name, value in (weights or {}).items())
    config = parse_config(
        f'[golem]\nname = "bench"\ndata_dir = "{workdir}"\n'
        f'[grimoire]\nnamespace = "talk"\nmodel_dir = "{MODEL_DIR}"\n{weight_lines}',
        source=workdir / "bench.toml")
    now = max(t.at for t in chat.turns) + 3600.0
    grimoire = await Grimoire.open(config, now=lambda: now, embedder=embedder)
    started = time.perf_counter()
    try:
        for turn in chat.turns:
            await grimoire.remember(turn.text, timestamp=turn.at, entry_id=entry_id(turn.dia_id))
        ingest_s = time.perf_counter() - started
        by_entry = {entry_id(t.dia_id): t.dia_id for t in chat.turns}
        run = GrimoireRun([], 0, ingest_s, [], 0, [])
        for q in chat.questions:
            result = await grimoire.recall(q.text, k=k)
            run.best_own.append(result.best_similarity or 0.0)
            if result.refused:
                run.refused += 1
                run.rankings.append([])
            else:
                run.rankings.append([by_entry[h.id] for h in result.hits if h.id in by_entry])
        for q in foreign:
            result = await grimoire.recall(q.text, k=k)
            run.best_foreign.append(result.best_similarity or 0.0)
            run.foreign_refused += int(result.refused)
        return run
    finally:
        await grimoire.close()


def bm25_top(texts: Sequence[str], queries: Sequence[str], k: int) -> list[list[int]]:
    """The BM25 baseline: for each query, the indices of its top-k texts (bm25s, English
    stopwords; only texts sharing a word with the query; none for a stopword-only query)."""
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(list(texts), stopwords="en", show_progress=False),
                    show_progress=False)
    out: list[list[int]] = []
    for query in queries:
        tokens = bm25s.tokenize([query], stopwords="en", return_ids=False,
                                show_progress=False)
        if not tokens[0]:
            out.append([])
            continue
        docs, scores = retriever.retrieve(tokens, k=min(k, len(texts)), show_progress=False)
        out.append([int(i) for i, s in zip(docs[0], scores[0], strict=True) if s > 0])
    return out


def dense_top(embedder: Embedder, texts: Sequence[str], queries: Sequence[str],
              k: int) -> list[list[int]]:
    """The dense baseline: for each query, the indices of its top-k texts by exact cosine
    of the embedder's (normalised) vectors."""
    vectors = np.asarray(embedder.embed(list(texts)))
    return [[int(i) for i in np.argsort(-(vectors @ np.asarray(embedder.embed([q])[0])))[:k]]
            for q in queries]


def summarise(chats: list[Chat], rankings: list[list[list[str]]], ks: list[int],
              ) -> dict[str, Any]:
    per_cat: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for chat, ranked in zip(chats, rankings, strict=True):
        for q, r in zip(chat.questions, ranked, strict=True):
            for k in ks:
                value = recall_at(r, q.evidence, k)
                per_cat["all"][k].append(value)
                per_cat[f"category_{q.category}"][k].append(value)
    return {cat: {f"recall@{k}": round(float(np.mean(v)), 4) for k, v in by_k.items()}
            | {"questions": len(next(iter(by_k.values())))}
            for cat, by_k in sorted(per_cat.items())}


def refusal_report(runs: list[GrimoireRun]) -> dict[str, Any]:
    """Refused shares on answerable questions (the chat's own) and unanswerable ones (the
    next chat's questions asked of this chat's memory), as run and at other thresholds of
    the best similarity (what refusal compares)."""
    own = [b for r in runs for b in r.best_own]
    foreign = [b for r in runs for b in r.best_foreign]
    sweep = {f"{t:.2f}": {"answerable_refused": round(float(np.mean([b < t for b in own])), 4),
                          "unanswerable_refused": round(float(np.mean([b < t for b in foreign])),
                                                        4) if foreign else None}
             for t in np.arange(0.20, 0.61, 0.05)}
    return {
        "answerable_refused_share": round(sum(r.refused for r in runs) / max(len(own), 1), 4),
        "unanswerable_refused_share": round(sum(r.foreign_refused for r in runs)
                                            / max(len(foreign), 1), 4) if foreign else None,
        "answerable_questions": len(own), "unanswerable_questions": len(foreign),
        "best_similarity_median": {"answerable": round(float(np.median(own)), 4),
                                   "unanswerable": round(float(np.median(foreign)), 4)
                                   if foreign else None},
        "by_threshold": sweep,
    }


def chat_paths(data: Path, spec: str) -> list[Path]:
    lo, _, hi = spec.partition("-")
    wanted = set(range(int(lo), int(hi or lo) + 1))
    found = {int(re.match(r"Chat_(\d+)_", p.name).group(1)): p  # type: ignore[union-attr]
             for p in data.glob("Chat_*.json")}
    missing = wanted - set(found)
    if missing:
        raise SystemExit(f"no chat file for {sorted(missing)} in {data}")
    return [found[i] for i in sorted(wanted)]


def parse_weights(text: str | None) -> dict[str, float] | None:
    if not text:
        return None
    pairs = dict(part.split("=", 1) for part in text.split(","))
    return {name.strip(): float(value) for name, value in pairs.items()}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA, help="the realtalk folder")
    ap.add_argument("--chats", default="1-10", help="which Chat_N files, e.g. 1-10 or 3")
    ap.add_argument("--k", default="5,10,20", help="cut-offs, comma-separated")
    ap.add_argument("--weights", default=None,
                    help="override the four retrieval weights, e.g. semantic=1,temporal=0,"
                         "importance=0,emotional=0 (they must sum to 1)")
    args = ap.parse_args()
    configure_logging("warning", "json", sys.stderr)  # stdout carries the JSON report
    ks = sorted(int(k) for k in args.k.split(","))
    weights = parse_weights(args.weights)
    chats = [load_chat(p) for p in chat_paths(args.data, args.chats)]
    embedder = Embedder.load(MODEL_DIR, 1, compute=embed_compute())
    grim, bm25, dense = [], [], []
    runs: list[GrimoireRun] = []
    recall_started = time.perf_counter()
    for i, chat in enumerate(chats):
        print(f"{chat.name}: {len(chat.turns)} turns, {len(chat.questions)} questions",
              file=sys.stderr, flush=True)
        foreign = chats[(i + 1) % len(chats)].questions if len(chats) > 1 else ()
        with tempfile.TemporaryDirectory(prefix="golem-recall-quality-") as tmp:
            run = await grimoire_rankings(chat, embedder, weights, max(ks), Path(tmp),
                                          foreign=foreign)
        runs.append(run)
        grim.append(run.rankings)
        texts, asked = [t.text for t in chat.turns], [q.text for q in chat.questions]
        bm25.append([[chat.turns[i].dia_id for i in top]
                     for top in bm25_top(texts, asked, max(ks))])
        dense.append([[chat.turns[i].dia_id for i in top]
                      for top in dense_top(embedder, texts, asked, max(ks))])
    report = {
        "benchmark": "recall_quality", "machine": machine(),
        "data": str(args.data), "chats": [c.name for c in chats],
        "turns": sum(len(c.turns) for c in chats),
        "questions": sum(len(c.questions) for c in chats),
        "weights": weights or "config defaults",
        "grimoire": summarise(chats, grim, ks),
        "refusal": refusal_report(runs),
        "bm25": summarise(chats, bm25, ks),
        "dense": summarise(chats, dense, ks),
        "grimoire_ingest_s": round(sum(r.ingest_s for r in runs), 1),
        "wall_s": round(time.perf_counter() - recall_started, 1),
    }
    best = max(report["bm25"]["all"]["recall@10"], report["dense"]["all"]["recall@10"])
    report["grimoire_minus_best_baseline_at_10"] = round(
        report["grimoire"]["all"]["recall@10"] - best, 4)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
