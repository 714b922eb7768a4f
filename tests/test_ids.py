"""Ids as people type them: a unique prefix, `@latest`, and tables that keep ids whole.

A prefix resolves when exactly one id begins with it; several is exit 4 listing them (never a
guess), none is exit 3, too short is exit 4. The same through the CLI and the MCP server, since
the kernel resolves it (cortex/kernel/refs.py).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import IO

import pytest
from conftest import Cli, make_repo
from mcp_kit import run_async, serving

from cortex.cases.bounds import ID_CANDIDATES_SHOWN, ID_PREFIX_MIN
from cortex.screen.columns import Column, fit, print_table
from cortex.screen.ink import TerminalConsole, Text


def common(*ids: str) -> str:
    """The longest prefix the ids share (ids made close together share their time part)."""
    prefix = ""
    for chars in zip(*ids, strict=False):
        if len(set(chars)) > 1:
            break
        prefix += chars[0]
    head = prefix.index("_") + 1
    assert len(prefix) - head >= ID_PREFIX_MIN, ids
    return prefix


def unique(task: str, *others: str) -> str:
    """The shortest prefix of `task` no other id begins with (and long enough to look up)."""
    head = task.index("_") + 1
    for end in range(head + ID_PREFIX_MIN, len(task)):
        if not any(other.startswith(task[:end]) for other in others):
            return task[:end]
    msg = "no unique prefix"
    raise AssertionError(msg)


@pytest.fixture
def two(cli: Cli) -> tuple[str, str]:
    """Two cases opened one after the other (their ids share a long prefix)."""
    return cli.open("First case"), cli.open("Second case")


class TestTaskPrefix:
    def test_a_unique_prefix_reads_and_writes_the_case(
        self, cli: Cli, two: tuple[str, str]
    ) -> None:
        first, second = two
        short = unique(first, second)
        assert cli("case", "status", short).data["taskId"] == first
        noted = cli("case", "note", short, "by prefix").data
        assert noted["taskId"] == first
        assert cli("case", "status", first).data["counts"]["evidence"] == 1
        assert cli("case", "show", short).data["taskId"] == first
        assert cli("case", "timeline", short).data["taskId"] == first

    def test_an_ambiguous_prefix_is_exit_4_with_the_candidates(
        self, cli: Cli, two: tuple[str, str]
    ) -> None:
        first, second = two
        shared = common(first, second)
        for argv in (("case", "status", shared), ("case", "note", shared, "x")):
            out = cli(*argv)
            assert (out.code, out.error_code) == (4, "invalid_input"), out.stdout
            message = out.envelope["error"]["message"]
            assert f"<task> {shared} is ambiguous: 2 cases begin with it" in message
            assert first in message
            assert second in message
            ambiguous = out.envelope["data"]["ambiguous"]
            assert ambiguous["total"] == 2
            assert ambiguous["candidates"] == [
                {"id": second, "title": "Second case"},
                {"id": first, "title": "First case"},
            ]
        assert cli("case", "status", first).data["counts"]["evidence"] == 0

    def test_people_see_the_candidates_with_their_goals(
        self, cli: Cli, two: tuple[str, str]
    ) -> None:
        first, second = two
        out = cli("case", "status", common(first, second), human=True)
        assert out.code == 4
        assert "is ambiguous" in out.stderr
        assert f"  {second}  Second case" in out.stderr
        assert f"  {first}  First case" in out.stderr
        assert "could not render" not in out.stderr

    def test_the_candidates_are_bounded_and_counted(self, cli: Cli) -> None:
        tasks = [cli.open(f"case {n}") for n in range(ID_CANDIDATES_SHOWN + 2)]
        out = cli("case", "status", common(*tasks))
        ambiguous = out.envelope["data"]["ambiguous"]
        assert ambiguous["total"] == len(tasks)
        assert [c["id"] for c in ambiguous["candidates"]] == sorted(tasks, reverse=True)[
            :ID_CANDIDATES_SHOWN
        ]
        assert "and 2 more" in out.envelope["error"]["message"]

    def test_a_prefix_matching_nothing_is_exit_3(self, cli: Cli, two: tuple[str, str]) -> None:
        del two
        out = cli("case", "status", "task_7ZZZZ")
        assert (out.code, out.error_code) == (3, "not_found")
        message = out.envelope["error"]["message"]
        assert "none of the cases in this workspace's store or under" in message
        assert message.endswith("begins with task_7ZZZZ")

    @pytest.mark.parametrize(
        "ref", ["task_", "task_01J", "task_01j0", "TASK_01J0", "task_8ZZZ", "01J00000", "@newest"]
    )
    def test_too_short_or_malformed_is_exit_4(self, cli: Cli, ref: str) -> None:
        cli.open("Any")
        out = cli("case", "status", ref)
        assert (out.code, out.error_code) == (4, "invalid_input"), ref
        assert f"at least {ID_PREFIX_MIN}" in out.envelope["error"]["message"]

    def test_a_prefix_finds_a_case_of_another_repository(
        self, cli: Cli, env: dict[str, str], tmp_path: Path
    ) -> None:
        other = Cli(env, make_repo(tmp_path / "other", env))
        task = other.open("Elsewhere")
        short = task[: 5 + ID_PREFIX_MIN + 6]
        assert cli("case", "status", short).data["taskId"] == task
        out = cli("case", "note", short, "x")
        assert out.code == 3
        assert "write to it from there" in out.envelope["error"]["message"]

    def test_parent_takes_a_prefix(self, cli: Cli, two: tuple[str, str]) -> None:
        first, second = two
        child = cli("case", "open", "Child", "--parent", unique(first, second)).data
        assert cli("case", "status", child["taskId"]).data["parentTaskId"] == first


class TestLatest:
    def test_latest_is_the_newest_case_of_this_workspace(
        self, cli: Cli, env: dict[str, str], tmp_path: Path
    ) -> None:
        assert cli("case", "status", "@latest").code == 3
        older = cli.open("Older")
        newer = cli.open("Newer")
        Cli(env, make_repo(tmp_path / "other", env)).open("Another repository's, newest")
        assert cli("case", "status", "@latest").data["taskId"] == newer
        assert cli("case", "note", "@latest", "on the newest").data["taskId"] == newer
        assert cli("case", "status", older).data["counts"]["evidence"] == 0

    def test_latest_is_per_worktree(self, cli: Cli, env: dict[str, str], repo: Path) -> None:
        """Worktrees share a store; each one's newest case is its own."""
        from conftest import git

        mine = cli.open("In the main worktree")
        tree = repo.parent / "tree"
        git(repo, "worktree", "add", "-q", str(tree), env=env)
        theirs = Cli(env, tree).open("In the other worktree")
        assert cli("case", "status", "@latest").data["taskId"] == mine
        assert Cli(env, tree)("case", "status", "@latest").data["taskId"] == theirs


class TestRecordPrefix:
    def _planned(self, cli: Cli) -> tuple[str, list[str], str]:
        task = cli.open("Records")
        evidence = [
            cli("case", "evidence", "add", task, "--claim", f"claim {n}").data["evidence"]["id"]
            for n in range(3)
        ]
        planned = cli(
            "case", "plan", task, "--hypothesis", "h :: d", "--uncertainty", "u",
            "--support", f"1={unique(evidence[0], *evidence[1:])}",
            "--file", "app.py", "--boundary-reason", "r", "--verify", "pytest",
        ).data  # fmt: skip
        return task, evidence, planned["hypotheses"][0]["id"]

    def test_evidence_hypothesis_and_decision_prefixes(self, cli: Cli) -> None:
        task, evidence, hypothesis = self._planned(cli)
        first = unique(evidence[0], *evidence[1:])
        assert cli("case", "read-evidence", task, first).data["evidence"]["id"] == evidence[0]
        derived = cli(
            "case", "evidence", "add", task, "--claim", "d", "--derived-from", first
        ).data  # fmt: skip
        assert derived["evidence"]["derivedFrom"] == [evidence[0]]
        resolved = cli(
            "case", "resolve", task, hypothesis[:12], "--status", "confirmed",
            "--reason", "seen", "--evidence", first,
        ).data  # fmt: skip
        assert resolved["hypothesis"]["id"] == hypothesis
        assert resolved["hypothesis"]["history"][-1]["evidence"] == [evidence[0]]
        asked = cli(
            "case", "decision", "request", task, "--question", "q?",
            "--option", "a=A", "--option", "b=B", "--actor", "agent-1",
        ).data["decision"]["id"]  # fmt: skip
        answered = cli(
            "case", "decision", "answer", task, asked[:10], "--answer", "a", "--responder", "alice"
        ).data
        assert answered["decision"]["id"] == asked

    def test_record_prefixes_ambiguous_and_unknown(self, cli: Cli) -> None:
        task, evidence, _ = self._planned(cli)
        shared = common(*evidence)
        out = cli("case", "read-evidence", task, shared)
        assert (out.code, out.error_code) == (4, "invalid_input")
        assert f"<evidence> {shared} is ambiguous" in out.envelope["error"]["message"]
        assert {c["id"] for c in out.envelope["data"]["ambiguous"]["candidates"]} >= set(evidence)
        out = cli(
            "case", "plan", task, "--reason", "again", "--hypothesis", "h :: d",
            "--uncertainty", "u", "--support", f"1={shared}",
            "--file", "app.py", "--boundary-reason", "r", "--verify", "pytest",
        )  # fmt: skip
        assert out.code == 4
        assert f"--support {shared} is ambiguous" in out.envelope["error"]["message"]
        missing = cli("case", "read-evidence", task, "ev_7ZZZZZ")
        assert (missing.code, missing.error_code) == (3, "not_found")
        assert cli("case", "read-evidence", task, "ev_01").code == 4


class TestWholeIdsInTables:
    def test_list_on_a_pipe_prints_whole_ids_and_goals(self, cli: Cli) -> None:
        goal = "A goal long enough to be cut on an eighty column terminal, which a pipe is not"
        task = cli.open(goal)
        out = cli("case", "list", human=True)
        assert out.code == 0
        row = next(line for line in out.stdout.splitlines() if line.startswith(task))
        assert row.endswith(goal)
        assert row == row.rstrip()
        assert out.stdout.splitlines()[0].split() == [
            "task",
            "status",
            "rev",
            "evidence",
            "updated",
            "goal",
        ]

    def test_sessions_on_a_pipe_has_every_column(self, cli: Cli) -> None:
        task = cli.open("Listed")
        lines = cli("case", "sessions", human=True).stdout.splitlines()
        assert lines[0].split() == ["task", "phase", "repo", "idle", "verdict", "notes", "goal"]
        assert lines[1].split()[:3] == [task, "orienting", "repo"]

    @pytest.mark.parametrize("width", [60, 80, 200])
    def test_at_a_terminal_the_id_and_phase_stay_whole(self, width: int) -> None:
        columns = (
            Column("task"),
            Column("phase"),
            Column("repo", priority=1),
            Column("idle", priority=4),
            Column("verdict", priority=3),
            Column("notes", priority=2),
            Column("goal", flexible=True),
        )
        task = "task_01M8STXXCG1NB2WJ5FRMMYXZXX"
        row = [
            Text(task),
            Text("needs_human_decision"),
            Text("checkout-app"),
            Text("3h"),
            Text("unverified"),
            Text("lease agent-1, decision"),
            Text("Fix the checkout redirect after login for users coming from the cart"),
        ]
        buffer = io.StringIO()
        console = TerminalConsole(buffer, width=width, force_terminal=True, color_system=None)
        print_table(console, columns, [row])
        lines = buffer.getvalue().splitlines()
        assert all(len(line) <= width for line in lines)
        assert lines[1].split()[:2] == [task, "needs_human_decision"]
        if width >= 80:
            assert "checkout-app" in lines[1]
        if width == 200:
            assert lines[1].rstrip().endswith("from the cart")

    def test_fit_drops_by_priority_and_gives_the_rest_to_the_flexible_column(self) -> None:
        columns = (
            Column("a"),
            Column("b", priority=2),
            Column("c", priority=1),
            Column("g", flexible=True),
        )
        assert fit(columns, [10, 10, 10, 40], None) == ((0, 1, 2, 3), (10, 10, 10, 40))
        assert fit(columns, [10, 10, 10, 40], 100) == ((0, 1, 2, 3), (10, 10, 10, 40))
        assert fit(columns, [10, 10, 10, 40], 50) == ((0, 1, 2, 3), (10, 10, 10, 14))
        assert fit(columns, [10, 10, 10, 40], 45) == ((0, 2, 3), (10, 10, 21))
        assert fit(columns, [10, 10, 10, 40], 20) == ((0, 3), (10, 8))
        assert fit(columns, [10, 10, 10, 40], 11) == ((0,), (10,))


@pytest.mark.process
def test_prefixes_over_mcp(served: dict[str, str], repo: Path, errlog: IO[str]) -> None:
    """The server resolves what the CLI resolves: unique, ambiguous (4), none (3), @latest."""
    cli = Cli(served, repo)
    first, second = cli.open("First"), cli.open("Second")

    async def body() -> None:
        async with serving(repo, served, errlog) as s:
            found, _ = await s.call("cortex_status", task_id=unique(first, second))
            assert found["data"]["taskId"] == first
            latest, _ = await s.call("cortex_note", task_id="@latest", text="newest")
            assert latest["data"]["taskId"] == second
            shared = common(first, second)
            ambiguous, result = await s.call("cortex_status", task_id=shared)
            assert (result.meta or {}).get("cortex/exitStatus") == 4
            assert f"task_id {shared} is ambiguous" in ambiguous["error"]["message"]
            assert {c["id"] for c in ambiguous["data"]["ambiguous"]["candidates"]} == {
                first,
                second,
            }
            none, result = await s.call("cortex_status", task_id="task_7ZZZZ")
            assert none["error"]["code"] == "not_found"
            assert (result.meta or {}).get("cortex/exitStatus") == 3
            evidence = cli("case", "evidence", "add", first, "--claim", "c").data["evidence"]["id"]
            read, _ = await s.call("cortex_read_evidence", task_id=first, evidence_id=evidence[:10])
            assert read["data"]["evidence"]["id"] == evidence

    run_async(body)
