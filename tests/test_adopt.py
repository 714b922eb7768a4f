"""A moved or renamed repository keeps its cases: `doctor` names the orphaned store, `adopt`
brings its cases back. Every test moves a real repository on disk (docs/design/paths.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import Cli, git, run_cortex, tree_state

pytestmark = pytest.mark.process  # its tests start cortex processes


def doctor(env: dict[str, str], cwd: Path) -> dict[str, dict[str, str]]:
    proc = run_cortex(["doctor", "--json"], env, cwd)
    return {c["name"]: c for c in json.loads(proc.stdout)["data"]["checks"]}


def history(cli: Cli) -> tuple[str, str]:
    """A case with a card the brief would show, and a completed... abandoned one claimed by the
    branch; (the case of the card, the latest case)."""
    first = cli.open("Where do sessions live", "--mode", "investigate")
    cli("case", "note", first, "sessions live in redis and vanish on deploy", "--origin", "human")
    latest = cli.open("Fix the session loss on deploy")
    return first, latest


def moved(tmp_path: Path, repo: Path, how: str) -> Path:
    target = tmp_path / "elsewhere" / "renamed-repo"
    target.parent.mkdir()
    if how == "mv":
        repo.rename(target)
    else:
        subprocess.run(["cp", "-a", str(repo), str(target)], check=True)
        shutil.rmtree(repo)
    return target


def test_a_moved_repository_finds_its_cases_again_after_adopt(
    cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    env["CORTEX_CACHE_DIR"] = str(tmp_path / "cache")
    first, latest = history(cli)
    assert cli("recall", "reindex").code == 0
    target = moved(tmp_path, repo, "mv")
    here = Cli(env, target)
    assert here("case", "list").data["items"] == []
    assert here("case", "status", "@latest").code == 3
    check = doctor(env, target)["orphaned stores"]
    assert check["status"] == "warn"
    assert "cortex adopt" in check["fix"]
    state = Path(env["CORTEX_STATE_DIR"])
    before = tree_state(state)
    dry = here("adopt", "--dry-run").data
    assert [s["cases"] for s in dry["stores"]] == [sorted([first, latest])]
    assert dry["moved"] == []
    assert tree_state(state) == before
    done = here("adopt").data
    assert sorted(done["moved"]) == sorted([first, latest])
    assert [item["taskId"] for item in here("case", "list").data["items"]] == [latest, first]
    assert here("case", "status", "@latest").data["taskId"] == latest
    assert "orphaned stores" not in doctor(env, target)
    brief = here("case", "open", "Why do sessions vanish on deploy").data["brief"]
    assert [card["taskId"] for card in brief["cards"]] == [first]
    # Writes work from the new place: the store is this workspace's own.
    assert here("case", "note", latest, "after the move").code == 0
    assert here("case", "audit", latest).data["ok"] is True
    assert here("adopt").data["stores"] == []  # nothing is left to adopt


def test_a_copy_whose_original_is_gone_is_adopted_and_review_sees_its_cases(
    cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    git(repo, "checkout", "-q", "-b", "feature", env=env)
    task = cli.open("Change the greeting")
    (repo / "app.py").write_text("print('hi')\n")
    git(repo, "commit", "-qam", "greet", "--trailer", f"Cortex-Case: {task}", env=env)
    target = moved(tmp_path, repo, "cp")
    here = Cli(env, target)
    missing = run_cortex(["review", "--base", "main", "--json"], env, target)
    problems = json.loads(missing.stdout)["data"]["problems"]
    assert [p["code"] for p in problems] == ["case_missing"]
    assert here("adopt").data["moved"] == [task]
    found = run_cortex(["review", "--base", "main", "--json"], env, target)
    codes = [p["code"] for p in json.loads(found.stdout)["data"]["problems"]]
    assert "case_missing" not in codes
    assert "not_complete" in codes  # judged: the case is found again


def test_a_copy_that_keeps_its_original_is_not_adopted_unless_named(
    cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    task = cli.open()
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(repo), str(copy)], check=True)
    here = Cli(env, copy)
    assert here("adopt").data["stores"] == []
    assert "orphaned stores" not in doctor(env, copy)
    (store,) = [p.name for p in Path(env["CORTEX_STATE_DIR"]).glob("sessions/*")]
    dry = here("adopt", store, "--dry-run").data
    assert dry["stores"][0]["orphaned"] is False
    assert here("adopt", store).data["moved"] == [task]
    assert cli("case", "list").data["items"] == []
    assert here("adopt", "nonexistent-0123456789ab").code == 3


def test_an_adopt_killed_after_its_first_move_is_finished_by_the_next(
    cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    import sys

    from conftest import CHILDREN
    from crash_kit import watch

    first, latest = history(cli)
    target = moved(tmp_path, repo, "mv")
    run = watch([sys.executable, str(CHILDREN / "crash_child.py"), "archive.moved", "0",
                 str(target), json.dumps([["adopt"]])], env)  # fmt: skip
    assert run.killed
    here = Cli(env, target)
    assert len(here("case", "list").data["items"]) == 1  # one case moved, whole
    assert here("case", "status", "@latest").code in {0, 3}
    done = here("adopt").data
    assert len(done["moved"]) == 1
    assert sorted(i["taskId"] for i in here("case", "list").data["items"]) == sorted(
        [first, latest]
    )
    assert here("case", "status", "@latest").data["taskId"] == latest
    for task in (first, latest):
        assert here("case", "audit", task).data["ok"] is True
