"""The real Codex CLI, offline, against a scripted Responses API: the hooks `setup codex` wrote.

Codex loads the hooks.json `cortex setup codex` wrote (it refuses a file it cannot read, and
then no hook runs), runs them, and sends their words to the model: the brief as a developer
message, a blocked stop as a `<hook_prompt>` user message (docs/design/hosts.md). Skipped, with
the reason, where Codex is not installed (`.ci/hosts` installs it in CI).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import Cli, configure_verifiers, git, run_cortex
from host_kit import ScriptedResponses, codex_provider, codex_text, need_codex, run_codex

pytestmark = [pytest.mark.timeout(600), pytest.mark.process]

CORTEX = os.path.join(os.path.dirname(sys.executable), "cortex")
"""Codex's shell is a login shell that sets its own PATH: the agent names Cortex in full."""


@pytest.fixture
def codex() -> str:
    return need_codex()


def test_brief_blocked_stop_and_tokenless_verify_through_codex(
    codex: str, repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    configure_verifiers(repo, env, {"unit": [sys.executable, "-c", "print('unit: 1 passed')"]})
    home = tmp_path / "codex-home"
    (home / ".codex").mkdir(parents=True)
    hosted = {
        **env,
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        "PATH": os.path.dirname(sys.executable) + os.pathsep + env["PATH"],
        "CORTEX_APPROVE_COMMANDS": "1",
    }
    cli = Cli(hosted, repo)
    task = cli.open("Fix the checkout redirect", "--mode", "change")
    evidence = cli("case", "evidence", "add", task, "--claim", "login() returns /home").data
    assert cli(
        "case", "plan", task, "--hypothesis", "login() drops the target :: a run shows it kept",
        "--support", f"1={evidence['evidence']['id']}", "--uncertainty", "none",
        "--verify", "command:unit", "--file", "app.py", "--boundary-reason", "login lives here",
    ).code == 0  # fmt: skip
    script = [
        {"bash": f"{CORTEX} case begin-change {task}"},
        {"bash": "printf 'x = 1\\n' > app.py"},
        {"text": "Fixed."},
        {"bash": f"{CORTEX} case verify {task}"},
        {"text": "Verified."},
    ]
    with ScriptedResponses(script) as model:
        config = home / ".codex" / "config.toml"
        config.write_text(codex_provider(model))
        proc = run_cortex(["setup", "codex", "--json"], hosted, repo)
        assert proc.returncode == 0, proc.stdout
        written = json.loads(proc.stdout)["data"]
        assert written["hooks"]["path"] == str(home / ".codex" / "hooks.json")
        assert "model_providers" in config.read_text()  # the person's own tables stay
        run = run_codex(codex, repo, hosted, "Fix the checkout redirect.")
    assert run.returncode == 0, run.stdout + run.stderr
    turns = model.requests
    first = codex_text(turns[0])
    assert task in first  # the brief, as a developer message
    assert "Fix the checkout redirect" in first
    started = codex_text(turns[1])
    assert "codex-" in started  # the lease taken by the session's shell: Codex's session actor
    blocked = codex_text(turns[3])
    assert "<hook_prompt" in blocked
    assert f"cortex case verify {task}" in blocked
    verified = codex_text(turns[4])
    assert "lease_conflict" not in verified
    assert len(turns) == 5
    status = cli("case", "status", task).data
    assert status["verification"]["status"] == "verified"
    assert status["lease"]["actor"].startswith("codex-")
    git(repo, "status", env=env)
