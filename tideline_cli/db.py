"""`tideline db upgrade` and `tideline db copy`: a database brought to the newest schema and indexes, or moved whole."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tideline_core.settings import Settings

COPY_HELP = """\
Copy every table of a Tideline store (SQLite, say) into another database (PostgreSQL), vectors
included: table by table in key order, each batch committed, so a copy that was killed resumes
where it stopped when run again. Then the target's keyword index is built and every table's row
count and checksum are compared on both sides (exit 1 if any differ). Stop the stack that writes
to the source first."""


def add_parser(sub: Any) -> None:
    db = sub.add_parser("db", help="database maintenance: upgrade (migrations, indexes), copy to another database")
    actions = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    upgrade = actions.add_parser(
        "upgrade",
        help="migrate to the newest schema; on PostgreSQL also pgvector and the keyword index",
        description="Migrate the database to the newest schema. On PostgreSQL also create pgvector's column where "
        "the server has pgvector, index every row not yet indexed for keyword search (resumable), and build the "
        "indexes of its own (vector graph, keyword index) of every agent's view grown to 10,000 rows that has none "
        "(without blocking writes).",
    )
    upgrade.add_argument("--database-url", help="the database (default: TIDELINE_DATABASE_URL, else the SQLite file)")
    copy = actions.add_parser(
        "copy",
        help="copy a whole store into another database (resumable, verified)",
        description=COPY_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    copy.add_argument(
        "--from", dest="source", required=True, metavar="URL", help="the store to copy (e.g. sqlite:///…)"
    )
    copy.add_argument("--to", dest="target", required=True, metavar="URL", help="where to (postgresql+psycopg://…)")
    copy.add_argument("--batch", type=int, default=2000, help="rows per committed batch (default 2000)")


def run(settings: Settings, args: argparse.Namespace) -> int:
    from tideline_core.service import maintenance

    if args.db_command == "upgrade":
        url = args.database_url or settings.resolved_database_url
        report = maintenance.upgrade(url, progress=_indexed)
        print(f"{_safe(url)}: at the newest schema ({report.dialect})")
        if report.dialect == "postgresql":
            print(
                f"  vectors searched in the database (pgvector); {report.keyword_rows} rows indexed for keyword "
                f"search now; {report.agent_indexes} indexes of large agents' own built now"
            )
        return 0
    report_ = maintenance.copy(args.source, args.target, batch=args.batch, progress=_copied, indexed=_indexed)
    print(f"copied {_safe(args.source)} -> {_safe(args.target)}")
    for check in report_.checks:
        state = "ok" if check.matches else "DIFFERENT"
        print(
            f"  {check.table:<24} {check.target_rows:>9} rows  copied now {report_.copied.get(check.table, 0):>9}  "
            f"checksum {check.target_checksum[:12]}  {state}"
        )
    print(f"  {report_.keyword_rows} rows indexed for keyword search")
    if not report_.verified:
        bad = [c.table for c in report_.checks if not c.matches]
        print(f"verification failed: {', '.join(bad)} differ between source and target", file=sys.stderr)
        return 1
    print("verified: every table has the same rows on both sides")
    return 0


def _safe(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def _copied(table: str, done: int, total: int) -> None:
    print(f"  {table}: {done}/{total}", file=sys.stderr, flush=True)


def _indexed(rows: int) -> None:
    print(f"  keyword index: {rows} rows", file=sys.stderr, flush=True)
