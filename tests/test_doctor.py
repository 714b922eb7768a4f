"""`cortex doctor`: read-only checks, each failure with its fix, exit 1 when one fails."""

from __future__ import annotations

import calendar
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, Cli, case_path, run_cortex, tree_state
from setup_kit import HOOK_SET, make_venv, run_setup

from cortex.kernel.host import hooks as hook_set

CLAUDE_HOOKS = len(HOOK_SET["claude"])
CODEX_HOOKS = len(HOOK_SET["codex"])

BIN = os.path.dirname(os.path.abspath(sys.executable))
"""This installation's bin directory: its `cortex` script is what setup's path form runs."""


def checks(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {check["name"]: check for check in data["checks"]}


def on_path(env: dict[str, str]) -> None:
    """Put this installation's `cortex` first on PATH, as `pipx install` or a venv would."""
    env["PATH"] = BIN + os.pathsep + env["PATH"]


def test_a_healthy_workspace_passes(cli: Cli, repo: Path, state_root: Path) -> None:
    """Every check runs and passes (or warns); nothing is written anywhere."""
    task = cli.open()
    before_state, before_repo = tree_state(state_root), tree_state(repo)
    out = cli("doctor")
    assert out.code == 0, out.stdout
    found = checks(out.data)
    for name in ("git", "configuration", "store identity", "state directory", "locks"):
        assert found[name]["status"] == "ok", found[name]
    assert found["store health"]["status"] == "ok"
    assert found["MCP server"]["status"] == "ok"
    assert found["MCP server"]["detail"] == "not registered; run cortex setup claude|codex"
    assert found["host hooks"] == {
        "name": "host hooks",
        "status": "ok",
        "detail": "not installed; cortex setup claude|codex installs them",
        "fix": None,
    }
    assert out.data["ok"] is True
    assert tree_state(state_root) == before_state
    assert tree_state(repo) == before_repo
    assert case_path(cli.env, task).is_dir()
    assert "store identity" in cli("doctor", human=True).stdout


def test_a_broken_configuration_fails_with_its_file_and_key(cli: Cli, repo: Path) -> None:
    """A bad key does not stop the doctor: it is the failing check, with the file and key."""
    (repo / "cortex.toml").write_text("lock_timeout = 'soon'\n")
    out = cli("doctor")
    assert out.code == 1
    envelope = out.envelope
    assert envelope["error"]["code"] == "doctor_failed"
    config = checks(envelope["data"])["configuration"]
    assert config["status"] == "fail"
    assert "cortex.toml" in config["detail"]
    assert "lock_timeout" in config["detail"]
    assert config["fix"]


def test_missing_git_fails_with_a_fix(cli: Cli, env: dict[str, str], tmp_path: Path) -> None:
    """Without git on PATH the git check fails and says what to install."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env["PATH"] = str(empty)
    out = cli("doctor")
    assert out.code == 1
    git = checks(out.envelope["data"])["git"]
    assert git["status"] == "fail"
    assert "install git" in git["fix"]


def test_an_interrupted_write_is_a_warning(cli: Cli) -> None:
    """A pending journal is reported with its case, and does not fail the doctor."""
    task = cli.open()
    (case_path(cli.env, task) / ".journal.json").write_text("{}")
    out = cli("doctor")
    assert out.code == 0
    health = checks(out.data)["store health"]
    assert health["status"] == "warn"
    assert task in health["detail"]


def test_unapproved_verifiers_are_a_warning_naming_the_fix(cli: Cli, repo: Path) -> None:
    """A configured command nobody approved: a warning with the trust command to run."""
    (repo / "cortex.toml").write_text('[verifiers.unit]\nargv = ["true"]\n')
    approval = checks(cli("doctor").data)["verifier approval"]
    assert approval["status"] == "warn"
    assert approval["fix"] == "cortex case trust unit"


@pytest.mark.process
def test_a_plugin_that_cannot_load_fails(repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    """A registered verifier plugin whose module is missing fails the check (real process)."""
    site = tmp_path / "site"
    info = site / "broken_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[cortex.verifiers]\nbroken = no_such_module:Thing\n")
    plugin_env = {**env, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"}
    done = run_cortex(["doctor", "--json"], plugin_env, repo)
    assert done.returncode == 1
    envelope = json.loads(done.stdout)
    plugins = checks(envelope["data"])["verifier plugins"]
    assert plugins["status"] == "fail"
    assert "broken" in plugins["detail"]
    assert done.stderr == b""


def fake_python(path: Path, exit_status: int, marker: Path | None = None) -> Path:
    """An executable named like an interpreter that exits with `exit_status` (and leaves a mark)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    touch = f"touch '{marker}'\n" if marker else ""
    path.write_text(f"#!/bin/sh\n{touch}exit {exit_status}\n")
    path.chmod(0o755)
    return path


def register(path: Path, command: str) -> None:
    """A registration as `cortex setup` writes it, naming `command`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".toml":
        path.write_text(
            f'[mcp_servers.cortex]\ncommand = "{command}"\nargs = ["-m", "cortex", "serve"]\n'
        )
    else:
        entry = {"type": "stdio", "command": command, "args": ["-m", "cortex", "serve"]}
        path.write_text(json.dumps({"mcpServers": {"cortex": entry}}))


def test_registrations_by_setup_pass_and_doctor_writes_nothing(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    """Both hosts set up from this installation: ok, each place named, nothing written."""
    on_path(env)
    assert cli("setup", "claude").code == 0
    assert cli("setup", "codex").code == 0
    home = Path(env["HOME"])
    before = (tree_state(home), tree_state(repo))
    found = checks(cli("doctor").data)
    mcp = found["MCP server"]
    assert mcp["status"] == "ok"
    assert mcp["detail"] == (
        f"claude project ({repo / '.mcp.json'}): cortex (this installation); "
        f"codex user ({home / '.codex' / 'config.toml'}): cortex (this installation)"
    )
    assert found["host hooks"] == {
        "name": "host hooks",
        "status": "ok",
        "detail": (
            f"claude project ({repo / '.claude' / 'settings.json'}): {CLAUDE_HOOKS} hooks, current "
            f"(template {hook_set.digest('claude')}); "
            f"codex user ({home / '.codex' / 'hooks.json'}): {CODEX_HOOKS} hooks, current "
            f"(template {hook_set.digest('codex')})"
        ),
        "fix": None,
    }
    assert (tree_state(home), tree_state(repo)) == before


def test_a_missing_interpreter_fails_with_the_setup_fix(
    cli: Cli, repo: Path, tmp_path: Path
) -> None:
    register(repo / ".mcp.json", str(tmp_path / "gone" / "bin" / "python"))
    out = cli("doctor")
    assert out.code == 1
    mcp = checks(out.envelope["data"])["MCP server"]
    assert mcp["status"] == "fail"
    assert "does not exist" in mcp["detail"]
    assert mcp["fix"] == "cortex setup claude --scope project"


@pytest.mark.process
def test_another_interpreter_without_cortex_fails(
    cli: Cli, env: dict[str, str], tmp_path: Path
) -> None:
    python = fake_python(tmp_path / "other" / "python3", 1)
    register(Path(env["HOME"]) / ".codex" / "config.toml", str(python))
    out = cli("doctor")
    assert out.code == 1
    mcp = checks(out.envelope["data"])["MCP server"]
    assert mcp["status"] == "fail"
    assert "cannot import cortex" in mcp["detail"]
    assert mcp["fix"] == "cortex setup codex --scope user"


@pytest.mark.process
def test_another_interpreter_with_cortex_is_a_warning(
    cli: Cli, env: dict[str, str], tmp_path: Path
) -> None:
    python = fake_python(tmp_path / "other" / "python3", 0)
    register(Path(env["HOME"]) / ".claude.json", str(python))
    out = cli("doctor")
    assert out.code == 0
    mcp = checks(out.data)["MCP server"]
    assert mcp["status"] == "warn"
    assert "another interpreter" in mcp["detail"]
    assert mcp["fix"] == "cortex setup claude --scope user"


def test_a_repository_cannot_get_its_own_program_run(cli: Cli, repo: Path, tmp_path: Path) -> None:
    """A project file naming a program inside the repository: reported, never executed."""
    marker = tmp_path / "ran"
    python = fake_python(repo / "tools" / "python3", 0, marker)
    register(repo / ".codex" / "config.toml", str(python))
    mcp = checks(cli("doctor").data)["MCP server"]
    assert mcp["status"] == "warn"
    assert "not run" in mcp["detail"]
    assert not marker.exists()


def test_an_unparsable_host_configuration_fails_naming_the_file(
    cli: Cli, env: dict[str, str]
) -> None:
    path = Path(env["HOME"]) / ".claude.json"
    path.write_text("{broken")
    out = cli("doctor")
    assert out.code == 1
    mcp = checks(out.envelope["data"])["MCP server"]
    assert mcp["status"] == "fail"
    assert str(path) in mcp["detail"]
    assert str(path) in mcp["fix"]
    assert path.read_text() == "{broken"


def test_a_host_timeout_shorter_than_a_verifier_is_a_warning(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    """Codex's tool_timeout_sec (60 s unset) or Claude Code's MCP_TOOL_TIMEOUT below a verifier."""
    on_path(env)
    (repo / "cortex.toml").write_text('[verifiers.unit]\nargv = ["true"]\ntimeout = 300\n')
    codex = Path(env["HOME"]) / ".codex" / "config.toml"
    register(codex, sys.executable)
    mcp = checks(cli("doctor").data)["MCP server"]
    assert mcp["status"] == "warn"
    assert "after 60 s (tool_timeout_sec)" in mcp["detail"]
    assert "(300 s)" in mcp["detail"]
    assert mcp["fix"] == "cortex setup codex --scope user"
    assert cli("setup", "codex").code == 0
    assert checks(cli("doctor").data)["MCP server"]["status"] == "ok"

    # Setup writes Claude Code's timeout into the settings' env, long enough: nothing to say.
    assert cli("setup", "claude", "--scope", "user").code == 0
    settings = Path(env["HOME"]) / ".claude" / "settings.json"
    assert json.loads(settings.read_bytes())["env"] == {"MCP_TOOL_TIMEOUT": "360000"}
    assert checks(cli("doctor").data)["MCP server"]["status"] == "ok"
    env["MCP_TOOL_TIMEOUT"] = "120000"
    mcp = checks(cli("doctor").data)["MCP server"]
    assert mcp["status"] == "warn"
    assert "after 120000 ms (MCP_TOOL_TIMEOUT)" in mcp["detail"]
    assert mcp["fix"] == "cortex setup claude --scope user (it writes MCP_TOOL_TIMEOUT)"
    del env["MCP_TOOL_TIMEOUT"]
    settings.write_text(json.dumps({"env": {"MCP_TOOL_TIMEOUT": "90000"}}))
    mcp = checks(cli("doctor").data)["MCP server"]
    assert mcp["status"] == "warn"
    assert "after 90000 ms" in mcp["detail"]
    settings.write_text(json.dumps({"env": {"MCP_TOOL_TIMEOUT": "400000"}}))
    assert checks(cli("doctor").data)["MCP server"]["status"] == "ok"


def test_a_project_settings_timeout_outgrown_by_a_verifier_is_a_warning(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    """Set up for a 300 s verifier, then the verifier is given 900 s: the host gives up first."""
    on_path(env)
    config = repo / "cortex.toml"
    config.write_text('[verifiers.unit]\nargv = ["true"]\ntimeout = 300\n')
    assert cli("setup", "claude").code == 0
    settings = repo / ".claude" / "settings.json"
    assert json.loads(settings.read_bytes())["env"] == {"MCP_TOOL_TIMEOUT": "360000"}
    assert checks(cli("doctor").data)["MCP server"]["status"] == "ok"
    config.write_text('[verifiers.unit]\nargv = ["true"]\ntimeout = 900\n')
    mcp = checks(cli("doctor").data)["MCP server"]
    assert mcp["status"] == "warn"
    assert "after 360000 ms (MCP_TOOL_TIMEOUT)" in mcp["detail"]
    assert "(900 s)" in mcp["detail"]


def hooks_of(out_data: dict[str, Any]) -> dict[str, Any]:
    return checks(out_data)["host hooks"]


@pytest.mark.parametrize("damage", ["digest", "event"])
def test_a_stale_hook_set_fails_and_setup_repairs_it(
    cli: Cli, repo: Path, env: dict[str, str], damage: str
) -> None:
    """From another version of the template, or missing an event: the fix is setup, and works."""
    on_path(env)
    assert cli("setup", "claude").code == 0
    settings = repo / ".claude" / "settings.json"
    written = settings.read_text()
    current = hook_set.digest("claude")
    assert written.count(f"--template {current}") == CLAUDE_HOOKS
    if damage == "digest":
        settings.write_text(written.replace(current, "0123456789ab"))
        why = "from another version of Cortex"
    else:
        document = json.loads(written)
        del document["hooks"]["Stop"]
        settings.write_text(json.dumps(document, indent=2) + "\n")
        why = "missing Stop"
    out = cli("doctor")
    assert out.code == 1
    assert hooks_of(out.envelope["data"]) == {
        "name": "host hooks",
        "status": "fail",
        "detail": f"claude project ({settings}): the hook set is stale ({why}; "
        f"template now {current})",
        "fix": "cortex setup claude --scope project",
    }
    repaired = cli("setup", "claude").data
    assert (repaired["changed"], repaired["hooks"]["changed"]) == (False, True)
    out = cli("doctor")
    assert out.code == 0, out.stdout
    assert hooks_of(out.data) == {
        "name": "host hooks",
        "status": "ok",
        "detail": (
            f"claude project ({settings}): {CLAUDE_HOOKS} hooks, current (template {current})"
        ),
        "fix": None,
    }
    if damage == "digest":
        assert settings.read_text() == written  # ours back in place, nothing else moved


def test_a_hook_program_that_does_not_exist_fails(
    cli: Cli, repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """The host would run a program that is not there: every hook would fail (silently)."""
    on_path(env)
    assert cli("setup", "codex", "--scope", "project").code == 0
    hooks = repo / ".codex" / "hooks.json"
    written = hooks.read_text()
    # Cortex is no longer on PATH (uninstalled, or another shell's PATH).
    elsewhere = tmp_path / "bin-without-cortex"
    elsewhere.mkdir()
    env["PATH"] = os.pathsep.join([str(elsewhere), *env["PATH"].split(os.pathsep)[1:]])
    assert shutil.which("cortex", path=env["PATH"]) is None
    out = cli("doctor")
    assert out.code == 1
    found = hooks_of(out.envelope["data"])
    assert found["status"] == "fail"
    assert found["detail"] == (
        f"codex project ({hooks}): the hooks run cortex, which does not exist here"
    )
    assert found["fix"] == "cortex setup codex --scope project"
    # A path edited by hand to a program that is gone fails the same way.
    on_path(env)
    hooks.write_text(written.replace('"cortex hook Stop', '"/gone/bin/cortex hook Stop'))
    found = hooks_of(cli("doctor").envelope["data"])
    assert found["status"] == "fail"
    assert found["detail"] == (
        f"codex project ({hooks}): the hooks run /gone/bin/cortex, which does not exist here"
    )
    assert cli("setup", "codex", "--scope", "project").data["hooks"]["changed"] is True
    assert hooks_of(cli("doctor").data)["status"] == "ok"


def run_hook(cli: Cli, event: str, payload: bytes) -> None:
    """One real hook call, as the host makes it: it always answers and exits 0."""
    out = cli("hook", event, "--template", hook_set.digest("claude"), stdin=payload, human=True)
    assert out.code == 0


def test_a_hook_failure_since_its_last_success_is_a_warning(
    cli: Cli, repo: Path, state_root: Path
) -> None:
    ok = json.dumps({"session_id": "s-1", "cwd": str(repo), "stop_hook_active": False})
    run_hook(cli, "Stop", ok.encode())
    assert hooks_of(cli("doctor").data)["status"] == "ok"
    run_hook(cli, "Stop", b"not json")
    log = state_root / "hooks.log"
    [line] = log.read_text().splitlines()
    record = json.loads(line)
    assert (record["event"], record["host"], record["error"]) == (
        "Stop",
        "claude",
        "payload_not_json",
    )
    out = cli("doctor")
    assert out.code == 0  # a warning: the hooks failed open, the host went on
    assert hooks_of(out.data) == {
        "name": "host hooks",
        "status": "warn",
        "detail": f"the last claude Stop hook failed at {record['time']} (payload_not_json)",
        "fix": "see docs/design/hosts.md, section 2; CORTEX_DEBUG=1 prints the cause",
    }
    # The same failure a minute before the last success: it ran well since.
    when = time.strptime(record["time"], "%Y-%m-%dT%H:%M:%SZ")
    earlier = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(calendar.timegm(when) - 60))
    log.write_text(json.dumps({**record, "time": earlier}) + "\n")
    assert hooks_of(cli("doctor").data)["status"] == "ok"
    # A success of another event says nothing of this one.
    run_hook(cli, "SessionStart", b"[]")
    run_hook(cli, "Stop", ok.encode())
    found = hooks_of(cli("doctor").data)
    assert found["status"] == "warn"
    assert "the last claude SessionStart hook failed at" in found["detail"]
    assert "(payload_not_object)" in found["detail"]


def test_an_unreadable_hooks_file_fails_naming_it(cli: Cli, env: dict[str, str]) -> None:
    settings = Path(env["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": ')
    out = cli("doctor")
    assert out.code == 1
    found = hooks_of(out.envelope["data"])
    assert found["status"] == "fail"
    assert found["detail"].startswith(f"claude user ({settings}): {settings} is not valid JSON")
    assert found["fix"] == f"repair or move aside {settings}"
    assert settings.read_text() == '{"hooks": '


def test_the_repositorys_own_virtualenv_is_checked_never_run(
    cli: Cli, repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """The venv form: the hooks' program is found under $CLAUDE_PROJECT_DIR; nothing is run."""
    marker = tmp_path / "ran"
    python = make_venv(repo, marker)
    data = run_setup(env, repo, "claude", scope="project", interpreter=str(python))
    assert data["program"]["form"] == "venv"
    out = cli("doctor")
    found = checks(out.data)
    settings = repo / ".claude" / "settings.json"
    current = hook_set.digest("claude")
    assert found["host hooks"]["status"] == "ok"
    assert found["host hooks"]["detail"] == (
        f"claude project ({settings}): {CLAUDE_HOOKS} hooks, current (template {current})"
    )
    # Another installation than the one running doctor: named, not started.
    assert found["MCP server"]["status"] == "warn"
    assert found["MCP server"]["detail"] == (
        f"claude project ({repo / '.mcp.json'}): .venv/bin/cortex is another Cortex "
        "installation, not run to check it"
    )
    (repo / ".venv" / "bin" / "cortex").unlink()
    out = cli("doctor")
    assert out.code == 1
    found = checks(out.envelope["data"])
    assert found["host hooks"]["detail"] == (
        f"claude project ({settings}): the hooks run {repo}/.venv/bin/cortex, which does not "
        "exist here"
    )
    assert found["MCP server"]["status"] == "fail"
    assert not marker.exists()


@pytest.mark.process
def test_codex_venv_hooks_pass_from_a_subdirectory(repo: Path, env: dict[str, str]) -> None:
    python = make_venv(repo)
    data = run_setup(env, repo, "codex", scope="project", interpreter=str(python))
    assert data["program"]["form"] == "venv"
    sub = repo / "src"
    sub.mkdir()
    done = run_cortex(["doctor", "--json"], env, sub)
    found = checks(json.loads(done.stdout)["data"])
    assert found["host hooks"]["status"] == "ok", found["host hooks"]
