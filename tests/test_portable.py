"""Set-up that survives a second machine, and says what will run (issue 29).

`cortex init` wrote this machine's absolute interpreter into cortex.toml, which it then said to
commit: a teammate's clone got a path that does not exist there. Without `init`, `--verify
pytest` ran whatever `python` was first on PATH while `config` and `doctor` said there was no
verifier and all was well; an unapproved verifier showed up only when verify was blocked.

The proof the issue asks for is the first test: a repository set up by `cortex init` is copied
to another path (another machine's clone), the original is moved away, and verify passes there.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, base_env, git, make_repo

TEST_FILE = "from app import total\n\n\ndef test_total() -> None:\n    assert total(2, 3) == 5\n"


def project(path: Path, env: dict[str, str], *, venv: bool = True) -> Path:
    """A small Python project with a planted bug, its tests and (ignored) its own .venv."""
    repo = make_repo(path, env)
    (repo / "app.py").write_text("def total(a: int, b: int) -> int:\n    return a - b\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_app.py").write_text(TEST_FILE)
    (repo / "tests" / "conftest.py").write_text(
        "import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parent.parent))\n"
    )
    (repo / ".gitignore").write_text(".venv/\n")
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-q", "-m", "project", env=env)
    if venv:
        # The project's interpreter: this one (it has pytest), as the project's own .venv.
        (repo / ".venv" / "bin").mkdir(parents=True)
        (repo / ".venv" / "bin" / "python").symlink_to(sys.executable)
    return repo


def fix_and_verify(cli: Cli) -> dict[str, Any]:
    """open, evidence, plan (pytest), lease, fix, verify: the verify's data."""
    task = cli("case", "open", "Fix total").data["taskId"]
    evidence = cli("case", "evidence", "add", task, "--claim", "total subtracts").data
    planned = cli(
        "case", "plan", task, "--hypothesis", "total subtracts :: the test passes unchanged",
        "--support", f"1={evidence['evidence']['id']}", "--uncertainty", "none",
        "--file", "app.py", "--boundary-reason", "the bug is there", "--verify", "pytest",
    )  # fmt: skip
    assert planned.code == 0, planned.stdout
    assert cli("case", "begin-change", task).code == 0
    (cli.cwd / "app.py").write_text("def total(a: int, b: int) -> int:\n    return a + b\n")
    out = cli("case", "verify", task)
    data: dict[str, Any] = out.envelope["data"]
    return data


@pytest.mark.process
def test_a_repository_set_up_by_init_verifies_when_copied_to_another_path(
    tmp_path: Path,
) -> None:
    (tmp_path / "first-machine").mkdir()
    (tmp_path / "second-machine").mkdir()
    first = base_env(tmp_path / "first-machine")
    first.update({"CORTEX_ACTOR": "agent-1"})
    origin = project(tmp_path / "first-machine" / "checkout", first)
    init = Cli(first, origin)("init")
    assert init.code == 0, init.stdout
    toml = (origin / "cortex.toml").read_text()
    assert str(tmp_path) not in toml, toml
    assert ".venv/bin/python" in toml
    git(origin, "add", "cortex.toml", env=first)
    git(origin, "commit", "-q", "-m", "Set up Cortex", env=first)

    # Another machine: another state root, the clone at another path, the original gone.
    second = base_env(tmp_path / "second-machine")
    second.update({"CORTEX_ACTOR": "agent-2", "CORTEX_APPROVE_COMMANDS": "1"})
    clone = tmp_path / "second-machine" / "elsewhere" / "checkout"
    shutil.copytree(origin, clone, symlinks=True)
    origin.rename(tmp_path / "first-machine" / "moved-away")
    cli = Cli(second, clone)
    doctor = cli("doctor")
    assert doctor.code == 0, doctor.stdout
    checks = {c["name"]: c for c in doctor.data["checks"]}
    assert checks["verifier programs"]["status"] == "ok"
    assert str(clone / ".venv" / "bin" / "python") in checks["verifier programs"]["detail"]
    verified = fix_and_verify(cli)
    pytest_receipt = next(r for r in verified["receipts"] if r["requirement"] == "pytest")
    assert pytest_receipt["status"] == "passed", pytest_receipt
    assert verified["assessment"]["status"] == "verified"


def test_init_writes_the_project_venv_relative_to_the_repository(
    tmp_path: Path, env: dict[str, str]
) -> None:
    repo = project(tmp_path / "p", env)
    data = Cli(env, repo)("init").data
    assert data["argv"]["pytest"] == [".venv/bin/python", "-m", "pytest", "-q"]
    assert data["interpreter"]["path"] == ".venv/bin/python"
    assert data["interpreter"]["resolved"] == str(repo / ".venv" / "bin" / "python")
    text = " ".join(Cli(env, repo)("init", "--force", human=True).stdout.split())
    assert "interpreter: .venv/bin/python (the project's .venv, relative to the repository)" in text


def test_init_without_a_venv_writes_a_command_on_path(tmp_path: Path, env: dict[str, str]) -> None:
    repo = project(tmp_path / "p", env, venv=False)
    data = Cli(env, repo)("init").data
    assert data["argv"]["pytest"][0] == "python3"
    assert not os.path.isabs(data["argv"]["pytest"][0])


@pytest.mark.process
def test_without_init_config_doctor_and_plan_say_what_pytest_will_run(
    tmp_path: Path, env: dict[str, str]
) -> None:
    repo = project(tmp_path / "p", env)
    cli = Cli(env, repo)
    python = str(repo / ".venv" / "bin" / "python")
    shown = cli("config").data["verifiers"]["pytest"]
    assert shown["configured"] is False
    assert shown["argv"][0] == python
    assert "found at run time" in shown["source"]
    assert shown["approval"].startswith("not approved: run `cortex case trust pytest`")
    text = " ".join(cli("config", human=True).stdout.split())
    assert f"{python} -m pytest [not configured: the project's interpreter" in text
    doctor = cli("doctor").data["checks"]
    checks = {c["name"]: c for c in doctor}
    assert f"pytest (not configured): {python}" in checks["verifier programs"]["detail"]
    assert checks["verifier approval"]["status"] == "warn"
    assert "cortex case trust pytest" in checks["verifier approval"]["fix"]

    task = cli("case", "open", "Fix total").data["taskId"]
    evidence = cli("case", "evidence", "add", task, "--claim", "total subtracts").data
    planned = cli(
        "case", "plan", task, "--hypothesis", "total subtracts :: the test passes",
        "--support", f"1={evidence['evidence']['id']}", "--uncertainty", "none",
        "--file", "app.py", "--boundary-reason", "there", "--verify", "pytest", "--verify", "scope",
    )  # fmt: skip
    data = planned.data
    (run,) = data["verifiers"]
    assert run["requirement"] == "pytest"
    assert run["argv"][:3] == [python, "-m", "pytest"]
    assert run["configured"] is False
    assert run["approved"] is False
    assert run["approve"] == "cortex case trust pytest"
    assert any("cortex case trust pytest" in w for w in data["warnings"]), data["warnings"]
    assert any("not configured" in w for w in data["warnings"]), data["warnings"]
    commands = [a["command"] for a in planned.envelope["actions"]]
    assert "cortex case trust pytest" in commands
    # What it said is what runs.
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    assert cli("case", "begin-change", task).code == 0
    (repo / "app.py").write_text("def total(a: int, b: int) -> int:\n    return a + b\n")
    receipt = cli("case", "verify", task).data["receipts"][0]
    assert receipt["claim"].startswith(f"pytest: `{python} -m pytest` exited 0")


def test_doctor_catches_a_broken_verifier_program(tmp_path: Path, env: dict[str, str]) -> None:
    """A venv whose interpreter link points nowhere, and a script whose #! names a missing one."""
    repo = project(tmp_path / "p", env, venv=False)
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").symlink_to(tmp_path / "gone" / "python3")
    script = repo / ".venv" / "bin" / "pytest"
    script.write_text(f"#!{tmp_path / 'gone' / 'python3'}\nimport pytest\n")
    script.chmod(0o755)
    (repo / "cortex.toml").write_text(
        '[verifiers.pytest]\nargv = [".venv/bin/python", "-m", "pytest"]\n\n'
        '[verifiers.unit]\nargv = [".venv/bin/pytest", "-q"]\n'
    )
    out = Cli(env, repo)("doctor")
    assert out.code == 1
    checks = {c["name"]: c for c in out.envelope["data"]["checks"]}
    check = checks["verifier programs"]
    assert check["status"] == "fail"
    assert "pytest runs '.venv/bin/python', a link to a missing" in check["detail"]
    assert (
        f"unit runs '.venv/bin/pytest', whose #! names {tmp_path / 'gone' / 'python3'}"
        in (check["detail"])
    )
