"""The extractive solidifier: conversation chunks into narrative memories and session digests, no LLM.

Pure: turns in, frozen values out (the caller turns them into `NarrativeIn`s). The rules:

- Sentences. A turn splits after . ! ? (followed by a space or the end) and after 。！？；, and at line
  breaks; the punctuation stays. A sentence is skipped when it is a fragment (fewer than 8
  characters, or fewer than 4 汉字 when it has any) or carries no content word ("ok thanks", "哈哈").
  System and tool turns are never quoted (they are not conversation) but still count as
  neighbours in `source_turns`.
- Content words. Chinese: jieba's part-of-speech words that are nouns, verbs or adjectives, of 2+
  characters. English: lower-cased words of 2–40 letters. Both without
  stopwords, filler words and the speakers' own names (a name greeting someone says nothing).
- Facts. Each sentence is judged by `statements`: questions, greetings and reactions are never kept;
  a statement carries a fact when its cues (I/my, an event, a plan, a preference, a decision, a
  feeling, a number, a date, a name) weigh 2 or more, one more when it answers a question the other
  speaker asked in the turn before, and it holds 4 content words (3 in Chinese): "I'm gonna make it
  happen" names nothing. When unsure, nothing is kept.
- Score, among facts. The heavier fact first; then salience: a word weighs its IDF (jieba's table,
  `search.salience`; the table's median for a word it lacks) × (1 + ln of its count in the chunk);
  a sentence scores the sum of its 8 heaviest distinct words divided by √(content words / 8) once
  it has more than 8, × (0.5 + centrality of its turn) when centralities are given (clamped to
  0–1; a turn without one takes the mean of the others); × 1.15 when it names an entity, × 1.1
  when it holds a number or a date. Ties go to the earlier sentence.
- Memories. At most one per 2 turns of the chunk (`max_memories` at most), from the facts in the
  order above: never two from one turn, never one whose word set overlaps an already chosen one's
  by 60 % or more (of the smaller set). Returned in conversation order. The gesture is the speaker
  and every fact sentence of the turn ("Alice: …", "张伟：…"; " … " where something else was said
  between two), cut at a clause boundary with "…" past 2,000 characters; `source_turns` the turn
  and its neighbours in the chunk; `occurred_at` the turn's time; the type "decision" when the
  sentence states a plan or decision, else "event". Tags: up to 4 of the sentence's heaviest
  content words (`dream.words`: English nouns and names in one form, never a speaker's name or
  its start; a word of a name it holds × 1.15), then the chunk's heaviest by count × IDF, 6 at
  most. Entities: the speaker, the sentence's entities, the other speakers and entities of the
  source turns, 16 at most, never a speaker known only by the turn's role ("user", "assistant": nobody in
  particular). `entities_role` marks those speakers "speaker" and the known persons
  mentioned "mentioned", in English whatever the language, so the entity graph counts one role.
- Entities. jieba's nr/ns/nt/nz words; a run of nouns ending in an institution word (论坛, 公司,
  大学 …) joined into one name (金融科技论坛); capitalised English words and runs of them, less
  the word opening the sentence unless it is capitalised mid-sentence somewhere in the chunk
  ("Deploy Redis now" names Redis); the known persons' aliases wherever they appear; every name
  resolved through `known_persons` ({alias lower-cased: canonical}).
- Digest. `what`: 2–4 of the session's facts (one per 5 turns, chosen as memories are), in
  conversation order. `decisions`: the facts stating a plan or decision. `open_questions`:
  questions (`statements`: a ? or ？, or a Chinese 吗 呢 at the end) after which no other speaker (a
  user or an assistant turn) says anything in the session. Any later turn of another speaker counts
  as the answer: rough, and it errs towards calling a question answered. Both at most 6, earliest
  first, each cut at 500 characters. Its gesture says who, on which day, the first two facts, the
  first plan not among them and the first open question, in the session's own sentences (each
  given a full stop where it had no end of its own).
- Labels (contexts, digest text) are Chinese when the text is mostly CJK: one 汉字 per 3 Latin letters.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tideline_core.domain.choices import TURN_ROLES
from tideline_core.domain.inputs import MAX_FIELD, MAX_GESTURE, MAX_TAG
from tideline_core.dream.scan.scanner import Chunk, TurnRow
from tideline_core.dream.solidify.statements import FACT_WEIGHT, Statement, judge
from tideline_core.dream.words import english_content, one_form
from tideline_core.errors import InvalidInput
from tideline_core.numeric import np
from tideline_core.search.salience import idf_table
from tideline_core.text.dates import as_utc
from tideline_core.text.tokens import CHINESE_STOPWORDS, ENGLISH_STOPWORDS, initialize

if TYPE_CHECKING:
    import numpy.typing as npt

TOP_WORDS = 8
TURNS_PER_MEMORY = 2
MAX_MEMORIES = 24
ANSWER_WEIGHT = 1.0
FACT_WORDS = 4
MIN_WORDS = 3
ZH_FACT_WORDS = 3
CHARS_PER_MEMORY = 1_500
MAX_OVERLAP = 0.6
ENTITY_BONUS = 1.15
NUMBER_BONUS = 1.1
MAX_TAGS = 6
SENTENCE_TAGS = 4
MAX_ENTITIES = 16
MAX_NAME = 128
TURNS_PER_POINT = 5
MAX_ITEMS = 6
ITEM_CHARS = 500
QUIET_ROLES = frozenset({"system", "tool"})
_ENDS = ".!?…。！？；"

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK = re.compile(f"[{_HAN}]")
_LATIN = re.compile(r"[A-Za-z]")
_SPACE = re.compile(r"\s+")
_CLOSERS = "”’\"'」』）)"
# A '.' ends a sentence only before a space or the end, so 3.5, v1.2 and e.g. stay whole.
_SENTENCE = re.compile(rf"(?:[^\n。！？；!?.]|\.(?![\s.]|$))+(?:[。！？；!?]+|\.+)?[{_CLOSERS}]*")
_RUN = re.compile(rf"(?P<han>[{_HAN}]+)|(?P<en>[A-Za-z][A-Za-z0-9]*(?:[-'’][A-Za-z0-9]+)*)")
# "may" is a month but more often a verb: it makes no sentence dated, though "May" is never a name.
_CALENDAR_WORDS = (
    "monday tuesday wednesday thursday friday saturday sunday january february march april june july "
    "august september october november december today tomorrow tonight yesterday"
)
_DATED = re.compile(
    r"\d|周[一二三四五六日天末]|星期|礼拜|[一二三四五六七八九十两]+[点号日月年]"
    rf"|\b(?:{_CALENDAR_WORDS.replace(' ', '|')})\b",
    re.IGNORECASE,
)
_PLANS = frozenset({"plan", "decision"})
_SPECIFIC = frozenset({"name", "number", "date"})
_CALENDAR = frozenset([*_CALENDAR_WORDS.split(), "may"])
_EN_FILLER = frozenset(
    """hi hello hey morning evening afternoon night everyone guys bye goodbye thanks thank thx ok okay sure yes
    yeah yep yup nope great cool nice fine good alright lol haha welcome cheers please sounds awesome perfect also
    about really think going get got like know want well right maybe lot lots much many still even back way thing
    things something anything everything need make made let us am pm etc because last next first before after since
    though although however yet already ever never always often every each any new old big small little few more
    most less least another able might must said say says tell told ask asked see saw look come came go went take
    took put give gave use used try tried keep kept seem done being here now actually probably""".split()
)
_ZH_FILLER = frozenset(
    """好的 好吧 哈哈 哈哈哈 呵呵 嘿嘿 嗯嗯 谢谢 多谢 感谢 收到 明白 了解 知道 没问题 可以 是的 对的 你好 您好 大家
    早上好 晚上好 晚安 再见 拜拜 辛苦 觉得 感觉 认为 看看 一下 东西 事情 时候 有点 还是 可能 应该 还有 比如
    记得 想起 听起来 太棒了 太好了""".split()
)
_EN_SKIP = ENGLISH_STOPWORDS | _EN_FILLER
_SKIP_CAPS = _EN_SKIP | _CALENDAR | {"i"}
_ZH_SKIP = CHINESE_STOPWORDS | _ZH_FILLER
_ZH_CONTENT_POS = frozenset({"v", "vn", "vd", "a", "an", "ad"})
_ZH_ENTITY_POS = frozenset({"ns", "nt", "nz"})
_INSTITUTIONS = frozenset(
    """论坛 峰会 大会 会议 研讨会 博览会 展会 公司 集团 大学 学院 学校 银行 医院 研究院 研究所 实验室 中心 协会 学会
    委员会 基金会 工作室 俱乐部 博物馆 图书馆 交易所 政府""".split()
)
_CLAUSE_ENDS = "。！？；!?.;，,、：:"


@dataclass(frozen=True)
class ExtractedMemory:
    """One narrative memory taken from a chunk, as plain values (the caller makes it a `NarrativeIn`)."""

    gesture: str
    context: str
    tags: tuple[str, ...]
    related_entities: tuple[str, ...]
    entities_role: str
    source_turns: tuple[int, ...]
    occurred_at: datetime
    narrative_type: str = "event"


@dataclass(frozen=True)
class ExtractedDigest:
    """What one session held: who, when, its main points, decisions and questions left open."""

    session_id: str
    who: tuple[str, ...]
    start: datetime
    end: datetime
    what: tuple[str, ...]
    decisions: tuple[str, ...]
    open_questions: tuple[str, ...]
    tags: tuple[str, ...]
    source_turns: tuple[int, ...]


@dataclass(frozen=True)
class _Sentence:
    turn: int  # index of its turn in the sequence
    position: int  # order among all sentences
    piece: int  # order among the pieces its turn splits into, fragments included
    speaker: str
    text: str
    words: tuple[str, ...]  # content words in order, repeats kept
    entities: tuple[str, ...]
    dated: bool
    statement: Statement

    @property
    def quoted(self) -> str:
        return f"{self.speaker}{'：' if mostly_cjk(self.text) else ': '}{self.text}"


@dataclass(frozen=True)
class _Reading:
    """Every kept sentence of a sequence of turns, with the weights to score them."""

    turns: tuple[TurnRow, ...]
    speakers: tuple[str, ...]  # resolved, one per turn
    participants: tuple[str, ...]  # the distinct speakers of the user and assistant turns
    sentences: tuple[_Sentence, ...]
    weight: Mapping[str, float]  # IDF × (1 + ln count)
    rank: Mapping[str, float]  # count × IDF, for the whole text's tags
    known: frozenset[str]
    chinese: bool


def extract_memories(
    chunk: Chunk,
    *,
    centrality: Mapping[int, float] | None = None,
    known_persons: Mapping[str, str] | None = None,
    max_memories: int = MAX_MEMORIES,
) -> list[ExtractedMemory]:
    """The chunk's fact-bearing statements as memories, one per turn (none when it is only small talk)."""
    reading = _read(chunk.turns, known_persons or {})
    wanted = min(max_memories, max(1, math.ceil(len(chunk.turns) / TURNS_PER_MEMORY)))
    facts = _facts(reading)
    chosen = _choose(reading, facts, centrality, wanted)
    context = _context(chunk.session_id, reading.participants, chunk.start, chunk.end, reading.chinese)
    return [_memory(reading, sentence, context, facts) for sentence in chosen]


def _choose(
    reading: _Reading, facts: Mapping[_Sentence, float], centrality: Mapping[int, float] | None, wanted: int
) -> list[_Sentence]:
    """Up to `wanted` facts, heaviest first (then the most salient), one per turn, none repeating another;
    returned in conversation order."""
    scores = {s.position: _score(reading, s, centrality) for s in facts}
    chosen: list[_Sentence] = []
    for sentence in sorted(facts, key=lambda s: (-facts[s], -scores[s.position], s.position)):
        if len(chosen) >= wanted:
            break
        if any(c.turn == sentence.turn for c in chosen) or any(_overlap(sentence, c) >= MAX_OVERLAP for c in chosen):
            continue
        chosen.append(sentence)
    return sorted(chosen, key=lambda s: s.position)


def _facts(reading: _Reading) -> dict[_Sentence, float]:
    """Each sentence that carries a fact → its weight: its statement's cues, and one more when it answers
    a question the other speaker asked in the turn before (an answer is what a person would keep)."""
    asked = {s.turn for s in reading.sentences if s.statement.kind == "question"}
    out: dict[_Sentence, float] = {}
    for s in reading.sentences:
        weight = s.statement.weight
        before = s.turn - 1
        if weight > 0 and before in asked and reading.speakers[before] != s.speaker:
            weight += ANSWER_WEIGHT
        # A fact names what it is about: a name, a number, a time, or a few content words
        # ("I'm gonna make it happen" has none of them).
        needed = MIN_WORDS if s.statement.cues & _SPECIFIC else ZH_FACT_WORDS if mostly_cjk(s.text) else FACT_WORDS
        if weight >= FACT_WEIGHT and len(set(s.words)) >= needed:
            out[s] = weight
    return out


def extract_digest(
    session_id: str,
    turns: Sequence[TurnRow],
    *,
    centrality: Mapping[int, float] | None = None,
    known_persons: Mapping[str, str] | None = None,
) -> ExtractedDigest:
    """The digest of one session's turns (any order); raises InvalidInput when there are none."""
    if not turns:
        raise InvalidInput("turns", "must hold at least one turn of the session")
    ordered = sorted(turns, key=lambda t: (as_utc(t.created_at), t.id))
    reading = _read(ordered, known_persons or {})
    wanted = min(4, max(2, len(ordered) // TURNS_PER_POINT))
    facts = _facts(reading)
    what = _choose(reading, facts, centrality, wanted)
    decisions = [s for s in facts if s.statement.cues & _PLANS]
    open_questions = [s for s in reading.sentences if s.statement.kind == "question" and not _answered(reading, s.turn)]
    return ExtractedDigest(
        session_id=session_id,
        who=reading.participants,
        start=as_utc(ordered[0].created_at),
        end=as_utc(ordered[-1].created_at),
        what=tuple(_clip(s.quoted, ITEM_CHARS) for s in what),
        decisions=_items(decisions),
        open_questions=_items(open_questions),
        tags=_ranked(reading.rank, reading, MAX_TAGS),
        source_turns=tuple(t.id for t in ordered),
    )


def digest_text(digest: ExtractedDigest) -> tuple[str, str, str, str]:
    """(gesture, context, moment, cognition_direction) of the digest's narrative, labelled in its language."""
    chinese = mostly_cjk(" ".join([*digest.what, *digest.decisions, *digest.open_questions, *digest.tags, *digest.who]))
    session = _flat(digest.session_id, 80)
    who = _names(digest.who, chinese)
    day = f"{digest.start:%Y-%m-%d}"
    # The headline is who met when and what they said first, in the session's own sentences.
    said = ("" if chinese else " ").join(_ended(w) for w in digest.what[:2])
    planned = [_ended(d) for d in digest.decisions if d not in digest.what[:2]][:1]
    if chinese:
        head = f"会话 {session} 摘要" if session else "对话摘要"
        gesture = f"{head}（{day}）：{who}。{said}" + (f"计划：{planned[0]}" if planned else "")
        gesture += f"未决：{digest.open_questions[0]}" if digest.open_questions else ""
        labels = ("经过", "决定与计划", "待解决的问题", "无")
    else:
        head = f"Digest of session {session}" if session else "Digest of a conversation"
        gesture = f"{head} ({day}): {who}. {said}" + (f" Planned: {planned[0]}" if planned else "")
        gesture = gesture.rstrip() + (f" Open: {digest.open_questions[0]}" if digest.open_questions else "")
        labels = ("What was said", "Decisions and plans", "Open questions", "none")
    count = len(digest.source_turns)
    turns = f"，共 {count} 轮。" if chinese else f", {count} turns."
    context = _context(digest.session_id, digest.who, digest.start, digest.end, chinese).rstrip("。.") + turns
    colon = "：" if chinese else ":"

    def section(label: str, items: Sequence[str]) -> str:
        if not items:
            return f"{label}{colon}{'' if chinese else ' '}{labels[3]}{'。' if chinese else '.'}"
        return "\n".join([f"{label}{colon}", *(f"- {item}" for item in items)])

    moment = section(labels[0], digest.what) if digest.what else ""
    direction = section(labels[1], digest.decisions) + "\n\n" + section(labels[2], digest.open_questions)
    return (
        _clip(gesture, MAX_GESTURE),
        _clip(context, MAX_FIELD),
        _clip(moment, MAX_FIELD),
        _clip(direction, MAX_FIELD),
    )


def turn_centrality(vectors: Mapping[int, Sequence[float] | npt.NDArray[Any]]) -> dict[int, float]:
    """Turn id → cosine of its unit vector to the mean of all the unit vectors (1: the chunk's centre).

    A zero vector scores 0, and so does every turn when the directions cancel out; vectors of
    different lengths raise ValueError.
    """
    if not vectors:
        return {}
    ids = list(vectors)
    matrix = np.asarray([np.asarray(vectors[i], dtype=np.float64).ravel() for i in ids])
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    mean = unit.mean(axis=0)
    length = float(np.linalg.norm(mean))
    if length < 1e-12:
        return dict.fromkeys(ids, 0.0)
    return {i: float(score) for i, score in zip(ids, unit @ (mean / length), strict=True)}


def mostly_cjk(text: str) -> bool:
    """Whether `text` reads as Chinese: at least one 汉字 for every 3 Latin letters."""
    han = len(_CJK.findall(text))
    return han > 0 and han * 3 >= len(_LATIN.findall(text))


# --- reading ---------------------------------------------------------------------------------


def _read(turns: Sequence[TurnRow], aliases: Mapping[str, str]) -> _Reading:
    speakers = tuple(_resolve(t.speaker or t.role, aliases) for t in turns)
    own_names = frozenset(part.lower() for name in speakers for part in [name, *name.split()] if part)
    texts = [
        (i, k, _flat(piece))
        for i, t in enumerate(turns)
        if t.role not in QUIET_ROLES
        for k, piece in enumerate(_split(t.content))
    ]
    texts = [(i, k, text) for i, k, text in texts if _long_enough(text)]
    proper = frozenset(word for _, _, text in texts for _, word in _capitals(text))
    patterns = [(_alias_pattern(alias), name) for alias, name in sorted(aliases.items())]
    sentences: list[_Sentence] = []
    for i, k, text in texts:
        words, entities, dated = _analyse(text, own_names, proper, patterns, aliases)
        if words:
            statement = judge(text, speakers)
            sentences.append(_Sentence(i, len(sentences), k, speakers[i], text, words, entities, dated, statement))
    counts = Counter(word for s in sentences for word in s.words)
    table = idf_table()
    idf = {word: table.weights.get(word, table.median) for word in counts}
    return _Reading(
        turns=tuple(turns),
        speakers=speakers,
        participants=tuple(dict.fromkeys(n for n, t in zip(speakers, turns, strict=True) if t.role not in QUIET_ROLES)),
        sentences=tuple(sentences),
        weight={word: idf[word] * (1 + math.log(n)) for word, n in counts.items()},
        rank={word: idf[word] * n for word, n in counts.items()},
        known=frozenset(aliases.values()),
        chinese=mostly_cjk(" ".join(t.content for t in turns)),
    )


def _split(content: str) -> list[str]:
    return [m.group(0) for m in _SENTENCE.finditer(content) if m.group(0).strip()]


def _long_enough(text: str) -> bool:
    return len(_CJK.findall(text)) >= 4 or len(_CJK.sub("", text).strip()) >= 8


def _analyse(
    text: str,
    own_names: frozenset[str],
    proper: frozenset[str],
    patterns: Sequence[tuple[re.Pattern[str], str]],
    aliases: Mapping[str, str],
) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """(content words, entities in order of appearance, whether it holds a number or date) of a sentence."""
    words: list[str] = []
    found: list[tuple[int, str]] = []
    dated = _DATED.search(text) is not None
    for match in _RUN.finditer(text):
        han = match.group("han")
        if han is None:
            word = match.group("en").lower().replace("’", "'").removesuffix("'s")
            if 2 <= len(word) <= 40 and "'" not in word and word not in _EN_SKIP and word not in own_names:
                words.append(word)
            continue
        offset = match.start()
        tagged = _tag(han)
        for k, (word, flag) in enumerate(tagged):
            dated = dated or flag == "t"
            content = flag.startswith("n") or flag in _ZH_CONTENT_POS
            if content and len(word) >= 2 and word not in _ZH_SKIP and word not in own_names:
                words.append(word)
            if len(word) >= 2 and (flag.startswith("nr") or flag in _ZH_ENTITY_POS):
                found.append((offset, word))
            if word in _INSTITUTIONS:
                start = k
                while start > 0 and k - start < 3 and tagged[start - 1][1].startswith("n"):
                    start -= 1
                name = "".join(w for w, _ in tagged[start : k + 1])
                if start < k and len(name) >= 4:
                    found.append((offset - len(name) + len(word), name))
            offset += len(word)
    found += _capitals(text, proper)
    for pattern, name in patterns:
        found += [(m.start(), name) for m in pattern.finditer(text)]
    entities = dict.fromkeys(_resolve(name, aliases) for _, name in sorted(found, key=lambda pn: pn[0]))
    return tuple(words), tuple(name for name in entities if len(name) <= 40), dated


def _capitals(text: str, proper: frozenset[str] | None = None) -> list[tuple[int, str]]:
    """Capitalised words and runs of them, (position, name); without `proper`, every single capitalised word.

    With `proper` (the words capitalised mid-sentence somewhere), a lone word opening the sentence
    counts only when it is in `proper`: "Deploy failed" is not a name, "Alice" in "Alice said" is.
    """
    tokens = [m for m in _RUN.finditer(text) if m.group("en") and m.group("en")[0].isupper()]
    if proper is None:
        return [(m.start(), m.group("en")) for m in tokens if m.start() > _first_letter(text)]
    runs: list[list[re.Match[str]]] = []
    for m in tokens:
        if runs and text[runs[-1][-1].end() : m.start()] == " ":
            runs[-1].append(m)
        else:
            runs.append([m])
    names: list[tuple[int, str]] = []
    for run in runs:
        kept = [m for m in run if m.group("en").lower().replace("’", "'") not in _SKIP_CAPS]
        if kept and kept[0].start() == _first_letter(text) and kept[0].group("en") not in proper:
            kept = kept[1:]  # "Deploy Redis now": the first word is capitalised for the sentence's sake
        if not kept:
            continue
        name = text[kept[0].start() : kept[-1].end()]
        names.append((kept[0].start(), re.sub(r"['’]s$", "", name)))
    return names


def _first_letter(text: str) -> int:
    match = _RUN.search(text)
    return match.start() if match else 0


def _alias_pattern(alias: str) -> re.Pattern[str]:
    if _CJK.search(alias):
        return re.compile(re.escape(alias))
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(alias)}(?![A-Za-z0-9])", re.IGNORECASE)


@functools.cache
def _tagger() -> Any:
    # jieba's part-of-speech tables take about 50 MiB: only a process that solidifies loads them.
    initialize()  # the compact dictionary, jieba imported as it should be, before the tagger loads its own
    import jieba.posseg

    return jieba.posseg.dt


def _tag(han: str) -> tuple[tuple[str, str], ...]:
    # A memory and a digest of the same turns tag the same runs; a long run is rare and not worth holding.
    return _tag_cached(han) if len(han) <= 256 else _tag_run(han)


@functools.lru_cache(maxsize=4096)
def _tag_cached(han: str) -> tuple[tuple[str, str], ...]:
    return _tag_run(han)


def _tag_run(han: str) -> tuple[tuple[str, str], ...]:
    # Without jieba's HMM: its Viterbi pass over unknown runs was 85% of solidifying (3,000 turns: 21.5 s
    # against 5.9 s). Names it would guess come from the speakers, the known persons and the dictionary.
    return tuple((pair.word, pair.flag) for pair in _tagger().cut(han, HMM=False))


def _resolve(name: str, aliases: Mapping[str, str]) -> str:
    return aliases.get(name.lower(), name)


# --- choosing --------------------------------------------------------------------------------


def _score(reading: _Reading, sentence: _Sentence, centrality: Mapping[int, float] | None) -> float:
    heaviest = sorted((reading.weight[w] for w in set(sentence.words)), reverse=True)[:TOP_WORDS]
    score = sum(heaviest) / math.sqrt(max(1.0, len(sentence.words) / TOP_WORDS))
    if centrality:
        default = sum(centrality.values()) / len(centrality)
        value = centrality.get(reading.turns[sentence.turn].id, default)
        score *= 0.5 + min(1.0, max(0.0, value))
    if set(sentence.entities) - {sentence.speaker}:
        score *= ENTITY_BONUS
    if sentence.dated:
        score *= NUMBER_BONUS
    return score


def _overlap(a: _Sentence, b: _Sentence) -> float:
    left, right = set(a.words), set(b.words)
    return len(left & right) / min(len(left), len(right))


def _answered(reading: _Reading, turn: int) -> bool:
    asker = reading.speakers[turn]
    return any(
        reading.speakers[later] != asker and reading.turns[later].role not in QUIET_ROLES
        for later in range(turn + 1, len(reading.turns))
    )


# --- writing ---------------------------------------------------------------------------------


def _said(reading: _Reading, sentence: _Sentence, facts: Mapping[_Sentence, float]) -> str:
    """The speaker and every fact-bearing sentence of the chosen one's turn, in order; " … " where the
    turn says something else between two of them (a question, a reaction)."""
    mine = [s for s in reading.sentences if s.turn == sentence.turn and (s in facts or s is sentence)]
    text = mine[0].text
    for before, after in itertools.pairwise(mine):
        text += (" " if after.piece == before.piece + 1 else " … ") + after.text
    return f"{sentence.speaker}{'：' if mostly_cjk(text) else ': '}{text}"


def _memory(reading: _Reading, sentence: _Sentence, context: str, facts: Mapping[_Sentence, float]) -> ExtractedMemory:
    around = range(max(0, sentence.turn - 1), min(len(reading.turns), sentence.turn + 2))
    speakers = dict.fromkeys(
        [sentence.speaker, *(reading.speakers[i] for i in around if reading.turns[i].role not in QUIET_ROLES)]
    )
    nearby = [name for s in reading.sentences if s.turn in around for name in s.entities]
    names = named_people(_distinct([sentence.speaker, *sentence.entities, *speakers, *nearby]))[:MAX_ENTITIES]
    mentioned = [n for n in names if n in reading.known and n not in speakers]
    roles = [f"{_role_name(n)}=speaker" for n in named_people(speakers)] + [
        f"{_role_name(n)}=mentioned" for n in mentioned
    ]
    # A word of a name the sentence holds ("Redis") says more as a tag than its weight alone shows.
    named = {part.lower() for name in sentence.entities for part in name.split()}
    own = _ranked(
        {w: reading.weight[w] * (ENTITY_BONUS if w in named else 1) for w in sentence.words}, reading, SENTENCE_TAGS
    )
    return ExtractedMemory(
        gesture=_clip(_said(reading, sentence, facts), MAX_GESTURE),
        context=context,
        tags=tuple(dict.fromkeys([*own, *_ranked(reading.rank, reading, MAX_TAGS)]))[:MAX_TAGS],
        related_entities=tuple(name[:MAX_NAME] for name in names),
        entities_role=_clip("; ".join(roles), MAX_GESTURE),
        source_turns=tuple(reading.turns[i].id for i in around),
        occurred_at=as_utc(reading.turns[sentence.turn].created_at),
        narrative_type="decision" if sentence.statement.cues & _PLANS else "event",
    )


def _ranked(weights: Mapping[str, float], reading: _Reading, top: int) -> tuple[str, ...]:
    """The heaviest content words (`dream.words`: English nouns and names, one form of each; a speaker's
    own name or its start, "Mel" of Melanie, never), ties in order of first appearance."""
    first: dict[str, int] = {}
    counts: Counter[str] = Counter()
    for s in reading.sentences:
        for word in s.words:
            first.setdefault(word, s.position)
            counts[word] += 1
    forms = one_form(counts)
    merged: dict[str, float] = {}
    for word, weight in weights.items():
        if not word.isdigit() and len(word) <= MAX_TAG and _tag_word(word, reading):
            merged[forms[word]] = merged.get(forms[word], 0.0) + weight
    return tuple(sorted(merged, key=lambda w: (-merged[w], first[w], w))[:top])


def _tag_word(word: str, reading: _Reading) -> bool:
    if not word.isascii():
        return True  # a Chinese word is already one of jieba's content words (see `_analyse`)
    nicknames = (part.lower() for name in reading.participants for part in name.split())
    return english_content(word) and not any(len(word) >= 3 and n.startswith(word) for n in nicknames)


def _distinct(names: Iterable[str]) -> list[str]:
    seen: dict[str, str] = {}
    for name in names:
        if name.strip():
            seen.setdefault(name.strip().lower(), name.strip())
    return list(seen.values())


def _ended(sentence: str) -> str:
    """The sentence with a full stop of its own script where it had no end, so two quoted in a row read as two."""
    return sentence if not sentence or sentence[-1] in _ENDS else sentence + ("。" if mostly_cjk(sentence) else ".")


def named_people(names: Iterable[str]) -> list[str]:
    """The names of someone: not a turn's role ("user", "assistant") standing in for a speaker who gave no name."""
    return [name for name in names if name.lower() not in TURN_ROLES]


def _role_name(name: str) -> str:
    # The role string's own punctuation inside a name would split it into other entries.
    return _flat(re.sub(r"[=＝:：;；,，()（）+＋/、&]", " ", name), MAX_NAME)


def _items(sentences: Sequence[_Sentence]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_clip(s.quoted, ITEM_CHARS) for s in sentences))[:MAX_ITEMS]


def _context(session_id: str, speakers: Sequence[str], start: datetime, end: datetime, chinese: bool) -> str:
    session = _flat(session_id, 80)
    who = _names(tuple(dict.fromkeys(speakers)), chinese)
    span = _span(as_utc(start), as_utc(end))
    if chinese:
        where = f"在会话 {session} 中" if session else ""
        return f"{who}{where}的对话，{span}。"
    where = f" in session {session}" if session else ""
    link = "between" if len(set(speakers)) > 1 else "with"
    return f"Conversation{where} {link} {who}, {span}."


def _names(names: Sequence[str], chinese: bool) -> str:
    shown = [_flat(n, MAX_NAME) for n in names[:6]]
    if not shown:
        return "无人" if chinese else "nobody"
    if chinese:
        more = f"等 {len(names)} 人" if len(names) > 6 else ""
        return ("、".join(shown[:-1]) + "与" + shown[-1] if len(shown) > 1 else shown[0]) + more
    if len(names) > 6:
        return ", ".join(shown) + f" and {len(names) - 6} others"
    return ", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0]


def _span(start: datetime, end: datetime) -> str:
    if start.strftime("%Y-%m-%d %H:%M") == end.strftime("%Y-%m-%d %H:%M"):
        return f"{start:%Y-%m-%d %H:%M} UTC"
    if start.date() == end.date():
        return f"{start:%Y-%m-%d %H:%M}–{end:%H:%M} UTC"
    return f"{start:%Y-%m-%d %H:%M} – {end:%Y-%m-%d %H:%M} UTC"


def _flat(text: str, limit: int | None = None) -> str:
    flat = _SPACE.sub(" ", text).strip()
    return flat if limit is None else _clip(flat, limit)


def _clip(text: str, limit: int) -> str:
    """`text` within `limit` characters: past it, cut after the last clause mark (else space) in the
    second half, then "…"."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    for marks in (_CLAUSE_ENDS, " "):
        cut = max(head.rfind(mark) for mark in marks)
        if cut >= limit // 2:
            head = head[: cut + 1]
            break
    return head.rstrip(" ,，、;；:：") + "…"
