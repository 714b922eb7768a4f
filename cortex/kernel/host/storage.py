"""How much the store and the caches hold, and dropping the caches (`cortex recall drop`).

The case files are the truth; everything under the cache root (the recall index) and the index
mirrors under the state root are derived and disposable (docs/design/recall.md). `doctor` and
`case overview` show the sizes; `recall drop` removes the derived files, and `recall rebuild` (or
the next use) makes them again.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from cortex.cases.retention import archive_root, tree_bytes
from cortex.kernel.config import cache_root
from cortex.kernel.envelope import Result
from cortex.kernel.inputs import Input
from cortex.kernel.kernel import Kernel

MIRRORS = "index-mirror"
"""Under the state root: private copies of each workspace's git index (kernel/proof/live.py)."""


def sizes(kernel: Kernel) -> dict[str, Any]:
    """Bytes of this store (and its archive), the whole state root and the cache root."""
    root = kernel.cases_root
    archive = archive_root(root)
    store = tree_bytes(root)
    archived = tree_bytes(archive)
    return {
        "storeBytes": store - archived,
        "archiveBytes": archived,
        "stateBytes": tree_bytes(kernel.state_root),
        "cacheBytes": tree_bytes(cache_root(kernel.env)),
    }


def _derived(kernel: Kernel) -> list[tuple[str, str]]:
    """(what, path) of every derived file or directory of this state root."""
    from cortex.kernel.recall import index_files

    found = [("recall index", path) for path in index_files(kernel) if os.path.lexists(path)]
    mirrors = os.path.join(kernel.state_root, MIRRORS)
    if os.path.islink(mirrors):
        # Never made by Cortex: whatever it names is not derived, and is never listed or deleted.
        return [*found, ("index mirror", mirrors)]
    try:
        names = sorted(os.listdir(mirrors))
    except (FileNotFoundError, NotADirectoryError):
        names = []
    found += [("index mirror", os.path.join(mirrors, name)) for name in names]
    return found


def drop(kernel: Kernel, *, dry_run: bool) -> Result:
    """Remove the derived files (a dry run lists them); an index mirror git is using stays."""
    dropped: list[dict[str, object]] = []
    kept: list[dict[str, object]] = []
    for what, path in _derived(kernel):
        if os.path.islink(path) and os.path.basename(path) == MIRRORS:
            why = "a link, not Cortex's directory: left alone"
            kept.append({"what": what, "path": path, "bytes": 0, "why": why})
            continue
        size = tree_bytes(path) if os.path.isdir(path) else os.lstat(path).st_size
        entry = {"what": what, "path": path, "bytes": size}
        if os.path.isdir(path) and any(name.endswith(".lock") for name in os.listdir(path)):
            kept.append({**entry, "why": "git is writing it now"})
            continue
        if not dry_run:
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                else:
                    os.unlink(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                kept.append({**entry, "why": exc.strerror or str(exc)})
                continue
        dropped.append(entry)
    return Result(
        data={
            "dryRun": dry_run,
            "dropped": dropped,
            "kept": kept,
            "bytes": sum(int(str(entry["bytes"])) for entry in dropped),
        }
    )


class Drop(Input):
    """The input of `recall drop`."""

    dry_run: bool = False


def drop_index(kernel: Kernel, given: Drop) -> Result:
    """`drop` for one input."""
    return drop(kernel, dry_run=given.dry_run)
