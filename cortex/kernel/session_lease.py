"""Which host session took a case's change lease, kept on this machine beside the store.

A host session is local to the machine the agent runs on, so the binding is not part of the
case (it is never shared, and `case.json` keeps its format): `<state root>/hosts/leases/<task
id>.json` records the session's digest with the lease it belongs to (its fencing epoch and the
moment it was acquired). A caller holds the lease through its session only when all three match
the lease in `case.json`; a binding left by a lease since replaced, or by a commit that failed,
names another lease and counts for nothing (docs/design/hosts.md, section 5).
"""

from __future__ import annotations

import os

import msgspec

from cortex.cases.bounds import KIB
from cortex.cases.errors import CortexError
from cortex.cases.fsio import make_private_dirs, read_bounded, write_atomic
from cortex.cases.records import Lease
from cortex.kernel.kernel import Kernel

BINDING_MAX = 4 * KIB


class Binding(msgspec.Struct, kw_only=True, rename="camel"):
    """The host session that took one lease of one case."""

    task: str
    epoch: int
    acquired_at: str
    session_sha256: str


def _path(kernel: Kernel, task_id: str) -> str:
    return os.path.join(kernel.state_root, "hosts", "leases", task_id + ".json")


def bind(kernel: Kernel, task_id: str, lease: Lease) -> None:
    """Record that this call's host session took `lease` (nothing outside a session).

    Written before the lease's commit: if that commit fails, the binding names a lease that
    never existed and matches nothing.
    """
    digest = kernel.session_digest
    if digest is None:
        return
    path = _path(kernel, task_id)
    make_private_dirs(os.path.dirname(path))
    record = Binding(
        task=task_id, epoch=lease.epoch, acquired_at=lease.acquired_at, session_sha256=digest
    )
    write_atomic(path, msgspec.json.encode(record), mode=0o600)


def holds(kernel: Kernel, task_id: str, lease: Lease | None) -> bool:
    """Whether this call's host session is the one that took `lease` of the case."""
    digest = kernel.session_digest
    if digest is None or lease is None:
        return False
    try:
        found = msgspec.json.decode(read_bounded(_path(kernel, task_id), BINDING_MAX), type=Binding)
    except (OSError, CortexError, msgspec.DecodeError, msgspec.ValidationError):
        return False
    return (
        found.task == task_id
        and found.epoch == lease.epoch
        and found.acquired_at == lease.acquired_at
        and found.session_sha256 == digest
    )
