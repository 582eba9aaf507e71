"""MemSim's MemDaily (Chinese): each file's trajectories pooled into one memory, questions marked unambiguous or not.

Read from a local checkout of nuster1128/MemSim (`data_generation/final_dataset/messages_and_QAs/`):
the repository has no license, so nothing of it is copied here. Each `NN_type_kind.json` is a list of
trajectories (one simulated user each): `message_list` (what the user told the agent, with a time
and a place) and `question_list` (with `target_step_id`, the messages that answer it).

How a file becomes one memory (one agent):
- each trajectory is a session of its messages, in order, spoken by the user;
- a message's `time` ("2024年04月01日 周一 08:42") carries no zone: it is read as China's local
  time, UTC+8, where MemDaily's simulated users live;
- its `place` ("广东深圳", where the user was) goes in the turn's metadata, not its text: the
  questions ask about the places named in the messages, and the same place on every turn of a
  trajectory would only add a keyword that every one of its turns shares;
- a text that stands in several trajectories (they carry each other's facts verbatim as
  distractors) is kept once: the copy in the first trajectory that asks about it (cites it as
  evidence), else the first copy; every question's evidence points at the kept copy.

Pooled, a question like "我婶婶的生日是啥时候？" has a right answer in every user's trajectory, so
recall is scored on the unambiguous questions only: a question is unambiguous when it and one of its
evidence messages both name something (see `name_candidates`) that no stored text outside the
question's own trajectory mentions. After deduplication a distractor copy of the trajectory's own
message is the same stored text, so it does not make the name ambiguous; a different message of
another trajectory naming it does. A question that names nothing of its own ("我穿的运动鞋是什么
牌子？") is dropped, whatever its answer names.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from tideline_core.errors import InvalidInput
from tideline_core.text.tokens import initialize

NATIVE_DIR = Path("data_generation/final_dataset/messages_and_QAs")
TUNING_KINDS = ("roles", "items", "places", "hybrid")
HELD_OUT_KINDS = ("events",)  # never read here: their check is made outside this project, beyond any choice made here
UNFILTERED_KINDS = ("roles", "items", "places", "events")  # the single-kind files, scored with every question too
LOCAL_TIME = timezone(timedelta(hours=8), "UTC+8")

_FILE = re.compile(r"^(?P<number>\d+)_(?P<type>.+)_(?P<kind>[a-z]+)\.json$")
_TIME = re.compile(r"(\d{4})年(\d{1,2})月(\d{1,2})日\D*?(\d{1,2}):(\d{2})")

# What counts as naming something: jieba's person, place, organisation and other proper-noun words;
# a run of two or more nouns of 4+ characters (an event or organisation name that jieba splits:
# 金融科技精英论坛 → 金融/科技/精英/论坛); a Latin or digit run (product models such as GoWalk5 or
# SK-II, e-mail addresses, phone numbers); a quoted or 《》 title.
_NAME_POS = frozenset({"nr", "nrt", "nrfg", "ns", "nt", "nz"})
_NOUN_POS = frozenset({"n", "nr", "nrt", "nrfg", "ns", "nt", "nz", "ng", "vn"})
_MIN_COMPOUND = 4
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LATIN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z][A-Za-z0-9_.@+\-]*[A-Za-z0-9]|(?<!\d)\d{7,}(?!\d)")
_QUOTED = re.compile(r"《([^》]{2,})》|“([^”]{2,})”|\"([^\"]{2,})\"|「([^」]{2,})」|『([^』]{2,})』")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Turn:
    key: str  # "tid:mid" of the kept copy
    trajectory: int
    text: str
    at: datetime
    place: str


@dataclass(frozen=True)
class Question:
    key: str  # "tid:qid"
    trajectory: int
    text: str
    evidence: tuple[str, ...]  # keys of the kept copies of its evidence messages
    names: tuple[str, ...]  # what it names that only its own trajectory mentions; none: ambiguous

    @property
    def unambiguous(self) -> bool:
        return bool(self.names)


@dataclass(frozen=True)
class Pool:
    """One file's trajectories as one memory."""

    name: str  # the file's stem, e.g. "01_simple_roles"
    kind: str  # roles, items, places, hybrid or events
    trajectories: int
    messages: int  # before deduplication
    turns: tuple[Turn, ...]  # after it, grouped by trajectory in file order
    questions: tuple[Question, ...]

    @property
    def agent(self) -> str:
        return f"memdaily-{self.name}"

    @property
    def unambiguous(self) -> int:
        return sum(q.unambiguous for q in self.questions)


def session_of(key: str) -> str:
    """'12:3' → '12': the trajectory a turn key belongs to."""
    return key.split(":", 1)[0]


def parse_time(text: str) -> datetime:
    """'2024年04月01日 周一 08:42' → that minute in UTC+8."""
    match = _TIME.search(text)
    if match is None:
        raise ValueError(f"not a MemDaily time: {text!r}")
    year, month, day, hour, minute = (int(g) for g in match.groups())
    return datetime(year, month, day, hour, minute, tzinfo=LOCAL_TIME)


def kind_of(path: Path) -> str | None:
    match = _FILE.match(path.name)
    return match.group("kind") if match else None


def data_dir(directory: Path) -> Path:
    """The folder of MemDaily's files: DIR itself, or its messages_and_QAs folder when DIR is a checkout of MemSim."""
    if not directory.is_dir():
        raise InvalidInput("dir", f"{directory} is not a directory (expected MemSim's messages_and_QAs folder)")
    nested = directory / NATIVE_DIR
    if not any(kind_of(p) for p in directory.glob("*.json")) and nested.is_dir():
        return nested
    return directory


def files(directory: Path) -> list[Path]:
    """The tuning files of `directory`, by name; never the held-out (events) files."""
    folder = data_dir(directory)
    wanted = TUNING_KINDS
    chosen = sorted(p for p in folder.glob("*.json") if kind_of(p) in wanted)
    if not chosen:
        raise InvalidInput("dir", f"{folder} holds no MemDaily files of kinds {', '.join(wanted)} (NN_type_kind.json)")
    return chosen


def load(path: Path) -> Pool:
    """One MemDaily file as a pool; a clear InvalidInput for a file of another shape."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput("dir", f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, list):
        raise InvalidInput("dir", f"{path} must hold a JSON list of trajectories (MemDaily format)")
    return pool(path.stem, kind_of(path) or "", data)


def _field(item: Any, key: str, where: str) -> Any:
    try:
        return item[key]
    except (KeyError, TypeError, IndexError):
        raise InvalidInput(where, f"needs a {key!r} field (MemDaily format)") from None


@dataclass(frozen=True)
class _Raw:
    """One trajectory as read: its messages (mid, text, time, place) and questions (qid, text, evidence mids)."""

    tid: int
    messages: tuple[tuple[int, str, str, str], ...]
    questions: tuple[tuple[str, str, tuple[int, ...]], ...]

    def text_of(self) -> dict[int, str]:
        return {mid: text for mid, text, _, _ in self.messages}


def _read(name: str, index: int, raw: Any) -> _Raw:
    where = f"{name} trajectory {index}"
    try:
        messages = tuple(
            (
                int(_field(m, "mid", f"{where} message")),
                str(_field(m, "message", f"{where} message")).strip(),
                str(m.get("time", "")),
                str(m.get("place", "")),
            )
            for m in _field(raw, "message_list", where)
        )
        questions = tuple(
            (
                str(q.get("qid", number)),
                str(_field(q, "question", f"{where} question")),
                tuple(int(step) for step in _field(q, "target_step_id", f"{where} question")),
            )
            for number, q in enumerate(_field(raw, "question_list", where))
        )
        return _Raw(int(_field(raw, "tid", where)), messages, questions)
    except (TypeError, ValueError, AttributeError):
        raise InvalidInput(where, "has a field of the wrong type (MemDaily format)") from None


def pool(name: str, kind: str, trajectories: Sequence[Any]) -> Pool:
    """Trajectories (as read from JSON) → one deduplicated memory with each question's evidence and names."""
    read = [_read(name, index, raw) for index, raw in enumerate(trajectories)]
    # Every copy of each text, in file order, and the trajectories whose questions cite it.
    copies: dict[str, list[tuple[int, int, str, str]]] = {}
    cited: dict[str, set[int]] = {}
    for trajectory in read:
        for mid, text, stamp, place in trajectory.messages:
            if text:
                copies.setdefault(text, []).append((trajectory.tid, mid, stamp, place))
        text_of = trajectory.text_of()
        for _, _, steps in trajectory.questions:
            for step in steps:
                if text_of.get(step):
                    cited.setdefault(text_of[step], set()).add(trajectory.tid)
    kept: dict[str, Turn] = {}
    for text, found in copies.items():
        tid, mid, stamp, place = next((c for c in found if c[0] in cited.get(text, ())), found[0])
        try:
            at = parse_time(stamp)
        except ValueError:
            where = f"{name} trajectory {tid} message {mid} time"
            raise InvalidInput(where, f"must look like '2024年04月01日 周一 08:42', got {stamp!r}") from None
        kept[text] = Turn(f"{tid}:{mid}", tid, text, at, place)
    mentions = Mentions({text: frozenset(c[0] for c in found) for text, found in copies.items()})
    questions: list[Question] = []
    for trajectory in read:
        text_of = trajectory.text_of()
        for qid, text, steps in trajectory.questions:
            evidence = list(dict.fromkeys(text_of[s] for s in steps if text_of.get(s)))
            if evidence:  # without any, nothing is there to retrieve
                names = mentions.distinguishing(text, evidence, trajectory.tid)
                keys = tuple(kept[e].key for e in evidence)
                questions.append(Question(f"{trajectory.tid}:{qid}", trajectory.tid, text, keys, names))
    # Grouped by trajectory in file order, each in its own order: a trajectory is recorded as one session.
    position = {trajectory.tid: i for i, trajectory in enumerate(read)}
    turns = sorted(kept.values(), key=lambda t: (position[t.trajectory], int(t.key.split(":")[1])))
    return Pool(
        name=name,
        kind=kind,
        trajectories=len(read),
        messages=sum(len(c) for c in copies.values()),
        turns=tuple(turns),
        questions=tuple(questions),
    )


def _normal(text: str) -> str:
    # Spacing and case differ between a question and its messages ("Go Walk 5" / "GoWalk5").
    return _SPACE.sub("", text).lower()


@functools.cache
def _tagger() -> Any:
    import jieba.posseg

    initialize()  # the compact dictionary, before the tagger loads jieba's own
    return jieba.posseg.dt


@functools.lru_cache(maxsize=65536)
def name_candidates(text: str) -> frozenset[str]:
    """What `text` may name (normalised): proper-noun words, noun compounds, Latin/digit runs, quoted titles.

    jieba's HMM is on: a person's name missing from its dictionary (赵雨涵) is guessed as one word
    rather than left as single characters.
    """
    found: set[str] = set()
    for match in _LATIN.finditer(text):
        found.add(match.group(0))
    for match in _QUOTED.finditer(text):
        found.add(next(g for g in match.groups() if g))
    for run in _HAN.findall(text):
        nouns: list[str] = []
        for pair in (*_tagger().cut(run, HMM=True), None):
            word, flag = (pair.word, pair.flag) if pair is not None else ("", "")
            if flag in _NAME_POS and len(word) >= 2:
                found.add(word)
            if flag in _NOUN_POS:
                nouns.append(word)
                continue
            if len(nouns) >= 2 and len(compound := "".join(nouns)) >= _MIN_COMPOUND:
                found.add(compound)
            nouns = []
    return frozenset(n for name in found if len(n := _normal(name)) >= 2)


class Mentions:
    """Which trajectories hold each distinct text of a file, to tell a trajectory's own names from shared ones."""

    def __init__(self, holders: Mapping[str, frozenset[int]]) -> None:
        self._texts = [(_normal(text), tids) for text, tids in holders.items()]

    def only_in(self, name: str, trajectory: int) -> bool:
        """No stored text that `trajectory` does not hold mentions `name`."""
        return all(trajectory in tids for text, tids in self._texts if name in text)

    def distinguishing(self, question: str, evidence: Iterable[str], trajectory: int) -> tuple[str, ...]:
        """The names the question shares with its evidence that only its own trajectory mentions, sorted."""
        evidence = list(evidence)
        asked, told = _normal(question), [_normal(e) for e in evidence]
        candidates = name_candidates(question).union(*(name_candidates(e) for e in evidence))
        shared = (c for c in candidates if c in asked and any(c in e for e in told))
        return tuple(sorted(c for c in shared if self.only_in(c, trajectory)))
