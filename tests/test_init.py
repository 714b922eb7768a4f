"""`cortex init`: detect the test runner, write a starter verifier, never clobber one."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from conftest import Cli

from cortex.kernel.host.programs import portable_python


def python_of(cli: Cli) -> str:
    """The interpreter `init` writes for this test's repository (see test_portable)."""
    return portable_python(str(cli.cwd), cli.env)[0]


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_pytest_is_detected_and_written(cli: Cli, repo: Path) -> None:
    """A tests/ directory of test_*.py files gets a pytest verifier the config loader accepts."""
    write(repo / "tests" / "test_app.py", "def test_ok() -> None:\n    assert True\n")
    data = cli("init").data
    assert data["written"] == ["pytest"]
    assert data["verify"] == ["pytest"]
    config = tomllib.loads((repo / "cortex.toml").read_text())
    assert config["verifiers"]["pytest"]["argv"] == [python_of(cli), "-m", "pytest", "-q"]
    shown = cli("config").data["verifiers"]["pytest"]
    assert shown["argv"] == [python_of(cli), "-m", "pytest", "-q"]


@pytest.mark.parametrize(
    ("lockfile", "argv"),
    [
        (None, ["npm", "test"]),
        ("pnpm-lock.yaml", ["pnpm", "test"]),
        ("yarn.lock", ["yarn", "test"]),
        ("bun.lockb", ["bun", "run", "test"]),
    ],
)
def test_javascript_runners_follow_the_lockfile(
    cli: Cli, repo: Path, lockfile: str | None, argv: list[str]
) -> None:
    """package.json with a test script; the lockfile says which package manager runs it."""
    write(repo / "package.json", json.dumps({"scripts": {"test": "vitest run"}}))
    if lockfile:
        write(repo / lockfile, "")
    data = cli("init").data
    assert data["argv"] == {"js": argv}
    assert data["verify"] == ["command:js"]


def test_go_and_cargo_together(cli: Cli, repo: Path) -> None:
    """Several runners: one verifier each."""
    write(repo / "go.mod", "module example.com/x\n")
    write(repo / "Cargo.toml", "[package]\nname = 'x'\n")
    data = cli("init").data
    assert data["argv"] == {"cargo": ["cargo", "test"], "go": ["go", "test", "./..."]}


def test_nothing_detected_writes_nothing(cli: Cli, repo: Path) -> None:
    """No runner: exit 3 and no file."""
    assert cli("init").error_code == "not_found"
    assert not (repo / "cortex.toml").exists()


def test_a_second_run_is_refused_and_changes_no_byte(cli: Cli, repo: Path) -> None:
    """An existing verifier of the same name is kept unless --force."""
    write(repo / "conftest.py", "")
    write(repo / "cortex.toml", "# mine\nlock_timeout = 3\n")
    assert cli("init").code == 0
    before = (repo / "cortex.toml").read_bytes()
    assert before.startswith(b"# mine\nlock_timeout = 3\n")
    assert cli("init").error_code == "refused"
    assert (repo / "cortex.toml").read_bytes() == before


def test_force_replaces_the_verifier_and_keeps_other_keys(cli: Cli, repo: Path) -> None:
    """--force rewrites cortex.toml: the verifier is replaced, every other key survives."""
    write(repo / "conftest.py", "")
    write(
        repo / "cortex.toml",
        "lock_timeout = 3\nredact_literals = ['tenant-7731']\n\n"
        "[verifiers.pytest]\nargv = ['old']\ntimeout = 9\n\n[verifiers.lint]\nargv = ['ruff']\n",
    )
    data = cli("init", "--force").data
    assert data["replaced"] == ["pytest"]
    config = tomllib.loads((repo / "cortex.toml").read_text())
    assert config["lock_timeout"] == 3
    assert config["redact_literals"] == ["tenant-7731"]
    assert config["verifiers"]["lint"] == {"argv": ["ruff"]}
    assert config["verifiers"]["pytest"] == {"argv": [python_of(cli), "-m", "pytest", "-q"]}


def test_pyproject_gets_tool_cortex_tables(cli: Cli, repo: Path) -> None:
    """--pyproject appends [tool.cortex.verifiers.*] and leaves the rest of the file as it was."""
    original = "[project]\nname = 'x'\n\n[tool.pytest.ini_options]\naddopts = '-q'\n"
    write(repo / "pyproject.toml", original)
    data = cli("init", "--pyproject").data
    text = (repo / "pyproject.toml").read_text()
    assert text.startswith(original)
    assert tomllib.loads(text)["tool"]["cortex"]["verifiers"]["pytest"]["argv"][0] == python_of(cli)
    assert data["file"] == str(repo / "pyproject.toml")
    assert cli("init", "--pyproject", "--force").error_code == "refused"
    assert (repo / "pyproject.toml").read_text() == text


def test_a_write_that_would_break_the_file_is_refused(cli: Cli, repo: Path) -> None:
    """An inline verifiers table cannot take a new [tool.cortex.verifiers.*]: nothing is written."""
    original = "[tool.cortex]\nverifiers = { lint = { argv = ['ruff'] } }\n\n[tool.pytest]\n"
    write(repo / "pyproject.toml", original)
    assert cli("init", "--pyproject").error_code == "refused"
    assert (repo / "pyproject.toml").read_text() == original


def test_force_replaces_only_the_verifier_table_keeping_comments_and_layout(
    cli: Cli, repo: Path
) -> None:
    """--force edits cortex.toml as text: comments, blank lines and other tables stay as written."""
    write(repo / "conftest.py", "")
    head = (
        "# Cortex settings for this repository.\n"
        "lock_timeout = 3  # seconds\n"
        "\n"
        "\n"
        "[verifiers.lint]  # the linter\n"
        "argv = ['ruff', 'check']\n"
        "\n"
        "# The tests, as CI runs them:\n"
    )
    tail = "\n# Kept for the release job.\n[verifiers.docs]\nargv = [ 'mkdocs',  'build' ]\n"
    old_table = "[verifiers.pytest]\nargv = ['pytest', '-x']\ntimeout = 9\n"
    write(repo / "cortex.toml", head + old_table + tail)
    data = cli("init", "--force").data
    assert data["replaced"] == ["pytest"]
    new_table = f'[verifiers.pytest]\nargv = ["{python_of(cli)}", "-m", "pytest", "-q"]\n'
    assert (repo / "cortex.toml").read_text() == head + new_table + tail


def test_force_refuses_a_verifier_it_cannot_edit_as_text(cli: Cli, repo: Path) -> None:
    """A verifier written with dotted keys cannot be replaced in place: nothing is written."""
    write(repo / "conftest.py", "")
    original = "# mine\nverifiers.pytest.argv = ['old']\n"
    write(repo / "cortex.toml", original)
    assert cli("init", "--force").error_code == "refused"
    assert (repo / "cortex.toml").read_text() == original


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("[" * 100_000 + "]" * 100_000, id="100000-deep"),
        pytest.param('{"scripts": {"test": "x"}, "n": ' + "9" * 5_000 + "}", id="5000-digits"),
    ],
)
def test_a_hostile_package_json_never_crashes_detection(cli: Cli, repo: Path, content: str) -> None:
    """Too deep to read is no test script; a long number is just a number (never converted)."""
    write(repo / "tests" / "test_app.py", "def test_ok() -> None:\n    assert True\n")
    write(repo / "package.json", content)
    data = cli("init").data
    assert "pytest" in data["written"]
    assert ("js" in data["written"]) is content.startswith("{")


def test_a_pyproject_too_deep_to_read_is_a_config_error(cli: Cli, repo: Path) -> None:
    """`init --pyproject` reads a pyproject the configuration skipped (it never says cortex)."""
    write(repo / "tests" / "test_app.py", "def test_ok() -> None:\n    assert True\n")
    original = "a = " + "[" * 100_000 + "]" * 100_000 + "\n"
    write(repo / "pyproject.toml", original)
    out = cli("init", "--pyproject")
    assert out.code == 4
    assert out.error_code == "config_error"
    assert str(repo / "pyproject.toml") in out.envelope["error"]["message"]
    assert (repo / "pyproject.toml").read_text() == original
