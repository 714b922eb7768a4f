"""The change lease follows the agent host's session (docs/design/hosts.md, section 5).

Within one Claude Code or Codex session, a shell command and a restarted MCP server act as the
holder of the lease the session took, with no token; any other session, or a caller outside a
host without the token, is refused as before. Real `python -m cortex` processes stand for the
agent's Bash commands (each a fresh shell carrying only the session id), and real `cortex serve`
processes for the host's MCP servers.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, configure_verifiers, git, run_cortex, state_root
from mcp_kit import run_async, serving

from cortex.kernel.host_session import HostSession, session

pytestmark = pytest.mark.process  # its tests start cortex processes

__all__ = ["state_root"]

SESSION = "98009466-1806-441d-8f33-07a8d3a34ea5"
OTHER = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"


@pytest.fixture
def planned(cli: Cli, env: dict[str, str], repo: Path) -> str:
    """A change case with a plan that requires an approved verifier, and no lease yet."""
    configure_verifiers(repo, env, {"unit": [sys.executable, "-c", "print('1 passed')"]})
    cli.env["CORTEX_APPROVE_COMMANDS"] = "1"
    task = cli.open("Fix the login redirect", "--mode", "change")
    evidence = cli("case", "evidence", "add", task, "--claim", "the bug is in app.py").data
    out = cli(
        "case", "plan", task, "--hypothesis", "app.py is wrong :: a run shows it right",
        "--support", f"1={evidence['evidence']['id']}", "--uncertainty", "none",
        "--verify", "command:unit", "--file", "app.py", "--boundary-reason", "it is here",
    )  # fmt: skip
    assert out.code == 0, out.stdout
    return task


def shell(env: dict[str, str], host_session: str | None, **extra: str) -> dict[str, str]:
    """The environment of one Bash command the host runs: a fresh shell, no lease token."""
    fresh = {k: v for k, v in env.items() if k not in {"CORTEX_LEASE_TOKEN", "CORTEX_ACTOR"}}
    if host_session is not None:
        fresh["CLAUDE_CODE_SESSION_ID"] = host_session
    return {**fresh, **extra}


def run(args: list[str], env: dict[str, str], repo: Path) -> tuple[int, dict[str, Any]]:
    """One command as a real process, without the test harness's lease-token book."""
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "cortex", *args, "--json"],
        cwd=repo, env=env, capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    return proc.returncode, json.loads(proc.stdout)


def test_a_session_takes_the_lease_and_its_shells_verify_without_a_token(
    planned: str, env: dict[str, str], repo: Path
) -> None:
    """begin-change in a session, then verify from another fresh shell of the same session."""
    bash = shell(env, SESSION, CORTEX_APPROVE_COMMANDS="1")
    code, out = run(["case", "begin-change", planned], bash, repo)
    assert code == 0, out
    assert out["data"]["lease"]["actor"] == "claude-98009466"
    # The session holds the lease: no token is handed to the agent's transcript.
    assert out["data"]["leaseToken"] is None
    assert out["data"]["session"] == "claude-98009466"
    (repo / "app.py").write_text("print('fixed')\n")
    code, out = run(["case", "verify", planned], bash, repo)
    assert code == 0, out
    assert out["data"]["assessment"]["status"] == "verified", out["data"]["assessment"]
    code, out = run(["case", "lease", "renew", planned], bash, repo)
    assert code == 0, out
    assert out["data"]["result"] == "renewed"


def test_another_session_and_a_caller_outside_any_session_are_refused(
    planned: str, env: dict[str, str], repo: Path
) -> None:
    """The session is the credential: the same name from elsewhere, without the token, is not."""
    code, out = run(["case", "begin-change", planned], shell(env, SESSION), repo)
    assert code == 0, out
    (repo / "app.py").write_text("print('fixed')\n")
    approve = {"CORTEX_APPROVE_COMMANDS": "1"}
    for other in (shell(env, OTHER, **approve), shell(env, None, **approve)):
        for args in (
            ["case", "verify", planned],
            ["case", "lease", "release", planned, "--actor", "claude-98009466"],
            ["case", "begin-change", planned, "--actor", "claude-98009466"],
        ):
            code, refused = run(args, other, repo)
            assert code == 6, (args, refused)
            assert refused["error"]["code"] == "lease_conflict"
    # Outside any host session the token is the credential, as before.
    code, out = run(["case", "lease", "release", planned], shell(env, SESSION), repo)
    assert code == 0, out
    code, out = run(["case", "begin-change", planned, "--actor", "ci"], shell(env, None), repo)
    assert code == 0, out
    token = out["data"]["leaseToken"]
    assert token.startswith("cortex-lease-")
    assert "session" not in out["data"]
    outside = shell(env, None, CORTEX_APPROVE_COMMANDS="1", CORTEX_LEASE_TOKEN=token)
    code, out = run(["case", "verify", planned], outside, repo)
    assert code == 0, out


def test_a_session_named_otherwise_acts_as_the_holder_only_when_it_names_no_one(
    planned: str, env: dict[str, str], repo: Path
) -> None:
    """Taken as agent-1 in the session: an unnamed shell of it is agent-1; a named other is not."""
    code, out = run(["case", "begin-change", planned], shell(env, SESSION, CORTEX_ACTOR="agent-1"),
                    repo)  # fmt: skip
    assert code == 0, out
    assert out["data"]["lease"]["actor"] == "agent-1"
    code, out = run(["case", "lease", "renew", planned], shell(env, SESSION), repo)
    assert code == 0, out
    code, out = run(["case", "lease", "renew", planned, "--actor", "agent-2"], shell(env, SESSION),
                    repo)  # fmt: skip
    assert code == 6, out
    code, out = run(["case", "lease", "release", planned], shell(env, SESSION), repo)
    assert code == 0, out
    assert out["data"]["result"] == "released"


def test_a_binding_names_one_lease_only(
    planned: str, env: dict[str, str], repo: Path, state_root: Path
) -> None:
    """A lease replaced after it ended is not held by the session that took the old one."""
    code, out = run(["case", "begin-change", planned, "--ttl", "1s"], shell(env, SESSION), repo)
    assert code == 0, out
    binding = state_root / "hosts" / "leases" / f"{planned}.json"
    assert stat.S_IMODE(binding.stat().st_mode) == 0o600
    assert SESSION not in binding.read_text()  # only the digest of the session
    import time

    time.sleep(1.2)
    code, out = run(["case", "begin-change", planned, "--actor", "claude-98009466"],
                    shell(env, None), repo)  # fmt: skip
    assert code == 0, out  # expired: anyone may take it, here under the same name
    code, refused = run(["case", "lease", "renew", planned], shell(env, SESSION), repo)
    assert code == 6, refused


def test_session_ids_that_are_not_a_hosts_are_ignored() -> None:
    """Empty, padded, unprintable and overlong ids name no session; a digest stands in."""
    assert session("claude", "") is None
    assert session("claude", " abc") is None
    assert session("claude", "a\nb") is None
    assert session("claude", "x" * 129) is None
    assert session("other", SESSION) is None
    odd = HostSession("codex", "é/é/é/é/é")
    assert odd.actor == "codex-" + odd.digest[:8]
    assert HostSession("claude", SESSION).digest != HostSession("codex", SESSION).digest


# A restarted MCP server -----------------------------------------------------------------------


def test_a_restarted_mcp_server_of_the_session_still_holds_the_lease(
    planned: str, env: dict[str, str], repo: Path
) -> None:
    """The first server takes the lease and exits; a second of the same session verifies."""
    host = shell(env, SESSION, CORTEX_APPROVE_COMMANDS="1")

    async def body() -> None:
        async with serving(repo, host, errlog) as first:
            taken, _ = await first.call("cortex_begin_change", task_id=planned)
            assert taken["ok"], taken
            assert taken["data"]["lease"]["actor"] == "claude-98009466"
        (repo / "app.py").write_text("print('fixed')\n")
        stranger_env = shell(env, OTHER, CORTEX_APPROVE_COMMANDS="1")
        async with serving(repo, stranger_env, errlog) as stranger:
            refused, _ = await stranger.call("cortex_verify", task_id=planned)
            assert refused["error"]["code"] == "lease_conflict", refused
        async with serving(repo, host, errlog) as second:
            verified, _ = await second.call("cortex_verify", task_id=planned)
            assert verified["ok"], verified
            assert verified["data"]["assessment"]["status"] == "verified"

    with (repo.parent / "serve-stderr.txt").open("a") as errlog:
        run_async(body)


def test_records_written_in_a_session_name_its_actor(cli: Cli, env: dict[str, str],
                                                     repo: Path) -> None:  # fmt: skip
    """With no --actor and no CORTEX_ACTOR, a session's records are the session's, not `cli`'s."""
    task = cli.open()
    code = run_cortex(["case", "note", task, "seen in the session"], shell(env, SESSION), repo)
    assert code.returncode == 0, code.stderr
    out = cli("case", "timeline", task).data
    actors = {entry.get("actor") for entry in out["entries"]}
    assert "claude-98009466" in actors, out["entries"]
    git(repo, "status", env=env)


def test_a_clear_keeps_the_lease_in_the_same_host_process(
    planned: str, env: dict[str, str], repo: Path
) -> None:
    """`/clear` gives the conversation a new session id in the same Claude Code process: the
    process (CLAUDE_PID, with its start time) carries the lease; another process does not."""
    import os

    host = str(os.getpid())  # a live process stands for Claude Code's own
    code, out = run(["case", "begin-change", planned],
                    shell(env, SESSION, CLAUDE_PID=host), repo)  # fmt: skip
    assert code == 0, out
    cleared = shell(env, OTHER, CLAUDE_PID=host)
    code, out = run(["case", "lease", "renew", planned], cleared, repo)
    assert code == 0, out
    assert out["data"]["lease"]["actor"] == "claude-98009466"
    other_process = shell(env, OTHER, CLAUDE_PID=str(os.getppid()))
    code, out = run(["case", "lease", "renew", planned], other_process, repo)
    assert code == 6, out
