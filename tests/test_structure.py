"""The package's shape, read from its source: maps, private names and import cycles (issue 31).

- Each package's `__init__.py` docstring is its map: it names every module and subpackage in it
  (`` `name` `` or `` `name/` ``). README.md's layout table is the map of `cortex` itself.
- No module imports another module's private name. A private *module* (`cortex.cases._crash`)
  is not a private name: its underscore says it is no API (the crash points the crash tests stop
  at), and the layers that commit import it on purpose; its package's map names it like any
  other module. Dunders (`__version__`) are public.
- No cycle of imports, counting those inside functions and under `TYPE_CHECKING`, unless
  docs/design/architecture.md lists the cycle with its reason.
- No module over 600 lines unless its docstring says why (`Long because: <reason>`): a long
  module is usually two concerns, and the reader should be told when it is one.
- One git runner: only `cortex.workspace.git` hands a `git` command line to `subprocess`.

Each rule has a test of the test: a planted violation beside the real tree is reported.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGE = ROOT / "cortex"
README = ROOT / "README.md"
ARCHITECTURE = ROOT / "docs" / "design" / "architecture.md"
KERNEL_MOST = 25
"""Top-level entries of cortex/kernel (a module, a subpackage, `__init__.py`: one each)."""


def module_name(path: Path) -> str:
    """`cortex/kernel/views/__init__.py` -> `cortex.kernel.views`."""
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


@cache
def sources() -> dict[str, ast.Module]:
    """Every module of the package by its dotted name, parsed once."""
    return {
        module_name(path): ast.parse(path.read_text(), str(path))
        for path in sorted(PACKAGE.rglob("*.py"))
    }


# Maps ---------------------------------------------------------------------------------------


def children(package: Path) -> list[str]:
    """The modules (`name`) and subpackages (`name/`) directly in `package`."""
    found = [path.stem for path in package.glob("*.py") if path.name != "__init__.py"]
    found += [f"{path.name}/" for path in package.iterdir() if (path / "__init__.py").is_file()]
    return sorted(found)


def unmapped(text: str, entries: list[str]) -> list[str]:
    """The entries `text` does not name, as `` `name` `` or `` `name/` ``."""
    return [
        entry for entry in entries if not {f"`{entry}`", f"`{entry.rstrip('/')}`"} & _quoted(text)
    ]


def _quoted(text: str) -> set[str]:
    return set(re.findall(r"`[^`\n]+`", text))


def layout_table() -> str:
    """The rows of README.md's layout table."""
    lines = README.read_text().splitlines()
    start = lines.index("| package | what it owns |")
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return "\n".join(rows)


def test_every_module_is_in_its_package_map() -> None:
    """A new module is named, with what it owns, where a reader of its package looks first."""
    missing = []
    for init in sorted(PACKAGE.rglob("__init__.py")):
        if init.parent == PACKAGE:
            continue  # cortex itself: README's layout table is its map (the next test)
        text = ast.get_docstring(ast.parse(init.read_text())) or ""
        missing += [
            f"{init.relative_to(ROOT)} does not name {entry}"
            for entry in unmapped(text, children(init.parent))
        ]
    assert missing == []


def test_every_top_level_package_is_in_the_readme_layout() -> None:
    table = layout_table()
    entries = [
        f"cortex/{entry.rstrip('/')}" if entry.endswith("/") else f"cortex/{entry}.py"
        for entry in children(PACKAGE)
    ]
    assert unmapped(table, entries) == []


def test_the_kernel_has_at_most_25_top_level_modules() -> None:
    """Grouped so the tree shows the plan (docs/design/architecture.md, "kernel")."""
    kernel = PACKAGE / "kernel"
    entries = [*children(kernel), "__init__"]
    assert len(entries) <= KERNEL_MOST, entries


def test_the_map_checks_catch_a_missing_entry() -> None:
    """A test of the test: an unnamed module or subpackage, or one named only in prose."""
    text = "- `status` (and the list);\n- `timeline/`: the history;\n- handoff, unquoted."
    assert unmapped(text, ["status", "timeline/", "handoff/", "stat"]) == ["handoff/", "stat"]
    assert unmapped(layout_table(), ["cortex/planted", "cortex/kernel"]) == ["cortex/planted"]


# Private names ------------------------------------------------------------------------------


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(modules: Mapping[str, ast.Module]) -> list[str]:
    """Every private name a module takes from another, as `module:line: imports name from x`.

    `from a import _b` where `a._b` is not a module, and `a._b` where `a` names a module the
    importer imported (`from x import a`, `import x.a as a`).
    """
    found = []
    for importer, tree in sorted(modules.items()):
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    if full in modules:
                        aliases[alias.asname or alias.name] = full
                    elif _private(alias.name) and node.module != importer:
                        found.append(
                            f"{importer}:{node.lineno}: imports {alias.name} from {node.module}"
                        )
            elif isinstance(node, ast.Import):
                aliases.update(
                    (alias.asname, alias.name)
                    for alias in node.names
                    if alias.asname and alias.name in modules
                )
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and _private(node.attr)
                and f"{aliases[node.value.id]}.{node.attr}" not in modules
            ):
                owner = aliases[node.value.id]
                found.append(f"{importer}:{node.lineno}: reads {node.attr} of {owner}")
    return found


def test_no_private_name_is_imported_across_modules() -> None:
    """A helper two modules share is public, under a name that says what it is."""
    assert private_imports(sources()) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from cortex.cases.records import _Hidden\n", "imports _Hidden from cortex.cases.records"),
        ("from cortex.cases import records\nrecords._hidden()\n", "reads _hidden of"),
        ("import cortex.cases.records as r\nr._hidden\n", "reads _hidden of cortex.cases.records"),
        ("from cortex.cases import _crash\n", None),
        ("from cortex import __version__\n", None),
        ("from cortex.cases import records\nrecords.decode\n", None),
    ],
)
def test_the_private_name_check_catches_a_planted_import(source: str, expected: str | None) -> None:
    """A test of the test: private names are caught; a private module and a dunder are not."""
    modules = dict(sources())
    modules["cortex.cases.planted"] = ast.parse(source)
    found = private_imports(modules)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1
        assert found[0].startswith("cortex.cases.planted:"), found
        assert expected in found[0], found


# Cycles -------------------------------------------------------------------------------------


def graph(modules: Mapping[str, ast.Module]) -> dict[str, set[str]]:
    """Each module's imports of other cortex modules, lazy and TYPE_CHECKING ones included.

    `from a import b` is an arrow to `a.b` when that is a module, else to `a`.
    """
    arrows: dict[str, set[str]] = {name: set() for name in modules}
    for importer, tree in modules.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    arrows[importer].add(full if full in modules else node.module)
            elif isinstance(node, ast.Import):
                arrows[importer].update(alias.name for alias in node.names)
        arrows[importer] = {name for name in arrows[importer] if name in modules} - {importer}
    return arrows


def cycles(arrows: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """The sets of modules that reach each other (strongly connected, more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm; the graph is a few hundred modules
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(arrows[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(frozenset(members))

    for node in sorted(arrows):
        if node not in index:
            visit(node)
    return found


def allowed_cycles() -> dict[frozenset[str], str]:
    """The cycles docs/design/architecture.md lists, each with its reason."""
    text = ARCHITECTURE.read_text()
    match = re.search(r"<!-- cycles -->\n(.*?)<!-- /cycles -->", text, re.DOTALL)
    assert match, "docs/design/architecture.md has no cycles table"
    rows = [line for line in match.group(1).splitlines() if line.startswith("|")][2:]
    allowed = {}
    for row in rows:
        members, reason = (cell.strip() for cell in row.strip("|").split("|"))
        allowed[frozenset(name.strip().strip("`") for name in members.split(","))] = reason
    return allowed


def unlisted(found: list[frozenset[str]], allowed: Mapping[frozenset[str], str]) -> list[str]:
    return [
        "import cycle not in docs/design/architecture.md: " + ", ".join(sorted(cycle))
        for cycle in found
        if cycle not in allowed
    ]


def test_no_import_cycle_that_is_not_listed() -> None:
    """A cycle is listed with its reason, whole: a module that joins it fails here."""
    assert unlisted(cycles(graph(sources())), allowed_cycles()) == []


def test_every_listed_cycle_still_exists_and_has_a_reason() -> None:
    allowed = allowed_cycles()
    assert all(len(reason) > 20 for reason in allowed.values()), allowed
    assert sorted(map(sorted, set(allowed) - set(cycles(graph(sources()))))) == []


def test_the_cycle_check_catches_a_planted_cycle() -> None:
    """A test of the test: two modules that import each other, one of them lazily."""
    modules = dict(sources())
    modules["cortex.cases.planted_a"] = ast.parse("from cortex.cases import planted_b\n")
    modules["cortex.cases.planted_b"] = ast.parse(
        "def f():\n    from cortex.cases.planted_a import x\n"
    )
    found = unlisted(cycles(graph(modules)), allowed_cycles())
    planted = "cortex.cases.planted_a, cortex.cases.planted_b"
    assert found == [f"import cycle not in docs/design/architecture.md: {planted}"]


# Long modules -------------------------------------------------------------------------------

LONGEST = 600
"""Lines a module may have before its docstring must say why it is that long."""
REASON = re.compile(r"Long because: \S.{20,}")
"""A reason is a clause, not a word: `Long because: <why this is one concern>`."""


def overlong(modules: Mapping[str, tuple[int, str]]) -> list[str]:
    """The modules (path -> line count, docstring) over LONGEST lines with no reason given."""
    return [
        f"{path}: {lines} lines; cut it along its seams, or say `Long because: <reason>` in its "
        "docstring"
        for path, (lines, docstring) in sorted(modules.items())
        if lines > LONGEST and not REASON.search(docstring)
    ]


def test_no_module_is_long_without_a_reason() -> None:
    modules = {
        str(path.relative_to(ROOT)): (
            len(path.read_text().splitlines()),
            ast.get_docstring(sources()[module_name(path)]) or "",
        )
        for path in sorted(PACKAGE.rglob("*.py"))
    }
    assert overlong(modules) == []


def test_the_long_module_check_catches_a_planted_module() -> None:
    """A test of the test: over the line, no reason or a bare word; at the line."""
    found = overlong(
        {
            "cortex/planted.py": (LONGEST + 1, "What it owns."),
            "cortex/worded.py": (LONGEST + 1, "What it owns.\n\nLong because: reasons."),
            "cortex/reasoned.py": (LONGEST + 1, "Long because: one protocol, read top to bottom."),
            "cortex/short.py": (LONGEST, ""),
            "cortex/cli/parser.py": (LONGEST * 2, ""),
        }
    )
    assert [line.split(":")[0] for line in found] == [
        "cortex/cli/parser.py",
        "cortex/planted.py",
        "cortex/worded.py",
    ]


# One git runner -----------------------------------------------------------------------------

RUNNER = "cortex.workspace.git"
SUBPROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output"}


def git_outside_the_runner(modules: Mapping[str, ast.Module]) -> list[str]:
    """`subprocess.<call>(["git", ...])` anywhere but the runner, as `module:line`."""
    found = []
    for name, tree in sorted(modules.items()):
        if name == RUNNER:
            continue
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "subprocess"
                and node.func.attr in SUBPROCESS_CALLS
                and node.args
                and isinstance(node.args[0], ast.List)
                and node.args[0].elts
            ):
                continue
            first = node.args[0].elts[0]
            if isinstance(first, ast.Constant) and first.value == "git":
                found.append(f"{name}:{node.lineno}")
    return found


def test_git_runs_through_the_one_runner() -> None:
    """Time bounds and the mapping of a git that never ran are written once (workspace/git.py)."""
    assert git_outside_the_runner(sources()) == []


def test_the_runner_check_catches_a_planted_call() -> None:
    """A test of the test: a git call planted beside the runner; other programs pass."""
    modules = dict(sources())
    modules["cortex.cases.planted"] = ast.parse(
        "import subprocess\n"
        "subprocess.run(['git', 'status'], check=False)\n"
        "subprocess.run(['python', '-c', 'pass'], check=False)\n"
    )
    assert git_outside_the_runner(modules) == ["cortex.cases.planted:2"]
