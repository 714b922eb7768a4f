"""How an agent host starts this Cortex: a form that holds no path of this machine where it can.

A project-scope file (`.mcp.json`, `.claude/settings.json`, `.codex/...`) is committed and read
on other machines, so it names Cortex the way a teammate's clone can find it too
(docs/design/hosts.md, section 7):

- `venv`: Cortex runs from a virtualenv inside the repository (`.venv/bin/cortex`): the path
  relative to the repository (Claude Code's hooks: under `$CLAUDE_PROJECT_DIR`), in a
  project-scope file only (a user's file serves every project, which lack that virtualenv);
- `path`: the `cortex` found on PATH is this installation (pipx, uv tool, an activated venv):
  the bare name;
- `absolute`: neither; only a user-scope file (this machine's own) may hold the absolute path.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from cortex.cases.errors import InvalidInputError, RefusedError

Form = Literal["venv", "path", "absolute"]
SCRIPT = "cortex"


class Program(msgspec.Struct, frozen=True, kw_only=True):
    """The program a host runs, in the form its file can hold."""

    form: Form
    path: str
    """As written for a command: relative to the repository (`venv`), `cortex` (`path`), or
    absolute (`absolute`: the console script, or the interpreter for `-m cortex`)."""
    module: bool = False
    """`path` is an interpreter, run as `<path> -m cortex` (no console script next to it)."""

    def server(self) -> dict[str, Any]:
        """The MCP server entry's `command` and `args`."""
        if self.module:
            return {"command": self.path, "args": ["-m", "cortex", "serve"]}
        return {"command": self.path, "args": ["serve"]}

    def hook(self, host: str) -> str:
        """The shell words that run `cortex` in a hook command of `host`."""
        if self.form == "venv" and host == "claude":
            # Hooks run in the session's current directory, which follows `cd`.
            return f'"$CLAUDE_PROJECT_DIR"/{shlex.quote(self.path)}'
        words = shlex.quote(self.path)
        return f"{words} -m cortex" if self.module else words


def _utf8(path: str) -> str:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        # JSON and TOML hold text: an undecodable path would reach the host as another path.
        msg = f"the program path {path!a} is not valid UTF-8; install Cortex elsewhere"
        raise InvalidInputError(msg) from None
    return path


def resolve(
    env: Mapping[str, str], root: str, *, scope: str, interpreter: str | None = None
) -> Program:
    """The form `scope`'s file can hold for the Cortex running `interpreter` (default: this one).

    Refuses (exit 5) a project scope that could only name this machine's absolute path.
    """
    python = os.path.abspath(interpreter if interpreter is not None else sys.executable or "")
    if not python or python == os.sep:
        msg = "this Python cannot name its own interpreter (sys.executable is empty)"
        raise InvalidInputError(msg)
    _utf8(python)
    bindir = os.path.dirname(python)
    script = os.path.join(bindir, SCRIPT)
    has_script = os.path.isfile(script) and os.access(script, os.X_OK)
    inside = os.path.realpath(bindir).startswith(os.path.realpath(root).rstrip(os.sep) + os.sep)
    if has_script and inside and scope == "project":
        relative = os.path.relpath(script, root)
        if not relative.startswith(".."):
            return Program(form="venv", path=_utf8(relative))
    on_path = shutil.which(SCRIPT, path=env.get("PATH"))
    if on_path is not None and os.path.realpath(os.path.dirname(on_path)) == os.path.realpath(
        bindir
    ):
        return Program(form="path", path=SCRIPT)
    if scope == "project":
        msg = (
            f"a project-scope file is committed, so it cannot name this machine's {python}; "
            "put Cortex on PATH (pipx install, uv tool install, or an activated virtualenv), "
            "install it in the repository's .venv, or run with --scope user"
        )
        raise RefusedError(msg)
    if has_script:
        return Program(form="absolute", path=_utf8(script))
    return Program(form="absolute", path=python, module=True)


PLUGIN = Program(form="path", path=SCRIPT)
"""A plugin is installed on machines setup never sees: it runs the `cortex` on PATH."""
