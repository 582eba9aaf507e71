"""Who counts as an entity: the others the agent and its user talk about, never themselves, a pronoun or a contraction.

Pure. Two declared lists and a rule:

- the narrative roles a turn's speaker defaults to ("assistant", "user", ...) and the pronouns of
  English and Chinese (I, me, you, we, they, 我, 你, 我们, 咱们, 他们 ...), never entities;
- a contraction (I'll, I've, don't, it's, we're ...) is never one: a word ending in 'll 've 're 'd 'm
  or n't, or in 's after a pronoun or another word a name never is (it's, that's, let's);
- the agent's id and the agent's and its user's own names are not, when the turns say who they are (`own_speakers`): the
  speaker of an assistant turn is the agent, and the speaker of a user turn in a session where the
  agent speaks is the user it talks to. A session of user turns only (a recorded conversation between
  people, as in LoCoMo) names no one as the agent or its user: everyone in it stays an entity.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

SPEAKER_ROLES = frozenset({"assistant", "user", "system", "tool"})
ENGLISH_PRONOUNS = frozenset(
    """i me my mine myself you your yours yourself yourselves we us our ours ourselves he him his himself
    she her hers herself it its itself they them their theirs themselves someone somebody anyone anybody
    everyone everybody nobody""".split()
)
CHINESE_PRONOUNS = frozenset(
    """我 你 您 他 她 它 我们 你们 您们 他们 她们 它们 咱 咱们 俺 俺们 自己 大家 人家 别人 本人
    我的 你的 您的 他的 她的 我们的 你们的 他们的 咱们的""".split()
)
PRONOUNS = ENGLISH_PRONOUNS | CHINESE_PRONOUNS
# Words before 's that make a contraction ("it is"), not a possessive of a name.
_CONTRACTED_IS = ENGLISH_PRONOUNS | frozenset("that what let there here who where how when why this".split())
_CONTRACTION = re.compile(r"[a-z]+(?:['’](?:ll|ve|re|d|m)|n['’]t)")
_IS = re.compile(r"(?P<word>[a-z]+)['’]s")
_SPACE = re.compile(r"\s+")


def _key(name: str) -> str:
    return _SPACE.sub(" ", name.strip()).lower()


def is_contraction(name: str) -> bool:
    """Whether `name` is a contraction (I'll, don't, it's), not a name with an apostrophe (O'Brien, Alice's)."""
    key = _key(name)
    if _CONTRACTION.fullmatch(key):
        return True
    match = _IS.fullmatch(key)
    return match is not None and match.group("word") in _CONTRACTED_IS


def is_entity(name: str, own: Collection[str] = (), agent_id: str = "") -> bool:
    """Whether `name` may be an entity: not a speaker role, a pronoun, a contraction, one of `own` or `agent_id`.

    `own` holds the agent's and its user's names as their turns show them (`own_speakers`), compared
    case aside; the agent's id is an identifier, compared as written (an agent "alice" may well write
    about a person Alice).
    """
    key = _key(name)
    if not key or key in SPEAKER_ROLES or key in PRONOUNS or is_contraction(key) or name.strip() == agent_id:
        return False
    return key not in {_key(n) for n in own}


def own_speakers(turns: Iterable[tuple[str, str, str]]) -> frozenset[str]:
    """The agent's and its user's names among (session, role, speaker) of recorded turns (see the module docstring)."""
    spoken = list(turns)
    with_agent = {session for session, role, _ in spoken if role == "assistant"}
    return frozenset(
        speaker.strip()
        for session, role, speaker in spoken
        if speaker.strip() and (role == "assistant" or (role == "user" and session in with_agent))
    )
