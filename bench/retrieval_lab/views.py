"""Text views for indexing and querying; embedding them fills the cache (run as a script)."""

from __future__ import annotations

import sys
import time

from lab import Doc, Query, embed, load_locomo, load_madial


def window_texts(docs: list[Doc], before: int, after: int, same_session: bool = True) -> list[str]:
    """Each doc with its neighbours in the same group (and session), in order, one per line."""
    out = []
    for i, d in enumerate(docs):
        parts = []
        for j in range(i - before, i + after + 1):
            if 0 <= j < len(docs) and docs[j].group == d.group and (not same_session or docs[j].session == d.session):
                parts.append(docs[j].text)
        out.append("\n".join(parts))
    return out


def locomo_views(docs: list[Doc]) -> dict[str, list[str]]:
    return {
        "turn": [d.text for d in docs],
        "w11": window_texts(docs, 1, 1),
        "w10": window_texts(docs, 1, 0),
        "w01": window_texts(docs, 0, 1),
        "w22": window_texts(docs, 2, 2),
    }


def madial_doc_views(docs: list[Doc]) -> dict[str, list[str]]:
    return {
        "event": [d.text for d in docs],
        "full": [f"{d.when} {d.scene} {d.emotion} {d.text}" for d in docs],  # type: ignore[attr-defined]
    }


def strip_speaker(line: str) -> str:
    # <Bart>:"..." -> Bart: ...
    if line.startswith("<") and ">:" in line:
        name, rest = line[1:].split(">:", 1)
        body = rest.strip().strip('"“”')
        return f"{name}: {body}"
    return line


def madial_query_views(queries: list[Query]) -> dict[str, list[str]]:
    clean = [[strip_speaker(x) for x in q.lines] for q in queries]
    return {
        "all": ["\n".join(c) for c in clean],
        "raw": [q.text for q in queries],
        "last1": [c[-1] for c in clean],
        "last2": ["\n".join(c[-2:]) for c in clean],
        "last3": ["\n".join(c[-3:]) for c in clean],
        "user": ["\n".join(x for x in c if not x.startswith("Assistant:")) for c in clean],
    }


def main() -> None:
    t0 = time.time()
    docs, queries = load_madial()
    for name, texts in madial_doc_views(docs).items():
        embed(texts, "passage", f"md-{name}")
    qv = madial_query_views(queries)
    for name, texts in qv.items():
        embed(texts, "query", f"mq-{name}")
        embed(texts, "passage", f"mq-{name}")
    # each line alone
    lines = sorted({strip_speaker(x) for q in queries for x in q.lines})
    embed(lines, "query", "mq-lines")
    print("madial done", time.time() - t0, flush=True)
    docs, queries = load_locomo()
    qs = [q.text for q in queries]
    embed(qs, "query", "lq")
    embed(qs, "passage", "lq")
    print("locomo queries", time.time() - t0, flush=True)
    views = locomo_views(docs)
    order = sys.argv[1:] or list(views)
    for name in order:
        embed(views[name], "passage", f"ld-{name}")
        print("locomo view", name, time.time() - t0, flush=True)


if __name__ == "__main__":
    main()
