"""Issue 19: who may do what (docs/design/trust.md).

Lease tokens: two processes with the same actor name are two holders; only the one given the
token verifies, completes, renews, releases or moves the boundary; a token of another case is
refused; two `cortex serve` processes with the same CORTEX_ACTOR cannot both hold the lease; a
holder killed with SIGKILL loses its lease at expiry. Answers need a person: without a
controlling terminal `decision answer` is refused and writes nothing, at a pseudo-terminal the
typed option id answers it, Studio answers as `studio`, and a per-machine opt-in (never a
repository's) stands in for a person. Provenance: an origin of `human` sent over MCP or from a
CLI without a terminal is shown as reported by the agent on every surface; from a terminal it is
shown as human.

These tests do not use the suite's lease-token book or answer opt-in (tests/conftest.py): every
process here is started by the test, with exactly the environment it names.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    Cli,
    Outcome,
    case_path,
    committed_state,
    configure_verifiers,
    without_answer_opt_in,
)
from mcp_kit import envelope_of, raw_server, run_async, serving
from trust_kit import PLAN, PYTHON, ask, at_terminal, detached, planned, unit

from cortex.main import main

pytestmark = pytest.mark.process  # every test here starts Python processes

__all__ = ["unit"]  # a fixture, used by name


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def files(env: dict[str, str], task: str) -> dict[str, tuple[int, int, int, int]]:
    """What commits write to the case: not its lock (each holder rewrites its diagnostics there)
    nor the refusal log (a refused command counts itself there, outside the case's commits)."""
    return committed_state(case_path(env, task), ignore={".lock"})


def edit(repo: Path) -> None:
    (repo / "app.py").write_text("print('fixed')\n")


def refused_for_the_lease(out: Outcome, holder: str) -> None:
    envelope = out.envelope
    assert out.code == 6, out.stdout
    assert envelope["error"]["code"] == "lease_conflict"
    assert holder in envelope["error"]["message"]


# 1. Lease tokens ---------------------------------------------------------------------------


class TestLeaseTokens:
    def test_the_token_is_returned_once_and_only_its_hash_is_stored(
        self, cli: Cli, unit: dict[str, str], repo: Path, state_root: Path
    ) -> None:
        task = planned(cli)
        began = detached(["case", "begin-change", task, "--actor", "agent-1"], unit, repo).data
        token = began["leaseToken"]
        assert isinstance(token, str)
        assert token.startswith("cortex-lease-")
        assert len(token) >= len("cortex-lease-") + 43
        assert began["result"] == "acquired"
        stored = json.loads((case_path(unit, task) / "case.json").read_text())["changeLease"]
        assert stored["tokenSha256"] == sha256(token)
        assert stored["actor"] == "agent-1"
        # The holder renews with it; a renewal returns no token.
        again = ["case", "begin-change", task, "--actor", "agent-1", "--lease-token", token]
        renewed = detached(again, unit, repo).data
        assert (renewed["result"], renewed["leaseToken"]) == ("renewed", None)
        renewed = detached(["case", "lease", "renew", task, "--actor", "agent-1"],
                           {**unit, "CORTEX_LEASE_TOKEN": token}, repo).data  # fmt: skip
        assert renewed["leaseToken"] is None
        # Pasted into a note or evidence by a careless agent, it is redacted before it is stored.
        for text in (f"resume with --lease-token {token}", f"export CORTEX_LEASE_TOKEN={token}"):
            assert cli("case", "note", task, text).code == 0
        # Nowhere in the store in plain text: not the snapshot, a ledger, the audit line, a lock.
        for path in state_root.rglob("*"):
            if path.is_file():
                assert token.encode() not in path.read_bytes(), path

    def test_only_the_process_holding_the_token_verifies_or_completes(
        self, cli: Cli, unit: dict[str, str], repo: Path
    ) -> None:
        task = planned(cli)
        holder = {**unit, "CORTEX_ACTOR": "agent-1"}
        token = detached(["case", "begin-change", task], holder, repo).data["leaseToken"]
        edit(repo)
        before = files(unit, task)
        # Another process with the same name, without the token or with a wrong one.
        same_name = {**unit, "CORTEX_ACTOR": "agent-1"}
        wrong = {**same_name, "CORTEX_LEASE_TOKEN": "cortex-lease-" + "x" * 43}
        complete = ["case", "complete", task, "--outcome", "done"]

        def refused(*commands: list[str]) -> None:
            for argv in commands:
                for environment in (same_name, wrong):
                    refused_for_the_lease(detached(argv, environment, repo), "agent-1")

        refused(
            ["case", "verify", task],
            ["case", "verify", task, "--actor", "agent-1"],
            ["case", "lease", "renew", task],
            ["case", "lease", "release", task],
            ["case", "begin-change", task],
        )
        refused_for_the_lease(
            detached(["case", "verify", task, "--lease-token", "wrong"], same_name, repo),
            "agent-1",
        )
        assert files(unit, task) == before, "a refused lease-bound write wrote something"
        # The holder, by option.
        verified = detached(["case", "verify", task, "--lease-token", token], same_name, repo)
        assert verified.data["batch"]["actor"] == "agent-1"
        assert verified.data["assessment"]["status"] == "verified"
        before = files(unit, task)
        refused(complete, [*complete, "--verification-not-possible", "no time"])
        assert files(unit, task) == before, "a refused complete wrote something"
        # The holder, by environment.
        done = detached(complete, {**same_name, "CORTEX_LEASE_TOKEN": token}, repo).data
        assert done["status"] == "complete"

    def test_a_token_from_another_case_is_refused(
        self, cli: Cli, unit: dict[str, str], repo: Path
    ) -> None:
        first, second = planned(cli), planned(cli)
        take = ["case", "begin-change", "--actor", "agent-1"]
        tokens = {
            task: detached([*take[:2], task, *take[2:]], unit, repo).data["leaseToken"]
            for task in (first, second)
        }
        assert tokens[first] != tokens[second]
        edit(repo)
        other = {**unit, "CORTEX_ACTOR": "agent-1", "CORTEX_LEASE_TOKEN": tokens[second]}
        before = files(unit, first)
        for argv in (
            ["case", "verify", first],
            ["case", "lease", "renew", first],
            ["case", "lease", "release", first],
            ["case", "begin-change", first],
        ):
            refused_for_the_lease(detached(argv, other, repo), "agent-1")
        assert files(unit, first) == before
        mine = {**other, "CORTEX_LEASE_TOKEN": tokens[first]}
        assert detached(["case", "verify", first], mine, repo).code == 0

    def test_moving_the_boundary_and_releasing_need_the_token(
        self, cli: Cli, unit: dict[str, str], repo: Path
    ) -> None:
        task = planned(cli)
        holder = {**unit, "CORTEX_ACTOR": "agent-1"}
        token = detached(["case", "begin-change", task], holder, repo).data["leaseToken"]
        evidence = cli("case", "evidence", "add", task, "--claim", "lib.py too").data
        replan = ["case", "plan", task, *PLAN, "--file", "lib.py", "--reason", "lib.py too"]
        replan += ["--support", f"1={evidence['evidence']['id']}"]
        refused_for_the_lease(detached(replan, holder, repo), "agent-1")
        moved = detached([*replan, "--lease-token", token], holder, repo).data
        assert moved["changeBoundary"]["files"] == ["app.py", "lib.py"]
        release = ["case", "lease", "release", task]
        refused_for_the_lease(detached(release, holder, repo), "agent-1")
        released = detached([*release, "--lease-token", token], holder, repo).data
        assert released["result"] == "released"
        # Released: nothing left to release, so no token is needed to be told so.
        assert detached(release, holder, repo).data["result"] == "unchanged"
        # Anyone may take a released lease, with a token of its own.
        taken = detached(["case", "begin-change", task, "--actor", "agent-2"], unit, repo).data
        assert taken["leaseToken"] not in (None, token)

    def test_block_needs_the_holder_or_a_person_at_a_terminal(
        self, cli: Cli, unit: dict[str, str], repo: Path
    ) -> None:
        """A person must always be able to stop a case; stopping it ends the lease. Another
        agent cannot (issue 27: block, unblock, begin-change was a way to take the lease)."""
        task = planned(cli)
        assert detached(["case", "begin-change", task, "--actor", "agent-1"], unit, repo).code == 0
        args = ["case", "block", task, "--reason", "stuck", "--actor", "alice"]
        refused_for_the_lease(detached(args, unit, repo), "agent-1")
        out, _ = at_terminal(args, unit, repo, typed=None, prompt=b"")
        assert out.data["status"] == "blocked"
        lease = cli("case", "status", task).data["lease"]
        assert lease["state"] == "released"

    def test_a_lease_taken_before_tokens_is_honoured_by_name_until_it_expires(
        self, cli: Cli, unit: dict[str, str], repo: Path
    ) -> None:
        task = planned(cli)
        holder = {**unit, "CORTEX_ACTOR": "agent-1"}
        assert detached(["case", "begin-change", task, "--ttl", "1h"], holder, repo).code == 0
        downgrade(case_path(unit, task))
        assert cli("case", "audit", task).data["ok"] is True
        lease = json.loads((case_path(unit, task) / "case.json").read_text())["changeLease"]
        assert "tokenSha256" not in lease
        edit(repo)
        # Honoured by name: the holder verifies without a token, as it could before.
        assert detached(["case", "verify", task], holder, repo).code == 0
        # Another name is still refused.
        refused_for_the_lease(
            detached(["case", "verify", task, "--actor", "agent-2"], unit, repo), "agent-1"
        )
        # `lease renew` will not extend a lease without a token; begin-change upgrades it.
        renew = detached(["case", "lease", "renew", task], holder, repo)
        refused_for_the_lease(renew, "agent-1")
        assert "begin-change" in renew.envelope["error"]["message"]
        upgraded = detached(["case", "begin-change", task], holder, repo).data
        assert upgraded["leaseToken"].startswith("cortex-lease-")
        # From now on the token is required.
        refused_for_the_lease(detached(["case", "verify", task], holder, repo), "agent-1")
        mine = {**holder, "CORTEX_LEASE_TOKEN": upgraded["leaseToken"]}
        assert detached(["case", "verify", task], mine, repo).code == 0


class TestTwoServers:
    def test_two_servers_with_the_same_actor_cannot_both_hold_the_lease(
        self, cli: Cli, unit: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        task = planned(cli)
        env = {**unit, "CORTEX_ACTOR": "agent-1"}
        seen: list[dict[str, Any]] = []

        async def body() -> None:
            with (tmp_path / "a.txt").open("w+") as log_a, (tmp_path / "b.txt").open("w+") as log_b:
                async with serving(repo, env, log_a) as a, serving(repo, env, log_b) as b:
                    took, _ = await a.call("cortex_begin_change", task_id=task)
                    seen.append(took)
                    assert took["ok"], took
                    assert took["data"]["leaseToken"] is None, "the server keeps the token"
                    edit(repo)

                    async def refused_to_b(name: str, **extra: Any) -> None:
                        refused, result = await b.call(name, task_id=task, **extra)
                        seen.append(refused)
                        assert (result.meta or {}).get("cortex/exitStatus") == 6, refused
                        assert refused["error"]["code"] == "lease_conflict"
                        assert "agent-1" in refused["error"]["message"]
                        assert "--lease-token" not in refused["error"]["message"]

                    await refused_to_b("cortex_begin_change")
                    await refused_to_b("cortex_verify")
                    renewed, _ = await a.call("cortex_begin_change", task_id=task)
                    assert renewed["data"]["result"] == "renewed"
                    verified, _ = await a.call("cortex_verify", task_id=task)
                    assert verified["ok"], verified
                    await refused_to_b("cortex_complete", outcome="x")
                    done, _ = await a.call("cortex_complete", task_id=task, outcome="fixed")
                    seen.extend([renewed, verified, done])
                    assert done["data"]["status"] == "complete", done

        run_async(body)
        digest = json.loads((case_path(unit, task) / "case.json").read_text())
        stored = digest["changeLease"]["tokenSha256"]
        # No string of any answer (data, messages, actions) is the token.
        assert not [s for s in strings(seen) if sha256(s) == stored]

    def test_kill_9_of_the_holder_then_expiry_lets_another_take_the_lease(
        self, cli: Cli, unit: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        task = planned(cli)
        env = {**unit, "CORTEX_ACTOR": "agent-1"}
        with raw_server(repo, env, tmp_path) as first, raw_server(repo, env, tmp_path) as second:
            took = first.call("cortex_begin_change", {"task_id": task, "ttl": "2s"})
            expires = envelope_of(took)[0]["data"]["lease"]["expiresAt"]
            refused, status = envelope_of(second.call("cortex_begin_change", {"task_id": task}))
            assert status == 6, refused
            os.kill(first.proc.pid, signal.SIGKILL)
            first.proc.wait(timeout=30)
            # Its token died with it; the lease is still active until it expires.
            refused, status = envelope_of(second.call("cortex_begin_change", {"task_id": task}))
            assert status == 6, refused
            from datetime import datetime

            while time.time() <= datetime.fromisoformat(expires).timestamp() + 0.05:
                time.sleep(0.05)
            taken, status = envelope_of(second.call("cortex_begin_change", {"task_id": task}))
            assert status == 0, taken
            assert taken["data"]["result"] == "acquired"
            edit(repo)
            verified, status = envelope_of(second.call("cortex_verify", {"task_id": task}))
            assert status == 0, verified


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


# 2. Answers need a person ------------------------------------------------------------------


class TestAnswersNeedAPerson:
    def test_without_a_terminal_an_answer_is_refused_and_writes_nothing(
        self, cli: Cli, env: dict[str, str], repo: Path, state_root: Path
    ) -> None:
        task, decision = ask(cli)
        env = without_answer_opt_in(env)
        before = committed_state(state_root, ignore={".lock"})
        answer = ["case", "decision", "answer", task, decision, "--answer", "safe"]
        for stdin in (b"", b"safe\n", b"safe\nsafe\nyes\n"):
            out = detached([*answer, "--responder", "alice"], env, repo, stdin=stdin)
            assert out.code == 5, out.stdout
            message = out.envelope["error"]["message"]
            assert "a person must answer" in message
            assert "cortex studio" in message
            assert "terminal" in message
        # The in-process CLI (stdin not a terminal) is refused the same way.
        out = Cli(env, repo)(*answer, "--responder", "alice")
        assert out.code == 5
        assert committed_state(state_root, ignore={".lock"}) == before, (
            "a refused answer wrote something"
        )
        assert cli("case", "status", task).data["status"] == "needs_human_decision"

    def test_at_a_terminal_the_typed_option_id_answers(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        task, decision = ask(cli)
        env = without_answer_opt_in(env)
        argv = ["case", "decision", "answer", task, decision, "--answer", "safe"]
        out, shown = at_terminal([*argv, "--responder", "alice"], env, repo, typed="safe",
                                 prompt=b"to answer")  # fmt: skip
        assert b"Which migration?" in shown
        assert b"Safe migration" in shown
        assert b"slower rollout" in shown
        data = out.data
        assert data["decision"]["status"] == "answered"
        assert data["decision"]["answeredVia"] == "cli-tty"
        assert data["decision"]["unattended"] is None
        assert data["status"] == "investigating"
        evidence = human_reports(cli, task)
        assert evidence[0]["source"]["via"] == "cli-tty"
        assert evidence[0]["source"]["claimedByAgent"] is False

    @pytest.mark.parametrize("typed", ["fast", "yes", ""])
    def test_at_a_terminal_anything_but_the_option_id_cancels(
        self, cli: Cli, env: dict[str, str], repo: Path, state_root: Path, typed: str
    ) -> None:
        task, decision = ask(cli)
        env = without_answer_opt_in(env)
        before = committed_state(state_root, ignore={".lock"})
        argv = ["case", "decision", "answer", task, decision, "--answer", "safe"]
        out, _ = at_terminal([*argv, "--responder", "alice"], env, repo, typed=typed,
                             prompt=b"to answer")  # fmt: skip
        assert out.code == 5, out.stdout
        assert "nothing was written" in out.envelope["error"]["message"]
        assert committed_state(state_root, ignore={".lock"}) == before

    def test_the_opt_in_stands_for_a_person_and_is_recorded(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        task, decision = ask(cli)
        env = without_answer_opt_in(env)
        opt_in = Path(env["XDG_CONFIG_HOME"]) / "cortex" / "unattended-answers.toml"
        opt_in.parent.mkdir(parents=True, exist_ok=True)
        opt_in.write_text('stands_for = "the nightly job, configured by alice"\n')
        opt_in.chmod(0o600)
        argv = ["case", "decision", "answer", task, decision, "--answer", "safe"]
        data = detached([*argv, "--responder", "ci-job"], env, repo).data
        recorded = data["decision"]
        assert recorded["answeredVia"] == "cli"
        assert "the nightly job, configured by alice" in recorded["unattended"]
        (report,) = human_reports(cli, task)
        assert report["source"]["claimedByAgent"] is True
        shown = cli("case", "show", task, human=True).stdout
        assert "human (reported by ci-job via cli)" in shown

    def test_a_repository_cannot_opt_itself_in(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        task, decision = ask(cli)
        env = without_answer_opt_in(env)
        for where in (repo, repo / ".cortex", repo / "cortex"):
            where.mkdir(exist_ok=True)
            (where / "unattended-answers.toml").write_text('stands_for = "the repository"\n')
        argv = ["case", "decision", "answer", task, decision, "--answer", "safe"]
        for environment in (env, {**env, "CORTEX_UNATTENDED_ANSWERS": "1"}):
            out = detached([*argv, "--responder", "alice"], environment, repo)
            assert out.code == 5, out.stdout
        # An environment pointing the configuration directory into the repository (an agent
        # chooses its own) finds the file, which fails closed: nothing in a repository is
        # consent, however it is reached (tests/test_trust_attacks.py), nor a file others write.
        home = {**env, "XDG_CONFIG_HOME": str(repo)}
        for mode in (0o600, 0o666):
            (repo / "cortex" / "unattended-answers.toml").chmod(mode)
            out = detached([*argv, "--responder", "alice"], home, repo)
            assert out.code == 4, out.stdout
            assert out.envelope["error"]["code"] == "config_error"
        assert cli("case", "status", task).data["status"] == "needs_human_decision"

    def test_studio_answers_as_studio(self, cli: Cli, env: dict[str, str], repo: Path) -> None:
        from cortex.kernel.kernel import Kernel
        from cortex.studio.data import Source

        task, _ = ask(cli)
        source = Source(Kernel(str(repo), without_answer_opt_in(env), default_actor="studio"))
        detail = source.detail(task)
        answered = source.answer(detail, "fast")
        assert getattr(answered, "status", None) == "investigating", answered
        recorded = cli("case", "decision", "list", task).data["decisions"][0]
        assert (recorded["responder"], recorded["answeredVia"]) == ("studio", "studio")
        (report,) = human_reports(cli, task)
        assert (report["source"]["via"], report["source"]["claimedByAgent"]) == ("studio", False)

    def test_acknowledgements_stay_open_to_agents_and_name_who_made_them(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        configure_verifiers(repo, env, {"unit": [PYTHON, "-c", "raise SystemExit(1)"]})
        unit = {**env, "CORTEX_APPROVE_COMMANDS": "1"}
        task = planned(cli)
        holder = {**unit, "CORTEX_ACTOR": "agent-1"}
        token = detached(["case", "begin-change", task], holder, repo).data["leaseToken"]
        mine = {**holder, "CORTEX_LEASE_TOKEN": token}
        edit(repo)
        assert detached(["case", "verify", task], mine, repo).data["assessment"]["status"] == (
            "failed"
        )
        complete = ["case", "complete", task, "--outcome", "shipped with a known failure"]
        out = detached([*complete, "--accept-failed", "the flaky test is tracked"], mine, repo)
        assert out.data["acknowledged"].startswith("accepted failed verification")
        summary = (case_path(unit, task) / "summary.md").read_text()
        assert "Completed by agent-1" in summary
        commands = ledger(unit, task, "commands")
        assert (commands[-1]["operation"], commands[-1]["via"]) == ("case.complete", "cli")


def human_reports(cli: Cli, task: str) -> list[dict[str, Any]]:
    return [e for e in ledger(cli.env, task, "evidence") if e["kind"] == "human_report"]


def ledger(env: dict[str, str], task: str, name: str) -> list[dict[str, Any]]:
    path = case_path(env, task) / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_bytes().splitlines()]


# 3. Provenance with its channel ------------------------------------------------------------

REPORTED = "human (reported by agent-1 via {via})"


def surfaces(cli: Cli, task: str) -> dict[str, str]:
    """Every surface that shows evidence, as text (JSON answers and rendered text)."""
    shown = {
        "show.json": cli("case", "show", task).stdout,
        "show.txt": cli("case", "show", task, human=True).stdout,
        "timeline.json": cli("case", "timeline", task).stdout,
        "timeline.txt": cli("case", "timeline", task, human=True).stdout,
        "handoff.json": cli("case", "handoff", task).stdout,
    }
    shown["handoff.md"] = json.loads(shown["handoff.json"])["data"]["markdown"]
    return shown


class TestProvenance:
    def test_a_human_origin_from_a_cli_without_a_terminal_is_shown_as_reported(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        task = cli.open()
        add = ["case", "evidence", "add", task, "--claim", "the person says ship it"]
        recorded = detached([*add, "--origin", "human", "--actor", "agent-1"], env, repo).data
        source = recorded["evidence"]["source"]
        assert (source["origin"], source["via"], source["claimedByAgent"]) == ("human", "cli", True)
        note = detached(["case", "note", task, "reviewed", "--origin", "reviewer",
                         "--actor", "agent-1"], env, repo)  # fmt: skip
        assert note.data["evidence"]["source"]["claimedByAgent"] is True
        for name, text in surfaces(cli, task).items():
            assert REPORTED.format(via="cli") in text, name
            assert "reviewer (reported by agent-1 via cli)" in text, name
        # The in-process CLI (stdin a pipe) is a CLI without a terminal too.
        inproc = cli(*add, "--origin", "human", "--actor", "agent-1").data["evidence"]["source"]
        assert (inproc["via"], inproc["claimedByAgent"]) == ("cli", True)

    def test_a_human_origin_over_mcp_is_shown_as_reported(
        self, cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        task = cli.open()

        async def body() -> None:
            with (tmp_path / "serve.txt").open("w+") as log:
                async with serving(repo, {**env, "CORTEX_ACTOR": "agent-1"}, log) as s:
                    recorded, _ = await s.call(
                        "cortex_record_evidence", task_id=task, claim="the person says ship it",
                        origin="human",
                    )  # fmt: skip
                    source = recorded["data"]["evidence"]["source"]
                    assert (source["via"], source["claimedByAgent"]) == ("mcp", True)
                    timeline, _ = await s.call("cortex_timeline", task_id=task)
                    cards = [c for c in timeline["data"]["entries"] if c["kind"] == "evidence"]
                    assert cards[0]["origin"] == REPORTED.format(via="mcp")
                    handoff, _ = await s.call("cortex_handoff", task_id=task)
                    assert REPORTED.format(via="mcp") in handoff["data"]["markdown"]

        run_async(body)
        for name, text in surfaces(cli, task).items():
            assert REPORTED.format(via="mcp") in text, name
        commands = ledger(env, task, "commands")
        assert commands[-1]["via"] == "mcp"

    def test_a_human_origin_from_a_terminal_is_shown_as_human(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        task = cli.open()
        add = ["case", "evidence", "add", task, "--claim", "I checked the staging login"]
        out, _ = at_terminal([*add, "--origin", "human", "--actor", "alice"], env, repo,
                             typed=None, prompt=b"")  # fmt: skip
        source = out.data["evidence"]["source"]
        assert (source["origin"], source["via"], source["claimedByAgent"]) == (
            "human",
            "cli-tty",
            False,
        )
        for name, text in surfaces(cli, task).items():
            assert "reported by" not in text, name
        cards = json.loads(surfaces(cli, task)["timeline.json"])["data"]["entries"]
        assert [c["origin"] for c in cards if c["kind"] == "evidence"] == ["human"]
        assert ledger(env, task, "commands")[-1]["via"] == "cli-tty"

    def test_a_background_job_of_a_terminal_is_not_a_person(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        """stdin is the terminal, but the process is not in its foreground group: `cli`."""
        task = cli.open()
        primary, secondary = os.openpty()
        try:
            script = (
                "import os, sys, subprocess\n"
                f"os.open({os.ttyname(secondary)!r}, os.O_RDWR)\n"
                # The child is put in a process group of its own: a background job.
                "p = subprocess.run(sys.argv[1:], process_group=0, capture_output=True)\n"
                "sys.stdout.buffer.write(p.stdout)\n"
            )
            argv = ["case", "evidence", "add", task, "--claim", "x", "--origin", "human"]
            proc = subprocess.run(
                [PYTHON, "-c", script, PYTHON, "-m", "cortex", *argv, "--json"],
                cwd=repo, env=env, stdin=secondary, capture_output=True, timeout=60,
                start_new_session=True, check=False,
            )  # fmt: skip
        finally:
            os.close(primary)
            os.close(secondary)
        source = json.loads(proc.stdout)["data"]["evidence"]["source"]
        assert (source["via"], source["claimedByAgent"]) == ("cli", True)


def test_the_in_process_main_decides_the_channel_from_its_stdin(
    env: dict[str, str], repo: Path
) -> None:
    """main() with a stdin that is not a terminal (a BytesIO, a pipe) records `cli`."""
    out = io.StringIO()
    assert main(["case", "open", "x", "--json"], env=env, cwd=str(repo), stdout=out,
                stdin=io.BytesIO()) == 0  # fmt: skip
    task = json.loads(out.getvalue())["data"]["taskId"]
    assert [c["via"] for c in ledger(env, task, "commands")] == ["cli"]
    assert {p["via"] for p in ledger(env, task, "phases")} == {"cli"}


# Cases written before this change -----------------------------------------------------------

NEW_FIELDS = frozenset({"via", "claimedByAgent", "tokenSha256", "answeredVia", "unattended"})
"""The fields issue 19 added: a case written before it has none of them."""


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in NEW_FIELDS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def downgrade(path: Path) -> None:
    """Rewrite a case as the release before issue 19 wrote it: no channel, no token hash.

    The chain, the ledger extents, the snapshot digests and the last audit line's case digest
    are recomputed, so the result is a case that release could have written.
    """
    from cortex.cases.ledger import genesis
    from cortex.cases.records import CaseFile, case_digest, decode

    case = _strip(json.loads((path / "case.json").read_text()))
    for name, ref in case["snapshots"].items():
        file = path / f"{name}.json"
        data = (json.dumps(_strip(json.loads(file.read_text())), indent=2) + "\n").encode()
        file.write_bytes(data)
        ref["sha256"] = hashlib.sha256(data).hexdigest()
    digest = case_digest(decode(json.dumps({**case, "ledgers": {}}).encode(), CaseFile))
    for name, state in case["ledgers"].items():
        file = path / f"{name}.jsonl"
        lines = [_strip(json.loads(line)) for line in file.read_bytes().splitlines()]
        if name == "commands":
            lines[-1]["caseDigest"] = digest
        prev = genesis(case["id"], name)
        out = b""
        for line in lines:
            line["prev"] = prev
            encoded = json.dumps(line, separators=(",", ":")).encode()
            prev = hashlib.sha256(encoded).hexdigest()
            out += encoded + b"\n"
        file.write_bytes(out)
        state["bytes"], state["tip"] = len(out), prev
    (path / "case.json").write_text(json.dumps(case, indent=2) + "\n")


def test_a_case_written_before_channels_decodes_audits_and_shows_its_origins_as_unrecorded(
    cli: Cli, env: dict[str, str]
) -> None:
    task, decision = ask(cli)
    answer = ["case", "decision", "answer", task, decision, "--answer", "safe"]
    assert cli(*answer, "--responder", "alice").code == 0
    cli("case", "evidence", "add", task, "--claim", "a person said so", "--origin", "human")
    downgrade(case_path(env, task))
    for line in (case_path(env, task) / "evidence.jsonl").read_bytes().splitlines():
        assert b'"via"' not in line
    report = cli("case", "audit", task).data
    assert (report["ok"], report["errors"]) == (True, [])
    for name, text in surfaces(cli, task).items():
        assert "human (channel not recorded)" in text, name
        assert "reported by" not in text, name
    # And it is written to as any case: new records carry their channel.
    assert cli("case", "note", task, "after the upgrade").code == 0
    assert ledger(env, task, "commands")[-1]["via"] == "cli"
    assert cli("case", "audit", task).data["ok"] is True
