"""The workspace as it is now, for a case: the one capture every surface judges proof against.

Writers (verify, complete) keep the index mirror fresh; views pass `writer=False` and write
nothing. Every view that shows whether proof is current calls this, so they all see the same code
state the same way.
"""

from __future__ import annotations

import os

from cortex.cases.records import CaseFile
from cortex.kernel.kernel import Kernel
from cortex.workspace.capture import Capture, capture, committed_changes


def live_capture(
    kernel: Kernel, case: CaseFile, *, writer: bool = True, same_as: Capture | None = None
) -> Capture:
    """The workspace as it is now, for the case's own workspace (or why it cannot be bound).

    Writers keep the index mirror fresh; readers (`writer=False`) use it only if it is already
    there, and write nothing. `same_as`: see `capture`.
    """
    if case.workspace.kind != "git":
        return Capture(reason="the workspace is not a git repository")
    from cortex.cases.digest import sha256_hex

    key = sha256_hex(os.fsencode(case.workspace.root))[:16]
    mirror = os.path.join(kernel.state_root, "index-mirror", key)
    return capture(
        case.workspace.root,
        kernel.env,
        exclude=kernel.cases_root,
        mirror_dir=mirror,
        refresh=writer,
        same_as=same_as,
    )


def changed_files(kernel: Kernel, case: CaseFile, live: Capture) -> list[str] | None:
    """The files the task changed since the case was opened (None: git cannot say).

    The work tree against HEAD, plus, when HEAD moved since the case opened, the files the new
    commits changed. `verify`'s gates and `scope` judge these; `status` reads them to offer only
    a verify those gates would accept.
    """
    if not live.bound or live.head is None:
        return None
    changed = list(live.changed)
    base = case.workspace.commit_before
    if base and base != live.head:
        committed = committed_changes(case.workspace.root, kernel.env, base, live.head)
        if committed is None:
            return None
        changed = sorted(set(changed) | set(committed))
    return changed
