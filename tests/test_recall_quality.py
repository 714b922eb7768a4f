"""The quality gate of recall: the labelled benchmark against its locked baseline.

bench/recall_quality.py seeds a multi-case corpus through the kernel and asks labelled queries
through the production ranker. This gate fails when Recall@5 or MRR drops below the baseline in
bench/recall_baseline.json, or the briefs grow; it fails closed when the baseline is missing or
the query set is empty; and nothing but `--write-baseline` writes the baseline.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import recall_quality


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    scores: dict[str, Any] = recall_quality.run(tmp_path_factory.mktemp("quality"))
    return scores


def test_recall_holds_its_locked_baseline(result: dict[str, Any]) -> None:
    assert result["queries"] == len(recall_quality.queries()) > 0
    assert recall_quality.check(result) == []


def test_the_gate_catches_a_drop_or_a_rise(result: dict[str, Any]) -> None:
    worse = {**result, "recallAt5": result["recallAt5"] - 0.01}
    assert any("Recall@5 fell" in p for p in recall_quality.check(worse))
    worse = {**result, "mrr": result["mrr"] - 0.01}
    assert any("MRR fell" in p for p in recall_quality.check(worse))
    worse = {**result, "briefTokens": result["briefTokens"] + 1}
    assert any("briefs grew" in p for p in recall_quality.check(worse))


def test_the_gate_fails_closed(result: dict[str, Any], tmp_path: Path) -> None:
    missing = recall_quality.check(result, tmp_path / "absent.json")
    assert missing
    assert "no baseline" in missing[0]
    assert recall_quality.check({**result, "queries": 0}) == ["the labelled query set is empty"]
    with pytest.raises(ValueError, match="empty"):
        recall_quality.evaluate(None, {}, [])


def test_only_the_flag_writes_the_baseline(
    result: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "baseline.json"
    monkeypatch.setattr(recall_quality, "BASELINE", target)
    monkeypatch.setattr(recall_quality, "run", lambda _base: result)
    monkeypatch.setattr(sys, "argv", ["recall_quality.py"])
    assert recall_quality.main() == 1  # no baseline: fails closed, writes nothing
    assert not target.exists()
    monkeypatch.setattr(sys, "argv", ["recall_quality.py", "--write-baseline"])
    assert recall_quality.main() == 0
    assert target.exists()
