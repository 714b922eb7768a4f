"""The task lifecycle under real processes: crashes, lease races, fencing, concurrent decisions.

Every test here runs cortex in separate processes (tests/children): `case plan` and
`decision answer` are SIGKILLed at each crash point of the multi-file commit, two processes race
for the change lease, a lease holder is suspended past its expiry in the middle of a commit, a
person answers while an agent keeps appending, a reader is overtaken by a commit, an agent's
lease call meets a paused case, and bad input goes through `python -m cortex`. The default suite
runs one kill per pass of each point; `pytest -m slow` runs 200 per point.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import CHILDREN, Cli, case_path, committed_state, run_cortex
from crash_kit import DEBRIS, run_child

from cortex.cases.bounds import QUESTION_MAX

pytestmark = pytest.mark.process  # every test here starts Python processes

GATED = str(CHILDREN / "gated_child.py")
WRITER = str(CHILDREN / "writer.py")
PAUSED = "needs_human_decision"
SLOW_RUNS = 200
SECRET = "ghp_" + "a1B2c3D4e5" * 3 + "abcdef"
PLAN_ARGS = (
    "--hypothesis",
    "the redirect drops the query string :: a request with ?next= keeps it",
    "--file",
    "app.py",
    "--boundary-reason",
    "the login handler lives there",
    "--verify",
    "pytest",
    "--uncertainty",
    "whether other routes drop it too",
)
HYPOTHESIS = "the redirect drops the query string"
# The multi-file commit's points. The snapshot points are passed twice: the journal, then
# case.json (the commit point). The ledger points are passed once per ledger appended to.
COMMIT_POINTS = (
    "txn.staged",
    "txn.journaled",
    "ledger.torn_write",
    "ledger.written",
    "txn.appended",
    "txn.published",
    "snapshot.tmp_written",
    "snapshot.replaced",
    "txn.fence",
    "txn.case_replaced",
)
SECOND = "the session cookie path is wrong"
# The scenarios, and how many ledgers each one's command appends to (evidence, phases?,
# commands): a first plan (investigating -> planned), a re-plan that moves the boundary
# (plan.json and hypotheses.json are replaced, so a rollback restores their backups), a first
# plan while a decision is pending (pausedFrom moves, the phase does not) and an answer.
LEDGERS = {"plan": 3, "replan": 2, "plan_paused": 2, "answer": 3}
PLAN_VARIANTS = ("plan", "replan", "plan_paused")


def passes(scenario: str, point: str) -> int:
    """How many times one run of the scenario's command passes through `point`."""
    if point.startswith("ledger."):
        return LEDGERS[scenario]
    return 2 if point.startswith("snapshot.") else 1


def commits(point: str, skip: int) -> bool:
    """Whether a kill at the (skip+1)th pass of `point` comes after the commit point."""
    return point == "txn.case_replaced" or (point == "snapshot.replaced" and skip == 1)


CRASH_CASES = [
    pytest.param(scenario, point, id=f"{scenario}-{point}")
    for scenario in LEDGERS
    for point in COMMIT_POINTS
]
SLOW_CRASH_CASES = [
    pytest.param(command, point, id=f"{command}-{point}")
    for command in ("plan", "answer")
    for point in COMMIT_POINTS
]


# Reading a case ------------------------------------------------------------------------------


def committed_records(cli: Cli, task: str, ledger: str) -> list[dict[str, Any]]:
    """The committed lines of one ledger (up to the length case.json records), decoded."""
    directory = case_path(cli.env, task)
    extents = json.loads((directory / "case.json").read_bytes())["ledgers"]
    length = extents.get(ledger, {}).get("bytes", 0)
    data = (directory / f"{ledger}.jsonl").read_bytes()[:length] if length else b""
    return [json.loads(line) for line in data.splitlines()]


def observe(cli: Cli, task: str) -> dict[str, Any]:
    """What readers see of a case: phase, revision, plan, decisions, lease, records."""
    status = cli("case", "status", task).data
    seen = {
        key: status[key]
        for key in (
            "revision",
            "status",
            "pausedFrom",
            "plan",
            "lease",
            "pendingDecision",
            "counts",
            "unresolvedHypotheses",
            "updatedAt",
        )
    }
    seen["decisions"] = cli("case", "decision", "list", task).data["decisions"]
    seen["evidence"] = [(r["id"], r["kind"]) for r in committed_records(cli, task, "evidence")]
    seen["phases"] = [(r["from"], r["to"]) for r in committed_records(cli, task, "phases")]
    return seen


def audit(cli: Cli, task: str) -> dict[str, Any]:
    """`case audit`, which must pass (exit 0)."""
    out = cli("case", "audit", task)
    assert out.code == 0, out.stdout
    report: dict[str, Any] = out.data
    assert report["ok"] is True, report
    return report


def case_files(cli: Cli, task: str) -> dict[str, tuple[int, int, int, int]]:
    """The case directory's files, except the lock (each holder rewrites its diagnostics) and
    the refusal log (where a refused command counts itself, outside the case)."""
    return committed_state(case_path(cli.env, task), ignore={".lock"})


def unlocked_tree(root: Path) -> dict[str, tuple[int, int, int, int]]:
    """`committed_state`, except the size and time of lock files (each holder rewrites its
    diagnostics).

    The lock file's inode and mode still count: it is never replaced or unlinked.
    """
    state = committed_state(root)
    for name, (_, _, inode, mode) in state.items():
        if os.path.basename(name) == ".lock":
            state[name] = (0, 0, inode, mode)
    return state


def phase_chain_ok(cli: Cli, task: str, status: str) -> None:
    """phases.jsonl continues from line to line and ends in the case's status."""
    lines = committed_records(cli, task, "phases")
    for previous, line in itertools.pairwise(lines):
        assert line["from"] == previous["to"], lines
    assert lines[-1]["to"] == status


def stamp(text: str) -> float:
    """An envelope timestamp as POSIX seconds."""
    return datetime.fromisoformat(text).timestamp()


# Building cases ------------------------------------------------------------------------------


def investigating(cli: Cli) -> tuple[str, str]:
    """A change case with one evidence record (so: investigating); its id and the evidence id."""
    task = cli.open()
    out = cli("case", "evidence", "add", task, "--claim", "the redirect loses ?next=")
    return task, str(out.data["evidence"]["id"])


def plan_argv(task: str, evidence: str, *extra: str) -> list[str]:
    """A complete `case plan` command line for a change case."""
    return ["case", "plan", task, *PLAN_ARGS, "--support", f"1={evidence}", *extra]


def request(cli: Cli, task: str) -> str:
    """Ask a decision as the agent; returns its id."""
    out = cli(
        "case",
        "decision",
        "request",
        task,
        "--question",
        "Ship the fix behind a flag?",
        "--option",
        "a=yes|a slower rollout",
        "--option",
        "b=no|riskier, but today",
        "--actor",
        "agent",
    )
    return str(out.data["decision"]["id"])


def prepare(cli: Cli, scenario: str) -> tuple[str, list[str]]:
    """A fresh case for a crash scenario and the command the child will run on it."""
    task, evidence = investigating(cli)
    if scenario == "plan":
        return task, plan_argv(task, evidence)
    if scenario == "plan_paused":
        # A plan while a decision is pending moves pausedFrom, not the phase.
        request(cli, task)
        return task, plan_argv(task, evidence)
    if scenario == "replan":
        assert cli(*plan_argv(task, evidence)).code == 0
        second = ("--hypothesis", f"{SECOND} :: the cookie is set for /", "--file", "lib.py")
        return task, plan_argv(task, evidence, *second, "--reason", "the cookie too")
    # answer: the case paused while changing, under a lease.
    assert cli(*plan_argv(task, evidence)).code == 0
    assert cli("case", "begin-change", task, "--actor", "agent", "--ttl", "1h").code == 0
    decision = request(cli, task)
    answer = ["case", "decision", "answer", task, decision, "--answer", "b"]
    return task, [*answer, "--responder", "al"]


# Checking a crashed case -----------------------------------------------------------------------


def check_committed(cli: Cli, task: str, scenario: str, before: dict[str, Any], seen: Any) -> None:
    """The command's whole effect is visible, and nothing else changed."""
    assert seen["revision"] == before["revision"] + 1
    assert seen["evidence"][: len(before["evidence"])] == before["evidence"]
    new = seen["evidence"][len(before["evidence"]) :]
    assert len(new) == 1, new
    new_id, kind = new[0]
    added_phases = seen["phases"][len(before["phases"]) :]
    assert seen["phases"][: len(before["phases"])] == before["phases"]
    counts = before["counts"]
    assert seen["counts"] == {
        "evidence": counts["evidence"] + 1,
        "commands": counts["commands"] + 1,
        "phases": counts["phases"] + len(added_phases),
    }
    assert seen["lease"] == before["lease"]
    if scenario in PLAN_VARIANTS:
        assert kind == "plan"
        plan = seen["plan"]
        replan = scenario == "replan"
        assert plan["planRevision"] == (2 if replan else 1)
        assert plan["evidenceId"] == new_id, "the plan names an evidence record it lacks"
        assert plan["changeBoundary"]["files"] == (["app.py", "lib.py"] if replan else ["app.py"])
        assert plan["verificationRequired"] == ["pytest"]
        hypotheses = seen["unresolvedHypotheses"]
        assert [h["statement"] for h in hypotheses] == [HYPOTHESIS, *([SECOND] if replan else [])]
        # A re-plan retires the old hypotheses: only the new ones are unresolved.
        assert not {h["id"] for h in hypotheses} & {h["id"] for h in before["unresolvedHypotheses"]}
        assert seen["decisions"] == before["decisions"]
        assert seen["pendingDecision"] == before["pendingDecision"]
        record = cli("case", "read-evidence", task, new_id).data["evidence"]
        blob = case_path(cli.env, task) / "raw" / (record["rawRef"].rsplit("/", 1)[1] + ".txt")
        assert hashlib.sha256(blob.read_bytes()).hexdigest() == record["rawSha256"]
        assert json.loads(blob.read_bytes())["plan"]["evidenceId"] == new_id
        if scenario in {"plan", "replan"}:
            assert (seen["status"], seen["pausedFrom"]) == ("planned", None)
            assert added_phases == ([] if replan else [("investigating", "planned")])
        else:
            assert (seen["status"], seen["pausedFrom"]) == (PAUSED, "planned")
            assert added_phases == []
    else:
        assert kind == "human_report"
        assert (seen["status"], seen["pausedFrom"]) == ("changing", None)
        assert added_phases == [(PAUSED, "changing")]
        assert seen["pendingDecision"] is None
        assert seen["plan"] == before["plan"]
        assert seen["unresolvedHypotheses"] == before["unresolvedHypotheses"]
        (decision,) = seen["decisions"]
        (asked,) = before["decisions"]
        # What an answer sets, and what follows from it (the options it did not choose).
        answered = {"status", "answer", "responder", "answeredAt", "evidenceId", "alreadyRejected"}
        answered |= {"answeredVia", "unattended"}  # how the answer arrived (issue 19)
        assert {k: v for k, v in decision.items() if k not in answered} == {
            k: v for k, v in asked.items() if k not in answered
        }
        assert (decision["status"], decision["answer"], decision["responder"]) == (
            "answered",
            "b",
            "al",
        )
        assert decision["evidenceId"] == new_id, "the answer names an evidence record it lacks"


def crash_once(cli: Cli, scenario: str, point: str, skip: int) -> None:
    """Kill the scenario's command at one pass of one point and check everything after."""
    task, argv = prepare(cli, scenario)
    before = observe(cli, task)
    run = run_child(cli.env, cli.cwd, point, skip, [argv])
    assert run.killed, f"{scenario}: {point} (skip {skip}) was never reached"
    assert run.acked == []
    seen = observe(cli, task)
    if commits(point, skip):
        check_committed(cli, task, scenario, before, seen)
    else:
        assert seen == before, f"{scenario} killed at {point} before its commit point"
    audit(cli, task)
    # The next writer finishes or rolls back, and keeps the outcome readers already saw.
    assert cli("case", "note", task, "after the crash").code == 0
    again = observe(cli, task)
    for key in ("status", "pausedFrom", "plan", "pendingDecision", "decisions", "lease"):
        assert again[key] == seen[key], key
    assert again["unresolvedHypotheses"] == seen["unresolvedHypotheses"]
    assert again["revision"] == seen["revision"] + 1
    assert again["evidence"][: len(seen["evidence"])] == seen["evidence"]
    leftovers = [w for w in audit(cli, task)["warnings"] if w["code"] in DEBRIS]
    assert leftovers == [], leftovers
    phase_chain_ok(cli, task, again["status"])


class TestCrashDuringLifecycleCommits:
    """`case plan` and `decision answer` killed at each point leave the before or the after."""

    @pytest.mark.parametrize(("scenario", "point"), CRASH_CASES)
    def test_kill_at_each_pass(self, cli: Cli, scenario: str, point: str) -> None:
        """One kill at every pass of the point: old or whole new state, audit and cleanup pass."""
        for skip in range(passes(scenario, point)):
            crash_once(cli, scenario, point, skip)

    @pytest.mark.slow
    @pytest.mark.parametrize(("command", "point"), SLOW_CRASH_CASES)
    def test_kill_campaign(self, cli: Cli, command: str, point: str) -> None:
        """200 kills per point, rotating over the plan variants and each point's passes."""
        variants = PLAN_VARIANTS if command == "plan" else (command,)
        for run in range(SLOW_RUNS):
            scenario = variants[run % len(variants)]
            skip = (run // len(variants)) % passes(scenario, point)
            crash_once(cli, scenario, point, skip)


# Gated children --------------------------------------------------------------------------------


@dataclass
class Finished:
    """How a gated child ended."""

    code: int
    envelope: dict[str, Any]
    go: float | None
    stderr: str


def spawn_gated(
    cli: Cli,
    gate: Path,
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    point: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start gated_child.py and wait until it is ready to run the moment `gate` appears."""
    args = [sys.executable, GATED, str(gate), str(cli.cwd), json.dumps(argv)]
    if point is not None:
        args += [point, "0"]
    proc = subprocess.Popen(
        args, env=env or cli.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line != b"READY\n":
        proc.kill()
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"gated child did not start: {line!r} {err.decode()}")
    return proc


def finish(proc: subprocess.Popen[bytes], timeout: float = 120) -> Finished:
    """Wait for a gated child; its exit status, envelope and start time."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate(timeout=30)
        raise
    lines = out.decode().splitlines()
    go = [float(line[3:]) for line in lines if line.startswith("GO ")]
    envelopes = [line[4:] for line in lines if line.startswith("OUT ")]
    assert len(envelopes) == 1, (out, err)
    return Finished(
        code=proc.returncode,
        envelope=json.loads(envelopes[0]),
        go=go[0] if go else None,
        stderr=err.decode(),
    )


def process_state(pid: int) -> str:
    """The one-letter state of a process (`T` when stopped), from /proc/<pid>/stat."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text.rsplit(")", 1)[1].split()[0]


def wait_stopped(proc: subprocess.Popen[bytes], point: str) -> None:
    """Wait until the child has reported `point` and is stopped by its own SIGSTOP."""
    assert proc.stdout is not None
    lines = []
    while True:
        line = proc.stdout.readline()
        lines.append(line)
        if line == f"STOPPED {point}\n".encode():
            break
        if not line or line.startswith(b"OUT "):
            pytest.fail(f"the child never reached {point}: {lines}")
    deadline = time.monotonic() + 30
    while process_state(proc.pid) != "T":
        assert time.monotonic() < deadline, "the child reported the point but never stopped"
        time.sleep(0.001)


# Lease races -----------------------------------------------------------------------------------


class TestBeginChangeRace:
    """Two processes take the change lease at the same instant: exactly one gets it."""

    def test_exactly_one_of_two_racing_actors_wins(self, cli: Cli, tmp_path: Path) -> None:
        """20 races on fresh planned cases: one exit 0, one lease_conflict naming the winner."""
        env = {**cli.env, "CORTEX_LOCK_TIMEOUT": "120"}
        skews = []
        winners = set()
        for rep in range(20):
            task, evidence = investigating(cli)
            assert cli(*plan_argv(task, evidence)).code == 0
            before = observe(cli, task)
            gate = tmp_path / f"gate-{rep}"
            procs = {
                actor: spawn_gated(
                    cli,
                    gate,
                    ["case", "begin-change", task, "--actor", actor, "--ttl", "10m"],
                    env=env,
                )
                for actor in ("alice", "bob")
            }
            gate.touch()
            done = {actor: finish(proc) for actor, proc in procs.items()}
            for result in done.values():
                assert "Traceback" not in result.stderr, result.stderr
            won = [actor for actor, result in done.items() if result.code == 0]
            assert len(won) == 1, {a: (r.code, r.envelope) for a, r in done.items()}
            (winner,) = won
            (loser,) = {"alice", "bob"} - {winner}
            winners.add(winner)
            lost = done[loser]
            assert lost.code == 6, lost.envelope
            assert lost.envelope["ok"] is False
            assert lost.envelope["error"]["code"] == "lease_conflict"
            assert winner in lost.envelope["error"]["message"]
            assert done[winner].envelope["data"]["lease"]["actor"] == winner
            go = [r.go for r in done.values() if r.go is not None]
            assert len(go) == 2
            skews.append(abs(go[0] - go[1]))

            after = observe(cli, task)
            assert after["lease"]["actor"] == winner
            assert after["lease"]["state"] == "active"
            assert after["status"] == "changing"
            assert after["revision"] == before["revision"] + 1, "the loser committed something"
            assert after["phases"] == [*before["phases"], ("planned", "changing")]
            operations = [r["operation"] for r in committed_records(cli, task, "commands")]
            assert operations.count("case.begin-change") == 1
            assert audit(cli, task)["warnings"] == []
        # The barrier must really release both at once, or the test proves nothing.
        assert min(skews) < 0.02, skews


# Fencing ---------------------------------------------------------------------------------------


def fenced_replan(cli: Cli, tmp_path: Path, *, pause: float) -> dict[str, Any]:
    """Re-plan the boundary as lease holder alice, suspended at txn.fence for `pause` seconds.

    The child is started and imported first, so the lease (1 s) is taken only just before it
    runs; it stops itself at the fence point while holding the case lock and the lease.
    """
    task, evidence = investigating(cli)
    assert cli(*plan_argv(task, evidence)).code == 0
    gate = tmp_path / "gate"
    argv = plan_argv(task, evidence, "--file", "lib.py", "--reason", "x", "--actor", "alice")
    proc = spawn_gated(cli, gate, argv, point="txn.fence")
    lease = cli("case", "begin-change", task, "--actor", "alice", "--ttl", "1s").data["lease"]
    before = observe(cli, task)
    files = case_files(cli, task)
    gate.touch()
    wait_stopped(proc, "txn.fence")
    if pause:
        time.sleep(pause)
    resumed = time.time()
    os.kill(proc.pid, signal.SIGCONT)
    result = finish(proc)
    assert "Traceback" not in result.stderr, result.stderr
    return {
        "task": task,
        "result": result,
        "before": before,
        "files": files,
        "expires": stamp(lease["expiresAt"]),
        "resumed": resumed,
    }


class TestFencing:
    """A lease holder suspended past its expiry mid-commit cannot commit when it resumes."""

    def test_holder_stopped_past_expiry_cannot_commit(self, cli: Cli, tmp_path: Path) -> None:
        """SIGSTOP at txn.fence, 1.5 s > TTL, SIGCONT: exit 6 lease_conflict, nothing written."""
        run = fenced_replan(cli, tmp_path, pause=1.5)
        task, result, before = run["task"], run["result"], run["before"]
        assert run["resumed"] > run["expires"]
        assert result.code == 6, result.envelope
        assert result.envelope["ok"] is False
        assert result.envelope["error"]["code"] == "lease_conflict"
        after = observe(cli, task)
        assert after["lease"].pop("state") == "expired"
        assert before["lease"].pop("state") == "active"
        assert after == before, "revision, plan or records changed"
        assert after["plan"]["changeBoundary"]["files"] == ["app.py"]
        assert case_files(cli, task) == run["files"], "a fenced-out commit wrote something"
        assert audit(cli, task)["warnings"] == []

    def test_holder_resumed_before_expiry_commits(self, cli: Cli, tmp_path: Path) -> None:
        """The control: the same stop, resumed at once, commits the new boundary."""
        run = fenced_replan(cli, tmp_path, pause=0)
        task, result, before = run["task"], run["result"], run["before"]
        assert run["resumed"] < run["expires"], "too slow a machine: resumed after the TTL"
        assert result.code == 0, result.envelope
        after = observe(cli, task)
        assert after["revision"] == before["revision"] + 1
        assert after["plan"]["planRevision"] == 2
        assert after["plan"]["changeBoundary"]["files"] == ["app.py", "lib.py"]
        assert after["status"] == "changing"
        assert audit(cli, task)["warnings"] == []

    def test_renew_stopped_past_expiry_cannot_commit(self, cli: Cli, tmp_path: Path) -> None:
        """`lease renew` needs an active lease: suspended past expiry, it must not revive it."""
        task, evidence = investigating(cli)
        assert cli(*plan_argv(task, evidence)).code == 0
        gate = tmp_path / "gate"
        renew = ["case", "lease", "renew", task, "--actor", "alice", "--ttl", "1h"]
        proc = spawn_gated(cli, gate, renew, point="txn.fence")
        lease = cli("case", "begin-change", task, "--actor", "alice", "--ttl", "1s").data["lease"]
        before = observe(cli, task)
        gate.touch()
        wait_stopped(proc, "txn.fence")
        time.sleep(1.5)
        assert time.time() > stamp(lease["expiresAt"])
        os.kill(proc.pid, signal.SIGCONT)
        result = finish(proc)
        after = observe(cli, task)
        assert (result.code, after["revision"]) == (6, before["revision"]), (
            f"a renew suspended past the lease's expiry committed: {result.envelope}"
        )
        assert result.envelope["error"]["code"] == "lease_conflict"
        assert after["lease"]["state"] == "expired"


# A decision answered during appends --------------------------------------------------------------


def wait_for_evidence(cli: Cli, task: str, count: int) -> None:
    """Poll (lock-free) until the case has at least `count` evidence records."""
    deadline = time.monotonic() + 120
    while cli("case", "status", task).data["counts"]["evidence"] < count:
        assert time.monotonic() < deadline, "the appender made no progress"
        time.sleep(0.002)


class TestAnswerDuringAppends:
    """A person answers from one process while an agent appends evidence from another."""

    def test_answer_while_another_process_appends(self, cli: Cli, tmp_path: Path) -> None:
        """Paused in orienting, investigating, planned: all appends kept, one answer, one chain.

        Appends while paused never add a phase line. The first evidence of a case paused in
        orienting makes the answer resume into investigating (pausedFrom moves, like a plan's).
        """
        count = 200
        env = {**cli.env, "CORTEX_LOCK_TIMEOUT": "300"}
        task = cli.open()
        interleaved = 0
        answered_ids: list[str] = []
        for round_, paused_in in enumerate(("orienting", "investigating", "planned")):
            if paused_in == "planned":
                first = committed_records(cli, task, "evidence")[0]["id"]
                assert cli(*plan_argv(task, first)).code == 0
            assert observe(cli, task)["status"] == paused_in
            decision = request(cli, task)
            before = observe(cli, task)
            assert (before["status"], before["pausedFrom"]) == (PAUSED, paused_in)
            gate = tmp_path / f"answer-{round_}"
            answer = ["case", "decision", "answer", task, decision, "--answer", "a"]
            person = spawn_gated(cli, gate, [*answer, "--responder", "alice"], env=env)
            writer = subprocess.Popen(
                [sys.executable, WRITER, "append", str(round_), str(count), str(cli.cwd), task],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            wait_for_evidence(cli, task, before["counts"]["evidence"] + 20)
            resumes = "investigating" if paused_in == "orienting" else paused_in
            mid = observe(cli, task)
            assert (mid["status"], mid["pausedFrom"]) == (PAUSED, resumes)
            assert mid["phases"] == before["phases"], "an append while paused moved the phase"
            gate.touch()
            answered = finish(person)
            out, err = writer.communicate(timeout=300)
            assert writer.returncode == 0, err.decode()
            assert json.loads(out) == {"ok": count, "conflicts": 0, "other": []}
            assert answered.code == 0, answered.envelope
            assert answered.envelope["data"]["status"] == resumes

            records = committed_records(cli, task, "evidence")
            assert len({r["id"] for r in records}) == len(records), "duplicate evidence ids"
            new = records[len(before["evidence"]) :]
            assert len(new) == count + 1
            mine = [r["claim"] for r in new if r["kind"] != "human_report"]
            assert mine == [f"writer {round_} seq {n}" for n in range(count)]
            (report,) = [r for r in new if r["kind"] == "human_report"]
            where = new.index(report)
            interleaved += 0 < where < len(new) - 1

            listed = cli("case", "decision", "list", task).data
            assert listed["pending"] is None
            assert [d["status"] for d in listed["decisions"]] == ["answered"] * (round_ + 1)
            this = listed["decisions"][-1]
            assert (this["id"], this["answer"], this["responder"]) == (decision, "a", "alice")
            assert this["evidenceId"] == report["id"]
            answered_ids.append(report["id"])

            # The answer's phase line is the only one of the round: back to pausedFrom.
            after = observe(cli, task)
            assert after["phases"] == [*before["phases"], (PAUSED, resumes)]
            assert (after["status"], after["pausedFrom"]) == (resumes, None)
            assert after["revision"] == before["revision"] + count + 1
            phase_chain_ok(cli, task, after["status"])
            assert audit(cli, task)["warnings"] == []
        assert len(set(answered_ids)) == 3
        assert interleaved >= 1, "the answer never landed between two appends"


# Readers during a commit ---------------------------------------------------------------------

PAUSE_AFTER_CALL = str(CHILDREN / "pause_after_call.py")


def status_across_commit(cli: Cli, task: str, commit: list[str]) -> dict[str, Any]:
    """`case status` in a process paused right after it read case.json, while `commit` lands."""
    proc = subprocess.Popen(
        [
            sys.executable,
            PAUSE_AFTER_CALL,
            "cortex.cases.store:CaseStore.read_case",
            "1",
            str(cli.cwd),
            json.dumps(["case", "status", task]),
        ],
        env=cli.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stdin is not None
    line = proc.stdout.readline()
    try:
        assert line == b"PAUSED\n", line
        assert cli(*commit).code == 0
    finally:
        proc.stdin.write(b"\n")
        proc.stdin.flush()
    result = finish(proc)
    assert result.code == 0, (result.envelope, result.stderr)
    data: dict[str, Any] = result.envelope["data"]
    return data


class TestReadersDuringCommits:
    """A reader overtaken by a lifecycle commit still reports one committed revision."""

    def test_status_overtaken_by_an_answer(self, cli: Cli) -> None:
        """Paused, pending decision and revision agree, whichever side of the answer is read."""
        task, _ = investigating(cli)
        decision = request(cli, task)
        before = observe(cli, task)["revision"]
        answer = ["case", "decision", "answer", task, decision, "--answer", "a"]
        data = status_across_commit(cli, task, [*answer, "--responder", "al"])
        if data["revision"] == before:
            assert data["status"] == PAUSED
            assert data["pendingDecision"] is not None, "paused, but no pending decision"
            assert data["pendingDecision"]["id"] == decision
        else:
            assert data["revision"] == before + 1
            assert (data["status"], data["pausedFrom"]) == ("investigating", None)
            assert data["pendingDecision"] is None, data

    def test_status_overtaken_by_a_replan(self, cli: Cli) -> None:
        """The plan revision and the unresolved hypotheses come from the same revision."""
        task, evidence = investigating(cli)
        assert cli(*plan_argv(task, evidence)).code == 0
        before = observe(cli, task)
        second = ("--hypothesis", f"{SECOND} :: the cookie is set for /", "--reason", "more")
        data = status_across_commit(cli, task, plan_argv(task, evidence, *second))
        statements = [h["statement"] for h in data["unresolvedHypotheses"]]
        if data["revision"] == before["revision"]:
            assert data["plan"] == before["plan"]
            assert data["unresolvedHypotheses"] == before["unresolvedHypotheses"]
        else:
            assert data["revision"] == before["revision"] + 1
            assert data["plan"]["planRevision"] == 2, data["plan"]
            assert statements == [HYPOTHESIS, SECOND], statements


class TestPausedCaseWaitsForThePerson:
    """While a decision is pending, an agent process's lease calls must not resume the case."""

    @pytest.mark.parametrize(
        ("actor", "expire"), [("agent", False), ("bo", True)], ids=["holder", "other_actor"]
    )
    def test_begin_change_does_not_resume_a_paused_case(
        self, cli: Cli, state_root: Path, actor: str, expire: bool
    ) -> None:
        """begin-change on a case paused from `changing`: refused, still paused, nothing written."""
        task, evidence = investigating(cli)
        assert cli(*plan_argv(task, evidence)).code == 0
        ttl = "1s" if expire else "1h"
        assert cli("case", "begin-change", task, "--actor", "agent", "--ttl", ttl).code == 0
        decision = request(cli, task)
        if expire:
            time.sleep(1.1)
        before = observe(cli, task)
        files = unlocked_tree(state_root)
        argv = ["case", "begin-change", task, "--actor", actor, "--ttl", "1h", "--json"]
        proc = run_cortex(argv, cli.env, cli.cwd)
        assert b"Traceback" not in proc.stderr
        after = observe(cli, task)
        # The resume edge needs_human_decision -> changing belongs to `decision answer` alone.
        assert (after["status"], after["pausedFrom"]) == (PAUSED, "changing"), (
            f"begin-change by {actor} resumed a paused case; its decision is still "
            f"{after['decisions'][-1]['status']}: {proc.stdout.decode()}"
        )
        assert after["pendingDecision"]["id"] == decision
        assert proc.returncode == 5, proc.stdout
        assert json.loads(proc.stdout)["error"]["code"] == "refused"
        assert after["revision"] == before["revision"]
        assert unlocked_tree(state_root) == files, "a refused begin-change wrote something"
        # The person can still answer, and the answer resumes the case.
        answer = ["case", "decision", "answer", task, decision, "--answer", "a"]
        assert cli(*answer, "--responder", "al").code == 0


# Bad input through a real process ----------------------------------------------------------------


@pytest.fixture
def answered(cli: Cli) -> tuple[str, str]:
    """A case whose only decision has been answered: nothing is pending."""
    task, _ = investigating(cli)
    decision = request(cli, task)
    out = cli("case", "decision", "answer", task, decision, "--answer", "a", "--responder", "al")
    assert out.code == 0
    return task, decision


def options(n: int) -> list[str]:
    """`n` well-formed --option arguments."""
    return [arg for i in range(n) for arg in ("--option", f"o{i}=label {i}|consequence {i}")]


BAD_REQUESTS = {
    "one_option": (options(1), "Q?"),
    "seventeen_options": (options(17), "Q?"),
    "secret_option_id": (["--option", f"{SECRET}=leak", *options(1)], "Q?"),
    "long_question": (options(2), "q" * (QUESTION_MAX + 1)),
}


class TestBadDecisionInput:
    """Bad decision input through `python -m cortex`: one envelope, no traceback, no write."""

    @staticmethod
    def refused(
        argv: list[str], env: dict[str, str], cwd: Path, state_root: Path, *, locks: bool = False
    ) -> tuple[int, dict[str, Any]]:
        """Run a command expected to fail; check the envelope and that nothing was written.

        A refusal that needs the committed state (`locks`) is made under the case lock, whose
        holder rewrites its diagnostics in `.lock`: only that file's size and time may change.
        """
        snapshot = unlocked_tree if locks else committed_state
        before = snapshot(state_root)
        proc = run_cortex([*argv, "--json"], env, cwd)
        after = snapshot(state_root)
        stdout, stderr = proc.stdout.decode(), proc.stderr.decode()
        assert "Traceback" not in stderr, stderr
        assert SECRET not in stdout + stderr
        lines = stdout.splitlines()
        assert len(lines) == 1, stdout
        envelope: dict[str, Any] = json.loads(lines[0])
        assert envelope["ok"] is False
        assert after == before, "a refused command wrote under the state directory"
        return proc.returncode, envelope["error"]

    @pytest.mark.parametrize("name", sorted(BAD_REQUESTS))
    def test_bad_request(
        self, cli: Cli, answered: tuple[str, str], state_root: Path, name: str
    ) -> None:
        """Too few or many options, a secret option id, an over-long question: exit 4."""
        task, _ = answered
        extra, question = BAD_REQUESTS[name]
        argv = ["case", "decision", "request", task, "--question", question, *extra]
        code, error = self.refused(argv, cli.env, cli.cwd, state_root)
        assert (code, error["code"]) == (4, "invalid_input"), error

    def test_answer_when_nothing_is_pending(
        self, cli: Cli, answered: tuple[str, str], state_root: Path
    ) -> None:
        """Answering a decision that was already answered: exit 5, nothing written."""
        task, decision = answered
        argv = ["case", "decision", "answer", task, decision, "--answer", "b", "--responder", "bo"]
        code, error = self.refused(argv, cli.env, cli.cwd, state_root, locks=True)
        assert (code, error["code"]) == (5, "refused"), error

    def test_answer_a_decision_never_asked(
        self, cli: Cli, answered: tuple[str, str], state_root: Path
    ) -> None:
        """An unknown decision id is `not_found` (exit 3), and nothing is written."""
        task, decision = answered
        unknown = decision[:-1] + ("A" if decision[-1] != "A" else "B")
        argv = ["case", "decision", "answer", task, unknown, "--answer", "a", "--responder", "bo"]
        code, error = self.refused(argv, cli.env, cli.cwd, state_root, locks=True)
        assert (code, error["code"]) == (3, "not_found"), error

    def test_second_question_while_one_is_pending(self, cli: Cli, state_root: Path) -> None:
        """Another question while a decision is pending: exit 5, the first one stays pending."""
        task, _ = investigating(cli)
        decision = request(cli, task)
        argv = ["case", "decision", "request", task, "--question", "Other?", *options(2)]
        code, error = self.refused(argv, cli.env, cli.cwd, state_root, locks=True)
        assert (code, error["code"]) == (5, "refused"), error
        assert observe(cli, task)["pendingDecision"]["id"] == decision

    @pytest.mark.parametrize(
        ("answer", "responder", "exit_code"),
        [(SECRET, "bo", 4), ("zz", "bo", 4), ("a", "agent", 5)],
        ids=["secret_answer", "unknown_option", "requester_answers"],
    )
    def test_bad_answer(
        self,
        cli: Cli,
        state_root: Path,
        answer: str,
        responder: str,
        exit_code: int,
    ) -> None:
        """A secret-looking or unknown option, or the requester itself: refused, nothing written."""
        task, _ = investigating(cli)
        decision = request(cli, task)
        argv = ["case", "decision", "answer", task, decision, "--answer", answer]
        argv += ["--responder", responder]
        code, _ = self.refused(argv, cli.env, cli.cwd, state_root, locks=answer != SECRET)
        assert code == exit_code
        assert observe(cli, task)["pendingDecision"]["id"] == decision
