"""Where a command verifier's program is, and which Python belongs to the project.

A verifier runs `argv` with no shell, in the workspace, with the caller's environment (see
cortex/verifiers/runner.py): a bare name is looked up on that PATH, a name with a slash is a
path (relative ones from the workspace root). These functions answer the same question the
way the run will, without running anything: `doctor`, `init`, `config`, the plan's answer and
the trust prompt ask them, and the default `pytest` verifier finds its interpreter with them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

_SHEBANG_MAX = 256
"""Bytes of a script's first line read to find the interpreter its `#!` names."""


def resolve(program: str, root: str, env: Mapping[str, str]) -> str | None:
    """The executable `program` names when run in `root` with `env`, or None if there is none."""
    if not program:
        return None
    if os.sep in program or (os.altsep is not None and os.altsep in program):
        path = program if os.path.isabs(program) else os.path.join(root, program)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    found = shutil.which(program, path=env.get("PATH", os.defpath))
    return None if found is None else os.path.abspath(found)


def diagnose(program: str, root: str, env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(the executable `program` names, or None; why it cannot run, or None).

    Beyond "not found", it names what makes a copied or moved set-up fail: a link to an
    interpreter that is not there (a virtualenv made on another machine), and a script whose
    `#!` names a missing interpreter (its virtualenv was moved).
    """
    found = resolve(program, root, env)
    if found is None:
        where = "relative to the repository" if os.sep in program else "on PATH"
        path = program if os.path.isabs(program) else os.path.join(root, program)
        if os.sep in program and os.path.islink(path):
            target = os.readlink(path)
            return None, f"{program!r}, a link to a missing {target!r}"
        return None, f"{program!r}, which is not {where}"
    interpreter = _shebang(found)
    if interpreter is not None and not os.path.exists(interpreter):
        return found, f"{program!r}, whose #! names {interpreter}, which does not exist"
    return found, None


def _shebang(path: str) -> str | None:
    """The absolute interpreter a script's `#!` line names (None for a binary or a bare name)."""
    try:
        with open(path, "rb") as file:
            head = file.read(_SHEBANG_MAX)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    if not words or not words[0].startswith(b"/"):
        return None
    return os.fsdecode(words[0])


def project_python(root: str, env: Mapping[str, str]) -> tuple[str, str]:
    """The interpreter that belongs to the project at `root`, absolute, and where it came from.

    In order: the project's own `.venv` or `venv`, the active virtual environment
    (`VIRTUAL_ENV`), else `python3` as PATH finds it. A bare `python` is never chosen: on many
    systems there is none, and where there is, it is whichever Python PATH finds first (often
    not the project's). If nothing is found, `python3` is returned as it is and `doctor` will
    say it cannot be found.
    """
    for name in (".venv", "venv"):
        candidate = os.path.join(root, name, "bin", "python")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate, f"the project's {name}"
    active = env.get("VIRTUAL_ENV") or ""
    if os.path.isabs(active):
        candidate = os.path.join(active, "bin", "python")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate, "the active virtual environment (VIRTUAL_ENV)"
    found = resolve("python3", root, env)
    if found is not None:
        return found, "python3 on PATH"
    return "python3", "not found: no .venv, venv or VIRTUAL_ENV, and no python3 on PATH"


def portable_python(root: str, env: Mapping[str, str]) -> tuple[str, str, str | None]:
    """The project's interpreter as a file committed to the repository should name it.

    (argv[0], where it came from, what it resolves to here). Never an absolute path, which
    would name this machine: the project's `.venv` or `venv` relative to the repository (the
    run starts there), else `python3`, looked up on PATH where the verifier runs.
    """
    for name in (".venv", "venv"):
        relative = f"{name}/bin/python"
        found = resolve(relative, root, env)
        if found is not None:
            return relative, f"the project's {name}, relative to the repository", found
    found = resolve("python3", root, env)
    active = env.get("VIRTUAL_ENV") or ""
    if found is not None and os.path.isabs(active) and found.startswith(active.rstrip("/") + "/"):
        return "python3", "python3 on PATH, now the active virtual environment's", found
    if found is not None:
        return "python3", "python3 on PATH", found
    return "python3", "python3 on PATH (not found here)", None
