"""`cortex case metrics`: one case, or this workspace's store, in numbers.

The timing tests drive real cases in-process through the kernel with an injected clock, so every
phase duration is known exactly; the rest go through the CLI.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import Cli, base_env, case_path, configure_verifiers, make_repo, tree_state
from stand_ins import opt_in

from cortex.kernel.human.decisions import answer, request
from cortex.kernel.kernel import Kernel
from cortex.kernel.lease import begin_change
from cortex.kernel.proof.verify import verify
from cortex.kernel.steps.close import close, unblock
from cortex.kernel.steps.complete import complete
from cortex.kernel.steps.evidence import add_evidence
from cortex.kernel.steps.open_case import open_case
from cortex.kernel.steps.plan import plan
from cortex.kernel.steps.resolve import resolve
from cortex.kernel.views.metrics import metrics

T0 = 1_800_000_000.0


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now

    def at(self, offset: float) -> None:
        self.now = T0 + offset


def data(result: Any) -> dict[str, Any]:
    """A kernel Result's data as plain JSON-like values."""
    plain: dict[str, Any] = msgspec.to_builtins(result.data)
    return plain


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Kernel, Clock, Path, dict[str, str]]:
    """A kernel on a fresh repository (with an approved `command:unit`) and its clock."""
    env = base_env(tmp_path)
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    repo = make_repo(tmp_path / "repo", env)
    configure_verifiers(repo, env, {"unit": ["true"]})
    clock = Clock()
    return Kernel(str(repo), env, default_actor="agent-1", clock=clock), clock, repo, env


def _planned(kernel: Kernel, clock: Clock, start: float, goal: str) -> tuple[str, str]:
    """Open at `start`, evidence at +10, plan (two hypotheses) at +20; returns (task, ev)."""
    clock.at(start)
    task = data(open_case(kernel, goal=goal))["taskId"]
    clock.at(start + 10)
    evidence = data(add_evidence(kernel, task, claim="app.py is wrong"))["evidence"]["id"]
    clock.at(start + 20)
    plan(
        kernel,
        task,
        hypotheses=["app.py is wrong :: it passes", "the test is wrong :: it fails alone"],
        supports=[f"1={evidence}"],
        files=["app.py"],
        boundary_reason="the bug lives here",
        verify=["command:unit"],
        uncertainty="none",
    )
    return task, evidence


def _verified_complete(
    kernel: Kernel, clock: Clock, repo: Path, start: float, end: float, *, stale: bool = False
) -> str:
    """A case opened at `start`, verified at +40 and completed at `end` (offsets from T0)."""
    task, _ = _planned(kernel, clock, start, f"case at {start}")
    clock.at(start + 30)
    token = begin_change(kernel, task, actor="agent-1").data["leaseToken"]
    (repo / "app.py").write_text(f"print({start})\n")
    clock.at(start + 40)
    assert data(verify(kernel, task, lease_token=token))["assessment"]["status"] == "verified"
    clock.at(end)
    if stale:
        (repo / "app.py").write_text(f"print({start}, 'after')\n")
        done = complete(
            kernel, task, outcome="done", verification_not_possible="moved on", lease_token=token
        )
    else:
        done = complete(kernel, task, outcome="done", actor="agent-1", lease_token=token)
    assert data(done)["status"] == "complete"
    return task


class TestOneCase:
    def test_time_in_each_phase_is_exact(
        self, setup: tuple[Kernel, Clock, Path, dict[str, str]]
    ) -> None:
        kernel, clock, _, env = setup
        clock.at(0)
        task = data(open_case(kernel, goal="Timed case"))["taskId"]
        clock.at(60)
        evidence = data(add_evidence(kernel, task, claim="seen it"))["evidence"]["id"]
        add_evidence(kernel, task, claim="token in the log", sensitive=True, kind="terminal_run")
        clock.at(180)
        planned = data(
            plan(
                kernel,
                task,
                hypotheses=["a :: not a", "b :: not b"],
                supports=[f"1={evidence}"],
                files=["app.py"],
                boundary_reason="there",
                verify=["scope"],
                uncertainty="some",
            )
        )
        first, second = (h["id"] for h in planned["hypotheses"])
        clock.at(480)
        token = begin_change(kernel, task, actor="agent-1").data["leaseToken"]
        clock.at(490)
        resolve(kernel, task, first, status="confirmed", reason="yes", evidence=[evidence])
        resolve(kernel, task, second, status="rejected", reason="no")
        clock.at(500)
        decision = data(request(kernel, task, question="Go?", options=["y=Yes", "n=No"]))
        clock.at(800)
        opt_in(env)  # the suite stands in for a person (tests/stand_ins.py)
        answer(kernel, task, decision["decision"]["id"], option="y", responder="alice")
        clock.at(1000)
        before = tree_state(Path(env["CORTEX_STATE_DIR"]))

        result = data(metrics(kernel, task))

        assert tree_state(Path(env["CORTEX_STATE_DIR"])) == before
        timing = result["time"]
        assert timing["inPhase"] == {
            "new": 0.0,
            "orienting": 60.0,
            "investigating": 120.0,
            "planned": 300.0,
            "changing": 20.0 + 200.0,
            "needs_human_decision": 300.0,
        }
        assert timing["visits"] == {
            "new": 1,
            "orienting": 1,
            "investigating": 1,
            "planned": 1,
            "changing": 2,
            "needs_human_decision": 1,
        }
        assert timing["current"] == {
            "phase": "changing",
            "since": "2027-01-15T08:13:20.000Z",
            "seconds": 200.0,
        }
        assert timing["elapsedSeconds"] == 1000.0
        assert timing["closedAt"] is None
        assert result["commands"] == {
            "calls": 9,
            # Called in-process, not through a face: nothing records a refusal (none happened).
            "errors": {
                "refused": 0,
                "byCode": {},
                "byOperation": {},
                "capped": False,
                "unreadable": 0,
            },
            "byOperation": {
                "case.begin-change": 1,
                "case.decision.answer": 1,
                "case.decision.request": 1,
                "case.evidence.add": 2,
                "case.open": 1,
                "case.plan": 1,
                "case.resolve": 2,
            },
            "durationMs": result["commands"]["durationMs"],
        }
        assert result["commands"]["durationMs"]["total"] >= result["commands"]["durationMs"]["max"]
        # Two added, the plan's own record, and the answer's human report.
        assert result["evidence"] == {
            "total": 4,
            "byKind": {"human_report": 1, "observation": 1, "plan": 1, "terminal_run": 1},
            "sensitive": 1,
        }
        assert result["hypotheses"] == {
            "total": 2,
            "current": 2,
            "retired": 0,
            "resolved": 2,
            "byStatus": {"open": 0, "confirmed": 1, "challenged": 0, "rejected": 1},
        }
        assert result["decisions"] == {"total": 1, "pending": 0, "answered": 1, "withdrawn": 0}
        assert result["verification"] == {
            "required": ["scope"],
            "covered": [],
            "missing": ["scope"],
            "coverage": 0.0,
            "verdict": "unverified",
            "batchId": None,
            "batches": 0,
        }
        assert result["completion"] is None
        assert result["warnings"] == []

        # Closed: the last phase stops accruing at the close, whatever the clock says later.
        clock.at(1100)
        # The holder closes it (a lease-holding case is not anyone's to close: issue 27).
        close(kernel, task, to="abandoned", reason="enough", lease_token=token)
        clock.at(5000)
        closed = data(metrics(kernel, task))
        assert closed["time"]["inPhase"]["changing"] == 20.0 + 300.0
        assert "abandoned" not in closed["time"]["inPhase"]
        assert closed["time"]["closedAt"] == "2027-01-15T08:18:20.000Z"
        assert closed["time"]["elapsedSeconds"] == 1100.0
        assert closed["time"]["current"] is None
        assert closed["commands"]["calls"] == 10

    def test_time_blocked_counts_once_the_case_is_unblocked(
        self, setup: tuple[Kernel, Clock, Path, dict[str, str]]
    ) -> None:
        """Blocked stops the clock like a close; unblock restarts it and the hold is counted."""
        kernel, clock, _, _ = setup
        clock.at(0)
        task = data(open_case(kernel, goal="On hold"))["taskId"]
        clock.at(10)
        add_evidence(kernel, task, claim="seen")
        clock.at(30)
        close(kernel, task, to="blocked", reason="waiting on staging")
        clock.at(100)
        held = data(metrics(kernel, task))
        assert held["time"]["closedAt"] is not None
        assert held["time"]["elapsedSeconds"] == 30.0
        assert held["time"]["current"] is None
        clock.at(130)
        unblock(kernel, task, reason="staging is back")
        clock.at(200)
        resumed = data(metrics(kernel, task))
        assert resumed["time"]["closedAt"] is None
        assert resumed["time"]["inPhase"]["blocked"] == 100.0
        assert resumed["time"]["inPhase"]["investigating"] == 20.0 + 70.0
        assert resumed["time"]["current"]["phase"] == "investigating"
        assert resumed["time"]["elapsedSeconds"] == 200.0

    def test_coverage_follows_the_assessment(
        self, setup: tuple[Kernel, Clock, Path, dict[str, str]]
    ) -> None:
        kernel, clock, repo, _ = setup
        task, _ = _planned(kernel, clock, 0, "Covered case")
        clock.at(30)
        token = begin_change(kernel, task, actor="agent-1").data["leaseToken"]
        (repo / "app.py").write_text("print('fixed')\n")
        clock.at(40)
        batch = data(verify(kernel, task, lease_token=token))["batch"]["id"]
        covered = data(metrics(kernel, task))["verification"]
        assert covered == {
            "required": ["command:unit"],
            "covered": ["command:unit"],
            "missing": [],
            "coverage": 1.0,
            "verdict": "verified",
            "batchId": batch,
            "batches": 1,
        }
        # An edit makes the receipt stale: no longer proof, so no longer coverage.
        (repo / "app.py").write_text("print('edited again')\n")
        stale = data(metrics(kernel, task))["verification"]
        assert (stale["covered"], stale["missing"], stale["coverage"]) == (
            [],
            ["command:unit"],
            0.0,
        )
        assert stale["verdict"] != "verified"

    def test_completion_is_what_was_recorded(
        self, setup: tuple[Kernel, Clock, Path, dict[str, str]]
    ) -> None:
        kernel, clock, repo, _ = setup
        task = _verified_complete(kernel, clock, repo, 0, 600)
        (repo / "app.py").write_text("print('later work')\n")
        clock.at(9000)
        result = data(metrics(kernel, task))
        assert result["completion"] == {"verdict": "verified", "kind": "verified", "seconds": 600.0}
        # Judged now, the old receipts prove nothing: the code moved on after completion.
        assert result["verification"]["verdict"] != "verified"
        assert result["time"]["elapsedSeconds"] == 600.0

    def test_ledgers_are_read_only_to_their_committed_length(
        self, cli: Cli, env: dict[str, str], task: str
    ) -> None:
        cli("case", "evidence", "add", task, "--claim", "one")
        ledger = case_path(env, task) / "evidence.jsonl"
        committed = cli("case", "metrics", task).data["evidence"]["total"]
        # A line past the committed end (an interrupted write) is not data.
        with ledger.open("ab") as handle:
            handle.write(b'{"id":"ev_01ARZ3NDEKTSV4RRFFQ69G5FAV","kind":"note"}\n')
        again = cli("case", "metrics", task).data
        assert again["evidence"]["total"] == committed == 1
        assert any("uncommitted bytes" in warning for warning in again["warnings"])


class TestStore:
    def test_store_totals_and_time_to_complete(
        self, setup: tuple[Kernel, Clock, Path, dict[str, str]]
    ) -> None:
        kernel, clock, repo, env = setup
        _verified_complete(kernel, clock, repo, 0, 600)
        _verified_complete(kernel, clock, repo, 1000, 2000)
        _verified_complete(kernel, clock, repo, 3000, 3200, stale=True)
        clock.at(4000)
        abandoned = data(open_case(kernel, goal="Dropped"))["taskId"]
        clock.at(4100)
        close(kernel, abandoned, to="abandoned", reason="dropped")
        clock.at(5000)
        active = data(open_case(kernel, goal="Still open"))["taskId"]
        clock.at(6000)
        before = tree_state(Path(env["CORTEX_STATE_DIR"]))

        result = data(metrics(kernel))

        assert tree_state(Path(env["CORTEX_STATE_DIR"])) == before
        assert result["store"]["id"] == kernel.store_info.id
        assert (result["cases"], result["measured"], result["unreadable"]) == (5, 5, 0)
        assert {k: v for k, v in result["byPhase"].items() if v} == {
            "complete": 3,
            "abandoned": 1,
            "orienting": 1,
        }
        assert result["completion"] == {
            "complete": 3,
            "verified": 2,
            "acceptedFailed": 0,
            "verificationNotPossible": 1,
            "unknown": 0,
            "verifiedRate": 0.6667,
            "timeToComplete": {"count": 3, "meanSeconds": 600.0, "medianSeconds": 600.0},
        }
        # Orienting lasted 10 s in each completed case, 100 s in the abandoned one, and runs
        # to now (1000 s) in the open one.
        in_phase = result["time"]["inPhase"]
        assert in_phase["orienting"] == 10 * 3 + 100 + 1000
        assert in_phase["investigating"] == 10 * 3
        assert in_phase["planned"] == 10 * 3
        assert in_phase["changing"] == 10 * 3
        assert in_phase["verifying"] == (600 - 40) + (2000 - 1040) + (3200 - 3040)
        # open 5, evidence 3, plan 3, begin-change 3, verify 3, complete 3, abort 1.
        assert result["commands"]["calls"] == 21
        assert result["commands"]["byOperation"]["case.verify"] == 3
        assert result["evidence"]["byKind"]["plan"] == 3
        assert result["hypotheses"]["total"] == 6
        assert result["hypotheses"]["byStatus"]["open"] == 6
        assert result["verification"] == {
            "activeCases": 1,
            "required": 0,
            "covered": 0,
            "coverage": None,
            "byVerdict": {"unverified": 1},
        }
        assert active in kernel.store.list_ids()

    def test_the_cli_sums_this_store_only_and_names_damaged_cases(
        self, tmp_path: Path, env: dict[str, str]
    ) -> None:
        alpha = Cli(env, make_repo(tmp_path / "alpha", env))
        beta = Cli(env, make_repo(tmp_path / "beta", env))
        mine = [alpha.open("one"), alpha.open("two")]
        beta.open("elsewhere")
        alpha("case", "note", mine[0], "a note")
        damaged = case_path(env, mine[1]) / "case.json"
        damaged.write_bytes(b"{")
        out = alpha("case", "metrics")
        result = out.data
        assert (result["cases"], result["measured"], result["unreadable"]) == (2, 1, 1)
        assert result["unreadableCases"][0]["taskId"] == mine[1]
        assert result["unreadableCases"][0]["error"]["code"] == "integrity_error"
        assert result["evidence"] == {"total": 1, "byKind": {"note": 1}, "sensitive": 0}
        assert result["commands"]["calls"] == 2
        human = alpha("case", "metrics", human=True)
        assert human.code == 0
        assert f"unreadable {mine[1]}" in " ".join(human.stdout.split())
        refused = alpha("case", "metrics", mine[1])
        assert refused.code == 4
        assert refused.error_code == "integrity_error"
        assert "Traceback" not in refused.stdout + refused.stderr


class TestCli:
    def test_metrics_of_a_case_from_another_workspace(
        self, cli: Cli, task: str, tmp_path: Path
    ) -> None:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        out = cli("case", "metrics", task, cwd=elsewhere)
        assert out.data["taskId"] == task
        assert out.data["status"] == "orienting"
        assert out.data["commands"]["calls"] == 1

    def test_human_output_is_aligned_text(self, cli: Cli, task: str) -> None:
        out = cli("case", "metrics", task, human=True)
        assert out.code == 0
        lines = out.stdout.splitlines()
        assert lines[0].split() == [task, "orienting"]
        rows = dict(line.strip().split(None, 1) for line in lines[1:] if line.strip())
        assert rows["commands"].startswith("1 (")
        assert rows["store"] == cli("case", "status", task).data["store"]["id"]

    @pytest.mark.parametrize(
        "argv",
        [
            ("case", "metrics", "nope"),
            ("case", "metrics", "task_01ARZ3NDEKTSV4RRFFQ69G5FAV", "extra"),
            ("case", "metrics", "--limit", "3"),
            ("case", "metrics", "../task_01ARZ3NDEKTSV4RRFFQ69G5FAV"),
        ],
    )
    def test_bad_input_is_exit_4(self, cli: Cli, argv: tuple[str, ...]) -> None:
        out = cli(*argv)
        assert out.code == 4, out.stdout
        assert out.error_code == "invalid_input"
        assert "Traceback" not in out.stdout + out.stderr

    def test_an_unknown_case_is_exit_3(self, cli: Cli) -> None:
        out = cli("case", "metrics", "task_01ARZ3NDEKTSV4RRFFQ69G5FAV")
        assert out.code == 3
        assert out.error_code == "not_found"

    def test_help_shows_the_id_is_optional(self, cli: Cli) -> None:
        out = cli("case", "metrics", "--help", human=True)
        assert out.stdout.startswith("usage: cortex case metrics [<task>] [options]")


class TestDurationsAndRefusals:
    """A verify lasts as long as its verifiers ran; refused commands are counted, apart."""

    @pytest.mark.process
    def test_a_2_second_verifier_makes_a_verify_of_at_least_2_seconds(
        self, tmp_path: Path, env: dict[str, str]
    ) -> None:
        """The report as a whole, with the one number that depends on the clock checked apart."""
        import sys

        repo = make_repo(tmp_path / "repo", env)
        configure_verifiers(
            repo, env, {"slow": [sys.executable, "-c", "import time; time.sleep(2)"]}
        )
        run = Cli({**env, "CORTEX_APPROVE_COMMANDS": "1", "CORTEX_ACTOR": "agent-1"}, repo)
        task = run.open("Slow proof")
        evidence = run("case", "evidence", "add", task, "--claim", "app.py").data["evidence"]
        run(
            "case", "plan", task, "--hypothesis", "h :: d", "--uncertainty", "u",
            "--support", f"1={evidence['id']}", "--file", "app.py",
            "--boundary-reason", "r", "--verify", "command:slow",
        )  # fmt: skip
        run("case", "begin-change", task)
        (repo / "app.py").write_text("print('fixed')\n")
        assert run("case", "verify", task).data["assessment"]["status"] == "verified"
        commands = run("case", "metrics", task).data["commands"]
        timing = commands.pop("durationMs")
        assert commands == {
            "calls": 5,
            "errors": {
                "refused": 0,
                "byCode": {},
                "byOperation": {},
                "capped": False,
                "unreadable": 0,
            },
            "byOperation": {
                "case.begin-change": 1,
                "case.evidence.add": 1,
                "case.open": 1,
                "case.plan": 1,
                "case.verify": 1,
            },
        }
        verify = timing["byOperation"]["case.verify"]
        assert verify["max"] >= 2000, timing
        assert verify["total"] == verify["max"]
        assert timing["max"] == verify["max"]
        assert sorted(timing["byOperation"]) == sorted(commands["byOperation"])
        shown = run("case", "metrics", task, human=True).stdout
        assert "slowest" in shown
        assert "case.verify" in shown.split("slowest", 1)[1].splitlines()[0]

    def test_refused_commands_are_counted_without_touching_the_case(self, cli: Cli) -> None:
        task = cli.open("Refusals")
        case_file = case_path(cli.env, task) / "case.json"
        before = case_file.read_bytes()
        refused = cli("case", "begin-change", task, "--actor", "agent-1")
        assert refused.code == 5
        assert cli("case", "complete", task, "--outcome", "x").code == 5
        assert cli("case", "note", task, "x", "--expect-revision", "0").code == 6
        # Bad input is refused before the case is read: not counted.
        assert cli("case", "note", task, "").code == 4
        assert case_file.read_bytes() == before
        errors = cli("case", "metrics", task).data["commands"]["errors"]
        assert errors == {
            "refused": 3,
            "byCode": {"refused": 2, "revision_conflict": 1},
            "byOperation": {"case.begin-change": 1, "case.complete": 1, "case.note": 1},
            "capped": False,
            "unreadable": 0,
        }
        assert cli("case", "audit", task).data["ok"] is True
        lines = (case_path(cli.env, task) / "refusals.jsonl").read_text().splitlines()
        assert [json.loads(line)["operation"] for line in lines] == [
            "case.begin-change",
            "case.complete",
            "case.note",
        ]
        assert json.loads(lines[0])["actor"] == "agent-1"
        assert oct((case_path(cli.env, task) / "refusals.jsonl").stat().st_mode & 0o777) == "0o600"
        store = cli("case", "metrics").data["commands"]["errors"]
        assert store["refused"] == 3

    def test_a_torn_line_is_skipped_and_a_full_log_says_so(self, cli: Cli) -> None:
        from cortex.cases.bounds import REFUSALS_MAX

        task = cli.open("Torn")
        log = case_path(cli.env, task) / "refusals.jsonl"
        log.write_bytes(b'{"timestamp":"2026-01-01T00:00:00.000Z","oper')
        assert cli("case", "complete", task, "--outcome", "x").code == 5
        errors = cli("case", "metrics", task).data["commands"]["errors"]
        assert (errors["refused"], errors["unreadable"], errors["capped"]) == (1, 1, False)
        line = log.read_bytes().splitlines()[-1] + b"\n"
        log.write_bytes(line * (REFUSALS_MAX // len(line)))
        size = log.stat().st_size
        assert cli("case", "complete", task, "--outcome", "x").code == 5
        assert log.stat().st_size == size, "a full log takes no more lines"
        errors = cli("case", "metrics", task).data["commands"]["errors"]
        assert errors["capped"] is True
        assert errors["refused"] == REFUSALS_MAX // len(line)

    def test_a_log_that_is_not_a_file_is_never_followed(self, cli: Cli, tmp_path: Path) -> None:
        task = cli.open("Planted")
        target = tmp_path / "elsewhere.txt"
        target.write_bytes(b"")
        (case_path(cli.env, task) / "refusals.jsonl").symlink_to(target)
        assert cli("case", "complete", task, "--outcome", "x").code == 5
        assert target.read_bytes() == b""
        errors = cli("case", "metrics", task).data["commands"]["errors"]
        assert (errors["refused"], errors["unreadable"]) == (0, 1)
        os.mkfifo(case_path(cli.env, task) / "fifo")  # a FIFO must not hang a refused writer
        (case_path(cli.env, task) / "refusals.jsonl").unlink()
        os.rename(case_path(cli.env, task) / "fifo", case_path(cli.env, task) / "refusals.jsonl")
        assert cli("case", "complete", task, "--outcome", "x").code == 5
