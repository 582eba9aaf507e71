"""Inline SVG pictures of the memory map (attention heatmap, soft clusters, topics, entity graph) from plain values."""

from __future__ import annotations

import html
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tideline_core.attention.heatmap import Desert, Heatmap, HeatRow, KindHeat
from tideline_core.service.results import GraphView, SoftClustersView, TopicsView

# Caps keep a picture readable and the page small whatever the store holds.
MAX_CELLS = 24  # per kind of clustering, for the lit clusters and again for the deserts
MAX_CLUSTERS = 40
MAX_TOPICS = 40
MAX_NODES = 60

INK, MUTED, LINE, ACCENT = "#1d232b", "#59616b", "#d5dae0", "#0b5cad"
COOL, HOT = (254, 243, 199), (154, 52, 18)
HATCH = "tideline-desert-hatch"  # inline SVGs share the page's id space, so the id is namespaced
PAD = 12
COLS, CELL_W, CELL_H, GAP = 6, 148, 44, 6
HEAT_WIDTH = 2 * PAD + COLS * CELL_W + (COLS - 1) * GAP
RADIAL_AFTER = 12  # ring items beyond which level labels would collide
LABEL_ROOM = 140  # room beyond the ring for a clipped 18-unit label
TOPIC_LABEL_W, TOPIC_BAR_W, TOPIC_ROW_H = 200, 560, 22

# XML 1.0 forbids these code points: one in stored text would void the whole picture for a strict parser.
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def _flat(text: object) -> str:
    return " ".join(_FORBIDDEN.sub(" ", str(text)).split())


def _esc(text: object) -> str:
    return html.escape(_flat(text), quote=True)


def _units(ch: str) -> int:
    # A CJK character is about twice as wide as a Latin one, so it spends two units of a clip.
    return 2 if unicodedata.east_asian_width(ch) in "WF" else 1


def _clip(text: str, units: int) -> str:
    """`text` cut to about `units` narrow characters, with an ellipsis when cut."""
    flat = _flat(text)
    if sum(map(_units, flat)) <= units:
        return flat
    kept, used = [], 0
    for ch in flat:
        used += _units(ch)
        if used > units - 1:
            break
        kept.append(ch)
    return "".join(kept) + "…"


def _n(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _text(
    x: float, y: float, content: str, *, size: int = 12, anchor: str = "start", fill: str = INK, extra: str = ""
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"{extra}>'
        f"{_esc(content)}</text>"
    )


def _svg(width: float, height: float, label: str, body: Iterable[str]) -> str:
    name = _esc(label)
    w, h = math.ceil(width), math.ceil(height)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{name}" viewBox="0 0 {w} {h}" '
        f'width="{w}" height="{h}"><title>{name}</title>{"".join(body)}</svg>'
    )


def _empty(default: str, note: str | None = None, nothing: str = "") -> str:
    """A plain paragraph in place of a picture: the view's own note, else `default`."""
    message = f"{nothing} — {note}" if note else default
    if not message.endswith((".", ")", "!", "?")):
        message += "."
    return f'<p class="empty muted">{_esc(message)}</p>'


def _left_out(shown: int, total: int, noun: str, y: float) -> tuple[list[str], float]:
    if total <= shown:
        return [], y
    line = f"Showing the {shown} largest of {total} {noun}; {total - shown} left out."
    return [_text(PAD, y + 14, line, fill=MUTED)], y + 22


def heatmap_svg(heat: Heatmap) -> str:
    """Per kind of clustering, a grid of the lit clusters shaded by hits, then the deserts hatched apart."""
    if not any(k.rows or k.deserts for k in heat.kinds):
        logged = (
            f" {_n(heat.total_hits, 'hit was', 'hits were')} logged, but no cluster holds their memories."
            if heat.total_hits
            else ""
        )
        return _empty("No clusters to light yet: the dream's recluster stage builds them." + logged)
    body = [
        f'<defs><pattern id="{HATCH}" width="8" height="8" patternUnits="userSpaceOnUse" '
        f'patternTransform="rotate(45)"><rect width="8" height="8" fill="#f3f4f6"/>'
        f'<line x1="0" y1="0" x2="0" y2="8" stroke="#c5cad1" stroke-width="3"/></pattern></defs>'
    ]
    y: float = PAD
    for kind in heat.kinds:
        part, y = _heat_kind(kind, y)
        body += part
    legend = "Shade: hits against the kind's most hit cluster (light few, dark most). Hatched, dashed: a desert."
    body.append(_text(PAD, y + 14, legend, fill=MUTED))
    lit = sum(len(k.rows) for k in heat.kinds)
    deserts = sum(len(k.deserts) for k in heat.kinds)
    label = f"Attention heatmap: {_n(heat.total_hits, 'hit', 'hits')}, {lit} clusters lit, {deserts} deserts never lit"
    return _svg(HEAT_WIDTH, y + 22 + PAD, label, body)


def _heat_kind(kind: KindHeat, y: float) -> tuple[list[str], float]:
    heading = f"{kind.kind.capitalize()} clusters: {len(kind.rows)} lit, {len(kind.deserts)} never lit"
    out = [_text(PAD, y + 15, heading, size=14)]
    y += 26
    notes = []
    if not kind.rows and not kind.deserts:
        notes.append(f"No {kind.kind} clusters yet: the dream's recluster stage builds them.")
    elif not kind.rows:
        notes.append(f"No hit reached a {kind.kind} cluster.")
    if kind.unclustered_hits:
        notes.append(f"{_n(kind.unclustered_hits, 'hit', 'hits')} landed on memories in no {kind.kind} cluster.")
    for note in notes:
        out.append(_text(PAD, y + 12, note, fill=MUTED))
        y += 20
    top = max((r.hits for r in kind.rows), default=1)
    shown = kind.rows[:MAX_CELLS]
    y = _grid(out, [_lit_cell(r, top) for r in shown], y)
    more, y = _left_out(len(shown), len(kind.rows), f"lit {kind.kind} clusters", y)
    out += more
    if kind.deserts:
        out.append(_text(PAD, y + 14, f"Attention deserts: {len(kind.deserts)} {kind.kind} clusters never lit"))
        y += 22
        deserts = kind.deserts[:MAX_CELLS]
        y = _grid(out, [_desert_cell(d) for d in deserts], y)
        more, y = _left_out(len(deserts), len(kind.deserts), f"{kind.kind} deserts", y)
        out += more
    return out, y + 10


def _grid(out: list[str], cells: Sequence[tuple[str, str, str]], y: float) -> float:
    """Lay (group attributes, title, inner shapes at the origin) cells in rows of COLS, translated in place."""
    for i, (attributes, title, inner) in enumerate(cells):
        x = PAD + (i % COLS) * (CELL_W + GAP)
        top = y + (i // COLS) * (CELL_H + GAP)
        out.append(f'<g {attributes} transform="translate({x:.1f},{top:.1f})"><title>{_esc(title)}</title>{inner}</g>')
    rows = -(-len(cells) // COLS)
    return y + rows * (CELL_H + GAP)


def _shade(t: float) -> str:
    r, g, b = (round(c + (h - c) * t) for c, h in zip(COOL, HOT, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def _lit_cell(row: HeatRow, top: int) -> tuple[str, str, str]:
    t = row.hits / top if top else 0.0
    ink = "#ffffff" if t > 0.55 else INK
    tip = f"{row.cluster}: {_n(row.hits, 'hit', 'hits')} ({row.share:.0%} of all hits)"
    second = _n(row.hits, "hit", "hits")
    if row.mean_similarity is not None:
        tip += f", mean similarity {row.mean_similarity:.3f}"
        second += f" · sim {row.mean_similarity:.2f}"
    if row.sources:
        tip += "; sources: " + ", ".join(f"{s} {n}" for s, n in row.sources.items())
    inner = (
        f'<rect width="{CELL_W}" height="{CELL_H}" rx="3" fill="{_shade(t)}" stroke="{LINE}"/>'
        + _text(8, 18, _clip(row.cluster, 22), fill=ink)
        + _text(8, 35, second, size=11, fill=ink)
    )
    return 'class="cell lit"', tip, inner


def _desert_cell(desert: Desert) -> tuple[str, str, str]:
    held = _n(desert.size, "memory", "memories")
    tip = f"{desert.cluster}: attention desert, no retrieval hit in the window; holds {held}"
    inner = (
        f'<rect width="{CELL_W}" height="{CELL_H}" rx="3" fill="url(#{HATCH})" stroke="#8b939c" '
        f'stroke-dasharray="4 3"/>'
        + _text(8, 18, _clip(desert.cluster, 22), fill=MUTED)
        + _text(8, 35, f"desert · {held}", size=11, fill=MUTED)
    )
    return 'class="cell desert"', tip, inner


@dataclass(frozen=True)
class _Place:
    x: float
    y: float
    r: float
    angle: float
    radial: bool  # a crowded ring labels along the radius


def _chain(n: int, links: Mapping[tuple[int, int], float]) -> list[int]:
    """Rank order, bent so each next item is the one most linked to the last: linked items sit side by side."""
    near: dict[int, dict[int, float]] = {}
    for (a, b), weight in links.items():
        near.setdefault(a, {})[b] = weight
        near.setdefault(b, {})[a] = weight
    order = [0] if n else []
    left = set(range(1, n))
    while left:
        last = near.get(order[-1], {})
        _, best = max((last.get(i, 0.0), -i) for i in left)
        order.append(-best)
        left.remove(-best)
    return order


def _ring(radii: Sequence[float], links: Mapping[tuple[int, int], float]) -> tuple[list[_Place], float]:
    """Places on one circle (an arc per item as wide as the item), and the side of the square they fit in."""
    gap = 12.0
    circumference = sum(2 * r + gap for r in radii)
    ring = 0.0 if len(radii) < 2 else max(circumference / (2 * math.pi), 60.0)
    half = max(ring + max(radii) + LABEL_ROOM, 300.0)  # wide enough for the legend line under a small ring
    places: dict[int, _Place] = {}
    angle = -math.pi / 2
    for i in _chain(len(radii), links):
        step = (2 * radii[i] + gap) / circumference * 2 * math.pi
        # Alone, an item sits at the centre whatever its angle: pointing down puts its label below it.
        middle = angle + step / 2 if len(radii) > 1 else math.pi / 2
        places[i] = _Place(
            half + ring * math.cos(middle), half + ring * math.sin(middle), radii[i], middle, len(radii) > RADIAL_AFTER
        )
        angle += step
    return [places[i] for i in range(len(radii))], 2 * half


def _line(a: _Place, b: _Place, width: float, title: str, css: str) -> str:
    return (
        f'<line class="{css}" x1="{a.x:.1f}" y1="{a.y:.1f}" x2="{b.x:.1f}" y2="{b.y:.1f}" stroke="#8b939c" '
        f'stroke-opacity="0.7" stroke-width="{width:.1f}"><title>{_esc(title)}</title></line>'
    )


def _node(place: _Place, label: str, title: str, css: str, fill: str, stroke: str) -> str:
    cos, sin = math.cos(place.angle), math.sin(place.angle)
    lx, ly = place.x + (place.r + 6) * cos, place.y + (place.r + 6) * sin
    if place.radial:
        # Along the radius no label overlaps the next; the left half is flipped so none reads upside down.
        flip = cos < 0
        turn = math.degrees(place.angle) + (180 if flip else 0)
        spin = f' dy="0.35em" transform="rotate({turn:.1f} {lx:.1f} {ly:.1f})"'
        text = _text(lx, ly, _clip(label, 18), anchor="end" if flip else "start", extra=spin)
    else:
        anchor = "start" if cos > 0.3 else "end" if cos < -0.3 else "middle"
        ly += 4 if anchor != "middle" else 10 if sin > 0 else -2
        text = _text(lx, ly, _clip(label, 18), anchor=anchor)
    return (
        f'<g class="{css}"><title>{_esc(title)}</title>'
        f'<circle cx="{place.x:.1f}" cy="{place.y:.1f}" r="{place.r:.1f}" fill="{fill}" stroke="{stroke}"/>'
        + text
        + "</g>"
    )


def clusters_svg(view: SoftClustersView) -> str:
    """The largest soft clusters on a ring, sized by memories held, joined where they share memories."""
    if not view.clusters:
        return _empty(
            "No soft clusters yet: the dream's recluster stage draws them.", view.note, "No soft clusters to draw"
        )
    ranked = sorted(view.clusters, key=lambda c: (-c.size, c.label))
    shown = ranked[:MAX_CLUSTERS]
    index = {c.label: i for i, c in enumerate(shown)}
    names = {c.label: c.name for c in view.clusters}
    links: dict[tuple[int, int], float] = {}
    for i, cluster in enumerate(shown):
        for neighbour in cluster.neighbours:
            j = index.get(neighbour.label)
            if j is not None and j != i:
                key = (min(i, j), max(i, j))
                links[key] = max(links.get(key, 0.0), float(neighbour.shared))
    biggest = max(shown[0].size, 1)
    radii = [6 + 22 * math.sqrt(max(c.size, 0) / biggest) for c in shown]
    places, side = _ring(radii, links)
    strongest = max(links.values(), default=1.0)
    body = [
        _line(
            places[i],
            places[j],
            1 + 4 * shared / strongest,
            f"{shown[i].name} — {shown[j].name}: {_n(round(shared), 'memory', 'memories')} in both",
            "adjacency",
        )
        for (i, j), shared in sorted(links.items())
    ]
    for cluster, place in zip(shown, places, strict=True):
        neighbours = ", ".join(f"{names.get(n.label, f'#{n.label}')} ({n.shared})" for n in cluster.neighbours[:8])
        tip = f"{cluster.name} (cluster {cluster.label}): {_n(cluster.size, 'memory', 'memories')}; "
        tip += f"shares memories with {neighbours}" if neighbours else "no neighbour"
        body.append(_node(place, cluster.name, tip, "cluster", "#cfe0f3", ACCENT))
    more, y = _left_out(len(shown), len(ranked), "clusters", side)
    body += more
    body.append(_text(PAD, y + 14, "Circle: memories held. Line: memories two clusters share.", fill=MUTED))
    label = f"Soft clusters: {len(shown)} of {len(ranked)} drawn, {len(links)} adjacencies"
    return _svg(side, y + 22 + PAD, label, body)


def topics_svg(view: TopicsView) -> str:
    """A horizontal bar per topic, longest for the topic holding most memories, samples in the tooltip."""
    if not view.topics:
        default = "No topics yet: the dream's recluster stage finds them (a keyword 3 or more memories hold)."
        return _empty(default, view.note, "No topics to draw")
    ranked = sorted(view.topics, key=lambda t: (-t.size, t.keyword))
    shown = ranked[:MAX_TOPICS]
    top = max(shown[0].size, 1)
    body = []
    for i, topic in enumerate(shown):
        y = PAD + i * TOPIC_ROW_H
        name = topic.label or topic.keyword
        if topic.keyword and topic.keyword != name:
            name = f"{name} ({topic.keyword})"
        tip = f"{name}: {_n(topic.size, 'memory', 'memories')}"
        if topic.samples:
            tip += "; newest: " + " | ".join(_clip(s.gesture, 80) for s in topic.samples[:3])
        length = max(2.0, TOPIC_BAR_W * max(topic.size, 0) / top)
        x = PAD + TOPIC_LABEL_W
        body.append(
            f'<g class="topic"><title>{_esc(tip)}</title>'
            + _text(x - 8, y + 15, _clip(topic.label or topic.keyword, 26), anchor="end")
            + f'<rect x="{x}" y="{y + 3}" width="{length:.1f}" height="{TOPIC_ROW_H - 6}" rx="2" fill="{ACCENT}"/>'
            + _text(x + length + 6, y + 15, str(topic.size), size=11, fill=MUTED)
            + "</g>"
        )
    more, bottom = _left_out(len(shown), len(ranked), "topics", PAD + len(shown) * TOPIC_ROW_H)
    body += more
    label = f"Topics: the {len(shown)} largest by memories held"
    return _svg(2 * PAD + TOPIC_LABEL_W + TOPIC_BAR_W + 50, bottom + PAD, label, body)


def entity_graph_svg(view: GraphView) -> str:
    """The most mentioned entities on a ring, sized by mentions, joined by edges as wide as their count."""
    if not view.nodes:
        default = "No entity graph yet: the dream's graph stage builds it from the memories' entities."
        return _empty(default, view.note, "No entity graph to draw")
    ranked = sorted(view.nodes, key=lambda n: (-n.mentions, n.name))
    shown = ranked[:MAX_NODES]
    index = {n.name: i for i, n in enumerate(shown)}
    links: dict[tuple[int, int], float] = {}
    roles: dict[tuple[int, int], list[str]] = {}
    hidden = 0
    for edge in view.edges:
        a, b = index.get(edge.source), index.get(edge.target)
        if a is None or b is None:
            hidden += 1
            continue
        if a == b:
            continue
        key = (min(a, b), max(a, b))
        links[key] = links.get(key, 0.0) + edge.count
        roles.setdefault(key, []).append(f"{edge.source} as {edge.source_role}, {edge.target} as {edge.target_role}")
    most = max(max(n.mentions for n in shown), 1)
    radii = [4 + 16 * math.sqrt(max(n.mentions, 0) / most) for n in shown]
    places, side = _ring(radii, links)
    heaviest = max(links.values(), default=1.0)
    body = []
    for (i, j), count in sorted(links.items()):
        together = _n(round(count), "time", "times")
        tip = f"{shown[i].name} — {shown[j].name}: together {together}; " + "; ".join(roles[(i, j)][:4])
        body.append(_line(places[i], places[j], 1 + 5 * count / heaviest, tip, "edge"))
    for node, place in zip(shown, places, strict=True):
        tip = f"{node.name}: in {_n(node.mentions, 'memory', 'memories')}"
        if node.known:
            tip += ", a known person"
        if node.usual_roles:
            tip += "; usually " + ", ".join(node.usual_roles)
        if node.first_seen:
            tip += f"; seen {node.first_seen[:10]} → {node.last_seen[:10]}"
        fill, stroke = ("#9ec5ec", ACCENT) if node.known else ("#eef1f4", "#8b939c")
        body.append(_node(place, node.name, tip, "entity known" if node.known else "entity", fill, stroke))
    more, y = _left_out(len(shown), len(ranked), "entities", side)
    body += more
    if hidden:
        body.append(_text(PAD, y + 14, f"{_n(hidden, 'edge', 'edges')} to entities left out not drawn.", fill=MUTED))
        y += 22
    body.append(
        _text(PAD, y + 14, "Circle: mentions; blue: a known person. Line: how often two appear together.", fill=MUTED)
    )
    label = f"Entity graph: {len(shown)} of {len(ranked)} entities, {len(links)} links"
    return _svg(side, y + 22 + PAD, label, body)
