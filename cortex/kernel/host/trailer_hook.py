"""`cortex setup git-trailer`: a prepare-commit-msg hook that names the case holding the lease.

The hook runs `cortex case trailer` (this interpreter, `-m cortex`) and adds each line it prints
with `git interpret-trailers --if-exists addIfDifferent`, so a reviewer's `cortex case fetch
--pr N` finds the cases a pull request's commits were made for (docs/design/sharing.md). It goes
where git looks for hooks (`git rev-parse --git-path hooks`, which honours `core.hooksPath`). A
hook that is not Cortex's is never replaced; Cortex's own is rewritten in place, so running this
again is safe. Without a hook: `git commit --trailer "Cortex-Case: <id>"`.
"""

from __future__ import annotations

import os
import shlex
import sys

from cortex.cases.errors import InvalidInputError
from cortex.cases.fsio import make_private_dirs, read_bounded, write_atomic
from cortex.kernel.envelope import Action, Result
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.inputs import Input
from cortex.kernel.kernel import Kernel
from cortex.share.git import Git

MARKER = "# cortex-git-trailer v1"
HOOK = """#!/bin/sh
{marker} -- installed by `cortex setup git-trailer`; safe to delete.
# Adds a `Cortex-Case: <id>` trailer for each case of this workspace whose change lease is
# active. By hand instead: git commit --trailer "Cortex-Case: <id>"
case "$2" in merge|squash) exit 0 ;; esac
trailers=$({python} -m cortex case trailer 2>/dev/null) || exit 0
printf '%s\\n' "$trailers" | while IFS= read -r line; do
  case "$line" in
    "Cortex-Case: task_"*)
      git interpret-trailers --in-place --if-exists addIfDifferent --trailer "$line" "$1" ;;
  esac
done
exit 0
"""


def install(kernel: Kernel, *, dry_run: bool = False) -> Result:
    """Write (or rewrite) the hook; refuse to replace someone else's."""
    if kernel.workspace.kind != "git":
        raise InvalidInputError("a git hook needs a git repository; this is a plain directory")
    git = Git(kernel.workspace.root, kernel.env)
    hooks = git.out("rev-parse", "--git-path", "hooks")
    directory = os.path.normpath(os.path.join(kernel.workspace.root, hooks))
    path = os.path.join(directory, "prepare-commit-msg")
    interpreter = sys.executable
    if not interpreter:
        raise InvalidInputError("this Python cannot name its own interpreter (sys.executable)")
    content = HOOK.format(marker=MARKER, python=shlex.quote(interpreter)).encode()
    try:
        current: bytes | None = read_bounded(path, 1 << 20)
    except FileNotFoundError:
        current = None
    if current is not None and MARKER.encode() not in current:
        msg = (
            f"{path} is another tool's hook; Cortex does not replace it. Add the trailer there, "
            'or commit with `git commit --trailer "Cortex-Case: <id>"`'
        )
        raise GateRefusedError(msg)
    changed = current != content
    if changed and not dry_run:
        make_private_dirs(directory)
        write_atomic(path, content, mode=0o755)
    return Result(
        data={
            "path": path,
            "written": changed and not dry_run,
            "changed": changed,
            "dryRun": dry_run,
            "content": content.decode(),
        },
        actions=[
            Action(
                command='git commit --trailer "Cortex-Case: <task id>"',
                reason="the same trailer without the hook",
            )
        ],
    )


class TrailerHook(Input):
    """The input of `setup git-trailer`."""

    dry_run: bool = False


def install_hook(kernel: Kernel, given: TrailerHook) -> Result:
    """`install` for one input."""
    return install(kernel, dry_run=given.dry_run)
