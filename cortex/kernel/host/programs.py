"""Where a configured command's program is: for `doctor`, `init` and the trust prompt.

A verifier runs `argv` with no shell, in the workspace, with the caller's environment (see
cortex/verifiers/runner.py): a bare name is looked up on that PATH, a name with a slash is a
path (relative ones from the workspace root). These functions answer the same question the
way the run will, without running anything.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping


def resolve(program: str, root: str, env: Mapping[str, str]) -> str | None:
    """The executable `program` names when run in `root` with `env`, or None if there is none."""
    if not program:
        return None
    if os.sep in program or (os.altsep is not None and os.altsep in program):
        path = program if os.path.isabs(program) else os.path.join(root, program)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    found = shutil.which(program, path=env.get("PATH", os.defpath))
    return None if found is None else os.path.abspath(found)


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
