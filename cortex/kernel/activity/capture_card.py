"""The capture card: what the capture hook needs to know about a workspace, where it is cheap.

The PostToolUse hook runs on every tool call and must not load the kernel to learn whether a
case of the workspace is in `changing` or `verifying` (docs/design/activity.md, section 3). The
card, `<state root>/hosts/capture/<16 hex of the workspace path's digest>.json`, says so: the
store, each such case's directory, phase and boundary, and whether capture is on. It is derived
data, rewritten after every commit that changes a case's phase or plan, and by the brief and the
stop gate; never read as a source of truth.
"""

from __future__ import annotations

import contextlib
import os

import msgspec

from cortex.cases.digest import sha256_hex
from cortex.cases.errors import CortexError
from cortex.kernel.activity.workspace_cases import GATED, open_cases
from cortex.kernel.kernel import Kernel

CARD_DIR = ("hosts", "capture")


def card_name(workspace: str) -> str:
    """The card's file name for a workspace root (a realpath), as the hook computes it."""
    return sha256_hex(os.fsencode(workspace))[:16] + ".json"


def card_path(state_root: str, workspace: str) -> str:
    """Where a workspace's card lives."""
    return os.path.join(state_root, *CARD_DIR, card_name(workspace))


def refresh(kernel: Kernel) -> None:
    """Rewrite this workspace's card from its cases (removed when none is capturing)."""
    from cortex.cases.fsio import make_private_dirs

    cases = []
    for case, _documents in open_cases(kernel):
        if case.status not in GATED:
            continue
        cases.append(
            {
                "task": case.id,
                "dir": kernel.store.case_path(case.id),
                "status": case.status,
                "boundary": list(case.change_boundary.files),
            }
        )
    path = card_path(kernel.state_root, kernel.workspace.root)
    if not cases:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    card = {
        "workspace": kernel.workspace.root,
        "store": kernel.store.root,
        "capture": kernel.config.hooks.capture,
        "cases": cases,
    }
    make_private_dirs(os.path.dirname(path))
    # Derived data, rewritten whenever it matters: replaced atomically, never fsynced (a card
    # lost to a crash is written again by the next hook or write).
    temp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, msgspec.json.encode(card))
    finally:
        os.close(fd)
    os.replace(temp, path)


def after_commit(kernel: Kernel) -> None:
    """`refresh`, for a use case that just committed: a card it cannot write is not its failure."""
    with contextlib.suppress(CortexError, OSError):
        refresh(kernel)
