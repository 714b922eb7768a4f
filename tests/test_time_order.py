"""Ledgers stay in time order when the clock steps back (docs/design/storage.md, "Time order").

The kernel runs in-process with a clock the test moves, backwards too. Whatever it does, every
ledger's timestamps are nondecreasing in file order and never before the previous commit, the
record a command answers with is the record stored, case.json says `ordered`, and audit checks
the claim.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from conftest import Cli, base_env, case_path, make_repo
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex.cases.records import Evidence, Source
from cortex.kernel.kernel import Kernel, format_time

START = 1_780_000_000.0


class Clock:
    """A settable clock."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def ledger_times(path: Path, name: str) -> list[str]:
    case = json.loads((path / "case.json").read_text())
    committed = (path / f"{name}.jsonl").read_bytes()[: case["ledgers"][name]["bytes"]]
    return [json.loads(line)["timestamp"] for line in committed.decode().splitlines()]


@pytest.fixture
def world(tmp_path: Path) -> tuple[Kernel, Clock, dict[str, str], Path]:
    env = base_env(tmp_path)
    repo = make_repo(tmp_path / "repo", env)
    clock = Clock()
    return Kernel(str(repo), env, default_actor="agent-1", clock=clock), clock, env, repo


def test_a_clock_stepping_back_keeps_every_ledger_in_order(
    world: tuple[Kernel, Clock, dict[str, str], Path],
) -> None:
    from cortex.kernel.steps.evidence import add_evidence, add_note
    from cortex.kernel.steps.open_case import open_case

    kernel, clock, env, repo = world
    task = open_case(kernel, goal="time travel").data["taskId"]
    clock.now += 5
    first = add_evidence(kernel, task, claim="at +5 s").data["evidence"]
    clock.now -= 60  # NTP steps the clock back a minute
    second = add_evidence(kernel, task, claim="at -55 s").data["evidence"]
    # The record answered is the record stored: stamped with the floor, not the clock.
    assert second.timestamp == first.timestamp == format_time(START + 5)
    add_note(kernel, task, text="still in the past")
    clock.now += 120
    add_note(kernel, task, text="back to normal")
    path = case_path(env, task)
    case = json.loads((path / "case.json").read_text())
    for name in ("evidence", "commands", "phases"):
        times = ledger_times(path, name)
        assert times == sorted(times), name
        state = case["ledgers"][name]
        assert state["ordered"] is True
        assert state["last"] == times[-1]
        assert times[-1] <= case["updatedAt"]
    assert case["updatedAt"] == format_time(START + 65)
    audit = Cli(env, repo)("case", "audit", task)
    assert audit.code == 0, audit.stdout


@settings(max_examples=25, deadline=None)
@given(steps=st.lists(st.integers(min_value=-3600_000, max_value=3600_000), max_size=12))
def test_any_sequence_of_clock_jumps_leaves_ordered_ledgers(
    tmp_path_factory: pytest.TempPathFactory, steps: list[int]
) -> None:
    from cortex.kernel.steps.evidence import add_evidence
    from cortex.kernel.steps.open_case import open_case

    tmp = tmp_path_factory.mktemp("jumps")
    env = base_env(tmp)
    clock = Clock()
    kernel = Kernel(str(tmp), env, default_actor="agent-1", clock=clock)
    task = open_case(kernel, goal="jumps").data["taskId"]
    previous = ""
    for step in steps:
        clock.now += step / 1000
        record = add_evidence(kernel, task, claim="x").data["evidence"]
        assert record.timestamp >= previous
        previous = record.timestamp
    path = case_path(env, task)
    for name in ("evidence", "commands", "phases"):
        times = ledger_times(path, name)
        assert times == sorted(times)


def test_audit_catches_a_ledger_that_claims_order_it_does_not_have(cli: Cli) -> None:
    """A line queued past the floor loses the ledger its order; claiming it anyway is caught."""
    task = cli.open()
    cli("case", "note", task, "in order")
    kernel = Kernel(str(cli.cwd), cli.env, default_actor="agent-1")
    store = kernel.writable(task)
    with store.transaction(task, actor="agent-1", operation="case.note") as txn:
        early = Evidence(
            id="ev_01J00000000000000000000000",
            timestamp="2001-01-01T00:00:00.000Z",
            source=Source(tool="test", actor="agent-1"),
            claim="from the past",
        )
        # Fault injection: skip `append`'s floor, as a hand-written line would.
        txn._appends.setdefault("evidence", []).append(early)
    path = case_path(cli.env, task) / "case.json"
    case = json.loads(path.read_text())
    assert case["ledgers"]["evidence"]["ordered"] is False, "the store noticed on its own"
    case["ledgers"]["evidence"]["ordered"] = True  # and now a hand edit claims otherwise
    path.write_bytes(msgspec.json.format(msgspec.json.encode(case), indent=2))
    audit = cli("case", "audit", task)
    assert audit.code == 4
    codes = {f["code"] for f in audit.envelope["data"]["errors"]}
    assert "order" in codes


def test_a_ledger_written_before_the_rule_is_not_claimed_ordered(
    cli: Cli, env: dict[str, str]
) -> None:
    """A case.json without the field reads as unordered, and stays so after new appends.

    The evidence ledger was still empty, so its first line starts it ordered.
    """
    task = cli.open()
    path = case_path(env, task) / "case.json"
    case = json.loads(path.read_text())
    for state in case["ledgers"].values():
        del state["ordered"]
        del state["last"]
    path.write_bytes(msgspec.json.format(msgspec.json.encode(case), indent=2))
    assert cli("case", "note", task, "after the upgrade").code == 0
    case = json.loads(path.read_text())
    ordered = {name: state["ordered"] for name, state in case["ledgers"].items()}
    assert ordered == {"commands": False, "phases": False, "evidence": True}
