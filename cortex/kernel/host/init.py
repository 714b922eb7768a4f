"""`cortex init`: find the repository's test runner and write a starter verifier for it.

It writes `[verifiers.NAME]` tables to cortex.toml (or `[tool.cortex.verifiers.NAME]` to
pyproject.toml with `--pyproject`), never replaces a verifier that exists unless `--force`, and
edits the file as `setup codex` does (toml_edit: every comment, blank line and other table stays,
and the result must read back as intended) before replacing it atomically.
"""

from __future__ import annotations

import json
import os

from cortex.cases.bounds import CONFIG_FILE_MAX
from cortex.cases.errors import InvalidInputError, NotFoundError
from cortex.cases.fsio import read_bounded, write_atomic
from cortex.kernel.config import parse_toml
from cortex.kernel.envelope import Result, step
from cortex.kernel.errors import ConfigError, GateRefusedError
from cortex.kernel.inputs import Input
from cortex.kernel.kernel import Kernel


def detect(root: str, python: str = "python3") -> dict[str, list[str]]:
    """Verifier name -> argv for each test runner the repository shows signs of.

    `python` is the interpreter pytest runs with (`programs.project_python` finds the one that
    belongs to the project).
    """
    found: dict[str, list[str]] = {}

    def has(*names: str) -> bool:
        return any(os.path.isfile(os.path.join(root, name)) for name in names)

    def mentions(name: str, text: str) -> bool:
        try:
            return text in read_bounded(os.path.join(root, name), CONFIG_FILE_MAX).decode(
                "utf-8", "replace"
            )
        except (OSError, InvalidInputError):
            return False

    if (
        has("pytest.ini", "conftest.py")
        or mentions("pyproject.toml", "[tool.pytest")
        or mentions("setup.cfg", "[tool:pytest]")
        or mentions("tox.ini", "[pytest]")
        or _has_python_tests(os.path.join(root, "tests"))
    ):
        found["pytest"] = [python, "-m", "pytest", "-q"]
    script = _package_test_script(root)
    if script:
        if has("bun.lockb", "bun.lock"):
            found["js"] = ["bun", "run", "test"]
        elif has("pnpm-lock.yaml"):
            found["js"] = ["pnpm", "test"]
        elif has("yarn.lock"):
            found["js"] = ["yarn", "test"]
        else:
            found["js"] = ["npm", "test"]
    if has("go.mod"):
        found["go"] = ["go", "test", "./..."]
    if has("Cargo.toml"):
        found["cargo"] = ["cargo", "test"]
    return found


def _has_python_tests(directory: str) -> bool:
    try:
        names = os.listdir(directory)
    except OSError:
        return False
    return any(
        name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))
        for name in names
    )


def _package_test_script(root: str) -> bool:
    try:
        # Numbers stay text (none is needed here), so no length of one can make int() raise.
        data = read_bounded(os.path.join(root, "package.json"), CONFIG_FILE_MAX)
        package = json.loads(data, parse_int=str)
    except (OSError, InvalidInputError, ValueError, RecursionError):
        return False
    scripts = package.get("scripts") if isinstance(package, dict) else None
    return isinstance(scripts, dict) and isinstance(scripts.get("test"), str)


def init(kernel: Kernel, *, force: bool = False, pyproject: bool = False) -> Result:
    """Detect test runners and write their verifiers (see the module docstring)."""
    from cortex.kernel.host import files, programs

    root = kernel.workspace.root
    # A file to commit names no path of this machine (issue 29): the project's venv relative
    # to the repository, else python3 on PATH.
    python, python_source, resolved = programs.portable_python(root, kernel.env)
    found = detect(root, python)
    if not found:
        msg = (
            "no test runner found (pytest, npm/pnpm/yarn/bun, go test, cargo test); "
            "add a [verifiers.NAME] table with its argv to cortex.toml by hand"
        )
        raise NotFoundError(msg)
    path = os.path.join(root, "pyproject.toml" if pyproject else "cortex.toml")
    try:
        original = read_bounded(path, CONFIG_FILE_MAX).decode("utf-8")
    except FileNotFoundError:
        original = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, None, f"cannot be read ({exc})") from None
    document = parse_toml(original, path)
    table = document.get("tool", {}).get("cortex", {}) if pyproject else document
    existing = set(table.get("verifiers", {}))
    clashes = sorted(existing & set(found))
    if clashes and (not force or pyproject):
        how = "edit pyproject.toml by hand" if pyproject else "pass --force to replace them"
        msg = f"{path} already configures {', '.join(clashes)}; {how}"
        raise GateRefusedError(msg, [step("config", "see what is set")])
    from cortex.kernel.host import toml_edit

    prefix = ("tool", "cortex", "verifiers") if pyproject else ("verifiers",)
    text = original
    try:
        for name, argv in sorted(found.items()):
            # Replaced whole: the old table's other keys (a timeout, ...) were for its command.
            text = toml_edit.set_table(text, (*prefix, name), {"argv": argv}, keep_others=False)
    except toml_edit.UnsafeEditError as exc:
        msg = f"cannot safely add the verifiers to {path} ({exc}); nothing was written"
        raise GateRefusedError(msg, []) from None
    mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o644
    write_atomic(path, text.encode("utf-8"), mode=mode)
    entries = files.describe(kernel, [(path, True)])
    return Result(
        data={
            "file": path,
            "written": sorted(found),
            "replaced": clashes,
            "argv": found,
            "verify": [name if name == "pytest" else f"command:{name}" for name in sorted(found)],
            "interpreter": (
                {"path": python, "source": python_source, "resolved": resolved}
                if "pytest" in found
                else None
            ),
            "files": entries,
        },
        actions=[
            *files.commit_action(entries),
            *(step("case.trust", "approve it, at a terminal", name=name) for name in sorted(found)),
        ],
    )


class Init(Input):
    """The input of `init`."""

    force: bool = False
    pyproject: bool = False


def init_workspace(kernel: Kernel, given: Init) -> Result:
    """`init` for one input."""
    return init(kernel, force=given.force, pyproject=given.pyproject)
