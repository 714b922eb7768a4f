"""The real Claude Code CLI, offline, against a scripted model: what the hooks make it say.

`cortex setup claude` installs the hooks in a real repository; `claude -p` runs there against
`host_kit.ScriptedModel` on 127.0.0.1; the tests assert on the requests that reached the model
(docs/design/hosts.md, section 9). Skipped, with the reason, where Claude Code is not installed
(`.ci/hosts` installs it in CI).
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, configure_verifiers, git, run_cortex
from host_kit import (
    ScriptedModel,
    host_env,
    last_message,
    need_claude,
    run_claude,
    text_of,
    tool_result,
)

pytestmark = [pytest.mark.timeout(600), pytest.mark.process]


@pytest.fixture
def claude() -> str:
    return need_claude()


@pytest.fixture
def hosted(repo: Path, env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The repository with a verifier and Cortex set up for Claude Code, all committed."""
    configure_verifiers(repo, env, {"unit": [sys.executable, "-c", "print('unit: 1 passed')"]})
    setup_env = {**env, "PATH": str(Path(sys.executable).parent) + ":" + env["PATH"]}
    proc = run_cortex(["setup", "claude", "--json"], setup_env, repo)
    assert proc.returncode == 0, proc.stdout
    git(repo, "add", ".mcp.json", ".claude/settings.json", env=env)
    git(repo, "commit", "-q", "-m", "Set up Cortex", env=env)
    return {**env, "CORTEX_APPROVE_COMMANDS": "1", "_HOME": str(tmp_path / "claude-home")}


def planned_case(cli: Cli) -> str:
    """A change case with its plan committed, waiting for someone to take the lease."""
    task = cli.open("Fix the checkout redirect", "--mode", "change")
    evidence = cli("case", "evidence", "add", task, "--claim", "login() returns /home").data
    out = cli(
        "case", "plan", task, "--hypothesis", "login() drops the target :: a run shows it kept",
        "--support", f"1={evidence['evidence']['id']}", "--uncertainty", "none",
        "--verify", "command:unit", "--file", "app.py", "--boundary-reason", "login lives here",
    )  # fmt: skip
    assert out.code == 0, out.stdout
    return task


def test_brief_blocked_stop_tokenless_verify_and_released_stop(
    claude: str, hosted: dict[str, str], repo: Path
) -> None:
    """The whole loop, through the real host: every hook's words as the model received them."""
    cli = Cli(hosted, repo)
    task = planned_case(cli)
    session = str(uuid.uuid4())
    script = [
        {"bash": f"cortex case begin-change {task}"},
        {"bash": "printf 'def login():\\n    return \"/checkout\"\\n' > app.py"},
        {"text": "Fixed: login() now returns to the checkout."},
        {"bash": f"cortex case verify {task}"},
        {"text": "Verified: the unit verifier passed on the changed code."},
    ]
    with ScriptedModel(script) as model:
        env = host_env(hosted, Path(hosted["_HOME"]), model)
        run = run_claude(claude, repo, env, "Fix the checkout redirect.",
                         extra=("--session-id", session))  # fmt: skip
    assert run.returncode == 0, run.stderr
    turns = model.requests
    # The brief, in the very first request.
    first = text_of(turns[0])
    assert "SessionStart hook additional context" in first
    assert task in first
    assert "Fix the checkout redirect" in first
    assert f"next: cortex case begin-change {task}" in first
    # begin-change from the session's Bash: no token pasted, the session holds the lease.
    assert "claude-" + session[:8] in tool_result(turns[1])
    # "Fixed" with no proof: the stop is blocked and the model is told the exact command.
    blocked = last_message(turns[3])
    assert "Stop hook" in blocked
    assert "no verification yet" in blocked
    assert f"cortex case verify {task}" in blocked
    # The verify the model ran from a fresh shell of the session, without a token.
    verified = tool_result(turns[4])
    assert "lease_conflict" not in verified
    assert "verified" in verified
    assert len(turns) == 5  # the last stop went through (the host's own loop guard)
    status = cli("case", "status", task).data
    assert status["verification"]["status"] == "verified"
    assert status["lease"]["actor"] == "claude-" + session[:8]

    # A new turn of the same session: the proof is current, so its stop goes through at once,
    # and the resumed brief says so.
    with ScriptedModel([{"text": "Nothing left to do."}]) as model:
        env = host_env(hosted, Path(hosted["_HOME"]), model)
        run = run_claude(claude, repo, env, "Anything left?", extra=("--resume", session))
    assert run.returncode == 0, run.stderr
    assert len(model.requests) == 1
    resumed = text_of(model.requests[0])
    assert "proof: current" in resumed
    assert "(this session)" in resumed


def test_an_edit_after_the_proof_blocks_again(
    claude: str, hosted: dict[str, str], repo: Path
) -> None:
    """Verified, then edited: the next stop names what changed since the proof."""
    cli = Cli(hosted, repo)
    task = planned_case(cli)
    script = [
        {"bash": f"cortex case begin-change {task} && printf 'x = 1\\n' > app.py"},
        {"bash": f"cortex case verify {task}"},
        {"bash": "printf 'x = 2\\n' > app.py"},
        {"text": "Done."},
        {"text": "Stopping: the last edit is not verified yet."},
    ]
    with ScriptedModel(script) as model:
        env = host_env(hosted, Path(hosted["_HOME"]), model)
        run = run_claude(claude, repo, env, "Change x.")
    assert run.returncode == 0, run.stderr
    blocked = last_message(model.requests[4])
    assert "proof is stale" in blocked
    assert "app.py" in blocked
    assert f"cortex case verify {task}" in blocked


def test_silence_where_no_case_is_open(claude: str, hosted: dict[str, str], repo: Path) -> None:
    """No case: nothing in the context, and a stop after an edit goes straight through."""
    script = [{"bash": "printf 'y = 1\\n' > app.py"}, {"text": "Edited."}]
    with ScriptedModel(script) as model:
        env = host_env(hosted, Path(hosted["_HOME"]), model)
        run = run_claude(claude, repo, env, "Edit app.py.")
    assert run.returncode == 0, run.stderr
    assert len(model.requests) == 2
    assert "SessionStart hook additional context" not in text_of(model.requests[0])
    assert "Stop hook" not in text_of(model.requests[-1])


def test_the_plugin_validates(claude: str, hosted: dict[str, str], repo: Path,
                              tmp_path: Path) -> None:  # fmt: skip
    """`cortex setup claude --plugin DIR` writes what `claude plugin validate` accepts."""
    directory = tmp_path / "cortex-plugin"
    proc = run_cortex(["setup", "claude", "--plugin", str(directory), "--json"], hosted, repo)
    assert proc.returncode == 0, proc.stdout
    assert json.loads(proc.stdout)["data"]["changed"] is True
    check = subprocess.run(
        [claude, "plugin", "validate", str(directory)],
        env={**hosted, "HOME": hosted["_HOME"]}, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    # Validation passes with warnings for entries it will ignore at runtime: there must be none.
    assert "ignored" not in (check.stdout + check.stderr).lower(), check.stdout + check.stderr


SECRET = "ghp_" + "Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2Xc4Vb6Nm8"
"""A made-up token in GitHub's real shape."""


def test_what_the_agent_did_is_recorded_and_set_against_its_claims(
    claude: str, hosted: dict[str, str], repo: Path
) -> None:
    """A failing run then a claim that the tests pass, a secret in a command, an edit outside
    the boundary: observed through the real host, flagged, warned, and never written down."""
    cli = Cli(hosted, repo)
    task = planned_case(cli)
    demo = repo / "demo_tests"
    demo.mkdir()
    (demo / "test_demo.py").write_text("def test_redirect():\n    assert '/home' == '/checkout'\n")
    script: list[dict[str, Any]] = [
        {"bash": f"cortex case begin-change {task}"},
        {"bash": f"{sys.executable} -m pytest -q -p no:cacheprovider demo_tests"},
        {"bash": f"cortex case evidence add {task} --claim 'All tests pass now'"},
        {"bash": f"echo 'Authorization: token {SECRET}' > /dev/null"},
        {
            "tool": "Write",
            "input": {"file_path": str(repo / "docs" / "notes.md"), "content": "x\n"},
        },
        {"text": "Done: the redirect is fixed and the tests pass."},
        {"text": "Stopping: not verified yet."},
    ]
    with ScriptedModel(script) as model:
        env = host_env(hosted, Path(hosted["_HOME"]), model)
        run = run_claude(claude, repo, env, "Fix the checkout redirect.", tools="Bash Write")
    assert run.returncode == 0, run.stderr
    turns = model.requests
    # The edit outside the boundary reached the model with the very next request.
    warned = last_message(turns[5])
    assert "docs/notes.md is outside the change boundary" in warned
    assert "(app.py)" in warned
    observed = cli("case", "status", task).data["observed"]
    [run_seen] = [r for r in observed["lastRuns"] if r["runner"] == "pytest"]
    assert run_seen["outcome"] == "failed"
    assert "1 failed" in (run_seen["summary"] or "")
    kinds = {flag["kind"] for flag in observed["flags"]}
    assert {"claim_after_failed_run", "edited_outside_boundary"} <= kinds
    report = cli("case", "report", task, "--format", "md", human=True).stdout
    assert "says the tests pass" in report
    # The secret went to the model (the host sent it), but Cortex wrote it nowhere.
    state = Path(hosted["CORTEX_STATE_DIR"])
    for root in (state, Path(hosted["_HOME"]) / ".cache", Path(hosted["HOME"]) / ".cache"):
        for path in root.rglob("*") if root.exists() else []:
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), path
    commands = (next(state.rglob("activity.jsonl"))).read_text()
    assert "[REDACTED]" in commands
    assert cli("case", "audit", task).code == 0


def test_a_subagents_tool_call_is_attributed_to_it(
    claude: str, hosted: dict[str, str], repo: Path
) -> None:
    cli = Cli(hosted, repo)
    task = planned_case(cli)
    agent = {"description": "look around", "prompt": "SUBAGENT: list the repository",
             "subagent_type": "general-purpose"}  # fmt: skip
    script: list[dict[str, Any]] = [
        {"bash": f"cortex case begin-change {task}"},
        {"tool": "Agent", "input": agent},
        {"text": "The subagent is looking."},
        {"text": "Stopping for now."},
        {"text": "Still stopping."},
    ]
    agents = {"SUBAGENT: list the repository": [{"bash": "ls -1"}, {"text": "Listed."}]}
    with ScriptedModel(script, agents=agents) as model:
        env = host_env(hosted, Path(hosted["_HOME"]), model)
        run = run_claude(claude, repo, env, "Look around.", tools="Bash Agent")
    assert run.returncode == 0, run.stderr
    timeline = cli("case", "timeline", task, "--kind", "activity").data["entries"]
    by_subagent = [e for e in timeline if "/general-purpose@" in str(e["actor"])]
    assert by_subagent, timeline
    assert "ls -1" in by_subagent[0]["title"]
    assert by_subagent[0]["actor"].startswith("claude-")
