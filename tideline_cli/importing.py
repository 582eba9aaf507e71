"""`tideline import`: past sessions from agent runtimes' files into context turns, with progress and a summary."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from tideline_core.importing.detect import FORMATS

if TYPE_CHECKING:
    from tideline_core.service import SessionsImported
    from tideline_core.settings import Settings

DESCRIPTION = """\
Import past sessions as context turns, each at its own time and in its own session.

  hermes       Hermes Agent: JSONL transcripts (~/.hermes/sessions/*.jsonl) and JSON session logs
  claude-code  Claude Code transcripts (~/.claude/projects/<project>/<session>.jsonl)
  codex        Codex CLI rollout files (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl)
  jsonl        one turn a line: {"role", "content", "timestamp", "session"}

PATH may be a directory: its .jsonl and .json files are read, recursively (those in no known format
are passed over). What was said is kept; tool calls and their results, thinking, and the harness's
own messages are not. Running it again adds nothing; after an interrupted import it adds exactly
what is missing. Malformed lines are reported as FILE:LINE: REASON and skipped. Turns are embedded
by the ingest worker, as any recorded turn."""

SHOWN_MALFORMED = 100  # past this, bad lines are counted, not listed
REDRAW_SECONDS = 0.1
BAR_WIDTH = 30


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "import",
        help="import past sessions (Hermes, Claude Code, Codex, JSONL) as context turns",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="session files or directories of them")
    parser.add_argument("--agent", help="agent id (default: TIDELINE_AGENT / AGENT_NAME, else 'default')")
    parser.add_argument(
        "--format",
        dest="import_format",
        choices=("auto", *FORMATS),
        default="auto",
        help="the files' format (default: auto, told from each file's first lines)",
    )


def run(settings: Settings, args: argparse.Namespace) -> int:
    from tideline_cli.compose import open_service

    agent = str(args.agent or settings.agent)
    settings.ensure_home()
    progress = Progress(sys.stderr)
    with open_service(settings) as service:  # the model is not loaded: the ingest worker embeds
        try:
            report = service.import_sessions(agent, args.paths, args.import_format, observer=progress)
        finally:
            progress.finish()
        embeds = service.embeds
    print(summary(report, embeds))
    return 0


def summary(report: SessionsImported, embeds: bool) -> str:
    files = f"{report.files} file{'s' if report.files != 1 else ''}"
    if report.passed_over:
        files += f" ({report.passed_over} passed over)"
    lines = [
        f"imported {files}: "
        f"sessions {report.sessions_added} added, {report.sessions_skipped} already there; "
        f"turns {report.turns_added} added, {report.turns_skipped} already there; "
        f"malformed lines {report.malformed}"
    ]
    if report.turns_added:
        if not embeds:
            lines.append("embedding: off (keyword search only)")
        else:
            lines.append("embedding: " + ("queued" if report.queued else "pending (broker unreachable)"))
    return "\n".join(lines)


class Progress:
    """The import's observer: a bar redrawn in place on a terminal, a line per tenth otherwise; bad lines listed."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.drawn = False
        self.last_draw = 0.0
        self.last_tenth = 0
        self.malformed_count = 0

    def progress(self, done: int, total: int) -> None:
        if total <= 0:
            return
        if self.tty:
            now = time.monotonic()
            if now - self.last_draw >= REDRAW_SECONDS or done >= total:
                self.last_draw = now
                filled = BAR_WIDTH * done // total
                self.stream.write(
                    f"\rimporting [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {100 * done // total:3d}%  "
                    f"{_size(done)} / {_size(total)}"
                )
                self.stream.flush()
                self.drawn = True
            return
        tenth = 10 * done // total
        if tenth > self.last_tenth:
            self.last_tenth = tenth
            print(f"importing: {10 * tenth}% ({_size(done)} of {_size(total)})", file=self.stream)

    def malformed(self, where: str, reason: str) -> None:
        self.malformed_count += 1
        if self.malformed_count <= SHOWN_MALFORMED:
            self._say(f"{where}: {reason}")

    def passed_over(self, path: str, reason: str) -> None:
        self._say(f"passed over {path}: {reason}")

    def finish(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.drawn = False
        hidden = self.malformed_count - SHOWN_MALFORMED
        if hidden > 0:
            print(f"... and {hidden} more malformed lines", file=self.stream)

    def _say(self, text: str) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")  # clear the bar's line; the next update redraws it
            self.drawn = False
        print(text, file=self.stream)


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"
