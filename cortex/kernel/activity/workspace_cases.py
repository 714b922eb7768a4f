"""The open cases of this very workspace, newest first (the brief, the stop gate, the card).

A store is shared by every worktree of a clone: only cases opened in this worktree are this
workspace's. A case that cannot be read is skipped here: `status` and `audit` report it.
"""

from __future__ import annotations

from typing import Any

from cortex.cases.errors import CortexError
from cortex.cases.records import CaseFile
from cortex.kernel.kernel import Kernel
from cortex.kernel.lifecycle import FINAL, GATED

__all__ = ["GATED", "open_cases"]


def open_cases(kernel: Kernel) -> list[tuple[CaseFile, dict[str, Any]]]:
    """This workspace's open cases, each with its snapshots (`read_view`'s pair)."""
    root = kernel.workspace.root
    found: list[tuple[CaseFile, dict[str, Any]]] = []
    for task_id in kernel.store.list_ids():
        try:
            case = kernel.store.read_case(task_id)
            if case.status in FINAL or case.workspace.root != root:
                continue
            found.append(kernel.store.read_view(task_id))
        except CortexError:
            continue
    return found
