"""MemDaily through `tideline eval memdaily`: pooling, one copy per text, the ambiguity filter, held-out files.

Every file here is written by the test in MemDaily's native shape; none of MemSim's data is copied
(its repository has no license).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tideline_core.errors import InvalidInput
from tideline_eval import memdaily, runner

STAR = "《星河》观影会的地点是杭州。"  # trajectory 1's fact, which trajectory 0 also carries verbatim


def trajectory(tid: int, messages: list[str], questions: list[tuple[str, list[int]]]) -> dict[str, Any]:
    return {
        "tid": tid,
        "message_list": [
            {"mid": mid, "message": text, "time": f"2024年04月0{mid + 1}日 周一 08:42", "place": "广东深圳"}
            for mid, text in enumerate(messages)
        ],
        "question_list": [
            {
                "qid": qid,
                "question": question,
                "answer": "",
                "target_step_id": steps,
                "choices": {},
                "ground_truth": "A",
                "time": "2024年04月09日 周二 10:00",
            }
            for qid, (question, steps) in enumerate(questions)
        ],
    }


TRAJECTORIES = [
    trajectory(
        0,
        ["我的上司喜欢下棋。", STAR, "我婶婶的生日是08月21日。", "我穿的运动鞋是Gel-Kayano26。"],
        [("我婶婶的生日是啥时候？", [2]), ("我穿的运动鞋是什么牌子？", [3])],
    ),
    trajectory(
        1,
        [
            "我同事的电话号码是13812345678。",
            "我同事的名字叫周明轩。",
            "我婶婶的生日是05月03日。",
            STAR,
            "我跑步穿的是Gel-Kayano26，很舒服。",
        ],
        [
            ("那个电话号码是13812345678的人叫什么名字？", [0, 1]),
            ("《星河》观影会在哪里？", [3]),
            ("Gel-Kayano26穿着怎么样？", [4]),
            ("我婶婶的生日是啥时候？", [2]),
        ],
    ),
]


def write_dir(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "01_simple_roles.json").write_text(json.dumps(TRAJECTORIES, ensure_ascii=False), encoding="utf-8")
    # Not JSON: a run that opened the held-out file would fail.
    (folder / "01_simple_events.json").write_text("held out", encoding="utf-8")
    (folder / "README.md").write_text("not a data file", encoding="utf-8")
    return folder


def by_text(pool: memdaily.Pool) -> dict[str, memdaily.Question]:
    return {q.key: q for q in pool.questions}


def test_a_text_in_two_trajectories_is_stored_once_and_the_evidence_points_at_the_asking_trajectorys_copy() -> None:
    pool = memdaily.pool("01_simple_roles", "roles", TRAJECTORIES)
    assert pool.messages == 9 and len(pool.turns) == 8
    star = [t for t in pool.turns if t.text == STAR]
    # Trajectory 0 holds it first, but trajectory 1 is the one that asks about it.
    assert [(t.key, t.trajectory) for t in star] == [("1:3", 1)]
    assert by_text(pool)["1:1"].evidence == ("1:3",)
    assert by_text(pool)["1:0"].evidence == ("1:0", "1:1")
    assert [t.key for t in pool.turns] == ["0:0", "0:2", "0:3", "1:0", "1:1", "1:2", "1:3", "1:4"]


def test_only_questions_naming_something_of_their_own_trajectory_are_unambiguous() -> None:
    questions = by_text(memdaily.pool("01_simple_roles", "roles", TRAJECTORIES))
    # A phone number that only trajectory 1 mentions.
    assert questions["1:0"].names == ("13812345678",)
    # The other trajectory holds the same message verbatim: stored once, it is still this question's own.
    assert "星河" in questions["1:1"].names
    # Another trajectory mentions the product in a message of its own: two right answers, pooled.
    assert not questions["1:2"].unambiguous
    # A question that names nothing, even when its evidence names a product no one else has.
    assert not questions["0:1"].unambiguous
    assert not questions["0:0"].unambiguous and not questions["1:3"].unambiguous


def test_a_jieba_split_event_name_and_a_person_name_count_as_names() -> None:
    assert "金融科技精英论坛" in memdaily.name_candidates("我将要参加金融科技精英论坛。")
    assert "周明轩" in memdaily.name_candidates("我同事的名字叫周明轩。")
    assert memdaily.name_candidates("我婶婶的生日是啥时候？") == frozenset()


def test_a_message_time_is_read_as_china_time() -> None:
    at = memdaily.parse_time("2024年04月01日 周一 08:42")
    assert at.astimezone(UTC) == datetime(2024, 4, 1, 0, 42, tzinfo=UTC)
    with pytest.raises(ValueError):
        memdaily.parse_time("yesterday")


def test_a_file_of_another_shape_is_refused_saying_where(tmp_path: Path) -> None:
    path = tmp_path / "01_simple_roles.json"
    path.write_text(json.dumps([{"tid": 0, "message_list": [{"mid": 0, "message": "早", "time": "soon"}]}]))
    with pytest.raises(InvalidInput, match="trajectory 0: needs a 'question_list' field"):
        memdaily.load(path)
    path.write_text(json.dumps([{**TRAJECTORIES[0], "message_list": [{"mid": 0, "message": "早", "time": "soon"}]}]))
    with pytest.raises(InvalidInput, match="trajectory 0 message 0 time: must look like"):
        memdaily.load(path)


def test_the_events_files_are_never_read_and_a_checkout_is_found_from_its_root(tmp_path: Path) -> None:
    write_dir(tmp_path / memdaily.NATIVE_DIR)
    assert [p.name for p in memdaily.files(tmp_path)] == ["01_simple_roles.json"]


def test_recall_over_chosen_questions_averages_only_those() -> None:
    scores = tuple(runner.QuestionScore({5: r}, {5: s}, 0) for r, s in ((1.0, 1.0), (0.0, 0.0), (0.5, 1.0)))
    every = runner.ModeResult("hybrid", 3, {5: 0.5}, {5: 2 / 3}, scores=scores)
    chosen = runner.restrict(every, [True, False, True])
    assert chosen.questions == 2 and chosen.recall == {5: 0.75} and chosen.session_recall == {5: 1.0}


def test_eval_memdaily_scores_the_unambiguous_questions_and_every_question_apart(
    tmp_path: Path, store_args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tideline_cli.main import main

    monkeypatch.setenv("TIDELINE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TIDELINE_EMBEDDER", "none")
    folder = write_dir(tmp_path / "memdaily")
    out = tmp_path / "figures.json"
    assert (
        main(["eval", "memdaily", str(folder), "--mode", "keyword", "--k", "1,5", "--json", str(out), *store_args]) == 0
    )
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert [f["file"] for f in figures["files"]] == ["01_simple_roles"]
    assert figures["files"][0] | {"turns": 8, "questions": 6, "unambiguous": 2} == figures["files"][0]
    kept = figures["unambiguous"]["keyword"]
    # Each kept question names what only its evidence holds: all its evidence in the top 5, its trajectory first.
    assert kept["questions"] == 2 and kept["turn_recall"]["5"] == 1.0 and kept["session_recall"]["1"] == 1.0
    assert figures["unfiltered"]["keyword"]["questions"] == 6
    assert "held out" in capsys.readouterr().err


def test_eval_memdaily_has_no_way_to_run_the_held_out_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tideline_cli.main import main

    monkeypatch.setenv("TIDELINE_HOME", str(tmp_path / "home"))
    with pytest.raises(SystemExit) as refused:
        main(["eval", "memdaily", str(write_dir(tmp_path / "memdaily")), "--held-out"])
    assert refused.value.code == 2 and "--held-out" in capsys.readouterr().err
