"""Shared by the tests of verify's capture reuse (docs/design/verification.md §3).

Real repositories only: `steady_repo` puts one in a state where git stops saving its refreshed
index copy, so the end capture may take the start capture's list of hidden entries.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import git

from cortex.workspace.capture import Capture, capture


def fields(taken: Capture) -> tuple[object, ...]:
    """What must be equal between a reusing capture and a fresh one."""
    return (taken.head, taken.digest, taken.tree, taken.head_tree, taken.tree_reason)


def prepare(repo: Path) -> None:
    """A tracked edit, an untracked executable script and an untracked CRLF text file: each
    one's blob or mode depends on a setting, not only on its bytes."""
    (repo / "app.py").write_text("print('edited')\n")
    script = repo / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    (repo / "notes.txt").write_bytes(b"one\r\ntwo\r\n")


def settle(repo: Path) -> None:
    """Every work-tree file 10 s old, so no index entry is racy and git stops saving the copy."""
    past = time.time_ns() - 10_000_000_000
    for path in repo.rglob("*"):
        if ".git" not in path.parts and path.is_file():
            os.utime(path, ns=(past, past))


def steady_repo(repo: Path, env: dict[str, str]) -> None:
    """A committed `lib.py` and an edited `app.py`, every index entry older than the index.

    git rewrites an index holding a "racy" entry (a file as new as the index, to the second)
    at every status, and W1 then rightly lists it again; a real repository is rarely racy.
    """
    (repo / "app.py").write_text("print('edited')\n")
    (repo / "lib.py").write_text("VALUE = 1\n")
    settle(repo)
    git(repo, "add", "lib.py", env=env)
    git(repo, "commit", "-q", "-m", "lib", env=env)
    git(repo, "add", "app.py", env=env)  # its entry then records the settled time too


def mirrored(repo: Path, env: dict[str, str], mirror: Path, **options: object) -> Capture:
    """A capture through a private index copy kept in `mirror`."""
    return capture(str(repo), env, mirror_dir=str(mirror), **options)  # type: ignore[arg-type]


def steady_capture(repo: Path, env: dict[str, str], mirror: Path) -> Capture:
    """A capture after which git stopped saving its refreshed copy of the index."""
    for _ in range(5):
        taken = mirrored(repo, env, mirror)
        if taken.index is not None:
            assert taken.tree is not None, taken.tree_reason
            return taken
    raise AssertionError("git saved the index copy at every capture")
