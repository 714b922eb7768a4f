"""Decision history across cases: supersession, rejected alternatives, contests, resolution.

A newer answered decision on the same subject supersedes the older one, which stays readable
and searchable, labelled, and leaves the brief. Evidence or a note contesting an active decision
makes both `[contested]` on every surface (recall, the brief, `decision list`, show, timeline,
handoff) until a person resolves it at a terminal; no agent and no tool can. A crash after a
commit but before the index update leaves the index behind, which recall reports and reindex
repairs, the case untouched.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import CHILDREN, Cli, Outcome, case_path
from crash_kit import watch

WITH_TTY = str(CHILDREN / "with_tty.py")
CALL_CHILD = str(CHILDREN / "call_crash_child.py")


def data(out: Outcome) -> Any:
    assert out.code == 0, (out.stdout, out.stderr)
    return out.data


def decide(cli: Cli, subject: str, answer: str, question: str = "Where do sessions live?") -> str:
    """A case that asks and answers one decision on `subject`; the decision id."""
    task = cli.open(f"Decide {subject} {answer}", "--no-recall")
    asked = cli(
        "case", "decision", "request", task, "--question", question,
        "--option", "redis=Redis|fast", "--option", "pg=Postgres|durable",
        "--option", "memory=In memory|lost on restart", "--subject", subject,
    )  # fmt: skip
    decision: str = data(asked)["decision"]["id"]
    data(cli("case", "decision", "answer", task, decision, "--answer", answer,
             "--responder", "alice"))  # fmt: skip
    return decision


def card(cli: Cli, card_id: str, query: str = "sessions live redis postgres") -> dict[str, Any]:
    answer = data(cli("recall", query, "--limit", "100"))
    found = {c["id"]: c for c in answer["cards"]}
    assert card_id in found, (card_id, list(found))
    result: dict[str, Any] = found[card_id]
    return result


def task_of(cli: Cli, card_id: str) -> str:
    found: str = data(cli("recall", "get", card_id))["records"][0]["card"]["taskId"]
    return found


class TestSupersession:
    def test_a_newer_decision_on_the_subject_supersedes_the_older(self, cli: Cli) -> None:
        older = decide(cli, "Session Store", "redis")
        newer = decide(cli, "session  store", "pg")
        other = decide(cli, "queue", "memory", question="Where do jobs wait?")
        superseded = card(cli, older)
        assert superseded["status"] == "superseded"
        assert superseded["labels"] == [f"(superseded by {newer})"]
        assert card(cli, newer)["status"] == "active"
        assert card(cli, other, "jobs wait")["status"] == "active"
        # Still readable, by search and by id.
        assert data(cli("recall", "get", older))["records"][0]["record"]["answer"] == "redis"
        listed = data(cli("case", "decision", "list", task_of(cli, older)))["decisions"][0]
        assert listed["labels"] == [f"(superseded by {newer})"]
        assert listed["alreadyRejected"] == [
            {"id": "pg", "label": "Postgres"},
            {"id": "memory", "label": "In memory"},
        ]
        text = cli("case", "decision", "list", task_of(cli, older), human=True).stdout
        assert f"(superseded by {newer})" in text
        assert "already rejected: Postgres (pg), In memory (memory)" in text
        # Out of the brief: only the decision in force is offered to the next case.
        brief = data(cli("case", "open", "Where should sessions live"))["brief"]
        ids = [c["id"] for c in brief["cards"]]
        assert newer in ids
        assert older not in ids

    def test_a_superseded_decision_cannot_be_contested(self, cli: Cli) -> None:
        older = decide(cli, "session store", "redis")
        decide(cli, "session store", "pg")
        task = cli.open("Contest it", "--no-recall")
        out = cli("case", "note", task, "redis was fine", "--contests", older)
        assert out.code == 5
        assert "superseded" in out.envelope["error"]["message"]
        assert cli("case", "note", task, "nope", "--contests", "dec_" + "0" * 26).code == 3
        assert cli("case", "note", task, "nope", "--contests", "not-a-decision").code == 4


def resolve_at_terminal(
    env: dict[str, str], repo: Path, task: str, decision: str, answer: str, *extra: str
) -> tuple[Outcome, bytes]:
    """`cortex case decision resolve` with a pseudo-terminal as its controlling terminal."""
    master, slave = os.openpty()
    argv = ["case", "decision", "resolve", task, decision, "--responder", "alice", *extra]
    try:
        proc = subprocess.Popen(
            [sys.executable, WITH_TTY, os.ttyname(slave), sys.executable, "-m", "cortex",
             *argv, "--json"],
            cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        shown, answered = b"", False
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                shown += os.read(master, 4096)
            if not answered and b"to confirm" in shown:
                os.write(master, answer.encode() + b"\n")
                answered = True
        if proc.poll() is None:
            proc.kill()
        stdout, stderr = proc.communicate(timeout=10)
    finally:
        os.close(master)
        os.close(slave)
    return Outcome(proc.returncode, stdout.decode(), stderr.decode()), shown


class TestContests:
    @pytest.fixture
    def contested(self, cli: Cli) -> dict[str, str]:
        decision = decide(cli, "session store", "redis")
        task = cli.open("Sessions vanish after deploys", "--no-recall")
        note = data(cli("case", "note", task, "redis loses sessions on every deploy",
                        "--contests", decision))["evidence"]["id"]  # fmt: skip
        return {"decision": decision, "task": task, "note": note, "owner": task_of(cli, decision)}

    def test_both_sides_are_contested_on_every_surface(
        self, cli: Cli, contested: dict[str, str]
    ) -> None:
        decision, note = contested["decision"], contested["note"]
        assert card(cli, decision)["labels"] == ["[contested]"]
        assert card(cli, decision)["status"] == "active"
        contest = card(cli, note, "redis loses sessions deploy")
        assert (contest["status"], contest["labels"]) == ("contest", ["[contested]"])
        # The brief: the decision and the evidence against it, side by side.
        brief = data(cli("case", "open", "Where do sessions live with redis"))["brief"]
        ids = [c["id"] for c in brief["cards"]]
        assert ids.index(note) == ids.index(decision) + 1
        assert all("[contested]" in c["labels"] for c in brief["cards"][:2])
        # The case that holds the decision, and the one that contests it.
        owner, task = contested["owner"], contested["task"]
        listed = data(cli("case", "decision", "list", owner))["decisions"][0]
        assert listed["labels"] == ["[contested]"]
        shown = data(cli("case", "show", owner))["decisions"][0]
        assert shown["labels"] == ["[contested]"]
        assert "[contested]" in cli("case", "show", owner, human=True).stdout
        timeline = data(cli("case", "timeline", owner, "--kind", "decision"))["entries"]
        assert all(entry["labels"] == ["[contested]"] for entry in timeline)
        entries = data(cli("case", "timeline", task, "--kind", "evidence"))["entries"]
        assert [e["labels"] for e in entries if e["id"] == note] == [["[contested]"]]
        recent = data(cli("case", "show", task))["recent"]["items"]
        assert [i["labels"] for i in recent if i["id"] == note] == [["[contested]"]]
        handoff = data(cli("case", "handoff", owner))
        assert handoff["packet"]["decisions"][0]["labels"] == ["[contested]"]
        assert "- Labels: \\[contested\\]" in handoff["markdown"]
        other = data(cli("case", "handoff", task, "--compact"))["packet"]["evidence"]["records"]
        assert [r["labels"] for r in other if r["id"] == note] == [["[contested]"]]

    @pytest.mark.process
    def test_without_a_terminal_nothing_is_resolved(
        self, cli: Cli, contested: dict[str, str]
    ) -> None:
        owner, decision = contested["owner"], contested["decision"]
        argv = ["case", "decision", "resolve", owner, decision, "--outcome", "upheld",
                "--reason", "fine", "--responder", "alice", "--json"]  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "cortex", *argv],
            cwd=cli.cwd, env=cli.env, input=f"{decision}\n".encode(),
            capture_output=True, timeout=60, start_new_session=True, check=False,
        )  # fmt: skip
        assert done.returncode == 5, done.stdout
        assert "interactive terminal" in json.loads(done.stdout)["error"]["message"]
        assert card(cli, decision)["labels"] == ["[contested]"]
        from cortex.mcp.tools import TOOLS

        assert not any("resolve" in tool.command and "decision" in tool.command for tool in TOOLS)

    @pytest.mark.process
    def test_a_person_upholds_the_decision_at_the_terminal(
        self, cli: Cli, contested: dict[str, str]
    ) -> None:
        owner, decision, note = contested["owner"], contested["decision"], contested["note"]
        # The case holding the decision is closed: a resolution is recorded there all the same.
        data(cli("case", "abort", owner, "--reason", "moved on"))
        refused, _ = resolve_at_terminal(
            cli.env, cli.cwd, owner, decision, "no", "--outcome", "upheld", "--reason", "ok"
        )
        assert refused.code == 5
        assert card(cli, decision)["labels"] == ["[contested]"]
        out, shown = resolve_at_terminal(
            cli.env, cli.cwd, owner, decision, decision, "--outcome", "upheld",
            "--reason", "deploys now drain sessions first",
        )  # fmt: skip
        assert out.code == 0, out.stdout + out.stderr
        assert note.encode() in shown
        resolved = json.loads(out.stdout)["data"]
        assert resolved["contests"] == [note]
        assert card(cli, decision)["labels"] == []
        assert card(cli, decision)["status"] == "active"
        assert card(cli, note, "redis loses sessions deploy")["labels"] == ["(resolved: upheld)"]
        record = resolved["evidence"]
        assert record["resolves"] == {"decision": decision, "outcome": "upheld", "contests": [note]}
        assert record["source"]["origin"] == "human"
        assert data(cli("case", "audit", owner))["ok"] is True
        assert data(cli("case", "status", owner))["status"] == "abandoned"
        # A contest made after the resolution is open again.
        later = cli.open("It happened again", "--no-recall")
        data(cli("case", "note", later, "lost sessions again", "--contests", decision))
        assert card(cli, decision)["labels"] == ["[contested]"]

    @pytest.mark.process
    def test_overturned_leaves_the_brief(self, cli: Cli, contested: dict[str, str]) -> None:
        owner, decision = contested["owner"], contested["decision"]
        out, _ = resolve_at_terminal(
            cli.env, cli.cwd, owner, decision, decision, "--outcome", "overturned",
            "--reason", "redis cannot keep them",
        )  # fmt: skip
        assert out.code == 0, out.stdout + out.stderr
        overturned = card(cli, decision)
        assert overturned["status"] == "overturned"
        assert overturned["labels"] == ["(overturned by alice)"]
        brief = data(cli("case", "open", "Where do sessions live with redis"))["brief"]
        assert decision not in [c["id"] for c in brief["cards"]]
        again, _ = resolve_at_terminal(
            cli.env, cli.cwd, owner, decision, decision, "--outcome", "upheld", "--reason", "x"
        )
        assert again.code == 5, "nothing contests it any more"


@pytest.mark.process
def test_a_crash_after_the_commit_leaves_the_index_behind_and_reindex_repairs_it(
    cli: Cli,
) -> None:
    task = cli.open("Crash between", "--no-recall")
    data(cli("case", "evidence", "add", task, "--claim", "seed", "--confidence", "high"))
    before = data(cli("recall", "seed"))
    assert before["index"]["state"] == "current"
    command = ["case", "evidence", "add", task, "--claim", "lost webhook retries", "--confidence",
               "high"]  # fmt: skip
    argv = [sys.executable, CALL_CHILD, "cortex.kernel.recall:after_commit", "before", "0",
            str(cli.cwd), json.dumps([command])]  # fmt: skip
    run = watch(argv, cli.env)
    assert run.killed
    # The case has the record: the commit happened before the kill.
    status = data(cli("case", "status", task))
    assert status["counts"]["evidence"] == 2
    assert data(cli("case", "audit", task))["ok"] is True
    case_file = (case_path(cli.env, task) / "case.json").read_bytes()
    behind = data(cli("recall", "lost webhook retries"))
    assert behind["index"]["state"] == "behind"
    assert behind["index"]["behindCases"] == [task]
    assert behind["total"] == 0
    assert [a["command"] for a in cli("recall", "webhook").envelope["actions"]] == [
        "cortex recall reindex"
    ]
    repaired = data(cli("recall", "reindex"))
    assert repaired["updated"] == [task]
    after = data(cli("recall", "lost webhook retries"))
    assert after["index"]["state"] == "current"
    assert after["total"] == 1
    assert (case_path(cli.env, task) / "case.json").read_bytes() == case_file
    assert data(cli("recall", "rebuild", "--verify"))["verify"]["previousAgreed"] is True
