"""Helpers for dream tests: a day of conversation, what a scripted LLM was shown and answers, whole-store dumps."""

from __future__ import annotations

import hashlib
import json
import warnings
from datetime import datetime, timedelta
from typing import Any

from llm_server import prompt_name
from sqlalchemy import MetaData, select, text
from sqlalchemy.exc import SAWarning

from tideline_core.domain.inputs import ContextTurnIn
from tideline_core.service import Service
from tideline_core.store.database import Database
from tideline_core.text.dates import utcnow

# The dream's own record of a run is not memory: a dump to compare before and after leaves it out.
RECORD_TABLES = {"dream_runs", "dream_changes", "sqlite_sequence", "alembic_version", "task_events"}

ENGLISH = [
    ("user", "Alice", "Hi! How are you doing today?"),
    ("assistant", "", "Doing well, thanks. What are we working on?"),
    ("user", "Alice", "We decided to move the Atlas launch to March because the payment audit is not finished."),
    ("assistant", "", "Understood: Atlas launches in March, after the payment audit. Who runs the audit?"),
    ("user", "Alice", "Bob from the security team runs it; he will send the report by the end of February."),
    ("assistant", "", "Noted. Should I remind you when Bob's report is due?"),
]
CHINESE = [
    ("user", "王小明", "下周我要去北京参加金融科技精英论坛，主要讲支付风控，这是我第一次在这么大的论坛上做主题演讲。"),
    ("assistant", "", "好的，需要我帮你准备演讲材料吗？可以先列一个提纲，再补充行业里最近的几个典型案例。"),
    ("user", "王小明", "需要，演讲定在周三下午，在北京朝阳公园旁边的会议中心，时长四十分钟，之后还有二十分钟提问。"),
    ("assistant", "", "明白，我会整理支付风控的案例，重点放在跨境支付的欺诈识别和实时拦截上，周一发给你初稿。"),
    ("user", "王小明", "好的，另外提醒我周二晚上订好去北京的高铁票，最好是早上八点左右出发的那一班。"),
    ("assistant", "", "记下了：周二晚上提醒你订周三早上八点左右去北京的高铁票。"),
]


def record_day(service: Service, agent: str, *, start: datetime | None = None) -> list[int]:
    """Two sessions (English, Chinese) of turns a minute apart, an hour ago; their ids."""
    start = start or utcnow() - timedelta(hours=1)
    ids: list[int] = []
    for session, lines in (("s-en", ENGLISH), ("s-zh", CHINESE)):
        turns = [
            ContextTurnIn(
                role=role, speaker=speaker, content=text, session_id=session, created_at=start + timedelta(minutes=i)
            )
            for i, (role, speaker, text) in enumerate(lines)
        ]
        ids += service.record_turns(agent, turns).ids
        start += timedelta(minutes=30)
    return ids


def plausible_answer(body: dict[str, Any]) -> dict[str, Any]:
    """A plausible answer to each of the dream's prompts, from what the prompt showed."""
    data = shown_data(body)
    name = prompt_name(body)
    if name == "solidify":
        turns = data["turns"]
        return {
            "memories": [
                {"gesture": f"{t['speaker']}: {t['text'][:60]}", "tags": ["plan", "travel"], "source_turns": [t["id"]]}
                for t in (turns[0], turns[2])
            ]
        }
    if name == "digest":
        return {"who": sorted({t["speaker"] for t in data["turns"]}), "what": "They planned the week."}
    if name == "comb":
        first = data["memories"][0]["id"]
        return {
            "reweigh": [{"narrative_id": first, "importance": 5, "reason": "it shapes the month"}],
            "open_threads": [{"title": "Is the audit on time?", "priority": 4}],
        }
    if name == "drift":
        other = data["neighbours"][0]["id"]
        return {
            "connection": True,
            "explanation": "Both plans hang on one deadline.",
            "write": "insight",
            "insight": "Every plan this week waits on the audit.",
            "linked_ids": [other],
        }
    if name == "dream":
        return {"symbols": ["train", "forum", "audit"], "dream": "A train of audits.", "reflection": "Deadlines weigh."}
    raise AssertionError(f"unexpected prompt {name}")


def checksums(db: Database) -> dict[str, tuple[int, str]]:
    """Every table of the store, the dream's own record and the keyword index included: its row count and a
    digest of its rows. Equal checksums mean nothing was written anywhere."""
    if db.dialect == "sqlite":
        listing = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
    else:
        listing = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename"
    out: dict[str, tuple[int, str]] = {}
    with db.read() as conn:
        for name in conn.execute(text(listing)).scalars():
            rows = sorted(repr(tuple(row)) for row in conn.execute(text(f'SELECT * FROM "{name}"')))
            out[name] = (len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest())
    return out


def shown_data(body: dict[str, Any]) -> dict[str, Any]:
    """The memory data a request to the LLM carried (the JSON inside its memory-data block)."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    inside = user.split("<memory-data>", 1)[1].split("</memory-data>", 1)[0]
    return dict(json.loads(inside))


def dump(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every memory table, sorted: equal dumps mean the same memory.

    The keyword index is left out (SQLite's FTS5 tables; PostgreSQL's `fts_*` columns and `fts_terms`); tests
    compare it apart.
    """
    meta = MetaData()
    with warnings.catch_warnings():
        # pgvector's halfvec (`embeddings.vec`) is a type SQLAlchemy does not know: its rows still compare as text.
        warnings.filterwarnings("ignore", "Did not recognize type 'halfvec'", SAWarning)
        meta.reflect(db.engine)
    out: dict[str, list[tuple[Any, ...]]] = {}
    with db.read() as conn:
        for name, table in sorted(meta.tables.items()):
            if name in RECORD_TABLES or name.endswith(("_fts", "_data", "_idx", "_docsize", "_config", "_content")):
                continue
            if name == "fts_terms":
                continue
            columns = [c for c in table.columns if not c.name.startswith("fts_")]
            out[name] = sorted((tuple(row) for row in conn.execute(select(*columns))), key=repr)
    return out


def embedded(db: Database) -> bool:
    """Nothing waits for an embedding (the ingest worker is done with what was written)."""
    from sqlalchemy import func

    from tideline_core.store.schema import ContextTurn, Narrative

    with db.read() as conn:
        waiting = conn.execute(select(func.count()).where(ContextTurn.embedding_state == "pending")).scalar_one()
        waiting += conn.execute(select(func.count()).where(Narrative.embedding_state == "pending")).scalar_one()
    return waiting == 0
