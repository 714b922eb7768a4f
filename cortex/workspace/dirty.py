"""Which files of a repository are not as HEAD has them: for set-up commands to say so.

`cortex init` and `cortex setup` write files into the repository. Left uncommitted (or
committed after a case opens), those files are a change of the task, outside its plan's
boundary, and the `scope` verifier fails on them; so the commands say which of the files they
wrote change the working tree. Read-only: `GIT_OPTIONAL_LOCKS=0` keeps git from refreshing
(writing) the index, as everywhere else Cortex runs git.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from cortex.workspace.git import READ_ONLY, GitNotRunError, run_git

GIT_TIMEOUT = 30.0


def uncommitted(root: str, env: Mapping[str, str], paths: Sequence[str]) -> set[str] | None:
    """The `paths` (relative to `root`) that are untracked or differ from HEAD, not ignored.

    None when git cannot say (not a repository, git missing, a timeout).
    """
    if not paths:
        return set()
    argv = [
        "git",
        "-c",
        "core.quotePath=false",
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--",
        *paths,
    ]
    try:
        proc = run_git(argv, cwd=root, env={**env, **READ_ONLY}, timeout=GIT_TIMEOUT)
    except GitNotRunError:
        return None
    if proc.returncode != 0:
        return None
    found: set[str] = set()
    for record in proc.stdout.split(b"\0"):
        if len(record) > 3:
            found.add(os.path.normpath(record[3:].decode("utf-8", "surrogateescape")))
    return found
