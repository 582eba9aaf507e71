"""A small bilingual store for source-link tests: conversations in Chinese and English, memories without links.

All in one evening, so every turn is in every memory's time window; `MEMORIES` says which recorded
session each memory came from (None: its own conversation was not recorded, or is in the other language).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from tideline_core.domain.inputs import ContextTurnIn, NarrativeIn
from tideline_core.service import Service
from tideline_core.store.schema import NarrativeSource

AGENT = "alice"
EVENING = datetime(2026, 5, 7, 19, 0, tzinfo=UTC)

# session → its turns (role, speaker, text); each a minute apart, the sessions 20 minutes apart.
CONVERSATIONS: dict[str, list[tuple[str, str, str]]] = {
    "dentist": [
        ("user", "我", "我明天下午三点要去看牙医，左边有两颗牙要补。"),
        ("assistant", "助手", "好的，我提醒你明天下午两点半出发去牙科诊所。"),
        ("user", "我", "诊所在人民路，医生姓陈，上次洗牙也是他。"),
    ],
    "atlas": [
        ("user", "Alice", "We decided to move the Atlas launch to March because the payment audit is not finished."),
        ("assistant", "assistant", "Understood: Atlas launches in March, after the payment audit."),
        ("user", "Alice", "Bob from the security team runs the audit and sends his report by the end of February."),
    ],
    "running": [
        ("user", "我", "我每周六早上都去公园跑步，一般跑五公里，跑完去吃早饭。"),
        ("assistant", "助手", "坚持得很好！要不要我记一下你的配速？"),
    ],
    "sync": [
        ("user", "Alice", "Heads up: the weekly team sync moves from Monday to Tuesday at ten, starting next week."),
        ("assistant", "assistant", "Got it, Tuesday at ten from next week."),
    ],
    "forum": [
        ("user", "王小明", "下周三下午我在北京金融科技论坛做主题演讲，讲支付风控，四十分钟。"),
        ("assistant", "助手", "明白，我周一把支付风控的案例整理好发给你。"),
    ],
    "goggles": [
        ("user", "Alice", "I finally bought new swimming goggles, the old ones kept fogging up."),
        ("assistant", "assistant", "Nice, anti-fog ones should last longer."),
    ],
}

# memory → the session it came from (None: its conversation was not recorded, or is in the other language).
MEMORIES: dict[str, str | None] = {
    "周四晚上去游泳，教练叫小林": None,
    "明天下午三点去看牙医，补左边两颗牙，医生姓陈": "dentist",
    "The Atlas launch moved to March because the payment audit is not finished": "atlas",
    "Bob from the security team sends the audit report by the end of February": "atlas",
    "每周六早上在公园跑步五公里": "running",
    "Alice moved the weekly team sync to Tuesday at ten": "sync",
    "王小明下周三在北京金融科技论坛做支付风控主题演讲": "forum",
    "Alice bought new swimming goggles because the old ones fogged up": "goggles",
    "The dentist appointment is tomorrow at 3 pm": None,  # English, from the Chinese conversation
    "Wang Xiaoming speaks at the Beijing fintech forum next Wednesday": None,
    "喜欢在周末做饭，最拿手的是红烧肉": None,
    "Alice's sister Emma lives in Lisbon and visits every summer": None,
    "x": None,
}


def load(service: Service) -> tuple[dict[str, set[int]], dict[str, int]]:
    """Record the conversations and write the memories (no links), embedded: (session → turn ids, memory → id)."""
    turns_of: dict[str, set[int]] = {}
    start = EVENING
    for session, lines in CONVERSATIONS.items():
        turns = [
            ContextTurnIn(
                role=role, speaker=who, content=text, session_id=session, created_at=start + timedelta(minutes=i)
            )
            for i, (role, who, text) in enumerate(lines)
        ]
        turns_of[session] = set(service.record_turns(AGENT, turns).ids)
        start += timedelta(minutes=20)
    ids = {
        text: service.write_narrative(AGENT, NarrativeIn(gesture=text, occurred_at=EVENING + timedelta(hours=1))).id
        for text in MEMORIES
    }
    while service.embed_pending(AGENT, batch_size=64, max_batches=1).embedded:
        pass
    return turns_of, ids


def inferred_links(service: Service) -> dict[int, set[int]]:
    with service.db.read() as conn:
        rows = conn.execute(
            select(NarrativeSource.narrative_id, NarrativeSource.context_id).where(NarrativeSource.inferred.is_(True))
        ).all()
    out: dict[int, set[int]] = {}
    for narrative_id, context_id in rows:
        out.setdefault(narrative_id, set()).add(context_id)
    return out
