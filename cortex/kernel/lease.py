"""The change lease: `begin-change`, `lease renew`, `lease release`, and the fence other writes use.

The lease lives in case.json, so the case lock and the revision make acquisitions mutually
exclusive. Writes that need it check it twice: at the start of the transaction and again
immediately before the first write, so a holder stopped past its expiry cannot commit when it
resumes (docs/design/lifecycle.md, "Fencing").

A lease belongs to the caller `begin-change` gave its token to, not to a name: the token is
returned once and only its sha256 is stored, beside the actor name that is shown. The holder is
the actor named on the lease presenting that token (docs/design/trust.md, "Lease tokens"). A
lease taken before tokens existed has no hash and is honoured by name until it ends.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from cortex.cases.bounds import LEASE_TTL_DEFAULT, LEASE_TTL_MAX, LEASE_TTL_MIN
from cortex.cases.digest import sha256_hex
from cortex.cases.errors import ArgumentError, naming
from cortex.cases.records import Lease
from cortex.kernel import lifecycle
from cortex.kernel.envelope import Result
from cortex.kernel.errors import GateRefusedError, LeaseConflictError
from cortex.kernel.inputs import Actor, Input, LeaseToken, TaskId
from cortex.kernel.kernel import Kernel, format_time, parse_time

if TYPE_CHECKING:
    # Type only: readers (status) must not load the commit machinery.
    from cortex.cases.txn import Transaction

LeaseState = Literal["active", "expired", "released"]
_UNITS = {"s": 1, "m": 60, "h": 3600}
TOKEN_PREFIX = "cortex-lease-"  # noqa: S105 - a prefix, not a secret
"""Every lease token starts so: a person or a secret scanner can tell what it is."""


def parse_ttl(text: str | None) -> int:
    """`90s`, `15m`, `1h` (or bare seconds) to seconds, within 1 s to 1 h."""
    if text is None:
        return LEASE_TTL_DEFAULT
    match = re.fullmatch(r"([0-9]{1,5})([smh]?)", text)
    if not match:
        raise ArgumentError(f"{{ttl}} must look like 90s, 15m or 1h, not {text!r}", "ttl")
    seconds = int(match.group(1)) * _UNITS[match.group(2) or "s"]
    if not LEASE_TTL_MIN <= seconds <= LEASE_TTL_MAX:
        raise ArgumentError(f"{{ttl}} must be between {LEASE_TTL_MIN}s and {LEASE_TTL_MAX}s", "ttl")
    return seconds


def state(lease: Lease | None, now: float) -> LeaseState | None:
    """Whether a lease is active, expired or released (None: there has never been one)."""
    if lease is None:
        return None
    if lease.released_at is not None:
        return "released"
    return "active" if now < parse_time(lease.expires_at) else "expired"


def describe(lease: Lease | None, now: float) -> dict[str, object] | None:
    """The lease as `status` shows it."""
    if lease is None:
        return None
    return {
        "actor": lease.actor,
        "state": state(lease, now),
        "acquiredAt": lease.acquired_at,
        "renewedAt": lease.renewed_at,
        "expiresAt": lease.expires_at,
        "releasedAt": lease.released_at,
    }


def token_digest(token: str) -> str:
    """What case.json keeps of a lease token: its sha256, never the token."""
    return sha256_hex(token.encode("utf-8", "surrogatepass"))


def mint() -> str:
    """A new lease token: 256 random bits, after a prefix that says what it is.

    Redaction masks its shape wherever it is written (a note, evidence, an artifact); the one
    answer that returns it names it in `Result.minted`, so that answer returns it whole.
    """
    import secrets  # only where a lease is taken

    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def holds(lease: Lease, actor: str, token: str | None, *, session: bool = False) -> bool:
    """Whether `actor`, presenting `token`, is the holder of `lease` (see the module docstring).

    `session` says the caller runs in the host session that took the lease
    (`cortex.kernel.activity.session_lease`): that stands for the token.
    """
    if lease.actor != actor:
        return False
    if lease.token_sha256 is None or session:
        return True  # taken before lease tokens (honoured by name until it ends), or the session
    if token is None:
        return False
    import hmac  # loads hashlib: only on the lease-bound writes, never on the per-call path

    return hmac.compare_digest(token_digest(token), lease.token_sha256)


def _conflict(lease: Lease) -> LeaseConflictError:
    return LeaseConflictError(
        f"the change lease is held by {lease.actor} until {lease.expires_at}; "
        "wait for it to be released or to expire"
    )


def _not_holder(lease: Lease) -> LeaseConflictError:
    """The holder's name, without the token begin-change gave it: another caller of that name."""
    msg = (
        f"the change lease is held by {lease.actor} until {lease.expires_at} under a lease "
        "token this call did not give ({lease_token}); a caller of the same name that was not "
        "given the token does not hold it: wait for the lease to be released or to expire"
    )
    return naming(LeaseConflictError(msg), "lease_token")


def check_holder(
    lease: Lease | None, actor: str, token: str | None, now: float, *, session: bool = False
) -> None:
    """Refuse (exit 6) when an active lease is not `actor`'s, or `actor` lacks its token.

    `session`: the caller runs in the host session that took the lease (`in_session`).
    """
    if lease is None or state(lease, now) != "active":
        return
    if lease.actor != actor:
        raise _conflict(lease)
    if not holds(lease, actor, token, session=session):
        raise _not_holder(lease)


def in_session(kernel: Kernel, task_id: str, lease: Lease | None) -> bool:
    """Whether this call runs in the host session that took `lease` (docs/design/hosts.md)."""
    if kernel.host_session is None or lease is None:
        return False
    from cortex.kernel.activity import session_lease

    return session_lease.holds(kernel, task_id, lease)


def as_holder(kernel: Kernel, task_id: str, lease: Lease | None, named: str | None) -> str | None:
    """The lease's own actor, for a caller of its host session that named no one; else None.

    In the session that took the lease, its shell commands and a restarted MCP server act as
    the holder whatever name they would default to.
    """
    if named is not None or kernel.acting(None) is not None or lease is None:
        return None
    return lease.actor if in_session(kernel, task_id, lease) else None


def require_lease_holder(
    txn: Transaction,
    actor: str,
    kernel: Kernel,
    *,
    doing: str,
    required: bool = True,
    token: str | None = None,
) -> None:
    """Refuse when someone else holds an active lease, or (if `required`) when `actor` does not.

    Holding it takes the name and the token (`holds`). If `actor` holds the lease, it must
    still hold it at the commit point: the check runs again immediately before the first write,
    so a holder stopped past its expiry cannot commit.
    """

    def check(*, strict: bool) -> None:
        lease = txn.case.change_lease
        active = lease is not None and state(lease, kernel.clock()) == "active"
        session = kernel.host_session is not None and in_session(kernel, txn.case.id, lease)
        check_holder(lease, actor, token, kernel.clock(), session=session)
        if strict and not active:
            msg = f"cannot {doing}: {actor} holds no active change lease (it expired or was "
            msg += "released); take it again with begin-change"
            raise LeaseConflictError(msg)

    check(strict=required)
    lease = txn.case.change_lease
    session = kernel.host_session is not None and in_session(kernel, txn.case.id, lease)
    ours = lease is not None and holds(lease, actor, token, session=session)
    if required or (ours and state(lease, kernel.clock()) == "active"):
        txn.fence(lambda: check(strict=True))


def _fence_renewal(txn: Transaction, kernel: Kernel, actor: str, *, expires: float) -> None:
    """Refuse the renewal if the lease being renewed expired before the commit point."""

    def check() -> None:
        if kernel.clock() >= expires:
            msg = (
                f"the lease of {actor} expired before the renewal could be committed; "
                "take it again with begin-change"
            )
            raise LeaseConflictError(msg)

    txn.fence(check)


def _new_lease(actor: str, now: float, ttl: int, token: str, *, replaces: Lease | None) -> Lease:
    stamp = format_time(now)
    # The fencing epoch: one more than the lease this one replaces (docs/design/sharing.md).
    epoch = (replaces.epoch if replaces is not None else 0) + 1
    return Lease(
        actor=actor,
        acquired_at=stamp,
        renewed_at=stamp,
        expires_at=format_time(now + ttl),
        token_sha256=token_digest(token),
        epoch=epoch,
    )


def begin_change(
    kernel: Kernel,
    task_id: str,
    *,
    actor: str | None,
    ttl: str | None = None,
    lease_token: str | None = None,
) -> Result:
    """Take (or, as its holder, renew) the change lease and enter `changing`.

    Taking it returns a new token, once (`leaseToken`); renewing returns none. A lease taken
    before tokens existed is renewed by name once more, and given a token then.
    """
    seconds = parse_ttl(ttl)
    who = kernel.actor(kernel.lease_actor(actor))
    task_id, store = kernel.find_writable(task_id)
    token: str | None = None
    with store.transaction(task_id, actor=who, operation="case.begin-change") as txn:
        case = txn.case
        if case.mode != "change":
            msg = f"begin-change is for change tasks; this one is a {case.mode} task"
            raise GateRefusedError(msg, lifecycle.actions_for(txn))
        now = kernel.clock()
        lease = case.change_lease
        current = state(lease, now)
        holder = as_holder(kernel, task_id, lease, actor)
        if holder is not None:
            who = txn.actor = holder
        session = in_session(kernel, task_id, lease)
        check_holder(lease, who, lease_token, now, session=session)
        if case.status != "changing":
            lifecycle.require(case, "changing", doing="begin changing", txn=txn)
        if current == "active" and lease is not None:
            old_expiry = parse_time(lease.expires_at)
            lease.renewed_at = format_time(now)
            lease.expires_at = format_time(now + seconds)
            if lease.token_sha256 is None:
                token = mint()  # a lease from before tokens: upgraded by its holder
                lease.token_sha256 = token_digest(token)
            # A renewal must not outlive a stop past the old expiry (the fence, see module doc).
            _fence_renewal(txn, kernel, who, expires=old_expiry)
            verb = "renewed"
        else:
            if lease is not None:
                txn.notes.append(
                    f"replaced the {current} lease of {lease.actor} (acquired {lease.acquired_at})"
                )
            token = mint()
            case.change_lease = _new_lease(who, now, seconds, token, replaces=lease)
            from cortex.kernel.activity import session_lease

            # Before the commit point: a commit that fails leaves a binding that matches nothing.
            session_lease.bind(kernel, task_id, case.change_lease)
            verb = "acquired"
        if case.status != "changing":
            lifecycle.move(txn, "changing", actor=who, now=format_time(now))
    return _lease_result(kernel, txn, verb, token=token)


def renew(
    kernel: Kernel,
    task_id: str,
    *,
    actor: str | None,
    ttl: str | None = None,
    lease_token: str | None = None,
) -> Result:
    """Extend an active lease held by `actor` (with its token)."""
    seconds = parse_ttl(ttl)
    who = kernel.actor(kernel.lease_actor(actor))
    task_id, store = kernel.find_writable(task_id)
    with store.transaction(task_id, actor=who, operation="case.lease.renew") as txn:
        lease = txn.case.change_lease
        now = kernel.clock()
        current = state(lease, now)
        holder = as_holder(kernel, task_id, lease, actor)
        if holder is not None:
            who = txn.actor = holder
        if lease is None or current == "released":
            raise GateRefusedError(
                "there is no lease to renew; run begin-change", lifecycle.actions_for(txn)
            )
        if lease.actor != who:
            raise (
                _conflict(lease)
                if current == "active"
                else LeaseConflictError(
                    f"the lease belongs to {lease.actor}; take it with begin-change"
                )
            )
        if current != "active":
            msg = (
                f"the lease of {who} expired at {lease.expires_at}; take it again with begin-change"
            )
            raise LeaseConflictError(msg)
        if lease.token_sha256 is None:
            msg = (
                f"the lease of {who} was taken before lease tokens and is honoured by name only "
                f"until {lease.expires_at}; renew it with begin-change, which returns a token"
            )
            raise LeaseConflictError(msg)
        if not holds(lease, who, lease_token, session=in_session(kernel, task_id, lease)):
            raise _not_holder(lease)
        old_expiry = parse_time(lease.expires_at)
        lease.renewed_at = format_time(now)
        lease.expires_at = format_time(now + seconds)
        _fence_renewal(txn, kernel, who, expires=old_expiry)
    return _lease_result(kernel, txn, "renewed")


def release(
    kernel: Kernel, task_id: str, *, actor: str | None, lease_token: str | None = None
) -> Result:
    """Give the lease up (its holder, with the token); idempotent, and the record stays."""
    who = kernel.actor(kernel.lease_actor(actor))
    task_id, store = kernel.find_writable(task_id)
    with store.transaction(task_id, actor=who, operation="case.lease.release") as txn:
        lease = txn.case.change_lease
        current = state(lease, kernel.clock())
        holder = as_holder(kernel, task_id, lease, actor)
        if holder is not None:
            who = txn.actor = holder
        if lease is None or current == "released":
            txn.skip = True  # nothing to release: an idempotent retry
        elif lease.actor != who:
            if current == "active":
                raise _conflict(lease)
            msg = f"the lease belongs to {lease.actor}; only its holder releases it"
            raise LeaseConflictError(msg)
        elif not holds(lease, who, lease_token, session=in_session(kernel, task_id, lease)):
            raise _not_holder(lease)
        else:
            lease.released_at = kernel.now()
    return _lease_result(kernel, txn, "released" if not txn.skip else "unchanged")


def release_for_close(txn: Transaction, now: str) -> None:
    """Closing a case (block, abort, complete) ends an active lease; the record stays."""
    lease = txn.case.change_lease
    if lease is not None and lease.released_at is None:
        lease.released_at = now


def _lease_result(kernel: Kernel, txn: Transaction, verb: str, token: str | None = None) -> Result:
    case = txn.outcome
    data: dict[str, object] = {
        "taskId": case.id,
        "revision": case.revision,
        "status": case.status,
        "lease": describe(case.change_lease, kernel.clock()),
        "result": verb,
        # Returned once, by the call that took the lease; stored only as its digest.
        "leaseToken": token,
    }
    if kernel.host_session is not None and in_session(kernel, case.id, case.change_lease):
        # The session holds the lease: a token would only sit in the agent's transcript.
        data["leaseToken"] = None
        data["session"] = kernel.host_session.actor
    return Result(data=data, actions=lifecycle.next_actions(case), minted=("leaseToken",))


class BeginChange(Input):
    """The input of `case begin-change`."""

    task_id: TaskId
    actor: Annotated[
        str | None,
        msgspec.Meta(description="who takes the lease (default: $CORTEX_ACTOR, else mcp)"),
    ] = None
    ttl: Annotated[str | None, msgspec.Meta(description="90s, 15m, 1h (default 15m)")] = None
    lease_token: LeaseToken = None


def take(kernel: Kernel, given: BeginChange) -> Result:
    """`begin_change` for one input."""
    return begin_change(
        kernel, given.task_id, actor=given.actor, ttl=given.ttl, lease_token=given.lease_token
    )


class RenewLease(Input):
    """The input of `case lease renew`."""

    task_id: TaskId
    actor: Actor = None
    ttl: str | None = None
    lease_token: LeaseToken = None


class ReleaseLease(Input):
    """The input of `case lease release`."""

    task_id: TaskId
    actor: Actor = None
    lease_token: LeaseToken = None


def renew_lease(kernel: Kernel, given: RenewLease) -> Result:
    """`renew` for one input."""
    return renew(
        kernel, given.task_id, actor=given.actor, ttl=given.ttl, lease_token=given.lease_token
    )


def release_lease(kernel: Kernel, given: ReleaseLease) -> Result:
    """`release` for one input."""
    return release(kernel, given.task_id, actor=given.actor, lease_token=given.lease_token)
