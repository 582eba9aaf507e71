"""What one sentence of conversation is (a question, a greeting, a reaction or a statement) and which facts it carries.

Pure: a sentence and the conversation's speaker names in, a frozen `Statement` out. The rules:

- Question: it ends in ? or ？, or (Chinese) in 吗 呢 么 before its last mark.
- Directive: it tells the listener what to do ("Don't be afraid…", "Enjoy…", "Let me know…", "Feel free…",
  "Make sure…", "别…", "记得…"): advice or a request, nothing that happened to anyone.
- Greeting: once greeting and thanking words ("hi", "thanks", "good to see you", "你好", "谢谢"),
  the speakers' names and punctuation are taken out, fewer than 2 words are left.
- Reaction: it opens with an interjection or a verdict on what the other said ("Wow", "That's
  great", "Sounds fun", "Congrats", "I agree", "You're so brave", "It's amazing how…", "哇", "太好了",
  "真棒", "是啊"), or it is about the listener: "you/your" outnumber "I/my/we" and it names nothing
  and no time or figure. A reaction that goes on to state a fact of its own ("Wow, I ran 5 km today") is a
  reaction all the same: the sentence after it is where the fact is.
- Catching up ("Been a busy week since we talked", "Since we last spoke, …", "好久没聊了") says only that
  time passed between two conversations: it is taken out before the rest is judged.
- Cues a statement may carry: `self` (the speaker says I/my/we: a fact about a person, not a maxim),
  `event` (a subject, I/we/he/she/they, "the …" or a Name, with a past-tense verb), `plan` (going
  to, gonna, planning, thinking about, hoping to, next week, tomorrow, signed up, booked; 打算 准备
  计划 负责 下周 明天 预约; a bare "I'll" is a promise, not a plan), `preference` (I love/like/enjoy/
  prefer, favourite, keen on; 喜欢 最爱 讨厌), `decision` (decided, chose, agreed, signed up; 决定 选了
  说好), `feeling` (I feel/felt/was happy, excited, swamped…, made me feel; 开心 紧张 担心), `number`,
  `date` (a date, weekday, month or time word, lately, years; jieba's t), `name` (a name that is not
  one of the speakers: capitalised mid-sentence; jieba's nr/ns/nt/nz).
- `weight`: a statement's cues summed (a name, number or date 1 each, self 1, the rest 1.5), 0 for
  anything that is not a statement. A sentence with only `self` (weight 1) states no fact.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

from tideline_core.text.tokens import initialize

Kind = Literal["question", "greeting", "reaction", "directive", "statement"]
FACT_WEIGHT = 2.0  # a statement carries a fact from here: self and one cue, or two cues
_WEIGHTS = {"self": 1.0, "name": 1.0, "number": 1.0, "date": 1.0}
_CUE_WEIGHT = 1.5

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK = re.compile(f"[{_HAN}]")
_WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)?")
_CLOSERS = "”’\"'」』）) "

_EN_GREETING = frozenset(
    """hi hey hello hiya yo morning evening afternoon night good great nice see seeing you to again bye goodbye
    thanks thank thx ty so much very lot lots too talk soon later take care catch cya long time no hear from
    glad it's was is be am i i'm we to the a for all your that this welcome cheers care soon speak ok okay yes
    yeah sure alright cool awesome wow oh haha lol totally absolutely""".split()
)
_ZH_GREETING = frozenset(
    "你好 您好 早上好 早安 中午好 下午好 晚上好 晚安 再见 拜拜 谢谢 多谢 感谢 辛苦 辛苦了 "
    "好的 好吧 嗯嗯 嗯 哈哈 哈哈哈 呵呵 收到 明白 "
    "了解 没问题 不客气 客气 好久不见 大家好 在吗 在 是的 对 对的 行 可以 啊 呀 哦 噢 嘿".split()
)
_REACTION_OPENERS = re.compile(
    r"^(?:wow|whoa|woah|oh|ooh|aw+|yay|omg|haha|lol|ha|hmm|ah|yikes|ugh|dang|damn|gosh|jeez"
    r"|congrats|congratulations|cool|nice|great|awesome|amazing|fantastic|wonderful|lovely|sweet|brilliant"
    r"|perfect|neat|impressive|incredible|beautiful|sounds|sound|glad|good for you|good luck|well done|no way"
    r"|that(?:['’]s| is| was| sounds| looks| must| seems| would| will)|this (?:is|looks|sounds)|what an?\b|how (?:cool"
    r"|nice|fun|great|awesome|exciting|amazing|lovely|sweet|wonderful)"
    r"|(?:it|this|that|they|these|those)(?:['’]s| is| was| were| are| looks?| seems?) (?:so |really "
    r"|such |always |very "
    r"|super |pretty |truly |absolutely |great|amazing|awesome|wonderful|nice|cool|fun|important|inspiring|good|hard"
    r"|tough|crazy|funny|true)"
    r"|(?:i )?(?:totally |completely |really |so |100% )?agree|exactly|absolutely|totally|definitely|true|same|me too"
    r"|right"
    r"|(?:you|you['’]re|you are|you['’]ve|you have|you['’]d|you would|you['’]ll|you will|you must|you should|your)\b"
    r"|i(?:['’]m| am) (?:so |really |very )?(?:proud|happy|glad|sorry) (?:of|for) you"
    r"|(?:i )?(?:can['’]t|cannot) wait|keep (?:it up|going|up)|hang in there)\b",
    re.IGNORECASE,
)
_ZH_REACTION = re.compile(
    r"^(?:太(?:好|棒|厉害|赞|酷|可爱|有趣|美|开心)|真(?:的)?(?:棒|好|厉害|不错|有趣|美|聪明)|哇|哇塞|哈哈|呵呵|嘿嘿|天哪|天啊|我的天|太好了|太棒了|太厉害了|真棒|真好|真厉害|好棒|好厉害|厉害|不错|挺好|很好|是啊|是呀|对啊|对呀"
    r"|没错|确实|加油|恭喜|祝贺|羡慕|哎呀|唉|嗯|哦|噢|好的|好吧|同意|你真|你太|你好棒|你做得|辛苦)"
)
_DIRECTIVE = re.compile(
    r"^(?:don['’]t|do not|never|please|enjoy|have (?:fun|a (?:great|good|nice|wonderful|blast))|take care"
    r"|let me know|feel free|make sure|remember to|go for it|check (?:it|this|that) out"
    r"|if you (?:know|need|want|ever|have)\b.*\blet me know)\b",
    re.IGNORECASE,
)
_ZH_DIRECTIVE = re.compile(r"^(?:别|不要|千万|记得|一定要|请你|麻烦你|有空|有需要)")
_CATCH_UP = re.compile(
    r"^(?:(?:it['’]s |it has |has )?been (?:a |an |such a )?(?:\w+ )?(?:while|week|month|day|few (?:days|weeks|months)"
    r"|couple (?:of )?(?:days|weeks))(?: since (?:we|i) (?:last )?(?:spoke|talked|chatted|caught up)(?: last)?)?"
    r"|since (?:we|i) (?:last )?(?:spoke|talked|chatted|caught up)(?: last)?)\b[\s,!.:;-]*",
    re.IGNORECASE,
)
_ZH_CATCH_UP = re.compile(r"^(?:好久没(?:聊|见|联系)了?|自从上次(?:聊|见)(?:天|面)?(?:以后|之后)?)[，,！!。 ]*")
_FIRST_PERSON = frozenset("i i'm i've i'd i'll me my mine myself we we're we've we'd we'll us our ours".split())
_SECOND_PERSON = frozenset("you you're you've you'd you'll your yours yourself".split())
_IRREGULAR_PAST = (
    "went got had made took saw did ran began bought brought came found gave got grew heard held kept knew left lost "
    "met paid read rode sang sat sent shot slept sold spent spoke stood swam taught thought told threw tried won wrote "
    "became built caught chose drew drove ate fell felt flew forgot hurt joined moved started finished visited"
)
_EVENT = re.compile(
    r"\b(?:i|we|he|she|they|my \w+|our \w+|(?-i:the \w+(?: \w+)?|[A-Z][a-z]+))"
    r"(?: \w+ly)? (?:just |recently |finally |also |even )?"
    rf"(?:\w+ed|{'|'.join(_IRREGULAR_PAST.split())})\b",
    re.IGNORECASE,
)
_PLAN = re.compile(
    r"\b(?:going to|gonna|plan to|plans to|planning|planned|intend to|hoping to|hope to|thinking (?:about|of)"
    r"|looking forward to|next (?:week|month|year|weekend|summer|spring|fall|winter|\w+day)"
    r"|tomorrow|tonight|upcoming|signed up|sign up|enrolled|booked|scheduled|appointment)\b",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(?:i|we)(?: \w+ly)? (?:really |also |just |absolutely |totally )?(?:love|loved|like|liked|enjoy|enjoyed|prefer"
    r"|preferred|adore|hate|hated|dislike)\b"
    r"|\b(?:favou?rite|keen on|into|passionate about|fan of|obsessed with|big on)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:decided|decide to|decision|chose|choose to|agreed|agree to|settled on|signed up|made up my mind)\b",
    re.IGNORECASE,
)
_FEELING = re.compile(
    r"\b(?:i|we) (?:feel|felt|was|were|am|['’]m|get|got) (?:so |really |very |pretty |super |a bit |kinda )?"
    r"(?:happy|sad|excited|nervous|anxious|proud|stressed|scared|worried|thrilled|grateful|thankful|lucky|blessed|"
    r"overwhelmed|tired|exhausted|upset|frustrated|relieved|inspired|motivated|lonely|hopeful|curious|swamped)\b"
    r"|\bmade (?:me|us) (?:feel|realize|think)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|thousand"
    r"|dozen|couple|first|second|third)\b",
    re.IGNORECASE,
)
_DATE = re.compile(
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|january|february|march|april|june|july|"
    r"august|september|october|november|december|today|tomorrow|tonight|yesterday|ago|last (?:week|month|year|night|"
    r"time|summer|spring|fall|winter|\w+day)|lately|recently|next (?:week|month|year|\w+day)|this (?:week|month|year"
    r"|weekend|morning|"
    r"evening)|years?|months?|weeks?|since|birthday|anniversary|summer|winter|spring|autumn|christmas|holidays?)\b",
    re.IGNORECASE,
)
_ZH_PLAN = re.compile(
    r"打算|准备|计划|负责|我来|想要|要去|要做|将要|将会|下周|下个月|明天|明年|后天|以后|约好|预约|报名|安排"
)
_ZH_PREFERENCE = re.compile(r"喜欢|爱好|最爱|热爱|讨厌|偏好|爱吃|爱看|不喜欢|迷上|着迷")
_ZH_DECISION = re.compile(r"决定|定了|选了|选择了|说好|商定|敲定|同意了")
_ZH_FEELING = re.compile(r"开心|高兴|难过|伤心|紧张|焦虑|担心|害怕|激动|兴奋|郁闷|累|压力|感动|失望|满意")
_ZH_EVENT = re.compile(r"[我咱].{0,6}?(?:了|过)")
_ZH_DATE = re.compile(
    r"周[一二三四五六日天末]|星期|礼拜|[一二三四五六七八九十两\d]+[点号日月年岁天]|昨天|今天|前天|去年|上周|上个月|最近|以前"
)
_ZH_NUMBER = re.compile(r"\d|[一二三四五六七八九十两百千万]+[个次位名块元公里斤分钟小时本张]")
_ZH_SELF = re.compile(r"我|咱")
_ZH_SECOND = re.compile(r"你|您")
_ZH_QUESTION_END = re.compile(rf"[吗呢么][。！!.…~～{_CLOSERS}]*$")
_ZH_NAME_POS = frozenset({"nr", "nrt", "nrfg", "ns", "nt", "nz"})
_SKIP_CAPS = frozenset(
    """i i'm i've i'd i'll mr mrs ms dr ok okay oh wow hey hi hello thanks yes yeah no god monday tuesday wednesday
    thursday friday saturday sunday january february march april may june july august september october november
    december""".split()
)


@dataclass(frozen=True)
class Statement:
    """One sentence judged: its kind and, for a statement, the facts it carries."""

    kind: Kind
    cues: frozenset[str]

    @property
    def weight(self) -> float:
        if self.kind != "statement":
            return 0.0
        return sum(_WEIGHTS.get(cue, _CUE_WEIGHT) for cue in self.cues)

    @property
    def fact(self) -> bool:
        return self.weight >= FACT_WEIGHT


def judge(text: str, speakers: Collection[str] = ()) -> Statement:
    """The kind of `text` (one sentence) and its cues; `speakers` are the conversation's own names."""
    chinese = len(_CJK.findall(text)) * 3 >= len(re.findall(r"[A-Za-z]", text)) and _CJK.search(text) is not None
    names = frozenset(part.lower() for name in speakers for part in [name, *name.split()] if part)
    stripped = text.strip().rstrip(_CLOSERS)
    if stripped.endswith(("?", "？")) or (chinese and _ZH_QUESTION_END.search(stripped)):
        return Statement("question", frozenset())
    if chinese:
        return _judge_chinese(stripped, names)
    return _judge_english(stripped, names)


def _judge_english(text: str, names: frozenset[str]) -> Statement:
    words = [w.lower().replace("’", "'") for w in _WORD.findall(text)]
    if len([w for w in words if w not in _EN_GREETING and w not in names]) < 2:
        return Statement("greeting", frozenset())
    # "Thanks, Mel! …" and "Hey Caroline," open many a sentence: what follows them is judged.
    opening = re.sub(
        r"^(?:(?:hey|hi|hello|thanks|thank you|yeah|yes|yep|well|so|and|but|oh|ok|okay)\b[\s,!.]*)+",
        "",
        text,
        flags=re.I,
    )
    opening = (
        re.sub(
            rf"^(?:{'|'.join(map(re.escape, sorted(names, key=len, reverse=True)))})\b[\s,!.]*", "", opening, flags=re.I
        )
        if names
        else opening
    )
    opening = opening.lstrip(" ,!.-–—")
    if _CATCH_UP.match(opening):
        text = opening = _CATCH_UP.sub("", opening)
        words = [w.lower().replace("’", "'") for w in _WORD.findall(text)]
        if len([w for w in words if w not in _EN_GREETING and w not in names]) < 2:
            return Statement("greeting", frozenset())
    if _DIRECTIVE.match(opening):
        return Statement("directive", frozenset())
    cues = _english_cues(text, words, names)
    if _REACTION_OPENERS.match(opening):
        return Statement("reaction", frozenset())
    first = sum(w in _FIRST_PERSON for w in words)
    second = sum(w in _SECOND_PERSON for w in words)
    if second > first and not (cues & {"name", "date"} or re.search(r"\d", text)):
        return Statement("reaction", frozenset())
    return Statement("statement", cues)


def _english_cues(text: str, words: list[str], names: frozenset[str]) -> frozenset[str]:
    cues: set[str] = set()
    if any(w in _FIRST_PERSON for w in words):
        cues.add("self")
    checks = (("event", _EVENT), ("plan", _PLAN), ("preference", _PREFERENCE), ("decision", _DECISION))
    cues.update(name for name, pattern in checks if pattern.search(text))
    if _FEELING.search(text):
        cues.add("feeling")
    if _NUMBER.search(text):
        cues.add("number")
    if _DATE.search(text):
        cues.add("date")
    if _has_name(text, names):
        cues.add("name")
    return frozenset(cues)


def _has_name(text: str, names: frozenset[str]) -> bool:
    """A capitalised word past the sentence's first, not a speaker's name, "I" or a calendar word."""
    tokens = list(_WORD.finditer(text))
    for match in tokens[1:]:
        word = match.group(0)
        lower = word.lower().replace("’", "'").removesuffix("'s")
        if word[0].isupper() and lower not in names and lower not in _SKIP_CAPS:
            before = text[: match.start()].rstrip()
            if before and before[-1] not in '.!?:"“':  # a capital after a full stop only opens a sentence
                return True
    return False


def _judge_chinese(text: str, names: frozenset[str]) -> Statement:
    tagged = _tag(re.sub(rf"[^{_HAN}A-Za-z0-9]", "", text))
    rest = [w for w, _ in tagged if w not in _ZH_GREETING and w.lower() not in names]
    if len("".join(rest)) < 3:
        return Statement("greeting", frozenset())
    core = text
    for name in sorted(names, key=len, reverse=True):
        core = core.removeprefix(name)
    core = core.lstrip("，,！!。 ")
    if _ZH_CATCH_UP.match(core):
        text = core = _ZH_CATCH_UP.sub("", core)
        tagged = _tag(re.sub(rf"[^{_HAN}A-Za-z0-9]", "", text))
        if len("".join(w for w, _ in tagged if w not in _ZH_GREETING and w.lower() not in names)) < 3:
            return Statement("greeting", frozenset())
    if _ZH_DIRECTIVE.match(core):
        return Statement("directive", frozenset())
    if _ZH_REACTION.match(core):
        return Statement("reaction", frozenset())
    cues: set[str] = set()
    checks = (
        ("self", _ZH_SELF),
        ("plan", _ZH_PLAN),
        ("preference", _ZH_PREFERENCE),
        ("decision", _ZH_DECISION),
        ("feeling", _ZH_FEELING),
        ("date", _ZH_DATE),
        ("number", _ZH_NUMBER),
    )
    cues.update(name for name, pattern in checks if pattern.search(text))
    if "self" in cues and _ZH_EVENT.search(text):
        cues.add("event")
    if any(flag == "t" for _, flag in tagged):
        cues.add("date")
    if any(flag in _ZH_NAME_POS and len(w) >= 2 and w.lower() not in names for w, flag in tagged):
        cues.add("name")
    if len(_ZH_SECOND.findall(text)) > len(_ZH_SELF.findall(text)) and not cues & {"name", "date", "number"}:
        return Statement("reaction", frozenset())
    return Statement("statement", frozenset(cues))


@functools.cache
def _tagger() -> Any:
    initialize()
    import jieba.posseg

    return jieba.posseg.dt


@functools.lru_cache(maxsize=4096)
def _tag(han: str) -> tuple[tuple[str, str], ...]:
    return tuple((pair.word, pair.flag) for pair in _tagger().cut(han, HMM=False))
