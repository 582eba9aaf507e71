"""`tideline eval ... --dream`: solidify in-process, then recall with and without the session digests.

A small LoCoMo-format conversation written here (three sessions, keyword search, no embedder), so
the tests need neither the benchmark data nor the model; the LLM, when configured, is a scripted
server on loopback. The scoring rule is checked on a search whose hits are given: a digest hit
stands for its session, never for the evidence turns it links.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest
from dream_helpers import shown_data
from llm_server import ScriptedLLM

from tideline_cli.main import build_parser
from tideline_core.search.hits import SearchHit, SearchOutcome
from tideline_core.service import Service
from tideline_core.settings import Settings
from tideline_eval import locomo, runner

SESSIONS = {
    1: [
        ("Alice", "I finally finished the blue ceramic vase in my pottery class last weekend."),
        ("Bob", "That sounds lovely. Did the glaze come out the way you hoped after the kiln firing?"),
        ("Alice", "The glaze cracked a little near the rim, but the teacher said the cracks look intentional."),
        ("Bob", "Pottery takes patience. My grandmother used to throw bowls on an old kick wheel."),
        ("Alice", "I want to sell a few vases at the spring craft market in the town square."),
    ],
    2: [
        ("Bob", "I just got back from Lisbon, the trams and the tiled buildings were amazing."),
        ("Alice", "Lisbon is on my list! Did you try the custard tarts in Belem?"),
        ("Bob", "I ate six custard tarts in one afternoon and regretted nothing."),
        ("Alice", "Did you take photographs of the azulejo tiles for your sketchbook?"),
        ("Bob", "Hundreds of photographs. I am planning a tile painting series from them this winter."),
    ],
    3: [
        ("Alice", "We should organise a small exhibition together, my vases beside your tile paintings."),
        ("Bob", "Great idea. The library gallery rents its hall cheaply in March."),
        ("Alice", "Then let's book the library gallery for the second weekend of March."),
        ("Bob", "I will call the librarian tomorrow and ask about the booking fee."),
        ("Alice", "Perfect, and I will ask the pottery teacher whether she wants to join the exhibition."),
    ],
}
QA = [
    {"question": "What did Alice make in her pottery class?", "evidence": ["D1:1"], "category": 4},
    {"question": "What food did Bob eat in Lisbon?", "evidence": ["D2:3"], "category": 4},
    {
        "question": "What will Alice and Bob show at the exhibition?",
        "evidence": ["D1:1", "D2:5", "D3:1"],
        "category": 1,
    },
]


def conversation_file(folder: Path) -> Path:
    conversation: dict[str, Any] = {"speaker_a": "Alice", "speaker_b": "Bob"}
    for number, turns in SESSIONS.items():
        conversation[f"session_{number}_date_time"] = f"7:00 pm on {number} May, 2023"
        conversation[f"session_{number}"] = [
            {"speaker": speaker, "dia_id": f"D{number}:{i}", "text": text} for i, (speaker, text) in enumerate(turns, 1)
        ]
    path = folder / "tiny_locomo.json"
    path.write_text(json.dumps([{"sample_id": "tiny", "conversation": conversation, "qa": QA}]), encoding="utf-8")
    return path


def test_dream_flag_solidifies_the_slice_and_reports_recall_without_and_with_extracts(
    tmp_path: Path, store_args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from tideline_cli import evaluate

    figures_file = tmp_path / "figures.json"
    path = conversation_file(tmp_path)
    args = build_parser().parse_args(
        [
            "eval",
            "locomo",
            str(path),
            "--dream",
            "--mode",
            "keyword",
            "--k",
            "1,5",
            "--json",
            str(figures_file),
            *store_args,
        ]
    )
    settings = Settings(home=tmp_path / "home", embedder="none", llm_url=None, llm_model=None)
    assert evaluate.run(settings, args) == 0

    figures = json.loads(figures_file.read_text(encoding="utf-8"))
    solidified = figures["dream"]["solidify"]
    assert solidified["method"] == "extractive"
    assert solidified["digests"] == len(SESSIONS) and solidified["memories"] >= len(SESSIONS)
    for column in ("without_extracts", "with_extracts"):
        result = figures["dream"][column]["keyword"]
        assert result["questions"] == len(QA)
        assert set(result["turn_recall"]) == {"1", "5"} and set(result["session_recall"]) == {"1", "5"}
    printed = capsys.readouterr().out
    assert "wrote" in printed and f"{len(SESSIONS)} digests" in printed and "(extractive)" in printed
    for row in ("keyword, before the dream", "keyword, after, extracts left out", "keyword, after, with extracts"):
        assert row in printed


class GivenHits:
    """A service whose search returns the same hits for every question (all the scoring reads)."""

    def __init__(self, hits: list[tuple[str, int]]) -> None:
        self.hits = hits
        self.searcher = self

    def forget_queries(self) -> None:
        return None

    def search(self, agent_id: str, params: Any) -> SearchOutcome:
        at = datetime(2023, 5, 2, tzinfo=UTC)
        return SearchOutcome(
            query=params.query, hits=[SearchHit(kind, i, 1.0, "", at) for kind, i in self.hits], mode="keyword"
        )


def test_a_digest_hit_counts_for_its_session_but_not_for_the_evidence_turns_it_links() -> None:
    turn = locomo.Turn("D2:3", "Bob", "I ate six custard tarts in one afternoon.", datetime(2023, 5, 2, tzinfo=UTC))
    question = locomo.Question("What food did Bob eat in Lisbon?", ("D2:3",), 4)
    conv = locomo.Conversation("tiny", (turn,), (question,))
    dia_of = {("tiny", 11): "D1:1", ("tiny", 23): "D2:3"}
    # The digest of session D2 ranks first, above a turn of D1; the evidence turn itself comes third.
    service = cast(Service, GivenHits([("narrative", 7), ("context", 11), ("context", 23)]))
    digests = {("tiny", 7): ("D2",)}

    result = runner.ask_locomo(
        service, [conv], dia_of, ["keyword"], [1, 2, 3], kinds="all", sessions_of=lambda a, i: digests[(a, i)]
    )["keyword"]

    assert result.session_recall == {1: 1.0, 2: 1.0, 3: 1.0}  # the digest brings its session first
    assert result.recall == {1: 0.0, 2: 0.0, 3: 1.0}  # but no evidence turn until the turn itself
    assert result.scores[0].dream_hits == 1


def test_with_an_llm_configured_the_dream_solidifies_with_it_and_says_so(
    tmp_path: Path, store_args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from tideline_cli import evaluate

    def memory(body: dict[str, Any]) -> dict[str, Any]:
        first = shown_data(body)["turns"][0]
        return {"memories": [{"gesture": first["text"], "source_turns": [first["id"]]}]}

    def digest(body: dict[str, Any]) -> dict[str, Any]:
        return {"what": f"A talk of {len(shown_data(body)['turns'])} turns."}

    figures_file = tmp_path / "figures.json"
    args = build_parser().parse_args(
        [
            "eval",
            "locomo",
            str(conversation_file(tmp_path)),
            "--dream",
            "--mode",
            "keyword",
            "--json",
            str(figures_file),
            *store_args,
        ]
    )
    with ScriptedLLM() as llm:
        llm.by_prompt("solidify", memory)
        llm.by_prompt("digest", digest)
        settings = Settings(home=tmp_path / "home", embedder="none", llm_url=llm.url, llm_model="scripted-model")
        assert evaluate.run(settings, args) == 0

    solidified = json.loads(figures_file.read_text(encoding="utf-8"))["dream"]["solidify"]
    assert solidified == {**solidified, "method": "llm scripted-model", "memories": 3, "digests": len(SESSIONS)}
    assert "(llm scripted-model)" in capsys.readouterr().out
