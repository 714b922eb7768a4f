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
    process_sha256: str | None = None
    """The host process the session ran in (a `/clear` keeps it, with a new session id)."""


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
    host = kernel.host_session
    record = Binding(
        task=task_id,
        epoch=lease.epoch,
        acquired_at=lease.acquired_at,
        session_sha256=digest,
        process_sha256=None if host is None else host.process_digest,
    )
    write_atomic(path, msgspec.json.encode(record), mode=0o600)


def forget_case(kernel: Kernel, task_id: str) -> list[str]:
    """Remove this machine's host files that name a removed case (`case rm`); warnings.

    Its lease binding, and any host session's kept focus on it: both are local state of the
    case, which `rm` promises to remove with it.
    """
    warnings: list[str] = []
    paths = [_path(kernel, task_id)]
    sessions = os.path.join(kernel.state_root, "hosts", "sessions")
    try:
        names = sorted(os.listdir(sessions))
    except OSError:
        names = []
    for name in names:
        path = os.path.join(sessions, name)
        try:
            found = msgspec.json.decode(read_bounded(path, BINDING_MAX))
        except (OSError, CortexError, msgspec.DecodeError):
            continue
        if isinstance(found, dict) and found.get("case") == task_id:
            paths.append(path)
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            warnings.append(f"{path} was not removed ({exc.strerror})")
    return warnings


def holds(kernel: Kernel, task_id: str, lease: Lease | None) -> bool:
    """Whether this call's host session is the one that took `lease` of the case."""
    digest = kernel.session_digest
    if digest is None or lease is None:
        return False
    try:
        found = msgspec.json.decode(read_bounded(_path(kernel, task_id), BINDING_MAX), type=Binding)
    except (OSError, CortexError, msgspec.DecodeError, msgspec.ValidationError):
        return False
    if (found.task, found.epoch, found.acquired_at) != (task_id, lease.epoch, lease.acquired_at):
        return False
    if found.session_sha256 == digest:
        return True
    process = None if kernel.host_session is None else kernel.host_session.process_digest
    return process is not None and found.process_sha256 == process


def keep_alive(kernel: Kernel) -> list[str]:
    """Renew each lease this host session holds once less than half of its time is left.

    The hooks call it at each prompt, stop and session start, so a session's lease lasts while
    the session is active (docs/design/hosts.md, section 5). Returns the cases renewed; a case
    that cannot be renewed now (busy, taken, ended) is left as it is.
    """
    digest = kernel.session_digest
    if digest is None:
        return []
    directory = os.path.join(kernel.state_root, "hosts", "leases")
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    renewed: list[str] = []
    for name in names:
        task_id = name.removesuffix(".json")
        try:
            lease = _due(kernel, task_id)
            if lease is not None:
                from cortex.kernel.lease import renew

                renew(kernel, task_id, actor=None, ttl=f"{_granted(lease)}s")
                renewed.append(task_id)
        except CortexError:
            continue
    return renewed


def _granted(lease: Lease) -> int:
    """How long the lease was granted for at its last renewal, in whole seconds (at least 1)."""
    from cortex.kernel.kernel import parse_time

    return max(1, round(parse_time(lease.expires_at) - parse_time(lease.renewed_at)))


def _due(kernel: Kernel, task_id: str) -> Lease | None:
    """The case's active lease, if this session holds it and it is past half its time."""
    from cortex.cases.ids import is_id
    from cortex.kernel.kernel import parse_time
    from cortex.kernel.lease import state

    if not is_id(task_id, "task") or not kernel.store.exists(task_id):
        return None
    lease = kernel.store.read_case(task_id).change_lease
    if lease is None or state(lease, kernel.clock()) != "active":
        return None
    if not holds(kernel, task_id, lease):
        return None
    left = parse_time(lease.expires_at) - kernel.clock()
    return lease if left < _granted(lease) / 2 else None


def _focus_path(kernel: Kernel) -> str | None:
    digest = kernel.session_digest
    if digest is None:
        return None
    return os.path.join(kernel.state_root, "hosts", "sessions", digest[:32] + ".json")


def remember_focus(kernel: Kernel, task_id: str) -> None:
    """Keep which case this host session is on (before a compaction; hosts.md section 6)."""
    path = _focus_path(kernel)
    if path is None:
        return
    make_private_dirs(os.path.dirname(path))
    write_atomic(path, msgspec.json.encode({"case": task_id, "at": kernel.now()}), mode=0o600)


def focus(kernel: Kernel) -> str | None:
    """The case this host session was on when it last kept one, if any."""
    path = _focus_path(kernel)
    if path is None:
        return None
    try:
        found = msgspec.json.decode(read_bounded(path, BINDING_MAX))
    except (OSError, CortexError, msgspec.DecodeError):
        return None
    case = found.get("case") if isinstance(found, dict) else None
    return case if isinstance(case, str) else None
