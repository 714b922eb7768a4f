"""`cortex doctor`: read-only checks, each failure with its fix, exit 1 when one fails."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, Cli, case_path, run_cortex, tree_state


def checks(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {check["name"]: check for check in data["checks"]}


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
    """Both hosts registered with this interpreter: ok, each place named, nothing written."""
    assert cli("setup", "claude").code == 0
    assert cli("setup", "codex").code == 0
    home = Path(env["HOME"])
    before = (tree_state(home), tree_state(repo))
    mcp = checks(cli("doctor").data)["MCP server"]
    assert mcp["status"] == "ok"
    assert f"claude project ({repo / '.mcp.json'}): this interpreter" in mcp["detail"]
    assert "codex user" in mcp["detail"]
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
    import sys

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

    assert cli("setup", "claude").code == 0
    env["MCP_TOOL_TIMEOUT"] = "120000"
    mcp = checks(cli("doctor").data)["MCP server"]
    assert mcp["status"] == "warn"
    assert "after 120000 ms (MCP_TOOL_TIMEOUT)" in mcp["detail"]
    assert mcp["fix"] == "set MCP_TOOL_TIMEOUT=360000 (ms) where Claude Code starts"
    del env["MCP_TOOL_TIMEOUT"]
    settings = Path(env["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"env": {"MCP_TOOL_TIMEOUT": "90000"}}))
    assert "after 90000 ms" in checks(cli("doctor").data)["MCP server"]["detail"]
    settings.write_text(json.dumps({"env": {"MCP_TOOL_TIMEOUT": "400000"}}))
    assert checks(cli("doctor").data)["MCP server"]["status"] == "ok"
