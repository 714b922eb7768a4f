"""Every legal and illegal phase transition, for every mode, against an independent table."""

from __future__ import annotations

import itertools
import json
from typing import get_args

import pytest
from conftest import Cli, case_path

from cortex.cases.records import CaseFile, Mode, Phase, Workspace
from cortex.kernel import lifecycle
from cortex.kernel.errors import GateRefusedError

PHASES: tuple[Phase, ...] = get_args(Phase)
MODES: tuple[Mode, ...] = get_args(Mode)
TERMINAL = {"complete", "blocked", "abandoned"}
ACTIVE = [p for p in PHASES if p not in TERMINAL and p != "needs_human_decision"]

# Written out by hand from docs/design/lifecycle.md, not derived from the code under test.
FORWARD: dict[str, dict[str, set[str]]] = {
    "change": {
        "new": {"orienting"},
        "orienting": {"investigating"},
        "investigating": {"planned"},
        "planned": {"changing"},
        "changing": {"verifying"},
        "verifying": {"persisting", "changing"},
        "persisting": {"complete"},
    },
    "investigate": {
        "new": {"orienting"},
        "orienting": {"investigating"},
        "investigating": {"planned"},
        "planned": {"verifying"},
        "changing": {"verifying"},
        "verifying": {"persisting"},
        "persisting": {"complete"},
    },
}
FORWARD["review"] = FORWARD["investigate"]


def expected(mode: str, phase: str, paused_from: str | None) -> set[str]:
    if phase == "blocked":
        # On hold: back to where it was blocked (unblock), or given up.
        return {paused_from, "abandoned"} if paused_from else {"abandoned"}
    if phase in TERMINAL:
        return set()
    if phase == "needs_human_decision":
        return {paused_from, "blocked", "abandoned"} if paused_from else {"blocked", "abandoned"}
    return FORWARD[mode][phase] | {"needs_human_decision", "blocked", "abandoned"}


def case_in(mode: Mode, phase: Phase, paused_from: Phase | None = None) -> CaseFile:
    return CaseFile(
        revision=1,
        id="task_01ARZ3NDEKTSV4RRFFQ69G5FAV",
        created_at="2026-11-30T00:00:00.000Z",
        updated_at="2026-11-30T00:00:00.000Z",
        goal="g",
        mode=mode,
        status=phase,
        paused_from=paused_from,
        actor="a",
        workspace=Workspace(kind="directory", root="/w", repository="w"),
    )


@pytest.mark.parametrize(
    ("mode", "source", "target"), list(itertools.product(MODES, PHASES, PHASES))
)
def test_every_transition(mode: Mode, source: Phase, target: Phase) -> None:
    """Each (mode, from, to) is allowed exactly when the table says so."""
    paused_from: Phase | None = "changing" if mode == "change" else "planned"
    paused = paused_from if source in {"needs_human_decision", "blocked"} else None
    legal = target in expected(mode, source, paused)
    assert (target in lifecycle.allowed(mode, source, paused)) is legal
    case = case_in(mode, source, paused)
    if legal and source == "needs_human_decision" and target == paused:
        # Resuming is a person's answer and nothing else.
        lifecycle.require(case, target, doing="test", answering=True)
        with pytest.raises(GateRefusedError):
            lifecycle.require(case, target, doing="test")
        with pytest.raises(GateRefusedError):
            lifecycle.require(case, target, doing="test", unblocking=True)
    elif legal and source == "blocked" and target == paused:
        # Leaving a block for where it was is `unblock`, and nothing else.
        lifecycle.require(case, target, doing="test", unblocking=True)
        with pytest.raises(GateRefusedError):
            lifecycle.require(case, target, doing="test")
        with pytest.raises(GateRefusedError):
            lifecycle.require(case, target, doing="test", answering=True)
    elif legal:
        lifecycle.require(case, target, doing="test")
    else:
        with pytest.raises(GateRefusedError) as refused:
            lifecycle.require(case, target, doing="test")
        assert refused.value.exit_status == 5


@pytest.mark.parametrize("paused_from", ACTIVE)
def test_a_paused_case_resumes_only_where_it_paused(paused_from: Phase) -> None:
    """From needs_human_decision the only forward step is the remembered phase."""
    for mode in MODES:
        steps = set(lifecycle.allowed(mode, "needs_human_decision", paused_from))
        assert steps == {paused_from, "blocked", "abandoned"}


def test_refusals_carry_the_allowed_steps_as_actions() -> None:
    """A refused step names what is allowed instead, as commands."""
    case = case_in("change", "investigating")
    with pytest.raises(GateRefusedError) as refused:
        lifecycle.require(case, "changing", doing="begin changing")
    commands = [a.command for a in refused.value.actions]
    assert any(c.startswith(f"cortex case plan {case.id}") for c in commands)
    assert any(c.startswith(f"cortex case block {case.id}") for c in commands)
    assert not any("begin-change" in c for c in commands)


def test_final_phases_have_no_way_out() -> None:
    """complete and abandoned allow nothing and offer no actions."""
    for mode, phase in itertools.product(MODES, sorted(TERMINAL - {"blocked"})):
        assert lifecycle.allowed(mode, phase) == ()  # type: ignore[arg-type]
        assert lifecycle.next_actions(case_in(mode, phase)) == []  # type: ignore[arg-type]


@pytest.mark.parametrize("blocked_in", ACTIVE)
def test_a_blocked_case_offers_unblock_back_where_it_was(blocked_in: Phase) -> None:
    """From blocked: unblock (to the remembered phase), a note, or abort; nothing else."""
    for mode in MODES:
        assert set(lifecycle.allowed(mode, "blocked", blocked_in)) == {blocked_in, "abandoned"}
        commands = [a.command for a in lifecycle.next_actions(case_in(mode, "blocked", blocked_in))]
        task = "task_01ARZ3NDEKTSV4RRFFQ69G5FAV"
        assert commands == [
            f"cortex case unblock {task} --reason '<what changed>'",
            f"cortex case note {task} '<what happened>'",
            f"cortex case abort {task} --reason '<why>'",
        ]


class TestThroughTheCli:
    def test_phases_ledger_records_each_committed_step(self, cli: Cli) -> None:
        """open, the first evidence, the plan, begin-change and a decision leave one line each."""
        env = {**cli.env, "CORTEX_ACTOR": "agent-1"}
        run = Cli(env, cli.cwd)
        task = run.open("goal")
        evidence = run("case", "evidence", "add", task, "--claim", "found it").data
        planned = run(
            "case", "plan", task, "--hypothesis", "h :: d", "--uncertainty", "u",
            "--support", f"1={evidence['evidence']['id']}",
            "--file", "app.py", "--boundary-reason", "r", "--verify", "pytest",
        )  # fmt: skip
        assert planned.data["status"] == "planned"
        assert run("case", "begin-change", task).data["status"] == "changing"
        asked = run(
            "case", "decision", "request", task, "--question", "q?",
            "--option", "a=A", "--option", "b=B",
        )  # fmt: skip
        assert asked.data["status"] == "needs_human_decision"
        lines = (case_path(env, task) / "phases.jsonl").read_text().splitlines()
        steps = [(json.loads(line)["from"], json.loads(line)["to"]) for line in lines]
        assert steps == [
            (None, "new"),
            ("new", "orienting"),
            ("orienting", "investigating"),
            ("investigating", "planned"),
            ("planned", "changing"),
            ("changing", "needs_human_decision"),
        ]
        status = run("case", "status", task).data
        assert status["status"] == "needs_human_decision"
        assert status["pausedFrom"] == "changing"

    def test_a_refused_step_writes_nothing(self, cli: Cli) -> None:
        """begin-change before a plan is exit 5 and the case is unchanged."""
        task = cli.open("goal")
        before = cli("case", "status", task).data["revision"]
        out = cli("case", "begin-change", task, "--actor", "agent-1")
        assert out.code == 5
        assert out.error_code == "refused"
        assert out.envelope["actions"], "a refusal says what to do instead"
        assert cli("case", "status", task).data["revision"] == before


class TestUnblock:
    """A blocked case is on hold: `unblock` returns it where it was; abandoned stays final."""

    def _changing(self, run: Cli) -> str:
        task = run.open("goal")
        evidence = run("case", "evidence", "add", task, "--claim", "found it").data
        run(
            "case", "plan", task, "--hypothesis", "h :: d", "--uncertainty", "u",
            "--support", f"1={evidence['evidence']['id']}",
            "--file", "app.py", "--boundary-reason", "r", "--verify", "pytest",
        )  # fmt: skip
        assert run("case", "begin-change", task).data["status"] == "changing"
        return task

    def test_block_then_unblock_returns_to_the_phase_with_its_reason(self, cli: Cli) -> None:
        run = Cli({**cli.env, "CORTEX_ACTOR": "agent-1"}, cli.cwd)
        task = self._changing(run)
        blocked = run("case", "block", task, "--reason", "waiting on the staging database").data
        assert (blocked["status"], blocked["resumesIn"]) == ("blocked", "changing")
        status = run("case", "status", task).data
        assert (status["status"], status["pausedFrom"]) == ("blocked", "changing")
        assert status["lease"] is None or status["lease"]["state"] != "active"
        actions = run("case", "status", task).envelope["actions"]
        assert actions[0]["command"] == f"cortex case unblock {task} --reason '<what changed>'"
        # On hold, not over: a note is still recorded, and the phase stays blocked.
        assert run("case", "note", task, "the database is back tomorrow").data["revision"]
        refused = run("case", "verify", task)
        assert (refused.code, refused.error_code) == (5, "refused")
        assert "unblock it to go on" in refused.envelope["error"]["message"]
        out = run("case", "unblock", task, "--reason", "staging is back")
        assert out.data["status"] == "changing"
        status = run("case", "status", task).data
        assert (status["status"], status["pausedFrom"], status["statusReason"]) == (
            "changing",
            None,
            None,
        )
        lines = [
            json.loads(line)
            for line in (case_path(cli.env, task) / "phases.jsonl").read_text().splitlines()
        ]
        assert [(line["from"], line["to"], line["reason"]) for line in lines[-2:]] == [
            ("changing", "blocked", "waiting on the staging database"),
            ("blocked", "changing", "staging is back"),
        ]
        commands = (case_path(cli.env, task) / "commands.jsonl").read_text().splitlines()
        assert json.loads(commands[-1])["operation"] == "case.unblock"
        # The lease was released by block: taking it again is the way back to work.
        assert run("case", "begin-change", task).data["result"] == "acquired"
        assert run("case", "audit", task).data["ok"] is True

    def test_blocked_while_waiting_resumes_where_the_decision_paused(self, cli: Cli) -> None:
        run = Cli({**cli.env, "CORTEX_ACTOR": "agent-1"}, cli.cwd)
        task = self._changing(run)
        run(
            "case", "decision", "request", task, "--question", "q?",
            "--option", "a=A", "--option", "b=B",
        )  # fmt: skip
        blocked = run("case", "block", task, "--reason", "nobody to ask this week").data
        assert blocked["withdrawnDecision"] is not None
        assert blocked["resumesIn"] == "changing"
        assert run("case", "unblock", task, "--reason", "back").data["status"] == "changing"

    def test_evidence_while_blocked_in_orienting_keeps_the_announced_phase(self, cli: Cli) -> None:
        """Unblock returns where block said it would (issue 29); the next evidence moves on."""
        task = cli.open("goal")
        assert cli("case", "block", task, "--reason", "no access yet").data["resumesIn"] == (
            "orienting"
        )
        cli("case", "evidence", "add", task, "--claim", "found a log")
        assert cli("case", "status", task).data["pausedFrom"] == "orienting"
        assert cli("case", "unblock", task, "--reason", "access").data["status"] == "orienting"
        cli("case", "evidence", "add", task, "--claim", "found another log")
        assert cli("case", "status", task).data["status"] == "investigating"

    def test_only_a_blocked_case_can_be_unblocked(self, cli: Cli) -> None:
        task = cli.open("goal")
        out = cli("case", "unblock", task, "--reason", "r")
        assert (out.code, out.error_code) == (5, "refused")
        assert cli("case", "abort", task, "--reason", "duplicate").code == 0
        for argv in (
            ("case", "unblock", task, "--reason", "r"),
            ("case", "note", task, "x"),
            ("case", "block", task, "--reason", "r"),
        ):
            out = cli(*argv)
            assert (out.code, out.error_code) == (5, "refused"), argv
        assert cli("case", "unblock", task).code == 4  # --reason is required

    def test_a_blocked_case_can_still_be_abandoned(self, cli: Cli) -> None:
        task = cli.open("goal")
        cli("case", "block", task, "--reason", "r")
        assert cli("case", "abort", task, "--reason", "gave up").data["status"] == "abandoned"
        assert cli("case", "status", task).data["pausedFrom"] is None
        assert cli("case", "unblock", task, "--reason", "r").code == 5

    def test_a_case_blocked_by_an_earlier_release_is_unblocked_from_its_phase_line(
        self, cli: Cli
    ) -> None:
        """Blocked before `pausedFrom` remembered it: the phase line into blocked says where."""
        from cortex.cases.records import decode, encode_pretty

        task = cli.open("goal")
        cli("case", "note", task, "seen")
        cli("case", "block", task, "--reason", "r")
        path = case_path(cli.env, task) / "case.json"
        case = decode(path.read_bytes(), CaseFile)
        case.paused_from = None
        path.write_bytes(encode_pretty(case))
        out = cli("case", "unblock", task, "--reason", "back")
        assert out.data["status"] == "investigating"
