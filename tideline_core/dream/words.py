"""Content words for topics and tags: English nouns and names in one form; Chinese nouns, verbs and adjectives.

Pure. English has no tagger here, so a word is taken for a noun or a name unless it is a stopword,
a contraction, a common verb, adjective or adverb ("amazing", "regardless", "together", "think"),
or has the form of one: -ly, -ous, -ful, -less, -ive, -able/-ible, -ish, -est, a past tense in -ed
(not -eed: "need", "speed"), each with the nouns of that form kept ("family", "festival",
"detective", "table"). An -ing word is a noun ("painting", "camping") unless it judges ("amazing",
"exciting"). Chinese words are jieba's nouns, verbs and adjectives (n*, v*, a*) of 2+ characters.

One form: words sharing a lemma key (plural -s/-es/-ies, -ing with its doubled consonant, a final
e) are one word, shown in the form used most (ties: the shorter, then the first alphabetically), so
"work" and "works" are one tag and "worked" none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from tideline_core.text.tokens import CHINESE_STOPWORDS, ENGLISH_STOPWORDS

MIN_LETTERS = 3

_NOT_NOUNS = frozenset(
    """about above across after again against ago ahead almost alone along already also although always amazing among
    another anyone anything anyway anywhere around away awesome back bad because before behind being below beside
    best better between beyond big both bring brings brought busy can cannot certain certainly change cool could
    definitely despite different doing done down during each easy else elsewhere enough especially even ever every
    everyone everything exactly excited exciting extra fantastic far feel feeling feels felt few fine for forward found
    free fun funny get gets getting give given gives giving glad go goes going gone good got gotten great hard help
    helps here high hope hopefully huge important inside instead interested interesting into just keep keeps kind
    kinda know known large last late lately later least less let lets like likes little long look looking looks lot
    lots love loved loves lovely low made make makes making many maybe mean means might more most much must myself
    near need needs never new next nice nothing now off often okay old once one only onto others otherwise out outside
    over own past perfect perhaps please plus pretty probably proud quite rather ready real really recent recently
    regardless right same see seeing seem seems seen several should show shows simply since small so some someone
    something sometimes somewhere soon special still such super sure take takes taking tell than thank thanks that
    then there therefore these thing things think thinking those though through throughout thus today together too
    toward towards tried true truly try trying two under unless until upon use used using usually very wanna want
    wants way well whatever whenever wherever whether while whole wish within without wonderful worth would wow yeah
    yes yet young gonna guess guys hey hello okay lol haha sounds sound able sorry happy sad ready tough easy mental
    personal social physical emotional local general full main final similar simple strong safe main whole total
    continue check choose chose become became begin began believe call came come consider create decide enjoy
    explore express find finish happen hear hold join learn leave listen live lose meet offer open put reach read
    remember remind say sit speak spend stand stay teach tell thought understand wait watch win write wrote began
    appreciate agree cause matter matters all any yep nope each spread lucky accept ones went got took saw did ran
    gave kept knew left lost met paid sent spent told brought bought taught""".split()
)
_ING_ADJECTIVES = frozenset(
    """amazing exciting interesting inspiring rewarding relaxing boring challenging fascinating surprising encouraging
    touching thrilling overwhelming refreshing stunning heartwarming loving caring outstanding amusing annoying
    charming confusing disappointing embarrassing frightening frustrating fulfilling humbling interesting
    motivating satisfying shocking soothing terrifying tiring uplifting welcoming worrying calming""".split()
)
_SUFFIX_NOUNS = frozenset(
    """family july italy supply assembly butterfly rally ally reply fly belly jelly bully holly lily melly emily
    kelly sally billy molly polly willy dolly ugly anomaly monopoly italy sicily festival animal hospital capital
    detective relative initiative executive objective archive alternative native representative motive olive
    table vegetable cable stable fable bible label marble cupboard mouthful handful spoonful apprentice
    bed red shed hundred sled""".split()
)


def lemma_key(word: str) -> str:
    """The key words of one lemma share: "works", "working" and "work" → "work"; Chinese words as they are."""
    if not word.isascii():
        return word
    w = word
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif w.endswith("es") and w[:-2].endswith(("s", "x", "z", "ch", "sh")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
        if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "lsz":
            w = w[:-1]  # running → run, but dwelling → dwell
    return w[:-1] if len(w) > 3 and w.endswith("e") else w


_NOT_NOUN_KEYS = frozenset(lemma_key(word) for word in _NOT_NOUNS)
_ADJECTIVE_ENDINGS = ("ly", "ous", "ful", "less", "ive", "able", "ible", "ish", "est")


def english_content(word: str) -> bool:
    """Whether a lower-cased English word is a content word (a noun or a name, by the module's rules)."""
    if len(word) < MIN_LETTERS or "'" in word or word in ENGLISH_STOPWORDS or word in _NOT_NOUNS:
        return False
    if word in _SUFFIX_NOUNS:
        return True
    if word.endswith("ing"):
        # "painting" names a thing; "helping" and "finding" are only the verbs of the list
        return word not in _ING_ADJECTIVES and lemma_key(word) not in _NOT_NOUN_KEYS
    if word.endswith("ed") and not word.endswith("eed"):
        return False
    return not (len(word) > 4 and word.endswith(_ADJECTIVE_ENDINGS))


def chinese_content(word: str, flag: str) -> bool:
    """Whether a jieba word and its part-of-speech flag make a content word: a noun, verb or adjective of 2+ 汉字."""
    return len(word) >= 2 and flag[:1] in ("n", "v", "a") and word not in CHINESE_STOPWORDS


def one_form(counts: Mapping[str, int] | Iterable[str]) -> dict[str, str]:
    """Each word → the form shown for its lemma: the one used most, then the shorter, then alphabetical."""
    tally = Counter(counts) if not isinstance(counts, Mapping) else Counter(dict(counts))
    groups: dict[str, list[str]] = {}
    for word in tally:
        groups.setdefault(lemma_key(word), []).append(word)
    shown: dict[str, str] = {}
    for forms in groups.values():
        best = min(forms, key=lambda w: (-tally[w], len(w), w))
        shown.update(dict.fromkeys(forms, best))
    return shown
