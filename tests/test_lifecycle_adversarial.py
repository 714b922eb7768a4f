"""Adversarial tests of the task lifecycle: attacks on its gates, its lease and its decisions.

Each class is one line of attack on a promise of docs/design/lifecycle.md. Tests of attacks
that succeed (real bugs) fail until the bug is fixed; the others pin down attacks that held and
that the rest of the suite does not already cover. Everything runs the real CLI on real files,
in-process or as real processes (tests/children); a pause in a child process is the only fault
injection.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import CHILDREN, Cli, case_path, committed_state
from crash_kit import DEBRIS, run_child

from cortex.cases.bounds import QUESTION_MAX

PAUSE_AFTER_CALL = str(CHILDREN / "pause_after_call.py")
PAUSED = "needs_human_decision"
LOCKS = {".lock", ".store.lock"}
PLAN = (
    "--hypothesis",
    "the callback drops return_to :: a request with return_to still lands on /",
    "--uncertainty",
    "the login link may drop it earlier",
    "--file",
    "app.py",
    "--boundary-reason",
    "the redirect is decided there",
    "--verify",
    "pytest",
)
QUESTION = ("--question", "Ship the fix behind a flag?")
OPTIONS = ("--option", "a=yes|a slower rollout", "--option", "b=no|riskier, but today")


# Helpers -------------------------------------------------------------------------------------


def durable(root: Path) -> dict[str, tuple[int, int, int, int]]:
    """Every file of the store except lock files (a refused writer still records itself) and
    the refusal log (where it counts itself, outside the case)."""
    return committed_state(root, ignore=LOCKS)


def evidence(cli: Cli, task: str, claim: str = "the callback ignores return_to") -> str:
    """Record one piece of evidence; its id."""
    return str(cli("case", "evidence", "add", task, "--claim", claim).data["evidence"]["id"])


def planned(cli: Cli) -> tuple[str, dict[str, Any]]:
    """A change case with a first plan; its id and the plan command's data."""
    task = cli.open()
    evidence(cli, task)
    data: dict[str, Any] = cli("case", "plan", task, *PLAN).data
    return task, data


def changing(cli: Cli, actor: str = "agent-1") -> str:
    """A change case whose lease `actor` holds."""
    task, _ = planned(cli)
    assert cli("case", "begin-change", task, "--actor", actor, "--ttl", "1h").code == 0
    return task


def ask(cli: Cli, task: str, actor: str = "agent-1") -> str:
    """Ask the standard question as `actor`; the decision id."""
    out = cli("case", "decision", "request", task, *QUESTION, *OPTIONS, "--actor", actor)
    return str(out.data["decision"]["id"])


def status(cli: Cli, task: str) -> dict[str, Any]:
    """The data of `case status`."""
    data: dict[str, Any] = cli("case", "status", task).data
    return data


def action_commands(envelope: dict[str, Any]) -> list[str]:
    """The commands an envelope offers as next steps."""
    return [str(action["command"]) for action in envelope.get("actions") or []]


def audit_errors(cli: Cli, task: str) -> list[str]:
    """The error codes `case audit` reports (an empty list: the audit passes)."""
    out = cli("case", "audit", task)
    report = out.envelope["data"]
    codes = [str(e["code"]) for e in report["errors"]]
    assert (out.code == 0) == (not codes), out.stdout
    return codes


# Gates: a closed parent, idempotent retries ------------------------------------------------


class TestChildOpenAgainstAClosingParent:
    """`case open --parent P` checks P once, without P's lock, then writes to P much later."""

    @pytest.mark.process
    def test_a_parent_blocked_during_a_child_open_is_not_written_to(self, cli: Cli) -> None:
        """A block racing a child open waits for it: nothing is written to P after the block.

        The open checks P, creates the child and links it while holding P's lock, so a block
        issued while the open is paused inside that window waits, then closes P last.
        """
        parent = cli.open("the parent task")
        argv = ["case", "open", "a sub-task", "--parent", parent]
        # Pause the child process right after it has read (and accepted) the parent's status.
        proc = subprocess.Popen(
            [
                sys.executable,
                PAUSE_AFTER_CALL,
                "cortex.cases.store:CaseStore.read_case",
                "1",
                str(cli.cwd),
                json.dumps(argv),
            ],
            env=cli.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        assert proc.stdin is not None
        assert proc.stdout.readline() == b"PAUSED\n"
        blocker = subprocess.Popen(
            [sys.executable, "-m", "cortex", "case", "block", parent, "--reason", "given up",
             "--json"],
            cwd=cli.cwd,
            env={**cli.env, "CORTEX_LOCK_TIMEOUT": "60"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        time.sleep(0.3)
        assert blocker.poll() is None, "the block did not wait for the open holding P's lock"
        proc.stdin.write(b"\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, (out, err)
        blocked_out, _ = blocker.communicate(timeout=60)
        assert blocker.returncode == 0, blocked_out
        closed = json.loads(blocked_out)["data"]
        after = status(cli, parent)
        assert after["status"] == "blocked"
        # A terminal case refuses every step: the block is the last commit to P.
        assert after["revision"] == closed["revision"], "a blocked case was written to"
        opened = json.loads(out.splitlines()[-1].removeprefix(b"OUT "))["data"]["taskId"]
        assert [c["taskId"] for c in after["children"]] == [opened]

    def test_a_retried_child_open_returns_the_child_after_the_parent_closed(self, cli: Cli) -> None:
        """The same key again returns the case it created, even once the parent is closed."""
        parent = cli.open("the parent task")
        argv = ["case", "open", "a sub-task", "--parent", parent, "--idempotency-key", "kid-1"]
        child = cli(*argv).data["taskId"]
        assert cli("case", "block", parent, "--reason", "done").code == 0
        # The first answer was lost (a timeout, a crash after the commit): the caller retries.
        retry = cli(*argv)
        assert retry.code == 0, retry.stdout
        assert (retry.data["taskId"], retry.data["created"]) == (child, False)


# Runnable actions ------------------------------------------------------------------------


class TestActionsOfPausedAndClosedCases:
    """The actions of an envelope are the steps allowed now, as commands that work."""

    @pytest.mark.parametrize("command", ["begin-change", "resolve", "plan"])
    def test_a_refusal_while_paused_offers_the_answer(self, cli: Cli, command: str) -> None:
        """Paused, the way on is a person's answer: a refusal must offer it, not only the exits."""
        task, plan = planned(cli)
        assert cli("case", "begin-change", task, "--actor", "agent-1").code == 0
        decision = ask(cli, task)
        argv = {
            "begin-change": ["case", "begin-change", task, "--actor", "agent-1"],
            "resolve": [
                "case",
                "resolve",
                task,
                plan["hypotheses"][0]["id"],
                "--status",
                "rejected",
                "--reason",
                "not it",
            ],
            "plan": ["case", "plan", task, "--hypothesis", "incomplete"],
        }[command]
        out = cli(*argv)
        assert out.code == 5, out.stdout
        offered = action_commands(out.envelope)
        answer = f"cortex case decision answer {task} {decision} "
        assert any(c.startswith(answer) for c in offered), offered

    def test_a_retried_open_of_a_closed_case_offers_only_steps_that_work(self, cli: Cli) -> None:
        """An idempotent open returning a blocked case must not offer `evidence add` (exit 5)."""
        argv = ["case", "open", "Fix the login redirect", "--idempotency-key", "open-1"]
        task = cli(*argv).data["taskId"]
        assert cli("case", "block", task, "--reason", "no longer needed").code == 0
        retry = cli(*argv)
        assert retry.data["status"] == "blocked"
        offered = action_commands(retry.envelope)
        refused = [c for c in offered if cli(*shlex.split(c)[1:]).code == 5]
        assert refused == [], "a closed case is offered steps it refuses"


# Secrets in output -----------------------------------------------------------------------------


class TestRefusalEnvelopesAreRedacted:
    """Success envelopes are redacted on the way out; refusal envelopes must be too."""

    def test_refusal_actions_are_redacted_like_status(self, cli: Cli) -> None:
        """A literal configured after a question was asked: status hides it, a refusal echoes it."""
        literal = "hunter2-prod-7c1e"
        task = cli.open()
        ask_out = cli(
            "case", "decision", "request", task, "--question", f"Use {literal}?", *OPTIONS
        )
        assert ask_out.code == 0
        later = Cli({**cli.env, "CORTEX_REDACT_LITERALS": literal}, cli.cwd)
        shown = later("case", "status", task)
        assert literal not in shown.stdout, "control: status redacts the stored question"
        refused = later("case", "decision", "request", task, "--question", "Another?", *OPTIONS)
        assert refused.code == 5
        assert literal not in refused.stdout, "the refusal's actions echo a configured secret"


# Hypotheses ------------------------------------------------------------------------------------


class TestResolvingHypotheses:
    """`confirmed` needs evidence that confirms; a retired hypothesis is history."""

    def test_a_retired_hypothesis_cannot_be_resolved(self, cli: Cli, state_root: Path) -> None:
        """After a re-plan the old hypotheses are kept as they were: resolving one is exit 5."""
        task, first = planned(cli)
        old = first["hypotheses"][0]["id"]
        replan = cli("case", "plan", task, *PLAN, "--reason", "a new picture")
        assert replan.code == 0
        before = durable(state_root)
        out = cli(
            "case", "resolve", task, old, "--status", "rejected", "--reason", "rewriting history"
        )
        assert out.code == 5, out.stdout
        assert durable(state_root) == before

    def test_the_plans_own_record_does_not_confirm_its_hypothesis(
        self, cli: Cli, state_root: Path
    ) -> None:
        """The plan record restates the hypothesis: citing it as confirmation is circular (5)."""
        task, plan = planned(cli)
        hypothesis = plan["hypotheses"][0]["id"]
        before = durable(state_root)
        out = cli(
            "case",
            "resolve",
            task,
            hypothesis,
            "--status",
            "confirmed",
            "--reason",
            "it is in the plan",
            "--evidence",
            plan["evidenceId"],
        )
        assert out.code == 5, out.stdout
        assert durable(state_root) == before


class TestForgedLifecycleRecords:
    """Records the lifecycle commands write must not be forgeable with `evidence add`."""

    def test_evidence_add_cannot_write_a_plan_record(self, cli: Cli, state_root: Path) -> None:
        """`--kind plan` is the plan command's record (it has the blob): exit 4, nothing written."""
        task, _ = planned(cli)
        before = durable(state_root)
        out = cli(
            "case", "evidence", "add", task, "--kind", "plan", "--claim", "Plan revision 9: 1 h"
        )
        assert out.code == 4, out.stdout
        assert durable(state_root) == before


# Decisions ----------------------------------------------------------------------------------


class TestTheAnswerRecord:
    """The `human_report` record of an answer says what the person chose."""

    def test_a_long_question_does_not_push_the_answer_out_of_the_record(self, cli: Cli) -> None:
        """A question at the size bound: the record still names the chosen option."""
        task = cli.open()
        question = "Which one? " + "x" * (QUESTION_MAX - 20)
        asked = cli(
            "case",
            "decision",
            "request",
            task,
            "--question",
            question,
            "--option",
            "keep=Keep it",
            "--option",
            "drop=Drop it",
        )
        decision = asked.data["decision"]["id"]
        answered = cli(
            "case", "decision", "answer", task, decision, "--answer", "drop", "--responder", "al"
        )
        record_id = answered.data["decision"]["evidenceId"]
        record = cli("case", "read-evidence", task, record_id).data["evidence"]
        assert record["kind"] == "human_report"
        assert "answered drop (Drop it)" in record["claim"], record["claim"][:120]


class TestWhoMayAnswer:
    """An identity may not answer a decision it requested."""

    @pytest.mark.parametrize("spelling", ["AGENT-1", "Agent-1"])
    def test_the_requester_in_other_letter_case_is_still_the_requester(
        self, cli: Cli, state_root: Path, spelling: str
    ) -> None:
        """agent-1 asked: answering as AGENT-1 is the same agent, so exit 5 and nothing written."""
        task = changing(cli)
        decision = ask(cli, task, actor="agent-1")
        before = durable(state_root)
        out = cli(
            "case", "decision", "answer", task, decision, "--answer", "a", "--responder", spelling
        )
        assert out.code == 5, out.stdout
        assert durable(state_root) == before
        assert status(cli, task)["status"] == PAUSED

    @pytest.mark.parametrize(
        "spelling",
        [" agent-1", "agent-1 ", "agent-1\n", "agent\u20111", "\u0430gent-1", "agent-1\u200b"],
        ids=["leading-space", "trailing-space", "newline", "nb-hyphen", "cyrillic-a", "zwsp"],
    )
    def test_whitespace_and_confusable_spellings_are_refused(
        self, cli: Cli, state_root: Path, spelling: str
    ) -> None:
        """Identities are plain ASCII names: padded or look-alike spellings are exit 4."""
        task = changing(cli)
        decision = ask(cli, task, actor="agent-1")
        before = durable(state_root)
        out = cli(
            "case", "decision", "answer", task, decision, "--answer", "a", "--responder", spelling
        )
        assert out.code == 4, out.stdout
        assert out.error_code == "invalid_input"
        assert durable(state_root) == before

    def test_a_decision_of_another_case_cannot_be_answered_here(
        self, cli: Cli, state_root: Path
    ) -> None:
        """A decision id is looked up in the named case only: another case's id is not_found."""
        first, second = changing(cli), changing(cli)
        decision = ask(cli, first)
        ask(cli, second)
        before = durable(state_root)
        out = cli(
            "case", "decision", "answer", second, decision, "--answer", "a", "--responder", "al"
        )
        assert out.code == 3, out.stdout
        assert out.error_code == "not_found"
        assert durable(state_root) == before
        assert status(cli, first)["pendingDecision"]["id"] == decision

    def test_option_order_is_part_of_the_question(self, cli: Cli, state_root: Path) -> None:
        """The same options in another order are not a retry: exit 5, the first stays pending."""
        task = changing(cli)
        decision = ask(cli, task)
        before = durable(state_root)
        swapped = ("--option", OPTIONS[3], "--option", OPTIONS[1])
        out = cli("case", "decision", "request", task, *QUESTION, *swapped)
        assert out.code == 5, out.stdout
        assert durable(state_root) == before
        assert status(cli, task)["pendingDecision"]["id"] == decision


# The pause ------------------------------------------------------------------------------------


class TestOnlyAnAnswerEndsThePause:
    """Every agent command on a paused case leaves it paused on the same decision."""

    def test_no_agent_command_sequence_resumes_the_case(self, cli: Cli) -> None:
        """Evidence, notes, re-plans, resolutions, lease calls, asks and children: still paused."""
        task, plan = planned(cli)
        assert cli("case", "begin-change", task, "--actor", "agent-1", "--ttl", "1h").code == 0
        decision = ask(cli, task)
        hypothesis = plan["hypotheses"][0]["id"]
        attempts = [
            ["case", "evidence", "add", task, "--claim", "more"],
            ["case", "note", task, "carry on"],
            ["case", "plan", task, *PLAN, "--reason", "again", "--actor", "agent-1"],
            ["case", "resolve", task, hypothesis, "--status", "rejected", "--reason", "r"],
            ["case", "begin-change", task, "--actor", "agent-1"],
            ["case", "begin-change", task, "--actor", "agent-2"],
            ["case", "lease", "renew", task, "--actor", "agent-1"],
            ["case", "decision", "request", task, *QUESTION, *OPTIONS, "--actor", "agent-1"],
            ["case", "decision", "request", task, "--question", "Other?", *OPTIONS],
            ["case", "lease", "release", task, "--actor", "agent-1"],
            ["case", "begin-change", task, "--actor", "agent-2"],
            ["case", "open", "a sub-task", "--parent", task],
        ]
        for argv in attempts:
            cli(*argv)
            now = status(cli, task)
            assert (now["status"], now["pausedFrom"]) == (PAUSED, "changing"), argv
            assert now["pendingDecision"]["id"] == decision, argv
        assert audit_errors(cli, task) == []


class TestBoundaryUnderALeaseWhilePaused:
    """Re-planning is allowed while paused; moving the boundary still needs the lease."""

    def test_a_non_holder_cannot_move_the_boundary_of_a_paused_case(
        self, cli: Cli, state_root: Path
    ) -> None:
        """Paused from changing under agent-1's lease: agent-2's new boundary is exit 6."""
        task = changing(cli, "agent-1")
        ask(cli, task)
        moved = [*PLAN[:5], "lib.py", *PLAN[6:]]
        before = durable(state_root)
        out = cli("case", "plan", task, *moved, "--reason", "wider", "--actor", "agent-2")
        assert out.code == 6, out.stdout
        assert out.error_code == "lease_conflict"
        assert "agent-1" in out.envelope["error"]["message"]
        assert durable(state_root) == before
        held = cli("case", "plan", task, *moved, "--reason", "wider", "--actor", "agent-1")
        assert held.data["status"] == PAUSED
        assert held.data["changeBoundary"]["files"] == ["lib.py"]


# Closed cases ---------------------------------------------------------------------------------


class TestClosedCasesStayClosed:
    """No command writes to a blocked or abandoned case (the ones not covered elsewhere)."""

    @pytest.mark.parametrize("close", ["block", "abort"])
    def test_lease_resolve_and_answer_write_nothing(
        self, cli: Cli, state_root: Path, close: str
    ) -> None:
        """renew, release (a no-op), resolve, answering the withdrawn decision: nothing written."""
        task, plan = planned(cli)
        assert cli("case", "begin-change", task, "--actor", "agent-1", "--ttl", "1h").code == 0
        decision = ask(cli, task)
        assert cli("case", close, task, "--reason", "stop").code == 0
        before = durable(state_root)
        hypothesis = plan["hypotheses"][0]["id"]
        outcomes = [
            cli("case", "lease", "renew", task, "--actor", "agent-1").code,
            cli("case", "lease", "release", task, "--actor", "agent-1").code,
            cli("case", "resolve", task, hypothesis, "--status", "rejected", "--reason", "r").code,
            cli(
                "case", "decision", "answer", task, decision, "--answer", "a", "--responder", "al"
            ).code,
            cli("case", "begin-change", task, "--actor", "agent-2").code,
        ]
        assert outcomes == [5, 0, 5, 5, 5]
        assert durable(state_root) == before
        assert audit_errors(cli, task) == []


# Integrity ----------------------------------------------------------------------------------


def _flip_json(path: Path, edit: Any) -> None:
    """Rewrite a pretty-printed JSON snapshot with one field changed (same formatting)."""
    document = json.loads(path.read_bytes())
    edit(document)
    path.write_text(json.dumps(document, indent=2))


def _edit_plan_blob(directory: Path) -> None:
    blob = next((directory / "raw").glob("raw_*.txt"))
    blob.write_bytes(blob.read_bytes().replace(b"pytest", b"nothin"))


def _edit_plan(directory: Path) -> None:
    (directory / "plan.json").write_bytes(
        (directory / "plan.json").read_bytes().replace(b"pytest", b"nothin")
    )


def _confirm_hypothesis(directory: Path) -> None:
    def edit(document: dict[str, Any]) -> None:
        document["hypotheses"][0]["status"] = "confirmed"

    _flip_json(directory / "hypotheses.json", edit)


def _answer_decision(directory: Path) -> None:
    def edit(document: dict[str, Any]) -> None:
        document["decisions"][0]["status"] = "answered"
        document["decisions"][0]["answer"] = "a"

    _flip_json(directory / "decisions.json", edit)


def _resume_case(directory: Path) -> None:
    def edit(document: dict[str, Any]) -> None:
        document["status"] = document["pausedFrom"]
        document["pausedFrom"] = None

    _flip_json(directory / "case.json", edit)


def _drop_pause_line(directory: Path) -> None:
    path = directory / "phases.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))


PARTIAL_EDITS = [
    _edit_plan_blob,
    _edit_plan,
    _confirm_hypothesis,
    _answer_decision,
    _resume_case,
    _drop_pause_line,
]


class TestAuditCatchesPartialLifecycleEdits:
    """A hand edit of one lifecycle file (the rest left alone) fails the audit."""

    @pytest.mark.parametrize("edit", PARTIAL_EDITS, ids=lambda f: f.__name__.strip("_"))
    def test_a_partial_edit_fails_the_audit(self, cli: Cli, edit: Any) -> None:
        """Plan blob, plan.json, hypotheses.json, decisions.json, case.json, phases: exit 4."""
        task = changing(cli)
        ask(cli, task)
        assert audit_errors(cli, task) == []
        edit(case_path(cli.env, task))
        out = cli("case", "audit", task)
        assert out.code == 4, out.stdout
        assert out.error_code == "integrity_error"


# Crashes --------------------------------------------------------------------------------------


CRASH_POINTS = (
    ("txn.staged", 1),
    ("txn.journaled", 1),
    ("ledger.torn_write", 2),
    ("ledger.written", 2),
    ("txn.appended", 1),
    ("txn.published", 1),
    ("snapshot.tmp_written", 2),
    ("snapshot.replaced", 2),
    ("txn.fence", 1),
    ("txn.case_replaced", 1),
)


def _lifecycle_view(cli: Cli, task: str) -> dict[str, Any]:
    now = status(cli, task)
    decisions = cli("case", "decision", "list", task).data["decisions"]
    return {
        "revision": now["revision"],
        "status": now["status"],
        "pausedFrom": now["pausedFrom"],
        "pending": (now["pendingDecision"] or {}).get("id"),
        "lease": now["lease"]["state"],
        "decisions": [(d["id"], d["status"]) for d in decisions],
    }


class TestCrashDuringPauseAndClose:
    """`decision request` and `block` of a paused case, killed anywhere: old or new, whole."""

    @pytest.mark.process
    @pytest.mark.parametrize(("point", "passes"), CRASH_POINTS, ids=[p for p, _ in CRASH_POINTS])
    @pytest.mark.parametrize("scenario", ["request", "block"])
    def test_kill_at_each_pass(self, cli: Cli, scenario: str, point: str, passes: int) -> None:
        """Status, pausedFrom, decision and lease always agree; audit passes; debris is cleaned."""
        for skip in range(passes):
            task = changing(cli)
            if scenario == "request":
                argv = ["case", "decision", "request", task, *QUESTION, *OPTIONS]
            else:
                ask(cli, task)
                argv = ["case", "block", task, "--reason", "stop here"]
            before = _lifecycle_view(cli, task)
            run = run_child(cli.env, cli.cwd, point, skip, [argv])
            assert run.killed, f"{point} (skip {skip}) was never reached"
            seen = _lifecycle_view(cli, task)
            committed = point == "txn.case_replaced" or (point == "snapshot.replaced" and skip == 1)
            if not committed:
                assert seen == before, (point, skip)
            elif scenario == "request":
                assert (seen["status"], seen["pausedFrom"], seen["lease"]) == (
                    PAUSED,
                    "changing",
                    "active",
                )
                assert seen["decisions"] == [(seen["pending"], "pending")]
            else:
                assert (seen["status"], seen["pausedFrom"], seen["pending"]) == (
                    "blocked",
                    "changing",  # where unblock returns: the phase the decision paused
                    None,
                )
                assert seen["lease"] == "released"
                assert seen["decisions"] == [(before["pending"], "withdrawn")]
            assert audit_errors(cli, task) == []
            # The next writer (here a note, refused or not once its recovery ran) cleans up.
            cli("case", "note", task, "after the crash")
            report = cli("case", "audit", task).data
            assert [w for w in report["warnings"] if w["code"] in DEBRIS] == []
            after = _lifecycle_view(cli, task)
            for key in ("status", "pausedFrom", "pending", "lease", "decisions"):
                assert after[key] == seen[key], key
