"""Architecture rules, enforced by reading the source (and by running the hot path).

The layer table, the library table and the exceptions are read from docs/design/architecture.md,
so the page that explains the layers is the rule the suite enforces.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import Mapping
from functools import cache
from pathlib import Path

import pytest
from conftest import ROOT, Cli

CORE = [
    ROOT / "cortex" / name
    for name in ("cases", "workspace", "verifiers", "recall", "share", "kernel")
]
FORBIDDEN_IMPORTS = ("rich", "mcp", "cortex.cli", "cortex.mcp", "git")


def modules(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.py"))


def module_name(path: Path, root: Path = ROOT) -> str:
    """`cortex/kernel/views/__init__.py` -> `cortex.kernel.views`."""
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


@cache
def parsed() -> dict[str, tuple[Path, ast.Module]]:
    """Every module of the package, parsed once for all the checks of this file."""
    return {
        module_name(path): (path, ast.parse(path.read_text(), str(path)))
        for path in modules(ROOT / "cortex")
    }


def trees(directory: Path) -> list[tuple[Path, ast.Module]]:
    """(path, tree) of every module under `directory`, from the one parse."""
    return [(path, tree) for path, tree in parsed().values() if path.is_relative_to(directory)]


def imports(tree: ast.AST) -> list[str]:
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
    return found


def test_core_never_reads_the_environment_or_prints() -> None:
    """cases/ and kernel/ take the environment as an argument and never touch the terminal."""
    offences = []
    for directory in CORE:
        for path, tree in trees(directory):
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                    owner, attr = node.value.id, node.attr
                    if owner == "os" and attr in {"environ", "getenv", "environb", "putenv"}:
                        offences.append(f"{path}:{node.lineno} reads the environment")
                    if owner == "sys" and attr in {"stdout", "stderr", "stdin", "argv"}:
                        offences.append(f"{path}:{node.lineno} touches the terminal or argv")
                if isinstance(node, ast.Name) and node.id in {"print", "input"}:
                    offences.append(f"{path}:{node.lineno} uses {node.id}()")
                if isinstance(node, ast.ImportFrom) and node.module in {"os", "sys"}:
                    names = {alias.name for alias in node.names}
                    if names & {"environ", "getenv", "stdout", "stderr", "stdin", "argv"}:
                        offences.append(f"{path}:{node.lineno} imports {sorted(names)}")
    assert offences == []


def test_core_imports_no_surface_or_terminal_library() -> None:
    """cases/ and kernel/ import neither rich, mcp, GitPython nor the surfaces."""
    offences = [
        f"{path}: imports {name}"
        for directory in CORE
        for path, tree in trees(directory)
        for name in imports(tree)
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN_IMPORTS)
    ]
    assert offences == []


def test_cases_imports_nothing_else_of_cortex() -> None:
    """The storage layer is the bottom: it depends on no other cortex package."""
    offences = [
        f"{path}: imports {name}"
        for path, tree in trees(ROOT / "cortex" / "cases")
        for name in imports(tree)
        if name.startswith("cortex.") and not name.startswith("cortex.cases")
    ]
    assert offences == []


@pytest.mark.process
def test_the_per_call_path_stays_light(cli: Cli, task: str) -> None:
    """evidence add and status import no heavy module (docs/benchmarks.md has the costs)."""
    heavy = [
        "rich", "git", "mcp", "portalocker", "ulid", "hashlib", "_hashlib", "argparse",
        "tomllib", "subprocess", "pathlib", "tempfile", "shutil", "json", "socket", "random",
        "cortex.mcp", "anyio", "pydantic", "textual", "cortex.studio", "sqlite3", "_sqlite3",
        "cortex.recall.index",
    ]  # fmt: skip
    commands = [
        ["case", "evidence", "add", task, "--claim", "x", "--json"],
        ["case", "status", task, "--json"],
        ["case", "note", task, "y", "--json"],
    ]
    probe = (
        "import io, sys\n"
        "from cortex.main import main\n"
        f"for argv in {commands!r}:\n"
        "    assert main(argv, stdout=io.StringIO()) == 0, argv\n"
        "sys.stdout.write(' '.join(sorted(sys.modules)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=cli.cwd, env=cli.env, capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr.decode()
    loaded = set(proc.stdout.decode().split())
    assert "cortex.cases.txn" in loaded, "the probe did not exercise a write"
    assert sorted(set(heavy) & loaded) == []


def test_envelopes_are_plain_json(cli: Cli, task: str) -> None:
    """The JSON envelope survives a round trip through the standard library parser."""
    out = cli("case", "status", task)
    assert json.loads(out.stdout)["data"]["taskId"] == task


# The layer table ----------------------------------------------------------------------------

ARCHITECTURE = ROOT / "docs" / "design" / "architecture.md"


def _table(name: str) -> list[list[str]]:
    """The rows of the table between `<!-- name -->` and `<!-- /name -->` (header dropped)."""
    text = ARCHITECTURE.read_text()
    match = re.search(rf"<!-- {name} -->\n(.*?)<!-- /{name} -->", text, re.DOTALL)
    assert match, f"docs/design/architecture.md has no {name} table"
    rows = [line for line in match.group(1).splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def _names(cell: str) -> list[str]:
    return [name.strip().strip("`") for name in cell.split(",") if name.strip()]


class Layers:
    """The tables of docs/design/architecture.md, and a checker of a source tree against them."""

    def __init__(self) -> None:
        self.owner: list[tuple[str, str]] = []
        self.allowed: dict[str, set[str]] = {}
        for layer, modules, imports in _table("layers"):
            self.allowed[layer] = {layer, *_names(imports)}
            self.owner.extend((module, layer) for module in _names(modules))
        self.owner.sort(key=lambda pair: len(pair[0]), reverse=True)
        self.libraries = {lib.strip("`"): set(_names(where)) for lib, where in _table("libraries")}
        self.exceptions = {
            (importer.strip("`"), imported.strip("`"))
            for importer, imported, _ in _table("exceptions")
        }

    def layer(self, module: str) -> str | None:
        for prefix, layer in self.owner:
            if module == prefix or module.startswith(prefix + "."):
                return layer
        return None

    def violations(self, sources: Mapping[str, Facts]) -> list[str]:
        """Every import of `sources` (module name -> its facts) that the tables forbid, as
        `module: why` lines."""
        found: list[str] = []
        for module, (imported, transactions) in sorted(sources.items()):
            layer = self.layer(module)
            if layer is None:
                found.append(f"{module}: in no layer of the table")
                continue
            for name, line in imported:
                if (module, name) in self.exceptions:
                    continue
                found.extend(f"{module}:{line}: {why}" for why in self._judge(layer, name) if why)
            if layer == "views":
                found.extend(f"{module}:{line}: a view {why}" for line, why in transactions)
        return found

    def _judge(self, layer: str, name: str) -> list[str | None]:
        top = name.split(".", maxsplit=1)[0]
        if top == "cortex":
            target = self.layer(name)
            if target is not None and target not in self.allowed[layer]:
                return [f"{layer} imports {name} ({target})"]
            return []
        if top in self.libraries and layer not in self.libraries[top]:
            return [f"{layer} imports the library {top}"]
        return []


def _imported(tree: ast.AST) -> list[tuple[str, int]]:
    """Every module an import names, TYPE_CHECKING blocks and function bodies included."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.module, node.lineno))
            # `from cortex.kernel import views` imports a module too.
            found.extend((f"{node.module}.{alias.name}", node.lineno) for alias in node.names)
    return found


def _transactions(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "transaction":
            found.append((node.lineno, "opens a transaction"))
        if isinstance(node, ast.ImportFrom) and node.module == "cortex.cases.txn":
            found.append((node.lineno, "imports cortex.cases.txn"))
        if isinstance(node, ast.Import) and any(a.name == "cortex.cases.txn" for a in node.names):
            found.append((node.lineno, "imports cortex.cases.txn"))
    return found


Facts = tuple[list[tuple[str, int]], list[tuple[int, str]]]
"""What the layer check reads of a module: its imports and a view's transactions."""


def facts(tree: ast.AST) -> Facts:
    return _imported(tree), _transactions(tree)


@cache
def package_facts() -> dict[str, Facts]:
    """The facts of every module of the package, from the one parse, read once."""
    return {name: facts(tree) for name, (_, tree) in parsed().items()}


LAYERS = Layers()


def test_every_import_follows_the_layer_table() -> None:
    """Each module imports only the layers its row allows, and each library only where named."""
    assert LAYERS.violations(package_facts()) == []


def test_every_exception_is_still_needed() -> None:
    """An allow-list entry that no import uses any more is stale: remove it."""
    used: set[tuple[str, str]] = set()
    for module, (imported, _) in package_facts().items():
        used.update((module, name) for name, _ in imported)
    assert sorted(LAYERS.exceptions - used) == []


PLANTED = [
    ("cortex/verifiers/planted.py", "from cortex.kernel.kernel import Kernel\n", "verifiers"),
    (
        "cortex/verifiers/planted.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cortex.kernel import x\n",
        "verifiers imports cortex.kernel",
    ),
    ("cortex/kernel/views/planted.py", "from cortex.cases.txn import Transaction\n", "a view"),
    ("cortex/kernel/views/planted.py", "def f(s):\n    s.transaction('t')\n", "a view"),
    ("cortex/kernel/planted.py", "from cortex.kernel.host import doctor\n", "(host)"),
    ("cortex/kernel/views/planted.py", "import cortex.kernel.host.init\n", "(host)"),
    ("cortex/cli/planted.py", "from cortex.studio.app import StudioApp\n", "(studio)"),
    ("cortex/mcp/planted.py", "import cortex.cli.render\n", "(cli)"),
    ("cortex/studio/planted.py", "from cortex.mcp import tools\n", "(mcp)"),
    ("cortex/studio/planted.py", "from cortex.cases.bounds import X\n", "(cases)"),
    ("cortex/kernel/planted.py", "import textual\n", "library textual"),
    ("cortex/kernel/planted.py", "from rich.text import Text\n", "library rich"),
    ("cortex/kernel/views/planted.py", "def f():\n    import mcp\n", "library mcp"),
    ("cortex/cases/planted.py", "from cortex.workspace.capture import Capture\n", "(workspace)"),
    ("cortex/workspace/planted.py", "from cortex.verifiers import base\n", "(verifiers)"),
    ("cortex/cli/planted.py", "import git\n", "library git"),
    ("cortex/recall/planted.py", "from cortex.kernel.kernel import Kernel\n", "(kernel)"),
    ("cortex/recall/planted.py", "from cortex.verifiers import base\n", "(verifiers)"),
    ("cortex/kernel/planted.py", "import sqlite3\n", "library sqlite3"),
    ("cortex/kernel/views/planted.py", "def f():\n    import sqlite3\n", "library sqlite3"),
    ("cortex/share/planted.py", "from cortex.kernel.kernel import Kernel\n", "(kernel)"),
    ("cortex/cases/planted.py", "from cortex.share import git\n", "(share)"),
]


@pytest.mark.parametrize(("path", "source", "expected"), PLANTED)
def test_the_checker_catches_a_planted_violation(path: str, source: str, expected: str) -> None:
    """A test of the test: each forbidden arrow, planted beside the real tree, is reported."""
    sources = dict(package_facts())
    planted = module_name(Path(path), Path())
    assert planted not in sources, "a planted module must be new"
    sources[planted] = facts(ast.parse(source, path))
    found = LAYERS.violations(sources)
    assert len(found) >= 1, source
    assert all("planted" in line for line in found), found
    assert any(expected in line for line in found), found


def _calls(tree: ast.AST, names: set[str]) -> list[tuple[str, int, str]]:
    """(function the call sits in, line, callee) for each call of a name in `names`."""
    found: list[tuple[str, int, str]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inside = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inside = child.name
            if isinstance(child, ast.Call):
                callee = child.func
                name = (
                    callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
                )
                if name in names:
                    found.append((inside, child.lineno, name))
            visit(child, inside)

    visit(tree, "<module>")
    return found


def test_every_error_envelope_is_made_in_one_place() -> None:
    """Error text reaches output only through `surface.refusal`, which redacts it.

    `failure` (the error envelope) is called by `refusal` alone, and `ErrorInfo` (its message)
    is built by `failure` alone: no surface, CLI or MCP, can answer an error unredacted
    (issue 18: messages quoted bad values before redacting them).
    """
    allowed = {
        ("cortex/kernel/surface.py", "refusal", "failure"),
        ("cortex/kernel/envelope.py", "failure", "ErrorInfo"),
    }
    found = {
        (str(path.relative_to(ROOT)), where, name)
        for path, tree in parsed().values()
        for where, _, name in _calls(tree, {"failure", "ErrorInfo"})
    }
    assert found == allowed


def test_both_surfaces_answer_errors_through_the_shared_surface() -> None:
    """The CLI and the MCP server build no envelope of their own: they call `execute`."""
    for module in ("cortex.main", "cortex.mcp.server", "cortex.mcp.tools"):
        _, tree = parsed()[module]
        assert _calls(tree, {"Envelope", "ErrorInfo", "success", "failure"}) == [], module
    _, server = parsed()["cortex.mcp.server"]
    assert {name for _, _, name in _calls(server, {"execute"})} == {"execute"}
