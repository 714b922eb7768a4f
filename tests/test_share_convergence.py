"""Replicas converge: random interleavings of append, share and fetch on 2 to 5 machines.

Property (docs/design/sharing.md, invariants): once every machine has shared and fetched, every
machine holds the same union of records, each exactly once, every chain verifies (`audit`
passes everywhere), the same state is in force everywhere, and nothing any machine
acknowledged is missing. A push that loses a race (real processes released at one instant)
fetches, merges and wins within the retry bound.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import CHILDREN
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from share_kit import Machine, make_machine, make_remote

from cortex.cases.bounds import SHARE_PUSH_ATTEMPTS

OP = st.tuples(st.sampled_from(["append", "append", "share", "fetch"]), st.integers(0, 4))
OPS = st.lists(OP, min_size=1, max_size=10)


def _world(count: int) -> tuple[Path, list[Machine], str]:
    base = Path(tempfile.mkdtemp(prefix="converge-", dir="/tmp"))
    remote = make_remote(base)
    machines = [make_machine(base, f"m{i}", remote) for i in range(count)]
    task: str = machines[0].ok("case", "open", "Converge")["taskId"]
    machines[0].ok("case", "share", task)
    for machine in machines[1:]:
        machine.ok("case", "fetch", task)
    return base, machines, task


def _run(machines: list[Machine], task: str, ops: list[tuple[str, int]]) -> set[str]:
    appended: set[str] = set()
    for step, (op, who) in enumerate(ops):
        machine = machines[who % len(machines)]
        if op == "append":
            out = machine.ok("case", "evidence", "add", task, "--claim", f"step {step}")
            appended.add(out["evidence"]["id"])
        elif op == "share":
            (case,) = machine.ok("case", "share", task)["cases"]
            assert case["attempts"] <= SHARE_PUSH_ATTEMPTS
        else:
            machine.ok("case", "fetch", task)
    for _ in range(2):  # quiesce: everyone shares, then everyone fetches
        for machine in machines:
            machine.ok("case", "share", task)
        for machine in machines:
            machine.ok("case", "fetch", task)
    return appended


def _check(machines: list[Machine], task: str, appended: set[str]) -> None:
    views = [machine.evidence(task) for machine in machines]
    for view in views:
        assert len(view) == len(set(view)), "a record appears twice"
    assert {frozenset(view) for view in views} == {frozenset(appended)}
    assert len({tuple(view) for view in views}) == 1, "the merged order differs between machines"
    states = set()
    for machine in machines:
        report = machine.ok("case", "audit", task)
        assert report["ok"] is True, report
        status = machine.ok("case", "status", task)
        states.add(json.dumps([status["status"], status["lease"], status["plan"]]))
    assert len(states) == 1, states


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(count=st.integers(2, 5), ops=OPS)
def test_replicas_converge_after_any_interleaving(count: int, ops: list[tuple[str, int]]) -> None:
    base, machines, task = _world(count)
    try:
        appended = _run(machines, task, ops)
        _check(machines, task, appended)
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(count=st.integers(2, 5), ops=st.lists(OP, min_size=5, max_size=40))
def test_replicas_converge_long_campaign(count: int, ops: list[tuple[str, int]]) -> None:
    base, machines, task = _world(count)
    try:
        appended = _run(machines, task, ops)
        _check(machines, task, appended)
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)


GATED = str(CHILDREN / "gated_child.py")


@pytest.mark.process
def test_a_push_that_loses_the_race_merges_and_wins_within_the_bound(tmp_path: Path) -> None:
    remote = make_remote(tmp_path)
    machines = [make_machine(tmp_path, name, remote) for name in ("a", "b", "c")]
    task = machines[0].ok("case", "open", "Race")["taskId"]
    machines[0].ok("case", "share", task)
    for machine in machines[1:]:
        machine.ok("case", "fetch", task)
    mine = {
        m.name: m.ok("case", "evidence", "add", task, "--claim", f"by {m.name}")["evidence"]["id"]
        for m in machines
    }
    gate = tmp_path / "gate"
    children = [
        subprocess.Popen(
            [sys.executable, GATED, str(gate), str(m.repo), json.dumps(["case", "share", task])],
            env=m.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for m in machines
    ]
    for child in children:
        assert child.stdout is not None
        assert child.stdout.readline() == b"READY\n"
    gate.write_text("go")
    results = []
    for child in children:
        out, err = child.communicate(timeout=120)
        envelope = next(line for line in out.decode().splitlines() if line.startswith("OUT "))
        results.append(json.loads(envelope[4:]))
        assert child.returncode == 0, (out, err)
    attempts = [r["data"]["cases"][0]["attempts"] for r in results]
    assert max(attempts) <= SHARE_PUSH_ATTEMPTS
    assert max(attempts) >= 2 or len({r["data"]["cases"][0]["commit"] for r in results}) == 3
    reader = make_machine(tmp_path, "reader", remote)
    reader.ok("case", "fetch", task)
    assert set(mine.values()) <= set(reader.evidence(task))
    assert reader.ok("case", "audit", task)["ok"] is True
