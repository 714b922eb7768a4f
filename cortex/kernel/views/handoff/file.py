"""`cortex case handoff -o FILE`: write a handoff outside the store, atomically.

The only part of the handoff that writes, and never into Cortex's own directories.
"""

from __future__ import annotations

import os

from cortex.cases.errors import ArgumentError, InvalidInputError, RefusedError
from cortex.cases.fsio import UnsyncedReplaceError, write_atomic
from cortex.cases.records import encode_pretty
from cortex.kernel.envelope import Data, Result
from cortex.kernel.kernel import Kernel


def write_output(kernel: Kernel, task_id: str, path: str, content: bytes) -> Data:
    """Write `content` to `path` atomically (temp file and rename in its directory).

    Refused inside Cortex's own state directory or the case store: the store holds only what
    its commits write, and `audit` would rightly flag anything else.
    """
    target = os.path.abspath(path)
    directory = os.path.realpath(os.path.dirname(target))
    store = kernel.locate(task_id)
    for root in {kernel.state_root, kernel.cases_root, store.root}:
        real = os.path.realpath(root)
        if os.path.commonpath([directory, real]) == real:
            msg = f"refusing to write {target}: it is inside Cortex's store ({root})"
            raise RefusedError(msg)
    final = os.path.join(directory, os.path.basename(target))
    warnings: list[str] = []
    workspace = os.path.realpath(store.read_case(task_id).workspace.root)
    if os.path.commonpath([directory, workspace]) == workspace:
        warnings.append(
            f"{final} is inside the case's workspace: unless git ignores it, it changes the "
            "working tree that receipts are bound to, and they go stale"
        )
    try:
        write_atomic(final, content)
    except UnsyncedReplaceError as exc:
        warnings.append(f"written, but its directory could not be synced ({exc.strerror})")
    except OSError as exc:
        raise InvalidInputError(f"cannot write {target}: {exc.strerror or exc}") from None
    return {"path": final, "bytes": len(content), "warnings": warnings}


FORMATS = ("markdown", "json")


def save(kernel: Kernel, result: Result, path: str, *, fmt: str) -> Data:
    """Write a handoff `result` to `path` as Markdown or as its JSON packet; say what was written.

    The JSON is the packet exactly as measured against the budget (indented, one final newline).
    """
    if fmt not in FORMATS:
        raise ArgumentError(f"{{format}} must be markdown or json, not {fmt!r}", "format")
    data = result.data
    content = (
        data["markdown"].encode("utf-8") if fmt == "markdown" else encode_pretty(data["packet"])
    )
    written = write_output(kernel, data["taskId"], path, content)
    return {**written, "format": fmt}
