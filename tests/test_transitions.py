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
    paused = paused_from if source == "needs_human_decision" else None
    legal = target in expected(mode, source, paused)
    assert (target in lifecycle.allowed(mode, source, paused)) is legal
    case = case_in(mode, source, paused)
    if legal and source == "needs_human_decision" and target == paused:
        # Resuming is a person's answer and nothing else.
        lifecycle.require(case, target, doing="test", answering=True)
        with pytest.raises(GateRefusedError):
            lifecycle.require(case, target, doing="test")
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


def test_terminal_phases_have_no_way_out() -> None:
    """complete, blocked and abandoned allow nothing and offer no actions."""
    for mode, phase in itertools.product(MODES, sorted(TERMINAL)):
        assert lifecycle.allowed(mode, phase) == ()  # type: ignore[arg-type]
        assert lifecycle.next_actions(case_in(mode, phase)) == []  # type: ignore[arg-type]


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
