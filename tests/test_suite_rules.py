"""Rules that keep the suite quick to collect and safe to run in parallel (docs/testing.md).

Collecting the suite imports every test module, in every worker: a module that imports another
test module, or an SDK at import time, makes every run pay for it, even a run of one file.
Shared helpers live in modules without the `test_` prefix (`*_kit.py`, `conftest.py`), and
heavy libraries are imported inside the tests that use them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import ROOT

TESTS = ROOT / "tests"
HEAVY = ("mcp", "mcp_types", "textual", "git", "jsonschema", "cortex.studio.app")
"""Imported only inside the tests that use them: each costs 0.1-1.2 s to import."""


def suite_files() -> list[Path]:
    return sorted(TESTS.glob("*.py"))


def module_level_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, module) of each import outside functions, `if TYPE_CHECKING:` blocks aside."""
    found: list[tuple[int, str]] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                found.extend((node.lineno, alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.append((node.lineno, node.module))
            elif isinstance(node, ast.If) and not _type_checking(node.test):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)

    visit(tree.body)
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def every_import(tree: ast.Module) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
    return found


def test_no_test_module_imports_another() -> None:
    """Helpers two test modules share go in a helper module, never in a test module."""
    names = {path.stem for path in suite_files() if path.stem.startswith("test_")}
    offences = [
        f"tests/{path.name}:{line} imports {name}: move what it needs to a helper module"
        for path in suite_files()
        for line, name in every_import(ast.parse(path.read_text(), str(path)))
        if name.split(".")[0] in names
    ]
    assert offences == []


def test_collecting_imports_no_heavy_library() -> None:
    """No test or helper module imports an SDK when the suite is collected."""
    offences = [
        f"tests/{path.name}:{line} imports {name} at import time: import it in the test"
        for path in suite_files()
        for line, name in module_level_imports(ast.parse(path.read_text(), str(path)))
        if any(name == heavy or name.startswith(heavy + ".") for heavy in HEAVY)
    ]
    assert offences == []


@pytest.mark.parametrize(
    ("source", "offence"),
    [
        ("import mcp_types as types\n", "mcp_types"),
        ("from mcp.client.session import ClientSession\n", "mcp.client.session"),
        ("import sys\nif sys.platform:\n    import textual\n", "textual"),
        ("try:\n    import git\nexcept ImportError:\n    pass\n", "git"),
    ],
)
def test_the_heavy_import_rule_sees_a_planted_import(source: str, offence: str) -> None:
    """A test of the test: module-level imports are found wherever they hide."""
    found = [name for _, name in module_level_imports(ast.parse(source))]
    assert offence in found


def test_the_heavy_import_rule_allows_lazy_imports() -> None:
    """Inside a function, or under `if TYPE_CHECKING:`, an import costs collection nothing."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import mcp_types\n"
        "def f():\n    import textual\n"
    )
    assert [name for _, name in module_level_imports(ast.parse(source))] == ["typing"]
