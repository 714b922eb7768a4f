"""First use, as a new user meets it: set-up files, interpreters, and the first verify.

The trial this replays (issue 13): `init` and `setup` wrote files into the repository without
saying so, the next case's `scope` verifier then failed on them, and the starter verifier ran a
bare `python` that was not the project's (or did not exist) while `doctor` said all was well.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Self

import pytest
from conftest import Cli, git, make_repo

from cortex.cli import commands
from cortex.kernel.host.programs import project_python

TEST_FILE = "from app import total\n\n\ndef test_total() -> None:\n    assert total(2, 3) == 5\n"


def project(tmp_path: Path, env: dict[str, str], name: str = "project") -> Path:
    """A small Python project with a planted bug, its tests, and its own (ignored) .venv."""
    repo = make_repo(tmp_path / name, env)
    (repo / "app.py").write_text("def total(a: int, b: int) -> int:\n    return a - b\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_app.py").write_text(TEST_FILE)
    (repo / "tests" / "conftest.py").write_text(
        "import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parent.parent))\n"
    )
    (repo / ".gitignore").write_text(".venv/\n")
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-q", "-m", "project", env=env)
    # The project's interpreter: this one (it has pytest), as the project's own .venv.
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").symlink_to(sys.executable)
    return repo


def follow(actions: list[dict[str, str]], repo: Path, env: dict[str, str]) -> None:
    """Run the git commands the output offered, as a person pasting them would."""
    for action in actions:
        if action["command"].startswith("git "):
            done = subprocess.run(
                ["bash", "-c", action["command"]],
                cwd=repo,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            assert done.returncode == 0, done.stderr


def first_case(cli: Cli) -> tuple[str, list[str]]:
    """open, evidence, plan (pytest and scope), lease, fix: ready for the first verify.

    Returns the task and the warnings its `case open` gave.
    """
    opened = cli("case", "open", "Fix total").data
    task = opened["taskId"]
    evidence = cli(
        "case", "evidence", "add", task, "--claim", "total subtracts",
        "--kind", "code_location", "--file", "app.py", "--line", "2",
    ).data["evidence"]["id"]  # fmt: skip
    planned = cli(
        "case", "plan", task, "--hypothesis", "total subtracts :: the test passes unchanged",
        "--support", f"1={evidence}", "--uncertainty", "none",
        "--file", "app.py", "--boundary-reason", "the bug is there",
        "--verify", "pytest", "--verify", "scope",
    )  # fmt: skip
    assert planned.code == 0, planned.stdout
    assert cli("case", "begin-change", task).code == 0
    (cli.cwd / "app.py").write_text("def total(a: int, b: int) -> int:\n    return a + b\n")
    return task, opened["warnings"]


class TestTheTrialFlow:
    @pytest.mark.process
    def test_following_the_printed_advice_the_first_verify_is_not_failed_by_cortex_files(
        self, tmp_path: Path, env: dict[str, str]
    ) -> None:
        env = {**env, "CORTEX_APPROVE_COMMANDS": "1", "CORTEX_ACTOR": "agent-1"}
        # Cortex on PATH, as after `pipx install`: setup writes `cortex`, never this machine's path.
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]
        repo = project(tmp_path, env)
        cli = Cli(env, repo)
        init = cli("init")
        data = init.data
        # Relative to the repository: a teammate's clone has its own (issue 29).
        assert data["argv"]["pytest"][0] == ".venv/bin/python"
        assert data["interpreter"]["source"] == "the project's .venv, relative to the repository"
        [toml] = data["files"]
        assert (toml["relative"], toml["changesTree"]) == ("cortex.toml", True)
        assert "commit it before you open a case" in toml["advice"]
        follow(init.envelope["actions"], repo, env)
        setup = cli("setup", "claude")
        files = {(f["relative"], f["changesTree"]) for f in setup.data["files"]}
        assert files == {(".mcp.json", True), (".claude/settings.json", True)}
        follow(setup.envelope["actions"], repo, env)
        assert git(repo, "status", "--porcelain", env=env) == ""
        assert cli("doctor").code == 0

        task, warnings = first_case(cli)
        assert warnings == []
        verified = cli("case", "verify", task).data
        statuses = {r["requirement"]: r["status"] for r in verified["receipts"] if r["requirement"]}
        assert statuses == {"pytest": "passed", "scope": "passed"}, verified["receipts"]
        assert verified["assessment"]["status"] == "verified"

    @pytest.mark.process
    def test_without_the_commit_cortex_files_are_the_tasks_drift(
        self, tmp_path: Path, env: dict[str, str]
    ) -> None:
        """The control: the same flow, the advice ignored, and scope fails on cortex.toml."""
        env = {**env, "CORTEX_APPROVE_COMMANDS": "1", "CORTEX_ACTOR": "agent-1"}
        repo = project(tmp_path, env)
        cli = Cli(env, repo)
        assert cli("init").code == 0
        task, warnings = first_case(cli)
        # Said at the moment it matters, too: when the case opens.
        assert len(warnings) == 1
        assert warnings[0].startswith("cortex.toml (written by cortex init or setup) is not")
        verified = cli("case", "verify", task).data
        scope = next(r for r in verified["receipts"] if r["requirement"] == "scope")
        assert scope["status"] == "failed"

    def test_people_read_which_files_to_commit(self, tmp_path: Path, env: dict[str, str]) -> None:
        env = {**env, "PATH": os.path.dirname(sys.executable) + os.pathsep + env["PATH"]}
        repo = project(tmp_path, env)
        cli = Cli(env, repo)
        out = cli("init", human=True)
        assert out.code == 0
        text = " ".join(out.stdout.split())
        assert "interpreter: .venv/bin/python (the project's .venv, relative to the" in text
        assert "cortex.toml: commit it before you open a case" in text
        assert "next: git add -- cortex.toml && git commit -m 'Set up Cortex'" in text
        shown = " ".join(cli("setup", "claude", human=True).stdout.split())
        assert ".mcp.json: commit it before you open a case" in shown
        assert ".claude/settings.json: commit it before you open a case" in shown
        user = " ".join(cli("setup", "codex", "--scope", "user", human=True).stdout.split())
        assert "outside the repository: nothing to commit" in user


class TestInterpreter:
    def test_the_project_venv_then_venv_then_virtual_env_then_python3(
        self, tmp_path: Path, env: dict[str, str]
    ) -> None:
        root = tmp_path / "p"
        root.mkdir()
        active = tmp_path / "active"
        (active / "bin").mkdir(parents=True)
        (active / "bin" / "python").symlink_to(sys.executable)
        bare: dict[str, str] = {"PATH": env["PATH"], "VIRTUAL_ENV": str(active)}
        assert project_python(str(root), bare)[0] == str(active / "bin" / "python")
        for name in ("venv", ".venv"):
            (root / name / "bin").mkdir(parents=True)
            (root / name / "bin" / "python").symlink_to(sys.executable)
            assert project_python(str(root), bare) == (
                str(root / name / "bin" / "python"),
                f"the project's {name}",
            )
        python3 = project_python(str(tmp_path), {"PATH": env["PATH"]})
        assert python3[1] == "python3 on PATH"
        assert os.path.isabs(python3[0])
        assert os.path.basename(python3[0]) == "python3"
        nothing = project_python(str(tmp_path), {"PATH": str(tmp_path / "empty")})
        assert nothing[0] == "python3"
        assert nothing[1].startswith("not found")

    def test_init_never_writes_a_bare_python(self, tmp_path: Path, env: dict[str, str]) -> None:
        repo = make_repo(tmp_path / "plain", env)
        (repo / "tests").mkdir()
        (repo / "tests" / "test_x.py").write_text("def test_x() -> None:\n    pass\n")
        argv = Cli(env, repo)("init").data["argv"]["pytest"]
        assert argv[0] == "python3"  # never a bare python, never this machine's path


class TestDoctor:
    def test_a_verifier_whose_program_is_missing_fails_with_the_fix(
        self, tmp_path: Path, env: dict[str, str]
    ) -> None:
        repo = make_repo(tmp_path / "repo", env)
        (repo / "cortex.toml").write_text(
            '[verifiers.unit]\nargv = ["python-that-is-not-here", "-m", "pytest"]\n\n'
            f'[verifiers.ok]\nargv = ["{sys.executable}", "-V"]\n'
        )
        out = Cli(env, repo)("doctor")
        assert out.code == 1
        checks = {c["name"]: c for c in out.envelope["data"]["checks"]}
        check = checks["verifier programs"]
        assert check["status"] == "fail"
        assert "unit runs 'python-that-is-not-here', which is not on PATH" in check["detail"]
        assert "[verifiers.unit].argv" in check["fix"]
        assert str(repo / "cortex.toml") in check["fix"]
        (repo / "cortex.toml").write_text(f'[verifiers.ok]\nargv = ["{sys.executable}", "-V"]\n')
        fine = Cli(env, repo)("doctor")
        checks = {c["name"]: c for c in fine.data["checks"]}
        assert checks["verifier programs"]["status"] == "ok"
        assert sys.executable in checks["verifier programs"]["detail"]


class TestTrustPrompt:
    def test_the_prompt_shows_the_program_the_run_will_use(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: dict[str, str]
    ) -> None:
        """The terminal is faked; the prompt must name the resolved executable."""
        written = io.BytesIO()

        class Tty:
            def __enter__(self) -> Self:
                return self

            def __exit__(self, *_: object) -> None:
                return None

            def write(self, data: bytes) -> int:
                return written.write(data)

            def readline(self, _limit: int) -> bytes:
                return b"pytest\n"

        from cortex.cli import terminal

        # The prompt is asked at /dev/tty by cortex.cli.terminal.ask, whatever asks it.
        monkeypatch.setattr(terminal, "open", lambda *_a, **_k: Tty(), raising=False)
        confirm = commands._confirm_at_terminal("pytest", {"PATH": env["PATH"]})
        assert confirm is not None
        assert confirm(str(tmp_path), ["python3", "-m", "pytest"]) is True
        prompt = written.getvalue().decode()
        found = project_python(str(tmp_path), {"PATH": env["PATH"]})[0]
        assert f'  program: "{found}"' in prompt
        written.seek(0)
        written.truncate()
        assert confirm(str(tmp_path), ["no-such-program-here"]) is True
        assert "program: not found on PATH" in written.getvalue().decode()
