"""The task lifecycle: the plan gate, re-planning, hypotheses, leases, decisions, closing, children.

Every test drives the real CLI in-process against real files (docs/design/lifecycle.md). "Nothing
written" is checked on the durable state of the store: every file except the `.lock` files, whose
holder metadata a writer records even when its transaction is then refused.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, case_path, committed_state, make_repo, tree_state
from lifecycle_kit import (
    BOUNDARY,
    HYPOTHESIS,
    OPTIONS,
    QUESTION,
    UNCERTAINTY,
    action_commands,
    add_evidence,
    investigating,
    ledger,
    plan_args,
    planned,
    request_decision,
)

from cortex.cases import bounds
from cortex.cases.ids import new_id
from cortex.cases.layout import parse_raw_ref
from cortex.cli.parser import UsageError, parse
from cortex.kernel.kernel import parse_time

LOCKS = {".lock", ".store.lock"}


# Helpers -------------------------------------------------------------------------------------


def durable_state(root: Path) -> dict[str, tuple[int, int, int, int]]:
    """`tree_state` of what a case is: without lock files (a refused writer still records itself
    as lock holder) nor the refusal log (where a refused command counts itself)."""
    return committed_state(root, ignore=LOCKS)


def changing(cli: Cli, actor: str = "agent-1") -> str:
    """A change case whose lease `actor` holds (phase changing)."""
    task = planned(cli)
    assert cli("case", "begin-change", task, "--actor", actor).data["status"] == "changing"
    return task


def succeed(cli: Cli, *args: str) -> Any:
    """Run a command that must succeed; return its data."""
    return cli(*args).data


def status(cli: Cli, task: str) -> dict[str, Any]:
    """The data of `case status`."""
    data: dict[str, Any] = cli("case", "status", task).data
    return data


def case_json(env: dict[str, str], task: str) -> dict[str, Any]:
    """case.json as stored."""
    data: dict[str, Any] = json.loads((case_path(env, task) / "case.json").read_bytes())
    return data


def snapshot(env: dict[str, str], task: str, name: str) -> dict[str, Any]:
    """A stored JSON snapshot such as plan.json."""
    data: dict[str, Any] = json.loads((case_path(env, task) / name).read_bytes())
    return data


def last_phase(env: dict[str, str], task: str) -> tuple[str | None, str]:
    """The last phase line as (from, to)."""
    line = ledger(env, task, "phases")[-1]
    return line["from"], line["to"]


def assert_audit_ok(cli: Cli, task: str) -> None:
    """`cortex case audit` passes."""
    out = cli("case", "audit", task)
    assert out.code == 0, out.stdout
    assert out.data["ok"] is True
    assert out.data["errors"] == []


def with_actor(env: dict[str, str], cwd: Path, actor: str) -> Cli:
    """A CLI whose environment sets CORTEX_ACTOR."""
    return Cli({**env, "CORTEX_ACTOR": actor}, cwd)


# Placeholders in action commands and a plausible value for each.
_PLAUSIBLE = {
    "you": "agent-1",
    "person": "alice",
    "path": "src/auth/callback.py",
    "verifier": "pytest",
}
TASK_ID = re.compile(r"\btask_[0-9A-HJKMNP-TV-Z]{26}\b")
_PLACEHOLDER = re.compile(r"<([^<>]+)>")


def fill(command: str) -> str:
    """Replace each `<...>` placeholder with a plausible value (`<a|b>` becomes `a`)."""

    def value(match: re.Match[str]) -> str:
        inner = match.group(1)
        if "|" in inner:
            return inner.split("|")[0]
        return _PLAUSIBLE.get(inner, "some-value")

    return _PLACEHOLDER.sub(value, command)


def runnable_argv(command: str) -> list[str]:
    """The argv an action command stands for, checked against the command grammar."""
    argv = shlex.split(fill(command))
    assert argv[0] == "cortex", command
    parse(argv[1:])  # raises UsageError when the action is not a valid command line
    return argv[1:]


# The plan gate -------------------------------------------------------------------------------


MISSING_FRAGMENTS = {
    "hypothesis": "at least one --hypothesis",
    "disproof": "a disproof path for hypothesis 1",
    "uncertainty": "--uncertainty",
    "boundary": "a change boundary (--file and/or --symbol)",
    "boundary_reason": "--boundary-reason",
    "verify": "--verify",
}


def _without(piece: str, task: str) -> list[str]:
    """A change plan lacking one piece."""
    args: dict[str, list[str]] = {
        "hypothesis": ["--hypothesis", HYPOTHESIS],
        "uncertainty": list(UNCERTAINTY),
        "boundary": ["--file", "src/auth/callback.py", "--symbol", "resolve_return_url"],
        "boundary_reason": ["--boundary-reason", "the redirect is decided there"],
        "verify": ["--verify", "pytest"],
    }
    if piece == "disproof":
        args["hypothesis"] = ["--hypothesis", "the callback drops return_to"]
    else:
        del args[piece]
    return ["case", "plan", task, *(a for group in args.values() for a in group)]


class TestPlanGate:
    def test_plan_before_any_evidence_is_refused_with_an_evidence_action(
        self, cli: Cli, task: str, state_root: Path
    ) -> None:
        """In orienting a plan is exit 5 `refused`, and the actions offer `evidence add`."""
        assert status(cli, task)["status"] == "orienting"
        before = durable_state(state_root)
        out = cli(*plan_args(task))
        assert out.code == 5
        assert out.error_code == "refused"
        commands = action_commands(out.envelope)
        assert any(c.startswith(f"cortex case evidence add {task} ") for c in commands), commands
        assert durable_state(state_root) == before
        assert status(cli, task)["status"] == "orienting"

    def test_the_offered_evidence_action_really_starts_the_investigation(
        self, cli: Cli, task: str
    ) -> None:
        """Running the refusal's `evidence add` action (filled in) moves the case on."""
        out = cli(*plan_args(task))
        action = next(c for c in action_commands(out.envelope) if " evidence add " in c)
        assert cli(*runnable_argv(action)).code == 0
        assert status(cli, task)["status"] == "investigating"
        assert cli(*plan_args(task)).data["status"] == "planned"

    def test_every_missing_piece_is_named_in_one_message(self, cli: Cli, state_root: Path) -> None:
        """An empty change plan names hypothesis, uncertainty, boundary, reason and verifier."""
        task = investigating(cli)
        before = durable_state(state_root)
        out = cli("case", "plan", task)
        assert out.code == 5
        assert out.error_code == "refused"
        message = out.envelope["error"]["message"]
        for piece, fragment in MISSING_FRAGMENTS.items():
            if piece != "disproof":
                assert fragment in message, (piece, message)
        assert durable_state(state_root) == before
        assert status(cli, task)["status"] == "investigating"

    def test_each_hypothesis_without_a_disproof_is_named(self, cli: Cli) -> None:
        """Hypotheses 2 and 3 lack a disproof path (none, and empty after ' :: '): both named."""
        task = investigating(cli)
        out = cli(
            "case",
            "plan",
            task,
            "--hypothesis",
            HYPOTHESIS,
            "--hypothesis",
            "the link drops it",
            "--hypothesis",
            "the cookie is lost :: ",
            *UNCERTAINTY,
            *BOUNDARY,
        )
        assert out.code == 5
        message = out.envelope["error"]["message"]
        assert "a disproof path for hypothesis 2" in message
        assert "a disproof path for hypothesis 3" in message
        assert "a disproof path for hypothesis 1" not in message

    @pytest.mark.parametrize("piece", sorted(MISSING_FRAGMENTS))
    def test_a_change_plan_lacking_one_piece_names_exactly_that_piece(
        self, cli: Cli, state_root: Path, piece: str
    ) -> None:
        """Dropping one required piece of a change plan is exit 5 naming it and nothing else."""
        task = investigating(cli)
        before = durable_state(state_root)
        out = cli(*_without(piece, task))
        assert out.code == 5, out.stdout
        message = out.envelope["error"]["message"]
        for other, fragment in MISSING_FRAGMENTS.items():
            assert (fragment in message) == (other == piece), (other, message)
        assert durable_state(state_root) == before

    @pytest.mark.parametrize("mode", ["investigate", "review"])
    def test_investigate_and_review_plans_need_no_boundary_or_verifier(
        self, cli: Cli, mode: str
    ) -> None:
        """Without --file/--symbol, --boundary-reason and --verify such a plan is accepted."""
        task = investigating(cli, "--mode", mode)
        empty = cli("case", "plan", task)
        assert empty.code == 5
        message = empty.envelope["error"]["message"]
        assert MISSING_FRAGMENTS["hypothesis"] in message
        assert MISSING_FRAGMENTS["uncertainty"] in message
        for piece in ("boundary", "boundary_reason", "verify"):
            assert MISSING_FRAGMENTS[piece] not in message, message
        out = cli("case", "plan", task, "--hypothesis", HYPOTHESIS, *UNCERTAINTY)
        data = out.data
        assert data["status"] == "planned"
        assert data["verificationRequired"] == []
        assert case_json(cli.env, task)["status"] == "planned"
        assert_audit_ok(cli, task)

    def test_support_naming_evidence_not_in_the_case_is_3(self, cli: Cli, state_root: Path) -> None:
        """A well-formed but absent id, or another case's evidence, is not_found; no write."""
        task = investigating(cli)
        other = cli.open("another task")
        foreign = add_evidence(cli, other)
        before = durable_state(state_root)
        for missing in (new_id("ev"), foreign):
            out = cli(*plan_args(task, "--support", f"1={missing}"))
            assert out.code == 3, out.stdout
            assert out.error_code == "not_found"
            assert missing in out.envelope["error"]["message"]
        assert durable_state(state_root) == before
        assert status(cli, task)["status"] == "investigating"

    @pytest.mark.parametrize(
        "support",
        ["0=EV", "2=EV", "x=EV", "EV", "=EV", "1=ev_not-an-id", "1=EV,ev_bad", "1=TASK"],
    )
    def test_support_with_a_bad_index_or_malformed_id_is_4(
        self, cli: Cli, state_root: Path, support: str
    ) -> None:
        """An index outside 1..N, no index, or an id that is not an evidence id: exit 4."""
        task = investigating(cli)
        evidence = add_evidence(cli, task)
        value = support.replace("EV", evidence).replace("TASK", task)
        before = durable_state(state_root)
        out = cli(*plan_args(task, "--support", value))
        assert out.code == 4, (value, out.stdout)
        assert out.error_code == "invalid_input"
        assert durable_state(state_root) == before

    def test_a_valid_plan_is_committed_whole(self, cli: Cli, env: dict[str, str]) -> None:
        """investigating -> planned; plan.json, hypotheses.json, ids returned; case mirrors it."""
        task = investigating(cli)
        first = add_evidence(cli, task, "the redirect is computed in the callback")
        second = add_evidence(cli, task, "return_to is in the request")
        directory = case_path(env, task)
        assert not (directory / "plan.json").exists()
        assert not (directory / "hypotheses.json").exists()
        revision = status(cli, task)["revision"]
        out = cli(
            "case",
            "plan",
            task,
            "--hypothesis",
            HYPOTHESIS,
            "--hypothesis",
            "the link drops it :: the link carries return_to",
            "--support",
            f"1={first},{second}",
            "--support",
            f"2={second}",
            *UNCERTAINTY,
            *BOUNDARY,
            "--verify",
            "command:unit",
        )
        data = out.data
        assert data["status"] == "planned"
        assert data["planRevision"] == 1
        assert data["revision"] == revision + 1
        ids = [h["id"] for h in data["hypotheses"]]
        assert len(ids) == 2
        assert all(i.startswith("hyp_") for i in ids)
        assert len(set(ids)) == 2
        assert data["hypotheses"][0]["supports"] == [first, second]
        assert data["hypotheses"][1]["supports"] == [second]
        assert data["hypotheses"][0]["disproof"] == "a request with return_to still lands on /"

        plan = snapshot(env, task, "plan.json")
        assert plan["planRevision"] == 1
        assert plan["hypotheses"] == ids
        assert plan["evidenceId"] == data["evidenceId"]
        stored = snapshot(env, task, "hypotheses.json")["hypotheses"]
        assert [h["id"] for h in stored] == ids
        assert all(h["status"] == "open" and h["retired"] is False for h in stored)

        case = case_json(env, task)
        assert case["status"] == "planned"
        assert case["changeBoundary"] == {
            "files": ["src/auth/callback.py"],
            "symbols": ["resolve_return_url"],
            "reason": "the redirect is decided there",
        }
        assert case["changeBoundary"] == plan["changeBoundary"] == data["changeBoundary"]
        assert case["verificationRequired"] == ["pytest", "command:unit"]
        assert case["verificationRequired"] == plan["verificationRequired"]
        assert last_phase(env, task) == ("investigating", "planned")
        assert_audit_ok(cli, task)


# Re-planning ---------------------------------------------------------------------------------


def plan_records(env: dict[str, str], task: str) -> list[dict[str, Any]]:
    """The evidence records of kind `plan`, oldest first."""
    return [record for record in ledger(env, task, "evidence") if record["kind"] == "plan"]


def raw_blob(env: dict[str, str], task: str, raw_ref: str) -> bytes:
    """The bytes of the raw blob a `case://` reference points at."""
    parsed = parse_raw_ref(raw_ref)
    assert parsed is not None, raw_ref
    owner, raw_id = parsed
    assert owner == task
    return (case_path(env, task) / "raw" / f"{raw_id}.txt").read_bytes()


class TestReplan:
    def test_a_replan_needs_a_reason(self, cli: Cli, state_root: Path) -> None:
        """A second plan without --reason is exit 5 naming --reason, and nothing is written."""
        task = planned(cli)
        before = durable_state(state_root)
        out = cli(*plan_args(task))
        assert out.code == 5
        assert out.error_code == "refused"
        message = out.envelope["error"]["message"]
        assert "--reason" in message
        for fragment in MISSING_FRAGMENTS.values():
            assert fragment not in message
        assert durable_state(state_root) == before

    def test_a_replan_in_planned_keeps_planned(self, cli: Cli, env: dict[str, str]) -> None:
        """planRevision goes 1 -> 2 -> 3; the phase stays planned with no new phase line."""
        task = planned(cli)
        phases = len(ledger(env, task, "phases"))
        for expected in (2, 3):
            data = cli(*plan_args(task, "--reason", f"revision {expected}")).data
            assert data["planRevision"] == expected
            assert data["status"] == "planned"
            assert snapshot(env, task, "plan.json")["planRevision"] == expected
            assert status(cli, task)["plan"]["planRevision"] == expected
        assert len(ledger(env, task, "phases")) == phases
        assert_audit_ok(cli, task)

    def test_a_replan_while_changing_stays_changing(self, cli: Cli, env: dict[str, str]) -> None:
        """A new plan revision after begin-change does not undo the change."""
        task = changing(cli, "agent-1")
        data = cli(*plan_args(task, "--reason", "the link drops it too", "--actor", "agent-1")).data
        assert data["status"] == "changing"
        assert data["planRevision"] == 2
        current = status(cli, task)
        assert current["status"] == "changing"
        assert current["lease"]["state"] == "active"
        assert last_phase(env, task) == ("planned", "changing")
        assert_audit_ok(cli, task)

    def test_a_replan_while_paused_keeps_the_pause(self, cli: Cli, env: dict[str, str]) -> None:
        """Paused from planned, a re-plan stays paused; the answer resumes planned."""
        task = planned(cli)
        decision = request_decision(cli, task)["decision"]["id"]
        data = cli(*plan_args(task, "--reason", "the person's choice changes things")).data
        assert data["status"] == "needs_human_decision"
        assert data["planRevision"] == 2
        current = status(cli, task)
        assert current["status"] == "needs_human_decision"
        assert current["pausedFrom"] == "planned"
        assert current["pendingDecision"]["id"] == decision
        answer = cli(
            "case", "decision", "answer", task, decision, "--answer", "safe", "--responder", "alice"
        )
        assert answer.data["status"] == "planned"
        assert_audit_ok(cli, task)
        assert case_json(env, task)["pausedFrom"] is None

    def test_a_first_plan_while_paused_from_investigating_moves_paused_from(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        """A plan from before planned, while paused, sets pausedFrom to planned (no phase line)."""
        task = investigating(cli)
        decision = request_decision(cli, task)["decision"]["id"]
        assert status(cli, task)["pausedFrom"] == "investigating"
        phases = len(ledger(env, task, "phases"))
        data = cli(*plan_args(task)).data
        assert data["status"] == "needs_human_decision"
        assert status(cli, task)["pausedFrom"] == "planned"
        assert len(ledger(env, task, "phases")) == phases
        out = cli(
            "case", "decision", "answer", task, decision, "--answer", "fast", "--responder", "bob"
        )
        assert out.data["status"] == "planned"
        assert last_phase(env, task) == ("needs_human_decision", "planned")
        assert_audit_ok(cli, task)

    def test_a_plan_while_paused_before_any_evidence_is_refused(
        self, cli: Cli, task: str, state_root: Path
    ) -> None:
        """Paused from orienting there is still no evidence: the plan gate must refuse (exit 5)."""
        request_decision(cli, task)
        assert status(cli, task)["pausedFrom"] == "orienting"
        assert status(cli, task)["counts"]["evidence"] == 0
        before = durable_state(state_root)
        out = cli(*plan_args(task))
        assert out.code == 5, out.stdout
        assert durable_state(state_root) == before
        assert status(cli, task)["pausedFrom"] == "orienting"

    def test_previous_hypotheses_are_retired_and_kept(self, cli: Cli, env: dict[str, str]) -> None:
        """A re-plan keeps the old hypotheses, retired, with their status and history."""
        task = investigating(cli)
        evidence = add_evidence(cli, task)
        old = cli(*plan_args(task)).data["hypotheses"][0]["id"]
        succeed(
            cli,
            "case",
            "resolve",
            task,
            old,
            "--status",
            "confirmed",
            "--reason",
            "seen",
            "--evidence",
            evidence,
        )
        new = cli(
            *plan_args(task, "--reason", "a second cause", hypothesis="the link drops it :: x")
        ).data["hypotheses"]
        assert len(new) == 1
        assert new[0]["id"] != old
        assert new[0]["planRevision"] == 2
        stored = {h["id"]: h for h in snapshot(env, task, "hypotheses.json")["hypotheses"]}
        assert set(stored) == {old, new[0]["id"]}
        assert stored[old]["retired"] is True
        assert stored[old]["status"] == "confirmed"
        assert stored[old]["planRevision"] == 1
        assert [e["reason"] for e in stored[old]["history"]] == ["seen"]
        assert stored[new[0]["id"]]["retired"] is False
        unresolved = [h["id"] for h in status(cli, task)["unresolvedHypotheses"]]
        assert unresolved == [new[0]["id"]]
        assert_audit_ok(cli, task)

    def test_every_plan_revision_stays_readable_as_plan_evidence(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        """Each plan is an evidence record of kind plan whose raw blob holds that whole plan."""
        task = investigating(cli)
        statements = ["first cause :: disproof one", "second cause :: disproof two"]
        files = ["src/a.py", "src/b.py"]
        returned = []
        for index, (statement, file) in enumerate(zip(statements, files, strict=True)):
            extra = ("--reason", "the first was wrong") if index else ()
            returned.append(
                cli(
                    "case",
                    "plan",
                    task,
                    "--hypothesis",
                    statement,
                    *UNCERTAINTY,
                    "--file",
                    file,
                    "--boundary-reason",
                    f"reason {index}",
                    "--verify",
                    "pytest",
                    *extra,
                ).data
            )
        records = plan_records(env, task)
        assert [r["id"] for r in records] == [d["evidenceId"] for d in returned]
        for index, (record, data) in enumerate(zip(records, returned, strict=True), 1):
            read = cli("case", "read-evidence", task, record["id"]).data["evidence"]
            assert read["kind"] == "plan"
            assert read["rawRef"] == record["rawRef"]
            blob = raw_blob(env, task, read["rawRef"])
            assert hashlib.sha256(blob).hexdigest() == read["rawSha256"]
            full = json.loads(blob)
            assert full["plan"]["planRevision"] == index
            assert full["plan"]["evidenceId"] == record["id"]
            assert full["plan"]["changeBoundary"]["files"] == [files[index - 1]]
            assert full["plan"]["changeBoundary"]["reason"] == f"reason {index - 1}"
            assert full["plan"]["hypotheses"] == [h["id"] for h in data["hypotheses"]]
            assert [h["statement"] for h in full["hypotheses"]] == [
                statements[index - 1].split(" :: ")[0]
            ]
            assert [h["disproof"] for h in full["hypotheses"]] == [
                statements[index - 1].split(" :: ")[1]
            ]
        assert json.loads(raw_blob(env, task, records[1]["rawRef"]))["plan"]["reason"] == (
            "the first was wrong"
        )
        assert snapshot(env, task, "plan.json")["evidenceId"] == records[-1]["id"]
        assert_audit_ok(cli, task)

    def test_a_boundary_change_under_another_actors_lease_is_6(
        self, cli: Cli, env: dict[str, str], repo: Path, state_root: Path
    ) -> None:
        """Only the lease holder may move the boundary: others get lease_conflict, no write."""
        task = changing(cli, "agent-1")
        holder_expiry = status(cli, task)["lease"]["expiresAt"]
        before = durable_state(state_root)
        moved = ("--reason", "widen it", "--file", "src/auth/session.py")
        for out in (
            cli(*plan_args(task, *moved, "--actor", "agent-2")),
            cli(*plan_args(task, *moved)),  # the default actor, `cli`
            with_actor(env, repo, "agent-3")(*plan_args(task, *moved)),
        ):
            assert out.code == 6, out.stdout
            assert out.error_code == "lease_conflict"
            assert "agent-1" in out.envelope["error"]["message"]
            assert holder_expiry in out.envelope["error"]["message"]
        assert durable_state(state_root) == before
        assert case_json(env, task)["changeBoundary"]["files"] == ["src/auth/callback.py"]

    def test_the_lease_holder_may_change_the_boundary(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        """The holder (by --actor or CORTEX_ACTOR) re-plans a new boundary; case.json follows."""
        task = changing(cli, "agent-1")
        data = cli(
            *plan_args(task, "--reason", "widen", "--file", "src/s.py", "--actor", "agent-1")
        ).data
        assert data["changeBoundary"]["files"] == ["src/auth/callback.py", "src/s.py"]
        assert case_json(env, task)["changeBoundary"]["files"] == [
            "src/auth/callback.py",
            "src/s.py",
        ]
        holder = with_actor(env, repo, "agent-1")
        again = holder(*plan_args(task, "--reason", "narrow", "--file", "src/t.py")).data
        assert again["planRevision"] == 3
        assert case_json(env, task)["changeBoundary"]["files"] == [
            "src/auth/callback.py",
            "src/t.py",
        ]
        assert status(cli, task)["status"] == "changing"
        assert_audit_ok(cli, task)

    def test_a_plan_at_a_stale_revision_is_6(self, cli: Cli, state_root: Path) -> None:
        """--expect-revision makes the plan a compare-and-swap: stale is exit 6, no write."""
        task = investigating(cli)
        revision = status(cli, task)["revision"]
        add_evidence(cli, task)
        before = durable_state(state_root)
        out = cli(*plan_args(task, "--expect-revision", str(revision)))
        assert out.code == 6
        assert out.error_code == "revision_conflict"
        assert durable_state(state_root) == before
        fresh = cli(*plan_args(task, "--expect-revision", str(revision + 1)))
        assert fresh.data["revision"] == revision + 2

    def test_a_replan_keeping_the_boundary_needs_no_lease(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        """Only a boundary change is fenced: the same boundary may be re-planned by anyone."""
        task = changing(cli, "agent-1")
        data = cli(*plan_args(task, "--reason", "new hypothesis", "--actor", "agent-2")).data
        assert data["planRevision"] == 2
        assert case_json(env, task)["changeLease"]["actor"] == "agent-1"


# Hypotheses ----------------------------------------------------------------------------------


class TestResolve:
    def test_confirmed_needs_evidence(self, cli: Cli, state_root: Path) -> None:
        """`confirmed` without --evidence is exit 5, nothing written."""
        task = planned(cli)
        hypothesis = status(cli, task)["unresolvedHypotheses"][0]["id"]
        before = durable_state(state_root)
        out = cli("case", "resolve", task, hypothesis, "--status", "confirmed", "--reason", "yes")
        assert out.code == 5
        assert out.error_code == "refused"
        assert "--evidence" in out.envelope["error"]["message"]
        assert durable_state(state_root) == before

    def test_confirmed_with_absent_evidence_is_3(self, cli: Cli, state_root: Path) -> None:
        """Every cited evidence id must exist in the case."""
        task = planned(cli)
        real = add_evidence(cli, task)
        hypothesis = status(cli, task)["unresolvedHypotheses"][0]["id"]
        missing = new_id("ev")
        before = durable_state(state_root)
        out = cli(
            "case",
            "resolve",
            task,
            hypothesis,
            "--status",
            "confirmed",
            "--reason",
            "yes",
            "--evidence",
            real,
            "--evidence",
            missing,
        )
        assert out.code == 3
        assert out.error_code == "not_found"
        assert missing in out.envelope["error"]["message"]
        assert durable_state(state_root) == before

    def test_an_unknown_hypothesis_is_3(self, cli: Cli, state_root: Path) -> None:
        """A well-formed hypothesis id that is not in the case is not_found."""
        task = planned(cli)
        other = planned(cli)
        foreign = status(cli, other)["unresolvedHypotheses"][0]["id"]
        before = durable_state(state_root)
        for hypothesis in (new_id("hyp"), foreign):
            out = cli("case", "resolve", task, hypothesis, "--status", "rejected", "--reason", "no")
            assert out.code == 3, out.stdout
            assert out.error_code == "not_found"
        assert durable_state(state_root) == before

    def test_resolutions_accumulate_in_the_history(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        """Two resolutions give two history events, each with actor, reason and evidence."""
        task = planned(cli)
        evidence = add_evidence(cli, task, "reproduced with return_to")
        hypothesis = status(cli, task)["unresolvedHypotheses"][0]["id"]
        first = cli(
            "case",
            "resolve",
            task,
            hypothesis,
            "--status",
            "challenged",
            "--reason",
            "not seen",
            "--actor",
            "agent-1",
        ).data
        assert first["hypothesis"]["status"] == "challenged"
        assert [h["id"] for h in status(cli, task)["unresolvedHypotheses"]] == [hypothesis]
        second = with_actor(env, repo, "agent-2")(
            "case",
            "resolve",
            task,
            hypothesis,
            "--status",
            "confirmed",
            "--reason",
            "reproduced",
            "--evidence",
            evidence,
        ).data
        history = second["hypothesis"]["history"]
        assert [(e["status"], e["actor"], e["reason"], e["evidence"]) for e in history] == [
            ("challenged", "agent-1", "not seen", []),
            ("confirmed", "agent-2", "reproduced", [evidence]),
        ]
        assert all(e["at"] for e in history)
        stored = snapshot(env, task, "hypotheses.json")["hypotheses"][0]
        assert stored["status"] == "confirmed"
        assert stored["history"] == history
        assert status(cli, task)["unresolvedHypotheses"] == []
        assert_audit_ok(cli, task)

    @pytest.mark.parametrize("resolution", ["challenged", "rejected"])
    def test_challenged_and_rejected_need_no_evidence(self, cli: Cli, resolution: str) -> None:
        """Only `confirmed` must cite evidence."""
        task = planned(cli)
        hypothesis = status(cli, task)["unresolvedHypotheses"][0]["id"]
        out = cli("case", "resolve", task, hypothesis, "--status", resolution, "--reason", "why")
        assert out.data["hypothesis"]["status"] == resolution
        assert out.data["hypothesis"]["history"][0]["evidence"] == []

    @pytest.mark.parametrize("close", ["block", "abort"])
    def test_resolve_is_refused_in_a_terminal_phase(
        self, cli: Cli, state_root: Path, close: str
    ) -> None:
        """After block or abort no hypothesis may be resolved (exit 5)."""
        task = planned(cli)
        hypothesis = status(cli, task)["unresolvedHypotheses"][0]["id"]
        succeed(cli, "case", close, task, "--reason", "stop")
        before = durable_state(state_root)
        out = cli("case", "resolve", task, hypothesis, "--status", "rejected", "--reason", "no")
        assert out.code == 5
        assert out.error_code == "refused"
        assert durable_state(state_root) == before

    def test_resolve_is_refused_while_a_decision_is_pending(
        self, cli: Cli, state_root: Path
    ) -> None:
        """While paused on a decision, hypotheses wait too (exit 5)."""
        task = planned(cli)
        evidence = add_evidence(cli, task)
        hypothesis = status(cli, task)["unresolvedHypotheses"][0]["id"]
        request_decision(cli, task)
        before = durable_state(state_root)
        out = cli(
            "case",
            "resolve",
            task,
            hypothesis,
            "--status",
            "confirmed",
            "--reason",
            "yes",
            "--evidence",
            evidence,
        )
        assert out.code == 5
        assert out.error_code == "refused"
        assert durable_state(state_root) == before


# Change leases -------------------------------------------------------------------------------


class TestLease:
    def test_begin_change_needs_a_plan(self, cli: Cli, state_root: Path) -> None:
        """From orienting or investigating begin-change is exit 5 with runnable actions."""
        task = cli.open()
        for _ in range(2):
            before = durable_state(state_root)
            out = cli("case", "begin-change", task, "--actor", "agent-1")
            assert out.code == 5
            assert out.error_code == "refused"
            assert action_commands(out.envelope)
            assert durable_state(state_root) == before
            add_evidence(cli, task)
        commands = action_commands(cli("case", "begin-change", task, "--actor", "a").envelope)
        assert any(c.startswith(f"cortex case plan {task} ") for c in commands), commands
        assert status(cli, task)["lease"] is None

    @pytest.mark.parametrize("mode", ["investigate", "review"])
    def test_begin_change_is_for_change_tasks(self, cli: Cli, state_root: Path, mode: str) -> None:
        """An investigate or review task, even planned, cannot take the change lease (exit 5)."""
        task = investigating(cli, "--mode", mode)
        succeed(cli, "case", "plan", task, "--hypothesis", HYPOTHESIS, *UNCERTAINTY)
        before = durable_state(state_root)
        out = cli("case", "begin-change", task, "--actor", "agent-1")
        assert out.code == 5
        assert out.error_code == "refused"
        assert mode in out.envelope["error"]["message"]
        assert durable_state(state_root) == before
        assert status(cli, task)["status"] == "planned"

    def test_begin_change_moves_planned_to_changing(self, cli: Cli, env: dict[str, str]) -> None:
        """The lease is taken by the actor, and the case moves to changing in the same commit."""
        task = planned(cli)
        revision = status(cli, task)["revision"]
        data = cli("case", "begin-change", task, "--actor", "agent-1").data
        assert data["status"] == "changing"
        assert data["result"] == "acquired"
        assert data["revision"] == revision + 1
        assert data["lease"]["actor"] == "agent-1"
        assert data["lease"]["state"] == "active"
        assert data["lease"]["releasedAt"] is None
        assert last_phase(env, task) == ("planned", "changing")
        assert case_json(env, task)["changeLease"]["actor"] == "agent-1"
        current = status(cli, task)
        assert current["lease"]["state"] == "active"
        assert current["lease"]["actor"] == "agent-1"
        assert_audit_ok(cli, task)

    def test_the_same_actor_renews_idempotently(self, cli: Cli, env: dict[str, str]) -> None:
        """begin-change again by the holder moves expiresAt forward and changes no phase."""
        task = changing(cli, "agent-1")
        first = status(cli, task)["lease"]
        phases = len(ledger(env, task, "phases"))
        time.sleep(0.05)
        data = cli("case", "begin-change", task, "--actor", "agent-1").data
        assert data["result"] == "renewed"
        assert data["status"] == "changing"
        assert data["lease"]["expiresAt"] > first["expiresAt"]
        assert data["lease"]["acquiredAt"] == first["acquiredAt"]
        assert len(ledger(env, task, "phases")) == phases
        assert_audit_ok(cli, task)

    def test_another_actor_is_refused_with_owner_and_expiry(
        self, cli: Cli, env: dict[str, str], repo: Path, state_root: Path
    ) -> None:
        """A different actor while the lease is active gets exit 6 naming owner and expiry."""
        task = changing(cli, "agent-1")
        lease = status(cli, task)["lease"]
        before = durable_state(state_root)
        for out in (
            cli("case", "begin-change", task, "--actor", "agent-2"),
            with_actor(env, repo, "agent-3")("case", "begin-change", task),
        ):
            assert out.code == 6
            assert out.error_code == "lease_conflict"
            message = out.envelope["error"]["message"]
            assert "agent-1" in message
            assert lease["expiresAt"] in message
        assert durable_state(state_root) == before
        assert status(cli, task)["lease"] == lease

    @pytest.mark.parametrize(
        "ttl", ["0s", "0", "3601s", "61m", "2h", "abc", "1d", "-5s", "1.5h", ""]
    )
    def test_ttl_out_of_bounds_or_malformed_is_4(
        self, cli: Cli, state_root: Path, ttl: str
    ) -> None:
        """--ttl must be 1 s to 1 h, as 90s, 15m or 1h: anything else is exit 4, no write."""
        task = planned(cli)
        before = durable_state(state_root)
        out = cli("case", "begin-change", task, "--actor", "agent-1", f"--ttl={ttl}")
        assert out.code == 4, out.stdout
        assert out.error_code == "invalid_input"
        assert durable_state(state_root) == before

    @pytest.mark.parametrize(
        ("ttl", "seconds"), [("1s", 1), ("1h", 3600), ("60m", 3600), ("90", 90)]
    )
    def test_ttl_at_the_bounds_is_accepted(self, cli: Cli, ttl: str, seconds: int) -> None:
        """1s and 1h (and the same in other units) are accepted; the expiry is that far away."""
        task = planned(cli)
        lease = cli("case", "begin-change", task, "--actor", "agent-1", "--ttl", ttl).data["lease"]
        span = parse_time(lease["expiresAt"]) - parse_time(lease["acquiredAt"])
        assert abs(span - seconds) < 0.002

    def test_begin_change_without_an_actor_holds_as_the_face_by_its_token(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        """Without --actor or CORTEX_ACTOR the lease is taken as `cli` (issue 29: the MCP server
        acts as `mcp` the same way); the token, not the name, keeps another `cli` out."""
        task = planned(cli)
        assert "CORTEX_ACTOR" not in cli.env
        data = cli("case", "begin-change", task).data
        assert data["lease"]["actor"] == "cli"
        assert data["leaseToken"]
        stranger = Cli({k: v for k, v in env.items() if k != "CORTEX_LEASE_TOKEN"}, repo)
        out = stranger("case", "lease", "renew", task, "--lease-token", "cortex-lease-not-it")
        assert out.code == 6, out.stdout
        assert out.error_code == "lease_conflict"
        assert cli("case", "lease", "release", task).code == 0
        data = with_actor(env, repo, "agent-env")("case", "begin-change", task).data
        assert data["lease"]["actor"] == "agent-env"

    def test_renew_by_a_non_holder_is_6_and_by_the_holder_extends(
        self, cli: Cli, state_root: Path
    ) -> None:
        """`lease renew` is for the holder only."""
        task = changing(cli, "agent-1")
        lease = status(cli, task)["lease"]
        before = durable_state(state_root)
        out = cli("case", "lease", "renew", task, "--actor", "agent-2")
        assert out.code == 6
        assert out.error_code == "lease_conflict"
        assert "agent-1" in out.envelope["error"]["message"]
        assert durable_state(state_root) == before
        data = cli("case", "lease", "renew", task, "--actor", "agent-1", "--ttl", "1h").data
        assert data["result"] == "renewed"
        assert data["lease"]["expiresAt"] > lease["expiresAt"]
        assert data["lease"]["actor"] == "agent-1"
        assert data["status"] == "changing"
        assert status(cli, task)["lease"]["expiresAt"] == data["lease"]["expiresAt"]

    def test_release_is_idempotent_and_keeps_the_record(
        self, cli: Cli, env: dict[str, str], state_root: Path
    ) -> None:
        """The first release sets releasedAt; the second succeeds without a new revision."""
        task = changing(cli, "agent-1")
        other = cli("case", "lease", "release", task, "--actor", "agent-2")
        assert other.code == 6
        assert other.error_code == "lease_conflict"
        first = cli("case", "lease", "release", task, "--actor", "agent-1").data
        assert first["lease"]["state"] == "released"
        assert first["lease"]["releasedAt"] is not None
        before = durable_state(state_root)
        second = cli("case", "lease", "release", task, "--actor", "agent-1")
        assert second.code == 0
        assert second.data["revision"] == first["revision"]
        assert durable_state(state_root) == before
        stored = case_json(env, task)["changeLease"]
        assert stored["actor"] == "agent-1"
        assert stored["releasedAt"] == first["lease"]["releasedAt"]
        current = status(cli, task)
        assert current["lease"]["state"] == "released"
        assert current["status"] == "changing"
        renew = cli("case", "lease", "renew", task, "--actor", "agent-1")
        assert renew.code == 5
        taken = cli("case", "begin-change", task, "--actor", "agent-2").data
        assert taken["result"] == "acquired"
        assert taken["lease"]["actor"] == "agent-2"
        note = ledger(env, task, "commands")[-1]["note"] or ""
        assert "released" in note
        assert "agent-1" in note
        assert_audit_ok(cli, task)

    def test_renew_and_release_without_a_lease(self, cli: Cli, state_root: Path) -> None:
        """With no lease yet, renew is refused (exit 5) and release is a no-op success."""
        task = planned(cli)
        before = durable_state(state_root)
        renew = cli("case", "lease", "renew", task, "--actor", "agent-1")
        assert renew.code == 5
        assert renew.error_code == "refused"
        assert any(" begin-change " in c for c in action_commands(renew.envelope))
        release = cli("case", "lease", "release", task, "--actor", "agent-1")
        assert release.code == 0
        assert release.data["lease"] is None
        assert durable_state(state_root) == before
        assert status(cli, task)["status"] == "planned"

    def test_an_expired_lease_can_be_taken_by_another_actor(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        """After a 1 s lease runs out, another actor acquires it; the old one is noted."""
        task = planned(cli)
        succeed(cli, "case", "begin-change", task, "--actor", "agent-1", "--ttl", "1s")
        time.sleep(1.2)
        assert status(cli, task)["lease"]["state"] == "expired"
        late = cli("case", "lease", "renew", task, "--actor", "agent-1")
        assert late.code == 6
        assert late.error_code == "lease_conflict"
        # An expired lease fences nothing: anyone may move the boundary now.
        moved = cli(
            *plan_args(task, "--reason", "wider", "--file", "src/x.py", "--actor", "agent-3")
        )
        assert moved.data["changeBoundary"]["files"] == ["src/auth/callback.py", "src/x.py"]
        data = cli("case", "begin-change", task, "--actor", "agent-2").data
        assert data["result"] == "acquired"
        assert data["lease"]["actor"] == "agent-2"
        assert data["lease"]["state"] == "active"
        assert data["status"] == "changing"
        note = ledger(env, task, "commands")[-1]["note"] or ""
        assert "agent-1" in note
        assert "expired" in note
        assert_audit_ok(cli, task)

    def test_begin_change_cannot_end_a_pause(
        self, cli: Cli, env: dict[str, str], state_root: Path
    ) -> None:
        """Paused from changing, begin-change by the holder must not resume the case (exit 5)."""
        task = changing(cli, "agent-1")
        decision = request_decision(cli, task)["decision"]["id"]
        assert status(cli, task)["pausedFrom"] == "changing"
        before = durable_state(state_root)
        out = cli("case", "begin-change", task, "--actor", "agent-1")
        assert out.code == 5, out.stdout
        assert durable_state(state_root) == before
        current = status(cli, task)
        assert current["status"] == "needs_human_decision"
        assert current["pendingDecision"]["id"] == decision
        assert case_json(env, task)["pausedFrom"] == "changing"


# Human decisions -----------------------------------------------------------------------------


def _options(count: int) -> list[str]:
    return [f"--option=o{i}=Option {i}|consequence {i}" for i in range(count)]


BAD_REQUESTS: dict[str, list[str]] = {
    "no option": ["--question", "Which?"],
    "one option": ["--question", "Which?", *_options(1)],
    "17 options": ["--question", "Which?", *_options(bounds.OPTIONS_MAX + 1)],
    "duplicate ids": ["--question", "Which?", "--option", "a=A|x", "--option", "a=B|y"],
    "secret id": [
        "--question",
        "Which?",
        "--option",
        "ghp_" + "A1b2C3d4E5" * 3 + "f6G7h8",
        "--option",
        "b=B|y",
    ],
    "secret id with label": [
        "--question",
        "Which?",
        "--option",
        "ghp_" + "A1b2C3d4E5" * 3 + "f6G7h8=Token|x",
        "--option",
        "b=B|y",
    ],
    "long question": ["--question", "q" * (bounds.QUESTION_MAX + 1), *OPTIONS],
    "empty question": ["--question", "  ", *OPTIONS],
    "no =": ["--question", "Which?", "--option", "just-a-label", "--option", "b=B|y"],
}


class TestDecisions:
    @pytest.mark.parametrize("phase", ["orienting", "investigating", "planned", "changing"])
    def test_a_request_pauses_where_the_case_was(
        self, cli: Cli, env: dict[str, str], phase: str
    ) -> None:
        """status becomes needs_human_decision and pausedFrom is the phase it was in."""
        setups: dict[str, Callable[[], str]] = {
            "orienting": cli.open,
            "investigating": lambda: investigating(cli),
            "planned": lambda: planned(cli),
            "changing": lambda: changing(cli),
        }
        task = setups[phase]()
        assert status(cli, task)["status"] == phase
        data = request_decision(cli, task)
        assert data["created"] is True
        assert data["status"] == "needs_human_decision"
        assert data["pausedFrom"] == phase
        decision = data["decision"]
        assert decision["id"].startswith("dec_")
        assert decision["status"] == "pending"
        assert decision["requester"] == "cli"
        assert [o["id"] for o in decision["options"]] == ["safe", "fast"]
        assert decision["options"][0] == {
            "id": "safe",
            "label": "Safe migration",
            "consequence": "slower rollout",
        }
        current = status(cli, task)
        assert current["status"] == "needs_human_decision"
        assert current["pausedFrom"] == phase
        assert current["pendingDecision"]["id"] == decision["id"]
        assert last_phase(env, task) == (phase, "needs_human_decision")
        stored = snapshot(env, task, "decisions.json")["decisions"]
        assert [d["id"] for d in stored] == [decision["id"]]
        assert_audit_ok(cli, task)

    def test_the_same_request_again_coalesces(self, cli: Cli, state_root: Path) -> None:
        """Identical question and options: created false, same id, same revision, no write."""
        task = investigating(cli)
        first = request_decision(cli, task)
        before = durable_state(state_root)
        again = request_decision(cli, task)
        assert again["created"] is False
        assert again["decision"]["id"] == first["decision"]["id"]
        assert again["revision"] == first["revision"]
        assert durable_state(state_root) == before
        assert cli("case", "decision", "list", task).data["total"] == 1

    @pytest.mark.parametrize(
        "different",
        [
            ["--question", "Which database?", *OPTIONS],
            [*QUESTION, "--option", "safe=Safe migration|slower rollout", "--option", "x=X|y"],
            [*QUESTION, *OPTIONS, "--option", "third=Third|z"],
            [*QUESTION, "--option", "safe=Safe migration|faster", "--option", "fast=Fast|riskier"],
        ],
    )
    def test_a_different_request_while_one_is_pending_is_5(
        self, cli: Cli, state_root: Path, different: list[str]
    ) -> None:
        """One decision at a time: exit 5, the actions answer the pending one, nothing written."""
        task = investigating(cli)
        pending = request_decision(cli, task)["decision"]["id"]
        before = durable_state(state_root)
        out = cli("case", "decision", "request", task, *different)
        assert out.code == 5
        assert out.error_code == "refused"
        assert pending in out.envelope["error"]["message"]
        commands = action_commands(out.envelope)
        assert any(f"decision answer {task} {pending}" in c for c in commands), commands
        assert durable_state(state_root) == before

    @pytest.mark.parametrize("name", sorted(BAD_REQUESTS))
    def test_invalid_requests_are_4_and_write_nothing(
        self, cli: Cli, state_root: Path, name: str
    ) -> None:
        """Option count outside 2..16, duplicate or secret ids, an oversize question: exit 4."""
        task = investigating(cli)
        before = durable_state(state_root)
        out = cli("case", "decision", "request", task, *BAD_REQUESTS[name])
        assert out.code == 4, out.stdout
        assert out.error_code == "invalid_input"
        assert "ghp_" not in out.stdout
        assert durable_state(state_root) == before
        assert status(cli, task)["status"] == "investigating"

    def test_a_secret_in_the_question_is_stored_redacted_and_still_coalesces(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        """The stored question has no token; asking the same thing again is the same decision."""
        task = investigating(cli)
        token = "ghp_" + "A1b2C3d4E5" * 3 + "f6G7h8"
        args = ("case", "decision", "request", task, "--question", f"Rotate {token}?", *OPTIONS)
        first = succeed(cli, *args)
        again = succeed(cli, *args)
        assert again["created"] is False
        assert again["decision"]["id"] == first["decision"]["id"]
        stored = (case_path(env, task) / "decisions.json").read_text()
        assert token not in stored
        assert "Rotate" in stored
        assert token not in cli("case", "status", task).stdout

    def test_sixteen_options_and_a_question_at_the_limit_are_accepted(self, cli: Cli) -> None:
        """The bounds themselves are allowed."""
        task = investigating(cli)
        question = "q" * bounds.QUESTION_MAX
        data = cli(
            "case",
            "decision",
            "request",
            task,
            "--question",
            question,
            *_options(bounds.OPTIONS_MAX),
        ).data
        assert len(data["decision"]["options"]) == bounds.OPTIONS_MAX
        assert data["decision"]["question"] == question

    def test_bad_answers_write_nothing(
        self, cli: Cli, env: dict[str, str], repo: Path, state_root: Path
    ) -> None:
        """Unknown option 4, the requester 5, an unknown decision 3: each writes nothing."""
        task = investigating(cli)
        requester = with_actor(env, repo, "agent-7")
        decision = request_decision(requester, task)["decision"]["id"]
        before = durable_state(state_root)
        answer = ("case", "decision", "answer", task)
        cases = [
            (cli(*answer, decision, "--answer", "medium", "--responder", "alice"), 4),
            (cli(*answer, decision, "--answer", "safe", "--responder", "agent-7"), 5),
            (requester(*answer, decision, "--answer", "safe", "--responder", "agent-7"), 5),
            (cli(*answer, new_id("dec"), "--answer", "safe", "--responder", "alice"), 3),
            (cli(*answer, "dec_bad", "--answer", "safe", "--responder", "alice"), 4),
        ]
        for out, code in cases:
            assert out.code == code, out.stdout
        assert cases[0][0].error_code == "invalid_input"
        assert cases[1][0].error_code == "refused"
        assert cases[3][0].error_code == "not_found"
        assert durable_state(state_root) == before
        assert status(cli, task)["pendingDecision"]["id"] == decision

    def test_an_answer_resumes_exactly_where_the_case_paused(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        """The answer marks the decision, adds a human_report record and resumes pausedFrom."""
        task = changing(cli, "agent-1")
        asked = request_decision(cli, task)
        decision = asked["decision"]["id"]
        out = cli(
            "case", "decision", "answer", task, decision, "--answer", "fast", "--responder", "alice"
        )
        data = out.data
        assert data["status"] == "changing"
        assert data["pausedFrom"] is None
        assert data["revision"] == asked["revision"] + 1
        answered = data["decision"]
        assert answered["status"] == "answered"
        assert answered["answer"] == "fast"
        assert answered["responder"] == "alice"
        assert answered["answeredAt"]
        evidence_id = answered["evidenceId"]
        assert evidence_id.startswith("ev_")
        record = cli("case", "read-evidence", task, evidence_id).data["evidence"]
        assert record["kind"] == "human_report"
        assert record["source"]["origin"] == "human"
        assert record["source"]["actor"] == "alice"
        assert decision in record["claim"]
        assert "fast" in record["claim"]
        stored = snapshot(env, task, "decisions.json")["decisions"][0]
        assert stored == answered
        assert last_phase(env, task) == ("needs_human_decision", "changing")
        assert ledger(env, task, "phases")[-1]["actor"] == "alice"
        current = status(cli, task)
        assert current["status"] == "changing"
        assert current["pendingDecision"] is None
        assert current["lease"]["actor"] == "agent-1"
        assert_audit_ok(cli, task)

    def test_answering_twice_is_5_and_writes_nothing(self, cli: Cli, state_root: Path) -> None:
        """Once answered there is nothing pending: a second answer is refused."""
        task = investigating(cli)
        decision = request_decision(cli, task)["decision"]["id"]
        succeed(
            cli,
            "case",
            "decision",
            "answer",
            task,
            decision,
            "--answer",
            "safe",
            "--responder",
            "alice",
        )
        before = durable_state(state_root)
        for option in ("safe", "fast"):
            out = cli(
                "case",
                "decision",
                "answer",
                task,
                decision,
                "--answer",
                option,
                "--responder",
                "bob",
            )
            assert out.code == 5
            assert out.error_code == "refused"
        assert durable_state(state_root) == before
        assert status(cli, task)["status"] == "investigating"

    def test_decision_list_shows_every_decision(self, cli: Cli) -> None:
        """Answered and pending decisions are listed, oldest first."""
        task = investigating(cli)
        first = request_decision(cli, task)["decision"]["id"]
        succeed(
            cli,
            "case",
            "decision",
            "answer",
            task,
            first,
            "--answer",
            "safe",
            "--responder",
            "alice",
        )
        second = cli(
            "case",
            "decision",
            "request",
            task,
            "--question",
            "Ship today?",
            "--option",
            "yes=Yes|now",
            "--option",
            "no=No|later",
        ).data["decision"]["id"]
        listed = cli("case", "decision", "list", task).data
        assert listed["total"] == 2
        assert [d["id"] for d in listed["decisions"]] == [first, second]
        assert [d["status"] for d in listed["decisions"]] == ["answered", "pending"]
        assert listed["pending"]["id"] == second
        empty = cli("case", "decision", "list", cli.open("no decisions")).data
        assert empty["total"] == 0
        assert empty["decisions"] == []
        assert empty["pending"] is None

    def test_evidence_may_be_added_while_paused(self, cli: Cli, env: dict[str, str]) -> None:
        """evidence add and note are allowed while paused and leave the phase alone."""
        task = planned(cli)
        request_decision(cli, task)
        phases = len(ledger(env, task, "phases"))
        succeed(cli, "case", "evidence", "add", task, "--claim", "found while waiting")
        succeed(cli, "case", "note", task, "a note while waiting")
        current = status(cli, task)
        assert current["status"] == "needs_human_decision"
        assert current["pausedFrom"] == "planned"
        assert len(ledger(env, task, "phases")) == phases
        assert_audit_ok(cli, task)


# block and abort -----------------------------------------------------------------------------


CLOSES = [("block", "blocked"), ("abort", "abandoned")]


class TestTerminal:
    @pytest.mark.parametrize(("command", "phase"), CLOSES)
    def test_a_reason_is_required(
        self, cli: Cli, state_root: Path, command: str, phase: str
    ) -> None:
        """Without --reason (or with an empty one) it is exit 4 and nothing is written."""
        task = investigating(cli)
        before = durable_state(state_root)
        for args in ([], ["--reason", "   "]):
            out = cli("case", command, task, *args)
            assert out.code == 4, out.stdout
            assert out.error_code == "invalid_input"
        assert durable_state(state_root) == before
        assert status(cli, task)["status"] != phase

    @pytest.mark.parametrize(("command", "phase"), CLOSES)
    def test_a_closed_case_refuses_every_step(
        self, cli: Cli, env: dict[str, str], state_root: Path, command: str, phase: str
    ) -> None:
        """After block or abort: plan, begin-change, decisions all exit 5.

        Abandoned also refuses evidence, notes and another abort; a blocked case is on hold and
        still takes notes (and may be abandoned), checked after the refusals.
        """
        task = planned(cli)
        data = cli("case", command, task, "--reason", "waiting on the staging database").data
        assert data["status"] == phase
        before = durable_state(state_root)
        attempts = {
            "plan": cli(*plan_args(task, "--reason", "again")),
            "begin-change": cli("case", "begin-change", task, "--actor", "agent-1"),
            "decision request": cli("case", "decision", "request", task, *QUESTION, *OPTIONS),
            "block": cli("case", "block", task, "--reason", "again"),
        }
        if phase == "abandoned":
            attempts["evidence add"] = cli("case", "evidence", "add", task, "--claim", "late")
            attempts["note"] = cli("case", "note", task, "late")
            attempts["abort"] = cli("case", "abort", task, "--reason", "again")
        for name, out in attempts.items():
            assert out.code == 5, (name, out.stdout)
            assert out.error_code == "refused", name
        assert durable_state(state_root) == before
        if phase == "blocked":
            assert cli("case", "note", task, "late").data["evidence"]["kind"] == "note"
            assert cli("case", "evidence", "add", task, "--claim", "late").code == 0
        current = status(cli, task)
        assert current["status"] == phase
        assert current["statusReason"] == "waiting on the staging database"
        assert case_json(env, task)["statusReason"] == "waiting on the staging database"
        assert last_phase(env, task) == ("planned", phase)
        assert ledger(env, task, "phases")[-1]["reason"] == "waiting on the staging database"
        assert_audit_ok(cli, task)

    @pytest.mark.parametrize(("command", "phase"), CLOSES)
    def test_closing_releases_the_lease(
        self, cli: Cli, env: dict[str, str], command: str, phase: str
    ) -> None:
        """An active lease ends released (the record stays) when the case is closed."""
        task = changing(cli, "agent-1")
        succeed(cli, "case", command, task, "--reason", "stop")
        current = status(cli, task)
        assert current["status"] == phase
        assert current["lease"]["state"] == "released"
        assert current["lease"]["actor"] == "agent-1"
        assert case_json(env, task)["changeLease"]["releasedAt"] is not None
        renew = cli("case", "lease", "renew", task, "--actor", "agent-1")
        assert renew.code == 5
        assert_audit_ok(cli, task)

    def test_unblock_returns_to_the_phase_block_announced(self, cli: Cli) -> None:
        """Issue 29: blocked in orienting, a note while blocked, and unblock went elsewhere."""
        task = cli.open("Fix the login redirect")
        blocked = succeed(cli, "case", "block", task, "--reason", "waiting on staging")
        assert blocked["resumesIn"] == "orienting"
        succeed(cli, "case", "note", task, "staging is slow today")
        assert status(cli, task)["pausedFrom"] == "orienting"
        resumed = succeed(cli, "case", "unblock", task, "--reason", "staging is back")
        assert resumed["status"] == blocked["resumesIn"]
        # The investigation starts with the next evidence, as it would have without the hold.
        add_evidence(cli, task)
        assert status(cli, task)["status"] == "investigating"
        assert_audit_ok(cli, task)

    @pytest.mark.parametrize(("command", "phase"), CLOSES)
    def test_closing_withdraws_a_pending_decision(
        self, cli: Cli, env: dict[str, str], command: str, phase: str
    ) -> None:
        """block/abort while paused ends the case and marks the decision withdrawn."""
        task = changing(cli, "agent-1")
        decision = request_decision(cli, task)["decision"]["id"]
        data = cli("case", command, task, "--reason", "nobody will answer").data
        assert data["status"] == phase
        assert data["withdrawnDecision"] == decision
        listed = cli("case", "decision", "list", task).data
        assert listed["pending"] is None
        assert [d["status"] for d in listed["decisions"]] == ["withdrawn"]
        current = status(cli, task)
        assert current["status"] == phase
        # Blocked remembers where the decision paused, for unblock; abandoned is over.
        assert current["pausedFrom"] == ("changing" if phase == "blocked" else None)
        assert current["pendingDecision"] is None
        assert current["lease"]["state"] == "released"
        assert current["statusReason"] == "nobody will answer"
        assert last_phase(env, task) == ("needs_human_decision", phase)
        answer = cli(
            "case", "decision", "answer", task, decision, "--answer", "safe", "--responder", "alice"
        )
        assert answer.code == 5
        assert_audit_ok(cli, task)


# Parent and child ----------------------------------------------------------------------------


class TestParentChild:
    def test_a_child_is_listed_with_its_current_phase(self, cli: Cli, env: dict[str, str]) -> None:
        """P's status lists the child and follows its phase as it moves."""
        parent = investigating(cli)
        child = cli.open("Fix the link too", "--parent", parent)
        assert status(cli, child)["parentTaskId"] == parent
        assert case_json(env, parent)["childTaskIds"] == [child]
        children = status(cli, parent)["children"]
        assert children == [{"taskId": child, "status": "orienting", "goal": "Fix the link too"}]
        add_evidence(cli, child)
        assert status(cli, parent)["children"][0]["status"] == "investigating"
        succeed(cli, "case", "abort", child, "--reason", "duplicate")
        assert status(cli, parent)["children"][0]["status"] == "abandoned"
        assert status(cli, parent)["status"] == "investigating"
        assert_audit_ok(cli, parent)
        assert_audit_ok(cli, child)

    @pytest.mark.parametrize("child_ends", ["abort", "complete"])
    def test_a_parent_cannot_complete_while_a_child_is_open(
        self, cli: Cli, state_root: Path, child_ends: str
    ) -> None:
        """Issue 29: a parent completed while its child was still orienting.

        Refused (exit 5) naming the child and the ways out; a blocked child is still open. Once
        the child is complete or abandoned, the parent completes.
        """

        def finishable(*open_args: str) -> str:
            task = investigating(cli, "--mode", "investigate", *open_args)
            succeed(cli, "case", "plan", task, "--hypothesis", HYPOTHESIS, *UNCERTAINTY)
            assert cli("case", "verify", task).envelope["data"]["status"] == "verifying"
            return task

        def complete(task: str) -> Any:
            return cli(
                "case", "complete", task, "--outcome", "done",
                "--verification-not-possible", "nothing to run",
            )  # fmt: skip

        parent = finishable()
        child = finishable("--parent", parent)
        succeed(cli, "case", "block", child, "--reason", "later")
        before = durable_state(state_root)
        refused = complete(parent)
        assert refused.code == 5, refused.stdout
        assert refused.error_code == "refused"
        message = refused.envelope["error"]["message"]
        assert child in message
        assert "blocked" in message
        commands = action_commands(refused.envelope)
        assert any(c.startswith(f"cortex case abort {child}") for c in commands), commands
        assert durable_state(state_root) == before
        assert status(cli, parent)["status"] == "verifying"
        if child_ends == "abort":
            succeed(cli, "case", "abort", child, "--reason", "not needed")
        else:
            succeed(cli, "case", "unblock", child, "--reason", "now")
            assert complete(child).code == 0
        assert complete(parent).data["status"] == "complete"
        assert_audit_ok(cli, parent)

    @pytest.mark.parametrize("close", ["block", "abort"])
    def test_a_terminal_parent_is_refused(self, cli: Cli, close: str) -> None:
        """Opening under a blocked or abandoned case is exit 5, and no child is created."""
        parent = investigating(cli)
        succeed(cli, "case", close, parent, "--reason", "stop")
        total = cli("case", "list").data["total"]
        out = cli("case", "open", "A child", "--parent", parent)
        assert out.code == 5
        assert out.error_code == "refused"
        assert cli("case", "list").data["total"] == total
        assert status(cli, parent)["children"] == []

    @pytest.mark.parametrize(
        "parent",
        ["task_bad", "../task", "ev_01ARZ3NDEKTSV4RRFFQ69G5FAV", "task_01arz3ndektsv4rrffq69g5fav"],
    )
    def test_a_malformed_parent_is_4(self, cli: Cli, state_root: Path, parent: str) -> None:
        """A parent that is not a task id: exit 4 and nothing written."""
        cli.open("an existing case")
        before = durable_state(state_root)
        out = cli("case", "open", "A child", "--parent", parent)
        assert out.code == 4, out.stdout
        assert out.error_code == "invalid_input"
        assert durable_state(state_root) == before

    def test_an_unknown_parent_is_3(self, cli: Cli, state_root: Path) -> None:
        """A well-formed parent id that exists nowhere: exit 3 and nothing written."""
        cli.open("an existing case")
        before = durable_state(state_root)
        out = cli("case", "open", "A child", "--parent", new_id("task"))
        assert out.code == 3
        assert out.error_code == "not_found"
        assert durable_state(state_root) == before

    def test_a_parent_in_another_workspace_is_refused(
        self, cli: Cli, env: dict[str, str], tmp_path: Path
    ) -> None:
        """P must be in the same store: a parent from another repository opens no child."""
        other_repo = make_repo(tmp_path / "other", env)
        parent = Cli(env, other_repo).open("elsewhere")
        before = tree_state(case_path(env, parent))
        out = cli("case", "open", "A child", "--parent", parent)
        assert out.code == 3, out.stdout
        assert out.error_code == "not_found"
        assert cli("case", "list").data["total"] == 0
        assert tree_state(case_path(env, parent)) == before

    def test_a_retried_child_open_is_listed_once(self, cli: Cli, env: dict[str, str]) -> None:
        """The same idempotency key twice gives one child, linked once."""
        parent = planned(cli)
        args = ("case", "open", "Fix the link", "--parent", parent, "--idempotency-key", "child-1")
        first = cli(*args).data
        second = cli(*args).data
        assert first["taskId"] == second["taskId"]
        assert second["created"] is False
        children = status(cli, parent)["children"]
        assert [c["taskId"] for c in children] == [first["taskId"]]
        assert case_json(env, parent)["childTaskIds"] == [first["taskId"]]
        other = cli.open("Another child", "--parent", parent)
        assert [c["taskId"] for c in status(cli, parent)["children"]] == [first["taskId"], other]
        assert_audit_ok(cli, parent)

    def test_a_paused_parent_still_takes_children(self, cli: Cli) -> None:
        """Only a terminal parent is refused: a paused one is linked and stays paused."""
        parent = planned(cli)
        request_decision(cli, parent)
        child = cli.open("A child while waiting", "--parent", parent)
        current = status(cli, parent)
        assert [c["taskId"] for c in current["children"]] == [child]
        assert current["status"] == "needs_human_decision"
        assert current["pausedFrom"] == "planned"
        assert_audit_ok(cli, parent)


# status and its actions ----------------------------------------------------------------------


class TestStatus:
    def test_status_shows_the_whole_lifecycle_state(self, cli: Cli, env: dict[str, str]) -> None:
        """phase, revision, lease, pending decision, open hypotheses, plan summary and actions."""
        task = investigating(cli)
        plan = cli(
            "case",
            "plan",
            task,
            "--hypothesis",
            HYPOTHESIS,
            "--hypothesis",
            "second :: check",
            *UNCERTAINTY,
            *BOUNDARY,
        ).data
        first, second = (h["id"] for h in plan["hypotheses"])
        succeed(
            cli, "case", "resolve", task, second, "--status", "rejected", "--reason", "ruled out"
        )
        succeed(cli, "case", "begin-change", task, "--actor", "agent-1")
        decision = request_decision(cli, task)["decision"]["id"]
        out = cli("case", "status", task)
        data = out.data
        stored = case_json(env, task)
        assert data["status"] == "needs_human_decision"
        assert data["pausedFrom"] == "changing"
        assert data["revision"] == stored["revision"]
        assert data["lease"]["actor"] == "agent-1"
        assert data["lease"]["state"] == "active"
        assert data["lease"]["expiresAt"] == stored["changeLease"]["expiresAt"]
        assert data["pendingDecision"]["id"] == decision
        assert [h["id"] for h in data["unresolvedHypotheses"]] == [first]
        assert data["plan"]["planRevision"] == 1
        assert data["plan"]["hypotheses"] == 2
        assert data["plan"]["changeBoundary"] == stored["changeBoundary"]
        assert data["plan"]["verificationRequired"] == ["pytest"]
        assert data["plan"]["uncertainty"] == UNCERTAINTY[1]
        assert data["plan"]["evidenceId"] == plan["evidenceId"]
        commands = action_commands(out.envelope)
        assert any(f"decision answer {task} {decision}" in c for c in commands), commands
        assert not any(" begin-change " in c for c in commands), commands

    def test_status_before_a_plan(self, cli: Cli, task: str) -> None:
        """A fresh case has no plan, lease, decision or hypotheses, and offers evidence add."""
        out = cli("case", "status", task)
        data = out.data
        assert data["status"] == "orienting"
        assert data["plan"] is None
        assert data["lease"] is None
        assert data["pendingDecision"] is None
        assert data["unresolvedHypotheses"] == []
        assert data["statusReason"] is None
        assert any(" evidence add " in c for c in action_commands(out.envelope))


def _collect(cli: Cli, env: dict[str, str], repo: Path) -> dict[str, list[str]]:
    """Actions from status, success and refusal envelopes across the lifecycle, by source."""
    found: dict[str, list[str]] = {}

    def keep(label: str, envelope: dict[str, Any]) -> None:
        found[label] = action_commands(envelope)

    def state(label: str, task: str) -> None:
        keep(f"status {label}", cli("case", "status", task).envelope)

    task = cli.open("Fix the login redirect", "--criterion", "c1=return_to is honoured")
    keep("open", cli("case", "open", "another", "--idempotency-key", "k").envelope)
    state("orienting", task)
    keep("plan refused orienting", cli(*plan_args(task)).envelope)
    keep(
        "begin-change refused orienting", cli("case", "begin-change", task, "--actor", "a").envelope
    )
    add_evidence(cli, task)
    state("investigating", task)
    keep("plan missing pieces", cli("case", "plan", task).envelope)
    keep(
        "begin-change refused investigating",
        cli("case", "begin-change", task, "--actor", "a").envelope,
    )
    keep("plan", cli(*plan_args(task)).envelope)
    state("planned", task)
    keep("replan without reason", cli(*plan_args(task)).envelope)
    keep("replan", cli(*plan_args(task, "--reason", "r")).envelope)
    keep("begin-change", cli("case", "begin-change", task, "--actor", "agent-1").envelope)
    state("changing", task)
    keep("begin-change held", cli("case", "begin-change", task, "--actor", "agent-2").envelope)
    keep("renew", cli("case", "lease", "renew", task, "--actor", "agent-1").envelope)
    asked = cli("case", "decision", "request", task, *QUESTION, *OPTIONS).envelope
    keep("decision request", asked)
    decision = asked["data"]["decision"]["id"]
    state("paused", task)
    keep(
        "decision request other",
        cli("case", "decision", "request", task, "--question", "x", *OPTIONS).envelope,
    )
    keep(
        "resolve paused",
        cli(
            "case", "resolve", task, new_id("hyp"), "--status", "rejected", "--reason", "x"
        ).envelope,
    )
    keep(
        "answer by requester",
        cli(
            "case", "decision", "answer", task, decision, "--answer", "safe", "--responder", "cli"
        ).envelope,
    )
    keep(
        "answer",
        cli(
            "case", "decision", "answer", task, decision, "--answer", "safe", "--responder", "alice"
        ).envelope,
    )
    keep(
        "answer again",
        cli(
            "case", "decision", "answer", task, decision, "--answer", "safe", "--responder", "alice"
        ).envelope,
    )
    keep("release", cli("case", "lease", "release", task, "--actor", "agent-1").envelope)
    keep("renew released", cli("case", "lease", "renew", task, "--actor", "agent-1").envelope)
    state("changing released", task)
    keep("block", cli("case", "block", task, "--reason", "waiting").envelope)
    state("blocked", task)
    keep("evidence blocked", cli("case", "evidence", "add", task, "--claim", "x").envelope)
    keep("plan blocked", cli(*plan_args(task, "--reason", "r")).envelope)
    keep("begin-change blocked", cli("case", "begin-change", task, "--actor", "a").envelope)

    review = investigating(cli, "--mode", "investigate")
    keep("plan investigate missing", cli("case", "plan", review).envelope)
    keep(
        "plan investigate",
        cli("case", "plan", review, "--hypothesis", HYPOTHESIS, *UNCERTAINTY).envelope,
    )
    state("investigate planned", review)
    keep("begin-change investigate", cli("case", "begin-change", review, "--actor", "a").envelope)
    paused_early = cli.open("Paused early")
    succeed(
        with_actor(env, repo, "agent-9"),
        "case",
        "decision",
        "request",
        paused_early,
        *QUESTION,
        *OPTIONS,
    )
    state("paused orienting", paused_early)
    aborted = investigating(cli)
    succeed(cli, "case", "abort", aborted, "--reason", "duplicate")
    state("abandoned", aborted)
    keep("child of terminal", cli("case", "open", "child", "--parent", aborted).envelope)
    return found


class TestActionsAreRunnable:
    def test_every_action_parses_as_a_cortex_command(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        """Each action, placeholders filled in, is a command line the parser accepts."""
        found = _collect(cli, env, repo)
        commands = sorted({c for group in found.values() for c in group})
        assert len(commands) >= 10, commands
        failures = []
        for command in commands:
            assert command.startswith("cortex case "), command
            # The case (and any decision) is named literally: it is not left to fill in. (`case
            # trust`, which a plan offers for an unapproved verifier, names the verifier.)
            assert TASK_ID.search(command) or command.startswith("cortex case trust "), command
            try:
                runnable_argv(command)
            except (UsageError, AssertionError) as exc:
                failures.append(f"{command!r}: {exc}")
        assert not failures, "\n".join(failures)
        words = {tuple(parse(runnable_argv(c)).command.words) for c in commands}
        assert {
            ("case", "evidence", "add"),
            ("case", "plan"),
            ("case", "begin-change"),
            ("case", "decision", "request"),
            ("case", "decision", "answer"),
            ("case", "block"),
            ("case", "abort"),
            ("case", "status"),
        } <= words, words
        for label in (
            "status orienting",
            "status investigating",
            "status planned",
            "status changing",
            "status paused",
        ):
            assert found[label], label

    def test_ids_in_actions_are_literal(self, cli: Cli) -> None:
        """The task and decision ids are written out; only free choices are placeholders."""
        task = investigating(cli)
        decision = request_decision(cli, task)["decision"]["id"]
        commands = action_commands(cli("case", "status", task).envelope)
        assert commands
        for command in commands:
            assert f" {task}" in command, command
            assert "<task" not in command.lower()
        answer = next(c for c in commands if " decision answer " in c)
        assert f"decision answer {task} {decision} " in answer
        assert "<safe|fast>" in answer

    def test_the_offered_answer_and_begin_change_actions_work(self, cli: Cli) -> None:
        """Filled in and run, the offered begin-change and decision answer commands succeed."""
        task = planned(cli)
        begin = next(
            c
            for c in action_commands(cli("case", "status", task).envelope)
            if " begin-change " in c
        )
        assert cli(*runnable_argv(begin)).data["status"] == "changing"
        request_decision(cli, task)
        answer = next(
            c
            for c in action_commands(cli("case", "status", task).envelope)
            if " decision answer " in c
        )
        assert cli(*runnable_argv(answer)).data["status"] == "changing"
        assert_audit_ok(cli, task)


# Acceptance criteria -------------------------------------------------------------------------


class TestAcceptanceCriteria:
    def test_criteria_stay_byte_identical_through_the_lifecycle(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        """The criteria given at open are unchanged by evidence, plan, decision, block."""
        task = cli.open(
            "Fix the login redirect",
            "--criterion",
            "c1=a request with return_to lands on return_to",
            "--criterion",
            "c2=unicode stays: é ✓ — «quoted»",
            "--criterion",
            "c3=text with  two  spaces and 'quotes'",
        )

        def criteria() -> bytes:
            """The bytes of case.json's acceptanceCriteria value, as written on disk."""
            raw = (case_path(env, task) / "case.json").read_bytes()
            found = re.search(rb'\n  "acceptanceCriteria": (\[.*?\n  \]),?\n', raw, re.DOTALL)
            assert found is not None, raw
            assert json.loads(found.group(1)) == case_json(env, task)["acceptanceCriteria"]
            return found.group(1)

        original = criteria()
        assert len(json.loads(original)) == 3
        assert json.loads(original)[1]["statement"] == "unicode stays: é ✓ — «quoted»"
        steps: list[Callable[[], object]] = [
            lambda: add_evidence(cli, task),
            lambda: cli(*plan_args(task)).data,
            lambda: cli("case", "begin-change", task, "--actor", "agent-1").data,
            lambda: cli(*plan_args(task, "--reason", "again", "--actor", "agent-1")).data,
            lambda: request_decision(cli, task),
            lambda: (
                cli(
                    "case",
                    "decision",
                    "answer",
                    task,
                    status(cli, task)["pendingDecision"]["id"],
                    "--answer",
                    "safe",
                    "--responder",
                    "alice",
                ).data
            ),
            lambda: request_decision(cli, task),
            lambda: cli("case", "block", task, "--reason", "waiting").data,
        ]
        for step in steps:
            step()
            assert criteria() == original
            assert json.loads(original) == status(cli, task)["acceptanceCriteria"]
        assert status(cli, task)["status"] == "blocked"
        assert_audit_ok(cli, task)
