"""Dropping a case's recall rows when retention takes the case away (docs/design/recall.md).

An archive hides a case from recall; a forget or a removal must also leave none of its text in
the index file. The index's own side is `cortex.recall.index` (`begin_purge`, `purge`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from cortex.kernel.config import cache_root
from cortex.kernel.recall import index_files, path, store_ref, warning
from cortex.recall.index import Index, RecallIndexError, index_path

if TYPE_CHECKING:
    from cortex.cases.store import CaseStore
    from cortex.kernel.kernel import Kernel


def purge(
    kernel: Kernel,
    store: CaseStore,
    task_id: str,
    *,
    derive: bool,
    scrub: bool = True,
    before: bool = False,
) -> list[str]:
    """Drop a case's rows, and with `scrub` purge the file so none of their text is left.

    After a forget (`derive`: its rows are derived again from the tombstoned files), a removal,
    or an archive (dropped, not scrubbed: nothing was forgotten). With `scrub`, the other
    engine's file for this state root is deleted: it is a cache, and it would still hold the
    text. Without an index there is nothing to do. Warnings, never an exception.

    `before`: a forget or a removal drops and scrubs the rows once more before its commit point,
    so a process killed between that commit and the purge after it (the case's next writer
    finishes the files, not the index) leaves no row to serve the text and none in the file.
    A refused forget leaves the index behind on the case, which the next refresh repairs.
    """
    from cortex.recall.index import engine_name
    from cortex.recall.manifest import forget, refresh

    mine = index_path(cache_root(kernel.env), kernel.state_root, engine_name())
    for other in index_files(kernel) if scrub else []:
        if not other.startswith(mine):
            try:
                os.unlink(other)
            except FileNotFoundError:
                pass
            except OSError as exc:
                return [warning(exc)]
    if not os.path.exists(path(kernel)):
        return []
    try:
        index = Index.write(path(kernel))
    except RecallIndexError as exc:
        return [warning(exc)]
    from cortex.cases import _crash

    try:
        ref = store_ref(kernel, store)
        if scrub:
            index.begin_purge()
        forget(index, ref.root, task_id)
        if derive:
            refresh(index, ref, task_id, kernel.redactor)
        if not before:
            _crash.point("recall.dropped")
        if scrub:
            index.purge()
    except Exception as exc:  # noqa: BLE001 - the case's files are done; the index is behind
        return [warning(exc)]
    finally:
        index.close()
    return []
