"""Architecture rules, enforced by reading the source (and by running the hot path)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, Cli

CORE = [ROOT / "cortex" / "cases", ROOT / "cortex" / "kernel"]
FORBIDDEN_IMPORTS = ("rich", "mcp", "cortex.cli", "cortex.mcp", "git")


def modules(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.py"))


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
        for path in modules(directory):
            tree = ast.parse(path.read_text(), str(path))
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
        for path in modules(directory)
        for name in imports(ast.parse(path.read_text()))
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN_IMPORTS)
    ]
    assert offences == []


def test_cases_imports_nothing_else_of_cortex() -> None:
    """The storage layer is the bottom: it depends on no other cortex package."""
    offences = [
        f"{path}: imports {name}"
        for path in modules(ROOT / "cortex" / "cases")
        for name in imports(ast.parse(path.read_text()))
        if name.startswith("cortex.") and not name.startswith("cortex.cases")
    ]
    assert offences == []


def test_the_per_call_path_stays_light(cli: Cli, task: str) -> None:
    """evidence add and status import no heavy module (docs/benchmarks.md has the costs)."""
    heavy = [
        "rich", "git", "mcp", "portalocker", "ulid", "hashlib", "_hashlib", "argparse",
        "tomllib", "subprocess", "pathlib", "tempfile", "shutil", "json", "socket", "random",
        "cortex.mcp", "anyio", "pydantic", "textual", "cortex.studio",
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
        for path in modules(ROOT / "cortex")
        for where, _, name in _calls(ast.parse(path.read_text()), {"failure", "ErrorInfo"})
    }
    assert found == allowed


def test_both_surfaces_answer_errors_through_the_shared_surface() -> None:
    """The CLI and the MCP server build no envelope of their own: they call `execute`."""
    for relative in ("cortex/main.py", "cortex/mcp/server.py", "cortex/mcp/tools.py"):
        tree = ast.parse((ROOT / relative).read_text())
        assert _calls(tree, {"Envelope", "ErrorInfo", "success", "failure"}) == [], relative
    server = ast.parse((ROOT / "cortex" / "mcp" / "server.py").read_text())
    assert {name for _, _, name in _calls(server, {"execute"})} == {"execute"}
