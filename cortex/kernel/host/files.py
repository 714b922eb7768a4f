"""What a set-up command wrote, and what that means for the next case's first verify.

`init` and `setup` write Cortex's own files. One inside the repository changes the working
tree: left uncommitted, or committed after a case opens, it is a change of that task outside
its plan's boundary, and `scope` fails on it. So both commands list each file, say whether it
is in the repository and whether git sees it as changed, and offer the commit that settles it.
A file outside the repository (a user-scope host configuration) is said to be so.
"""

from __future__ import annotations

import os
import shlex

from cortex.kernel.envelope import Action
from cortex.kernel.kernel import Kernel

COMMIT_BEFORE = (
    "commit it before you open a case: a file Cortex wrote that is still uncommitted, or "
    "committed after `case open`, counts as a change of that task outside its plan's boundary"
)


def describe(kernel: Kernel, paths: list[tuple[str, bool]]) -> list[dict[str, object]]:
    """`(path, written)` pairs as entries: where each file is and what to do with it."""
    root = kernel.workspace.root.rstrip(os.sep) + os.sep
    inside = {path: path.startswith(root) for path, _ in paths}
    relative = {path: os.path.relpath(path, root) for path, within in inside.items() if within}
    changed: set[str] | None = set()
    if relative and kernel.workspace.kind == "git":
        from cortex.workspace.dirty import uncommitted

        changed = uncommitted(kernel.workspace.root, kernel.env, sorted(relative.values()))
    entries: list[dict[str, object]] = []
    for path, written in paths:
        entry: dict[str, object] = {"path": path, "written": written, "inRepository": inside[path]}
        if not inside[path]:
            entry.update(changesTree=False, advice="outside the repository: nothing to commit")
        elif kernel.workspace.kind != "git":
            entry.update(changesTree=None, advice="the workspace is not a git repository")
        elif changed is None:
            entry.update(changesTree=None, advice="git cannot say whether it is committed")
        elif relative[path] in changed:
            entry.update(changesTree=True, relative=relative[path], advice=COMMIT_BEFORE)
        else:
            entry.update(changesTree=False, advice="committed (or ignored by git): nothing to do")
        entries.append(entry)
    return entries


def commit_action(entries: list[dict[str, object]]) -> list[Action]:
    """The git commit that settles the entries that change the working tree (none if none do)."""
    pending = [str(e["relative"]) for e in entries if e.get("changesTree")]
    if not pending:
        return []
    quoted = " ".join(shlex.quote(p) for p in pending)
    return [
        Action(
            command=f"git add -- {quoted} && git commit -m 'Set up Cortex'",
            reason="commit Cortex's files before opening a case, so verify does not count them",
        )
    ]
