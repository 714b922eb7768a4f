"""Issue 19: who may do what (docs/design/trust.md).

Lease tokens: two processes with the same actor name are two holders; only the one given the
token verifies, completes, renews, releases or moves the boundary; a token of another case is
refused; two `cortex serve` processes with the same CORTEX_ACTOR cannot both hold the lease; a
holder killed with SIGKILL loses its lease at expiry.

These tests do not use the suite's lease-token book (tests/stand_ins.py): every process here
is started by the test, with exactly the environment it names.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    Cli,
    Outcome,
    case_path,
    configure_verifiers,
    tree_state,
)
from test_mcp import run_async, serving
from test_mcp_adversarial import envelope_of, raw_server

PYTHON = sys.executable
PLAN = (
    "--hypothesis", "app.py returns the wrong page :: a request shows the right one",
    "--uncertainty", "none", "--file", "app.py", "--boundary-reason", "the bug lives here",
    "--verify", "command:unit",
)  # fmt: skip


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def detached(args: list[str], env: dict[str, str], cwd: Path, *, stdin: bytes = b"") -> Outcome:
    """`python -m cortex ARGS --json` as an agent's tool call runs it: a new session with no
    controlling terminal, stdin and stdout pipes."""
    proc = subprocess.run(
        [PYTHON, "-m", "cortex", *args, "--json"],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=120,
        start_new_session=True,
        check=False,
    )
    return Outcome(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def files(env: dict[str, str], task: str) -> dict[str, tuple[int, int, int, int]]:
    """The case's files but its lock (each holder rewrites its diagnostics there)."""
    state = tree_state(case_path(env, task))
    state.pop(".lock")
    return state


def planned(cli: Cli) -> str:
    """A change case planned to verify `command:unit` on app.py; nobody holds the lease."""
    task = cli.open("Fix the login redirect")
    evidence = cli("case", "evidence", "add", task, "--claim", "app.py is wrong").data
    out = cli("case", "plan", task, *PLAN, "--support", f"1={evidence['evidence']['id']}")
    assert out.code == 0, out.stdout
    return task


@pytest.fixture
def unit(repo: Path, env: dict[str, str]) -> dict[str, str]:
    """An approved `command:unit` that passes; the environment to run it with."""
    configure_verifiers(repo, env, {"unit": [PYTHON, "-c", "print('unit: 1 passed')"]})
    return {**env, "CORTEX_APPROVE_COMMANDS": "1"}


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

    def test_block_and_abort_need_no_token(
        self, cli: Cli, unit: dict[str, str], repo: Path
    ) -> None:
        """A person must always be able to stop a case; stopping it ends the lease."""
        task = planned(cli)
        assert detached(["case", "begin-change", task, "--actor", "agent-1"], unit, repo).code == 0
        out = detached(["case", "block", task, "--reason", "stuck", "--actor", "alice"], unit, repo)
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
