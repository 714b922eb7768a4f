"""`case archive`, `unarchive`, `prune`, `rm`, `recall drop`, and the sizes doctor and overview
show.

docs/design/storage.md, "Archive, remove, adopt". Removal is killed at its crash points with
real processes; the person's confirmation runs at a real pseudo-terminal.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest
from conftest import CHILDREN, Cli, case_path, committed_state, git, run_cortex
from crash_kit import watch
from trust_kit import at_terminal, detached

from cortex.mcp.session import Leases
from cortex.mcp.tools import BY_NAME

FORGET_CHILD = str(CHILDREN / "forget_child.py")


def closed(cli: Cli, goal: str = "Fix the login redirect", *extra: str) -> str:
    task = cli.open(goal, *extra)
    assert cli("case", "abort", task, "--reason", "not needed").code == 0
    return task


def listed(cli: Cli, *extra: str) -> list[str]:
    return [item["taskId"] for item in cli("case", "list", *extra).data["items"]]


def sessions(cli: Cli, *extra: str) -> list[str]:
    return [item["taskId"] for item in cli("case", "sessions", *extra).data["items"]]


def store_root(env: dict[str, str]) -> Path:
    (root,) = Path(env["CORTEX_STATE_DIR"]).glob("sessions/*")
    return root


class TestArchive:
    def test_an_archived_case_leaves_every_default_view_and_comes_back(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        kept = cli.open("Keep this one")
        task = cli.open("Decide the session store", "--mode", "investigate")
        note = cli("case", "note", task, "sessions survive restarts", "--origin", "human").data
        assert cli("case", "abort", task, "--reason", "done elsewhere").code == 0
        assert cli("recall", "reindex").code == 0
        assert cli("recall", "sessions survive restarts").data["total"] == 1
        before = committed_state(case_path(env, task), ignore={".lock"})
        out = cli("case", "archive", task)
        assert out.data["archived"] is True
        assert listed(cli) == [kept]
        assert sessions(cli) == [kept]
        assert cli("case", "overview").data["total"] == 1
        assert cli("recall", "sessions survive restarts").data["total"] == 0
        assert listed(cli, "--archived") == [task]
        assert sessions(cli, "--archived") == [task]
        # Readable by id, audited as it was, written to by nobody.
        assert cli("case", "status", task).data["status"] == "abandoned"
        assert cli("case", "audit", task).data["ok"] is True
        refused = cli("case", "note", task, "more")
        assert refused.code == 5
        assert "unarchive" in refused.envelope["error"]["message"]
        moved = store_root(env) / ".archive" / task
        assert committed_state(moved, ignore={".lock"}) == before
        assert cli("case", "archive", task).data["archived"] is True  # idempotent
        assert cli("case", "unarchive", task).data["archived"] is False
        assert set(listed(cli)) == {kept, task}
        assert cli("recall", "sessions survive restarts").data["total"] == 1
        assert note["evidence"]["id"] in json.dumps(cli("recall", "sessions survive").data)

    def test_only_closed_cases_are_archived(self, cli: Cli, env: dict[str, str]) -> None:
        task = cli.open()
        before = committed_state(case_path(env, task))
        out = cli("case", "archive", task)
        assert out.code == 5
        assert "closed cases" in out.envelope["error"]["message"]
        assert committed_state(case_path(env, task)) == before

    def test_a_repo_local_archive_is_ignored_by_git(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        (repo / "cortex.toml").write_text('cases_dir = ".cortex/cases"\n')
        git(repo, "add", "cortex.toml", env=env)
        git(repo, "commit", "-q", "-m", "local store", env=env)
        task = closed(cli)
        assert cli("case", "archive", task).code == 0
        assert (repo / ".cortex" / "cases" / ".archive" / task).is_dir()
        assert git(repo, "status", "--porcelain", env=env) == ""

    def test_an_idempotency_key_of_an_archived_case_is_refused_not_reused(self, cli: Cli) -> None:
        task = cli.open("Keyed", "--idempotency-key", "k-1")
        assert cli("case", "abort", task, "--reason", "x").code == 0
        assert cli("case", "archive", task).code == 0
        again = cli("case", "open", "Keyed", "--idempotency-key", "k-1")
        assert again.code == 4
        assert "archived" in again.envelope["error"]["message"]
        assert listed(cli) == []

    def test_archive_and_unarchive_are_mcp_tools(self, cli: Cli) -> None:
        assert BY_NAME["cortex_archive"].command == "case.archive"
        assert BY_NAME["cortex_unarchive"].command == "case.unarchive"
        task = closed(cli)
        from cortex.kernel.kernel import Kernel

        kernel = Kernel(str(cli.cwd), cli.env, default_actor="mcp", via="mcp")
        tool = BY_NAME["cortex_archive"]
        result = tool.call(kernel, msgspec.convert({"task_id": task}, tool.args), Leases())
        assert result.data["archived"] is True
        assert listed(cli) == []


class TestPrune:
    def test_a_dry_run_lists_idle_open_cases_and_apply_abandons_and_archives_them(
        self, cli: Cli
    ) -> None:
        idle = cli.open("Left behind")
        done = closed(cli, "Finished")
        time.sleep(1.2)
        busy = cli.open("Still going")
        dry = cli("case", "prune", "--older-than", "1s").data
        assert dry["applied"] is False
        assert [item["taskId"] for item in dry["cases"]] == [idle]
        assert cli("case", "status", idle).data["status"] != "abandoned"
        applied = cli("case", "prune", "--older-than", "1s", "--apply").data
        assert applied["pruned"] == 1
        assert set(listed(cli)) == {done, busy}
        assert listed(cli, "--archived") == [idle]
        status = cli("case", "status", idle).data
        assert status["status"] == "abandoned"
        assert "pruned" in status["statusReason"]

    def test_the_default_age_comes_from_the_configuration(
        self, cli: Cli, repo: Path, env: dict[str, str]
    ) -> None:
        (repo / "cortex.toml").write_text('prune_older_than = "1s"\n')
        idle = cli.open("Left behind")
        time.sleep(1.2)
        data = cli("case", "prune").data
        assert (data["olderThanSeconds"], data["cases"][0]["taskId"]) == (1, idle)
        assert data["source"].endswith("cortex.toml")
        env["CORTEX_PRUNE_OLDER_THAN"] = "30d"
        assert cli("case", "prune").data["cases"] == []
        env["CORTEX_PRUNE_OLDER_THAN"] = "soon"
        assert cli("case", "prune").code == 4
        del env["CORTEX_PRUNE_OLDER_THAN"]
        assert cli("case", "prune", "--older-than", "0s").code == 4

    def test_a_held_lease_is_left_alone(self, cli: Cli) -> None:
        from conftest import ready_to_verify

        task = ready_to_verify(cli)
        time.sleep(1.2)
        data = cli("case", "prune", "--older-than", "1s", "--apply").data
        (item,) = [i for i in data["cases"] if i["taskId"] == task]
        assert item["done"] is False
        assert "lease" in item["action"]


def rm_at_terminal(
    env: dict[str, str], repo: Path, task: str, typed: str
) -> subprocess.CompletedProcess[bytes] | object:
    out, _ = at_terminal(
        ["case", "rm", task, "--force"], env, repo, typed=typed, prompt=b"to remove it"
    )
    return out


class TestRemove:
    @pytest.mark.process
    def test_a_dry_run_removes_nothing_and_force_needs_the_typed_id(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        task = closed(cli)
        before = committed_state(case_path(env, task))
        dry = cli("case", "rm", task).data
        assert dry["applied"] is False
        assert dry["bytes"] > 0
        assert committed_state(case_path(env, task)) == before
        assert detached(["case", "rm", task, "--force"], env, repo).code == 5
        wrong = rm_at_terminal(env, repo, task, task[:-1])
        assert wrong.code == 5  # type: ignore[attr-defined]
        assert committed_state(case_path(env, task)) == before

    @pytest.mark.process
    def test_force_removes_the_case_its_cards_keys_and_local_refs(
        self, cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        env["CORTEX_CACHE_DIR"] = str(tmp_path / "cache")
        task = cli.open("Remove me", "--idempotency-key", "k-9")
        cli("case", "note", task, "the marmalade7731 fact", "--origin", "human")
        assert cli("case", "abort", task, "--reason", "x").code == 0
        assert cli("recall", "reindex").code == 0
        git(repo, "update-ref", f"refs/cortex/cases/{task}", "HEAD", env=env)
        git(repo, "update-ref", f"refs/cortex-remotes/origin/cases/{task}", "HEAD", env=env)
        dry = cli("case", "rm", task).data
        assert sorted(dry["refs"]) == [f"refs/cortex-remotes/origin/cases/{task}",
                                       f"refs/cortex/cases/{task}"]  # fmt: skip
        assert any("git push origin --delete" in item for item in dry["kept"])
        out = rm_at_terminal(env, repo, task, task)
        assert out.code == 0, out.stdout  # type: ignore[attr-defined]
        assert not list(Path(env["CORTEX_STATE_DIR"]).glob(f"sessions/*/{task}"))
        assert cli("case", "status", task).code == 3
        assert cli("recall", "marmalade7731").data["total"] == 0
        for path in (tmp_path / "cache").rglob("*"):
            assert not path.is_file() or b"marmalade7731" not in path.read_bytes()
        assert git(repo, "for-each-ref", "refs/cortex/", "refs/cortex-remotes/", env=env) == ""
        # A retried open with the key makes a new case; the removed one never comes back.
        again = cli("case", "open", "Remove me", "--idempotency-key", "k-9").data
        assert again["created"] is True
        assert again["taskId"] != task

    @pytest.mark.process
    def test_only_closed_cases_and_an_archived_one_too(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        live = cli.open()
        assert cli("case", "rm", live).code == 5
        task = closed(cli)
        assert cli("case", "archive", task).code == 0
        assert cli("case", "rm", task).data["archived"] is True
        out = rm_at_terminal(env, repo, task, task)
        assert out.code == 0, out.stdout  # type: ignore[attr-defined]
        assert cli("case", "list", "--archived").data["items"] == []


@pytest.mark.process
@pytest.mark.parametrize("point", ["archive.moved", "remove.renamed", "remove.keys"])
def test_a_removal_killed_at_each_point_is_finished_by_the_next_one(
    cli: Cli, env: dict[str, str], repo: Path, point: str
) -> None:
    task = cli.open("Remove me", "--idempotency-key", "k-kill")
    assert cli("case", "abort", task, "--reason", "x").code == 0
    other = closed(cli, "Another")
    if point == "archive.moved":
        # The archive's rename is the move's only step: killed after it, the case is archived.
        run = watch([sys.executable, str(CHILDREN / "crash_child.py"), point, "0", str(repo),
                     json.dumps([["case", "archive", task]])], env)  # fmt: skip
        assert run.killed
        assert listed(cli, "--archived") == [task]
        assert cli("case", "audit", task).data["ok"] is True
        return
    run = watch([sys.executable, FORGET_CHILD, point, "0", str(repo), task, "-", "remove"], env)
    assert run.killed
    # Gone for every reader already; the debris and its key are finished by the next removal.
    assert cli("case", "status", task).code == 3
    assert task not in listed(cli)
    assert list(store_root(env).glob(".removing-*"))
    health = [c for c in json.loads(run_cortex(["doctor", "--json"], env, repo).stdout)["data"]
              ["checks"] if c["name"] == "store health"]  # fmt: skip
    assert "removal was interrupted" in health[0]["detail"]
    again = cli("case", "open", "Remove me", "--idempotency-key", "k-kill").data
    assert again["taskId"] != task
    assert not list(store_root(env).glob(".removing-*"))
    out = rm_at_terminal(env, repo, other, other)
    assert out.code == 0, out.stdout  # type: ignore[attr-defined]


@pytest.mark.process
def test_a_removal_killed_before_the_recall_purge_leaves_nothing_after_the_next_write(
    cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    env["CORTEX_CACHE_DIR"] = str(tmp_path / "cache")
    task = cli.open("Remove me")
    cli("case", "note", task, "the marmalade7731 fact", "--origin", "human")
    assert cli("case", "abort", task, "--reason", "x").code == 0
    assert cli("recall", "reindex").code == 0
    run = watch(
        [sys.executable, FORGET_CHILD, "recall.dropped", "0", str(repo), task, "-", "rm"], env
    )
    assert run.killed
    assert cli("case", "status", task).code == 3
    assert cli("recall", "reindex").code == 0  # the next writer of the index purges
    held = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert held
    assert all(b"marmalade7731" not in p.read_bytes() for p in held)


class TestSizesAndCaches:
    @pytest.mark.process
    def test_doctor_and_overview_show_the_sizes(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        cli.open()
        proc = run_cortex(["doctor", "--json"], env, repo)
        checks = {c["name"]: c for c in json.loads(proc.stdout)["data"]["checks"]}
        assert "MB" in checks["store size"]["detail"]
        overview = cli("case", "overview").data
        assert overview["bytes"]["stores"] > 0
        assert overview["bytes"]["stateRoot"] >= overview["bytes"]["stores"]
        assert overview["byRepo"][0]["bytes"] > 0

    def test_recall_drop_deletes_derived_files_and_recall_rebuilds_them(
        self, cli: Cli, env: dict[str, str], tmp_path: Path
    ) -> None:
        env["CORTEX_CACHE_DIR"] = str(tmp_path / "cache")
        task = cli.open()
        cli("case", "note", task, "a person's word", "--origin", "human")
        assert cli("recall", "reindex").code == 0
        dry = cli("recall", "drop", "--dry-run").data
        assert dry["bytes"] > 0
        assert list((tmp_path / "cache").rglob("*.sqlite"))
        done = cli("recall", "drop").data
        assert done["bytes"] == dry["bytes"]
        assert not list((tmp_path / "cache").rglob("*.sqlite"))
        assert cli("recall", "rebuild").data["cards"] == 1
        assert cli("recall", "person").data["total"] == 1
