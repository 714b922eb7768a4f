"""The documentation tells the truth: commands, keys, variables and bounds all appear in it."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from conftest import ROOT

from cortex.cases import bounds
from cortex.cli.grammar import COMMANDS
from cortex.cli.parser import command_help
from cortex.kernel.config import ENV_KEYS, FILE_KEYS

README = (ROOT / "README.md").read_text()
CONFIG = (ROOT / "CONFIG.md").read_text()


def test_ci_runs_the_readme_setup_commands_verbatim() -> None:
    """The README's two set-up commands are exactly what .ci/run executes."""
    block = re.search(r"```bash\n(.*?)```", README, re.DOTALL)
    assert block is not None
    readme_commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(readme_commands) == 2
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    # `bash .ci/...` lines provision CI itself (a browser for the report's proof tests).
    ci_commands = [
        line
        for line in ci
        if line.strip() and not line.startswith(("#", "set ", "cd ", "bash .ci/"))
    ]
    assert ci_commands == readme_commands
    assert "pytest" in readme_commands[1]
    assert "examples/quickstart.sh" in readme_commands[0]


def test_the_readme_test_command_runs_on_every_core() -> None:
    """The suite runs in parallel (pytest-xdist), and the dev extra installs what that needs."""
    block = re.search(r"```bash\n(.*?)```", README, re.DOTALL)
    assert block is not None
    test_command = [line for line in block.group(1).splitlines() if "pytest" in line]
    assert test_command == [".venv/bin/python -m pytest -n auto"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    dev = project["project"]["optional-dependencies"]["dev"]
    assert any(requirement.startswith("pytest-xdist") for requirement in dev)


def test_every_command_is_in_the_readme_with_help() -> None:
    """Each CLI command appears in README.md and has help text."""
    for command in COMMANDS:
        spelled = "cortex " + " ".join(command.words)
        assert spelled in README, f"{spelled} is not documented"
        text = command_help(command)
        for option in command.options:
            assert option.name in text


def test_every_configuration_key_is_documented() -> None:
    """CONFIG.md has a section for every file key and names its environment variable."""
    for key in FILE_KEYS:
        assert f"### `{key}`" in CONFIG, key
    for variable in ENV_KEYS.values():
        assert f"`{variable}`" in CONFIG, variable


def test_every_environment_variable_read_is_documented() -> None:
    """Any variable name the code reads appears in CONFIG.md."""
    pattern = re.compile(r"^(CORTEX_[A-Z_]+|XDG_[A-Z_]+|GIT_[A-Z_]+|HOME|NO_COLOR)$")
    names: set[str] = set()
    for path in (ROOT / "cortex").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and pattern.match(value):
                names.add(value)
    assert "CORTEX_STATE_DIR" in names, "the scan found nothing; is it looking in the right place?"
    missing = sorted(name for name in names if f"`{name}`" not in CONFIG)
    assert missing == []


def test_every_bound_is_documented() -> None:
    """docs/bounds.md lists every constant of cortex/cases/bounds.py."""
    table = (ROOT / "docs" / "bounds.md").read_text()
    constants = [n for n in vars(bounds) if n.isupper() and n not in {"KIB", "MIB"}]
    assert len(constants) > 20
    missing = [name for name in constants if f"`{name}`" not in table]
    assert missing == []


def test_design_docs_name_every_crash_point() -> None:
    """docs/design/storage.md lists each crash point the code defines."""
    design = (ROOT / "docs" / "design" / "storage.md").read_text()
    points: set[str] = set()
    for path in (ROOT / "cortex" / "cases").glob("*.py"):
        points.update(re.findall(r'_crash\.(?:point|due)\("([a-z_.]+)"\)', path.read_text()))
        points.update(re.findall(r'"((?:txn|commit)\.[a-z_]+)"', path.read_text()))
    assert len(points) >= 10
    missing = sorted(p for p in points if p not in design)
    assert missing == []


def test_changelog_has_an_unreleased_section() -> None:
    """Users can read what changed."""
    assert "## [Unreleased]" in (Path(ROOT) / "CHANGELOG.md").read_text()


def test_the_reference_page_is_the_command_tables_written_out() -> None:
    """docs/reference.md is generated from the grammar and the tool table: drift fails here."""
    from reference_doc import PAGE, render

    assert PAGE.read_text() == render(), "regenerate: python tests/reference_doc.py --write"


def test_the_schema_directory_is_the_answer_types_written_out() -> None:
    """docs/schema/ is generated from cortex/kernel/answers.py: drift fails here."""
    from schema_doc import DIRECTORY, render

    files = render()
    assert sorted(p.name for p in DIRECTORY.glob("*.json")) == sorted(files), (
        "regenerate: python tests/schema_doc.py --write"
    )
    for name, text in files.items():
        assert (DIRECTORY / name).read_text() == text, (
            f"{name}: regenerate: python tests/schema_doc.py --write"
        )
