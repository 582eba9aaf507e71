"""Entity graph: parse `entities_role` strings, resolve known persons, count co-occurrence and usual roles.

Pure: frozen `EntityMention`s in, a frozen `EntityGraph` out: nodes (mentions, first and last
seen, usual roles), edges (both roles, co-occurrence counts), names resolved against the known
persons and their aliases (`TIDELINE_KNOWN_PERSONS`). Malformed role strings are reported as
`ParseProblem`s, never raised, and whatever parses is kept.

Accepted shapes (mixable within one string):

    A=判断+执行; B=审查          entries split by ; ； or newline; roles joined by + ＋ / 、 &
    A: 判断, B：审查            ':' '：' '=' '＝' all assign; ',' '，' also split entries
    A: 判断, 执行               ...except a comma fragment without a marker continues the roles
    A(判断)→B(审查)             arrows → -> => ⇒ chain entities; ( ) or （ ） hold roles
    Alice                       a bare name: a mention with no role
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from tideline_core.dream.graph.others import is_entity
from tideline_core.text.dates import as_utc

MAX_NAME_LEN = 40
# 5 roles of 24 characters joined by '+' fit the 128-character role columns of entity_edges.
MAX_ROLE_LEN = 24
MAX_ROLES = 5
USUAL_ROLES = 3

_OPEN, _CLOSE = "(（", ")）"
_ENTRY_SEPARATORS = frozenset(";；\n")
_COMMAS = frozenset(",，")
_ARROW = re.compile(r"\s*(?:->|→|=>|⇒|—>|－>|➡|➔)\s*")
_ASSIGN = re.compile(r"[=＝:：]")
_ROLE_SEPARATORS = re.compile(r"[+＋/、&,，;；]")
_PARENTHESIZED = re.compile(r"^(?P<name>[^()（）]*)[(（](?P<roles>[^()（）]*)[)）](?P<rest>.*)$", re.DOTALL)
_QUOTES = " \t\r\n\"'“”‘’「」『』《》*`"


@dataclass(frozen=True, slots=True)
class ParseProblem:
    """A fragment of `entities_role` (or a related entity) that could not be used as written."""

    narrative_id: int
    fragment: str
    reason: str


@dataclass(frozen=True, slots=True)
class EntityRoles:
    """One entity of one narrative with its roles there (empty: mentioned, no role)."""

    name: str
    roles: tuple[str, ...]
    known: bool


@dataclass(frozen=True, slots=True)
class ParsedEntities:
    narrative_id: int
    entities: tuple[EntityRoles, ...]
    problems: tuple[ParseProblem, ...]


@dataclass(frozen=True, slots=True)
class EntityMention:
    """A narrative's entity fields, as stored."""

    narrative_id: int
    occurred_at: datetime
    entities_role: str
    related_entities: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GraphNode:
    """An entity: in how many narratives, whether it is a known person, when, and in which roles.

    `roles` is (role, narratives) pairs, most frequent first; `usual_roles` the top few of them.
    """

    name: str
    mentions: int
    known: bool
    first_seen: datetime
    last_seen: datetime
    roles: tuple[tuple[str, int], ...]
    usual_roles: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GraphEdge:
    """`source` < `target` appeared together in `count` narratives with these roles.

    A role is the entity's roles in that narrative, sorted and joined by '+' ('' for none), so
    each narrative adds exactly one edge count per pair of its entities.
    """

    source: str
    target: str
    source_role: str
    target_role: str
    count: int


@dataclass(frozen=True)
class EntityGraph:
    nodes: tuple[GraphNode, ...]  # most mentioned first, then by name
    edges: tuple[GraphEdge, ...]  # most frequent first, then by key
    problems: tuple[ParseProblem, ...]
    parsed: tuple[ParsedEntities, ...] = field(repr=False)


def parse_entities_role(
    narrative_id: int, text: str | None, aliases: Mapping[str, str] | None = None
) -> ParsedEntities:
    """Entities and roles of one `entities_role` string; names resolved through `aliases`
    (lower-cased alias → canonical name, as `Settings.known_person_aliases()` gives)."""
    resolver = _Resolver(narrative_id, aliases or {})
    for entry in _entries(text or ""):
        for node in _ARROW.split(entry) if _ARROW.search(entry) else [entry]:
            if not node.strip():
                resolver.problem(entry, "an arrow with nothing on one side")
                continue
            resolver.add_fragment(node)
    return resolver.result()


def build_graph(
    mentions: Iterable[EntityMention],
    aliases: Mapping[str, str] | None = None,
    *,
    usual_roles: int = USUAL_ROLES,
    own: Collection[str] = (),
    agent_id: str = "",
) -> EntityGraph:
    """The co-occurrence graph of every entity in `mentions` (one agent's narratives).

    Names in `related_entities` count as mentions without a role; a name in both fields of one
    narrative counts once, with its roles. Edges join every pair of entities of a narrative. Only
    others are entities (`others.is_entity`): no speaker role, pronoun or contraction, none of `own`
    (the agent's and its user's names) nor the agent's id, neither as a node nor at the end of an edge.
    """
    aliases = aliases or {}
    counts: Counter[str] = Counter()
    known: dict[str, bool] = {}
    seen: dict[str, tuple[datetime, datetime]] = {}
    roles: dict[str, Counter[str]] = {}
    edges: Counter[tuple[str, str, str, str]] = Counter()
    parsed_all: list[ParsedEntities] = []
    for mention in mentions:
        written = parse_entities_role(mention.narrative_id, mention.entities_role, aliases)
        parsed = _others(_with_related(written, mention, aliases), own, agent_id)
        parsed_all.append(parsed)
        at = as_utc(mention.occurred_at)
        for entity in parsed.entities:
            counts[entity.name] += 1
            known[entity.name] = known.get(entity.name, False) or entity.known
            first, last = seen.get(entity.name, (at, at))
            seen[entity.name] = (min(first, at), max(last, at))
            roles.setdefault(entity.name, Counter()).update(entity.roles)
        joined = {e.name: "+".join(sorted(e.roles)) for e in parsed.entities}
        names = sorted(joined)
        for i, source in enumerate(names):
            for target in names[i + 1 :]:
                edges[(source, target, joined[source], joined[target])] += 1
    nodes: list[GraphNode] = []
    for name in sorted(counts, key=lambda n: (-counts[n], n)):
        ranked = tuple(sorted(roles[name].items(), key=lambda rc: (-rc[1], rc[0])))
        nodes.append(
            GraphNode(
                name=name,
                mentions=counts[name],
                known=known[name],
                first_seen=seen[name][0],
                last_seen=seen[name][1],
                roles=ranked,
                usual_roles=tuple(role for role, _ in ranked[:usual_roles]),
            )
        )
    return EntityGraph(
        nodes=tuple(nodes),
        edges=tuple(GraphEdge(*key, count) for key, count in sorted(edges.items(), key=lambda kc: (-kc[1], kc[0]))),
        problems=tuple(p for parsed in parsed_all for p in parsed.problems),
        parsed=tuple(parsed_all),
    )


class _Resolver:
    """Collects one narrative's entities in order, merging repeats and recording problems."""

    def __init__(self, narrative_id: int, aliases: Mapping[str, str]) -> None:
        self.narrative_id = narrative_id
        self.aliases = aliases
        self.roles: dict[str, list[str]] = {}
        self.known: dict[str, bool] = {}
        self.problems: list[ParseProblem] = []

    def problem(self, fragment: str, reason: str) -> None:
        self.problems.append(ParseProblem(self.narrative_id, fragment.strip(), reason))

    def add_fragment(self, fragment: str) -> None:
        if any(c in fragment for c in _OPEN + _CLOSE):
            match = _PARENTHESIZED.match(fragment)
            if match is None:
                self.problem(fragment, "unbalanced or nested parentheses")
                return
            if match.group("rest").strip():
                self.problem(fragment, "text after the closing parenthesis (ignored)")
            self.add(fragment, match.group("name"), match.group("roles"), marked=True)
            return
        assign = _ASSIGN.search(fragment)
        if assign is None:
            self.add(fragment, fragment, "", marked=False)
        else:
            self.add(fragment, fragment[: assign.start()], fragment[assign.end() :], marked=True)

    def add(self, fragment: str, raw_name: str, raw_roles: str, *, marked: bool) -> None:
        name = raw_name.strip(_QUOTES)
        if not name:
            self.problem(fragment, "no entity name")
            return
        if len(name) > MAX_NAME_LEN:
            self.problem(fragment, f"entity name longer than {MAX_NAME_LEN} characters")
            return
        roles = [r for r in (part.strip(_QUOTES) for part in _ROLE_SEPARATORS.split(raw_roles)) if r]
        if marked and not roles:
            self.problem(fragment, "a role marker with no role after it")
        for role in [r for r in roles if len(r) > MAX_ROLE_LEN]:
            self.problem(fragment, f"role longer than {MAX_ROLE_LEN} characters (dropped): {role}")
        roles = [r for r in roles if len(r) <= MAX_ROLE_LEN]
        canonical = self.aliases.get(name.lower())
        resolved = canonical if canonical is not None else name
        held = self.roles.setdefault(resolved, [])
        self.known[resolved] = self.known.get(resolved, False) or canonical is not None
        for role in roles:
            if role in held:
                continue
            if len(held) >= MAX_ROLES:
                self.problem(fragment, f"more than {MAX_ROLES} roles for {resolved} (dropped): {role}")
                continue
            held.append(role)

    def result(self) -> ParsedEntities:
        return ParsedEntities(
            self.narrative_id,
            tuple(EntityRoles(name, tuple(roles), self.known[name]) for name, roles in self.roles.items()),
            tuple(self.problems),
        )


def _with_related(parsed: ParsedEntities, mention: EntityMention, aliases: Mapping[str, str]) -> ParsedEntities:
    resolver = _Resolver(mention.narrative_id, aliases)
    for entity in parsed.entities:
        resolver.roles[entity.name] = list(entity.roles)
        resolver.known[entity.name] = entity.known
    resolver.problems = list(parsed.problems)
    for name in mention.related_entities:
        resolver.add(str(name), str(name), "", marked=False)
    return resolver.result()


def _others(parsed: ParsedEntities, own: Collection[str], agent_id: str) -> ParsedEntities:
    kept = tuple(e for e in parsed.entities if is_entity(e.name, own, agent_id))
    return parsed if len(kept) == len(parsed.entities) else ParsedEntities(parsed.narrative_id, kept, parsed.problems)


def _entries(text: str) -> list[str]:
    """Split into entries at ; ； newline and commas outside parentheses, then glue a comma
    fragment without any marker back onto a preceding `A: role` entry as one more role."""
    pieces = _split_outside_parentheses(text)
    if pieces is None:
        # Unbalanced parentheses: split everywhere so the other entries still parse.
        pieces = _split_plain(text)
    entries: list[str] = []
    previous_assigns = False
    for piece, after_comma in pieces:
        if not piece.strip():
            previous_assigns = False
            continue
        marked = bool(_ASSIGN.search(piece) or _ARROW.search(piece) or any(c in piece for c in _OPEN + _CLOSE))
        if after_comma and not marked and previous_assigns:
            entries[-1] = f"{entries[-1]}+{piece.strip()}"
            continue
        entries.append(piece)
        previous_assigns = bool(_ASSIGN.search(piece)) and not _ARROW.search(piece)
    return entries


def _split_outside_parentheses(text: str) -> list[tuple[str, bool]] | None:
    """(piece, whether a comma preceded it), or None when the parentheses do not balance."""
    pieces: list[tuple[str, bool]] = []
    depth = 0
    start = 0
    after_comma = False
    for i, char in enumerate(text):
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0 and (char in _ENTRY_SEPARATORS or char in _COMMAS):
            pieces.append((text[start:i], after_comma))
            after_comma = char in _COMMAS
            start = i + 1
    if depth != 0:
        return None
    pieces.append((text[start:], after_comma))
    return pieces


def _split_plain(text: str) -> list[tuple[str, bool]]:
    pieces: list[tuple[str, bool]] = []
    start = 0
    after_comma = False
    for i, char in enumerate(text):
        if char in _ENTRY_SEPARATORS or char in _COMMAS:
            pieces.append((text[start:i], after_comma))
            after_comma = char in _COMMAS
            start = i + 1
    pieces.append((text[start:], after_comma))
    return pieces
