"""`cortex case sessions` and `cortex case overview`: every case under the state root at a glance.

Readers: no lock, no write. They never read a ledger. A listing reads every case.json (to
filter, count and order exactly) and keeps only the `limit` newest in memory; for those it
shows, it reads decisions.json and verification.json, or for a completed case the head of
summary.md, which names the verdict the case was completed on. So the cost is one small read
per case, whatever the cases hold.

Where cases are found: every store directory under `<state root>/sessions/`, plus the current
workspace's store when it is configured elsewhere (`cases_dir`). A store configured inside
another repository is not visible from here: nothing records where such stores are.
"""

from __future__ import annotations

import heapq
import os
import re
from typing import TYPE_CHECKING, Any, NamedTuple

from cortex.cases.bounds import (
    DAMAGED_SHOWN_MAX,
    SESSIONS_CAPTURES_MAX,
    SESSIONS_GOAL_MAX,
    SESSIONS_LIMIT_MAX,
    SESSIONS_QUERY_MAX,
    STALE_AFTER_DEFAULT,
    STALE_AFTER_MAX,
    SUMMARY_HEAD_MAX,
)
from cortex.cases.errors import (
    ArgumentError,
    CortexError,
    IntegrityError,
)
from cortex.cases.fsio import open_for_read
from cortex.cases.redact import clip
from cortex.cases.store import CaseStore
from cortex.kernel import inputs, validate
from cortex.kernel.envelope import Result
from cortex.kernel.inputs import Input, Nothing
from cortex.kernel.kernel import Kernel, format_time, parse_time
from cortex.kernel.lease import state
from cortex.kernel.lifecycle import TERMINAL
from cortex.kernel.views.metrics import PHASES, Captures, completion_kind, error_entry, rate

if TYPE_CHECKING:
    from cortex.cases.documents import Decisions
    from cortex.cases.records import CaseFile

SUMMARY = "summary.md"
"""complete.SUMMARY, named here so a listing does not load the verify machinery."""
_VERDICT_LINE = re.compile(rb"\n## Verification: (verified|partial|failed|unverified)\n")
_DURATION = re.compile(r"([0-9]{1,9})([smhd])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_STORE_SUFFIX = re.compile(r"-[0-9a-f]{12}")


class Store(NamedTuple):
    """One store directory and the id it is shown under."""

    id: str
    store: CaseStore


def archives(kernel: Kernel) -> list[Store]:
    """The archive of every store `stores` lists that has one (`--archived`)."""
    from cortex.cases.retention import archive_root

    return [
        Store(entry.id, _reader(kernel, archive_root(entry.store.root)))
        for entry in stores(kernel)
        if os.path.isdir(archive_root(entry.store.root))
    ]


def stores(kernel: Kernel) -> list[Store]:
    """Every store under `<state root>/sessions/`, this workspace's, and every registered one.

    Only real directories count: a symlink there would list a store twice, or one that is not
    under the state root at all.
    """
    sessions = os.path.join(kernel.state_root, "sessions")
    found: list[Store] = []
    try:
        entries = sorted(os.scandir(sessions), key=lambda entry: entry.name)
    except (FileNotFoundError, NotADirectoryError):
        entries = []
    current = os.path.realpath(kernel.cases_root)
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        if os.path.realpath(entry.path) == current:
            found.append(Store(kernel.store_info.id, kernel.store))
        else:
            found.append(Store(entry.name, _reader(kernel, entry.path)))
    if not any(s.store is kernel.store for s in found) and os.path.isdir(kernel.cases_root):
        found.append(Store(kernel.store_info.id, kernel.store))
    from cortex.kernel.stores import registered

    known = {os.path.realpath(s.store.root) for s in found}
    for root in registered(kernel.state_root):
        if os.path.realpath(root) not in known:
            known.add(os.path.realpath(root))
            found.append(Store(_registered_id(root), _reader(kernel, root)))
    return found


def _registered_id(root: str) -> str:
    """How a registered store is shown: the repository's folder name and the store's own."""
    parent, name = os.path.split(root.rstrip(os.sep))
    return (
        f"{os.path.basename(os.path.dirname(parent)) or parent}/{os.path.basename(parent)}/{name}"
    )


def _reader(kernel: Kernel, root: str) -> CaseStore:
    # Readers never lock, so the lock timeout is never used; the redactor is never asked.
    return CaseStore(
        root, redactor=kernel.redactor, lock_timeout=kernel.config.lock_timeout, now=kernel.now
    )


def parse_duration(text: str | int, option: str = "--stale-after") -> int:
    """`90s`, `15m`, `24h`, `7d` (or whole seconds as an int) to seconds, 1 s to a year."""
    if isinstance(text, int):
        seconds = text
    else:
        match = _DURATION.fullmatch(text)
        if not match:
            shown = clip(text, 40)
            raise validate.bad(option, f" must look like 90s, 15m, 24h or 7d, not {shown!r}")
        seconds = int(match.group(1)) * _UNITS[match.group(2)]
    if not 1 <= seconds <= STALE_AFTER_MAX:
        raise validate.bad(option, f" must be between 1s and {STALE_AFTER_MAX // 86400}d")
    return seconds


def completion_verdict(store: CaseStore, task_id: str) -> str | None:
    """The verdict a completed case was completed on, from the head of its summary.md.

    complete.py writes the heading before any text a caller gave, and quotes that text line by
    line, so the first such heading is the kernel's own. None when it cannot be read.
    """
    try:
        fd = open_for_read(os.path.join(store.case_path(task_id), SUMMARY))
    except (CortexError, OSError):
        return None
    try:
        head = os.read(fd, SUMMARY_HEAD_MAX)
    except OSError:
        return None
    finally:
        os.close(fd)
    match = _VERDICT_LINE.search(head)
    return match.group(1).decode() if match else None


def _store_name(store_id: str) -> str:
    """A store id without its hash: the repository or directory name it was made from."""
    suffix = _STORE_SUFFIX.search(store_id)
    return store_id[: suffix.start()] if suffix and suffix.end() == len(store_id) else store_id


def _goal(text: str) -> str:
    line = " ".join(text.split())
    if len(line) <= SESSIONS_GOAL_MAX:
        return line
    return line[: SESSIONS_GOAL_MAX - 1].rstrip() + "\u2026"


class _Filters(NamedTuple):
    repo: str | None
    active: bool
    stale_after: int | None
    query: str | None

    def store_matches(self, store_id: str) -> bool:
        return self.repo is None or self.repo in {store_id.casefold(), _store_name(store_id)}

    def matches(self, entry: Store, case: CaseFile, idle: float) -> bool:
        if self.repo is not None and not (
            self.store_matches(entry.id) or case.workspace.repository.casefold() == self.repo
        ):
            return False
        live = case.status not in TERMINAL
        if (self.active or self.stale_after is not None) and not live:
            return False
        if self.stale_after is not None and idle < self.stale_after:
            return False
        return self.query is None or (
            self.query in case.goal.casefold() or self.query in case.id.casefold()
        )


def _filters(
    repo: str | None, *, active: bool, stale_after: str | int | None, query: str | None
) -> _Filters:
    if repo is not None:
        repo = validate.short_text(repo, "--repo", SESSIONS_QUERY_MAX).casefold()
    if query is not None:
        query = validate.short_text(query, "--query", SESSIONS_QUERY_MAX).casefold()
    seconds = None if stale_after is None else parse_duration(stale_after)
    return _Filters(repo, active, seconds, query)


def check_filters(repo: str | None, query: str | None) -> None:
    """Refuse a `--repo` or `--query` that `sessions` would refuse (exit 4), reading nothing."""
    _filters(repo, active=False, stale_after=None, query=query)


def sessions(
    kernel: Kernel,
    *,
    repo: str | None = None,
    active: bool = False,
    stale_after: str | int | None = None,
    query: str | None = None,
    limit: int = inputs.SESSIONS_LIMIT,
    archived: bool = False,
) -> Result:
    """Cases across every store (or every archive), newest update first, with an exact total.

    Unreadable cases come first (an unreadable case cannot be shown not to match, and the
    listing must not look healthier than the stores are); only `repo` filters them, by store.
    """
    if not 1 <= limit <= SESSIONS_LIMIT_MAX:
        raise ArgumentError(f"{{limit}} must be between 1 and {SESSIONS_LIMIT_MAX}", "limit")
    filters = _filters(repo, active=active, stale_after=stale_after, query=query)
    threshold = filters.stale_after or STALE_AFTER_DEFAULT
    now = kernel.clock()
    found = archives(kernel) if archived else stores(kernel)
    # The `limit` greatest keys seen, in a min-heap: O(limit) memory whatever the total.
    kept: list[tuple[tuple[int, float, str], int, Store]] = []
    total = 0
    for entry in found:
        for task_id in entry.store.list_ids():
            try:
                case = entry.store.read_case(task_id)
                updated = parse_time(case.updated_at)
            except (CortexError, OSError, ValueError):
                if not filters.store_matches(entry.id):
                    continue
                key = (1, 0.0, task_id)
            else:
                if not filters.matches(entry, case, now - updated):
                    continue
                key = (0, updated, task_id)
            total += 1
            item = (key, total, entry)
            if len(kept) < limit:
                heapq.heappush(kept, item)
            elif key > kept[0][0]:
                heapq.heapreplace(kept, item)
    captures = Captures(kernel, SESSIONS_CAPTURES_MAX)
    items = [
        _item(entry, key[2], now, threshold, captures)
        for key, _, entry in sorted(kept, key=lambda item: item[0], reverse=True)
    ]
    return Result(
        data={
            "now": format_time(now),
            "filters": {
                "repo": repo,
                "active": active,
                "staleAfterSeconds": filters.stale_after,
                "query": query,
                "archived": archived,
            },
            "staleAfterSeconds": threshold,
            "stores": len(found),
            "total": total,
            "limit": limit,
            "truncated": total > len(items),
            "verdictsSkipped": captures.skipped,
            "items": items,
        }
    )


def _item(
    entry: Store, task_id: str, now: float, threshold: int, captures: Captures
) -> dict[str, object]:
    """One listed case, read afresh as one revision (case.json and the snapshots it names)."""
    store_info = {"id": entry.id, "root": entry.store.root}
    documents: dict[str, Any] = {}
    try:
        case = entry.store.read_case(task_id)
        if case.status not in TERMINAL:
            # Only an open case needs its decisions and receipts, read as one revision.
            case, documents = entry.store.read_view(task_id)
        updated = parse_time(case.updated_at)
    except (CortexError, OSError, ValueError) as exc:
        if isinstance(exc, ValueError):
            exc = IntegrityError(f"case.json of {task_id}: updatedAt is not a time")
        return {**error_entry(task_id, exc), "store": store_info}
    live = case.status not in TERMINAL
    lease = case.change_lease
    holder = None
    if live and lease is not None and state(lease, now) == "active":
        holder = {"actor": lease.actor, "expiresAt": lease.expires_at}
    verdict: dict[str, object] | None = None
    if case.status == "complete":
        recorded = completion_verdict(entry.store, task_id)
        verdict = {"status": recorded, "source": "completion", "kind": completion_kind(recorded)}
    elif live:
        assessment = captures.judge(case, documents.get("verification.json"))
        if assessment is not None:
            verdict = {"status": assessment.status, "source": "now", "kind": None}
    decisions: Decisions | None = documents.get("decisions.json")
    waiting = sum(d.status == "pending" for d in decisions.decisions) if decisions else 0
    return {
        "taskId": case.id,
        "goal": _goal(case.goal),
        "status": case.status,
        "pausedFrom": case.paused_from,
        "active": live,
        "mode": case.mode,
        "risk": case.risk,
        "revision": case.revision,
        "workspace": {
            "kind": case.workspace.kind,
            "root": case.workspace.root,
            "repository": case.workspace.repository,
            "branch": case.workspace.branch,
        },
        "store": store_info,
        "createdAt": case.created_at,
        "updatedAt": case.updated_at,
        "idleSeconds": round(max(now - updated, 0.0), 3),
        "pendingDecisions": waiting,
        "lease": holder,
        "verdict": verdict,
        "stale": live and now - updated >= threshold,
    }


class _Repo:
    def __init__(self, store_id: str) -> None:
        self.store_id = store_id
        self.repository: str | None = None
        self.total = self.active = self.complete = self.verified = self.unreadable = 0
        self.bytes = 0

    def view(self) -> dict[str, object]:
        return {
            "store": self.store_id,
            "repository": self.repository,
            "total": self.total,
            "active": self.active,
            "complete": self.complete,
            "verifiedComplete": self.verified,
            "unreadable": self.unreadable,
            "bytes": self.bytes,
        }


def overview(kernel: Kernel) -> Result:
    """Totals across every store: phases, completion and verified-completion rates, per repo."""
    now = kernel.clock()
    found = stores(kernel)
    by_phase = dict.fromkeys(PHASES, 0)
    kinds = dict.fromkeys(("verified", "accepted_failed", "verification_not_possible"), 0)
    unknown = total = stale = leases = 0
    unreadable: list[dict[str, object]] = []
    unreadable_count = 0
    repos: dict[str, _Repo] = {}
    from cortex.cases.retention import tree_bytes

    for entry in found:
        repo = repos.setdefault(entry.id, _Repo(entry.id))
        repo.bytes += tree_bytes(entry.store.root)
        for task_id in entry.store.list_ids():
            total += 1
            repo.total += 1
            try:
                case = entry.store.read_case(task_id)
                updated = parse_time(case.updated_at)
            except (CortexError, OSError, ValueError) as exc:
                unreadable_count += 1
                repo.unreadable += 1
                if len(unreadable) < DAMAGED_SHOWN_MAX:
                    unreadable.append({**error_entry(task_id, exc), "store": entry.id})
                continue
            repo.repository = case.workspace.repository
            by_phase[case.status] += 1
            if case.status not in TERMINAL:
                repo.active += 1
                stale += now - updated >= STALE_AFTER_DEFAULT
                leases += state(case.change_lease, now) == "active"
            elif case.status == "complete":
                repo.complete += 1
                kind = completion_kind(completion_verdict(entry.store, task_id))
                if kind is None:
                    unknown += 1
                else:
                    kinds[kind] += 1
                repo.verified += kind == "verified"
    complete = by_phase["complete"]
    closed = sum(by_phase[p] for p in TERMINAL)
    readable = total - unreadable_count
    from cortex.kernel.config import cache_root

    return Result(
        data={
            "now": format_time(now),
            "stores": len(found),
            "bytes": {
                "stores": sum(r.bytes for r in repos.values()),
                "stateRoot": tree_bytes(kernel.state_root),
                "cache": tree_bytes(cache_root(kernel.env)),
            },
            "total": total,
            "unreadable": unreadable_count,
            "unreadableCases": unreadable,
            "byPhase": by_phase,
            "active": readable - closed,
            "closed": closed,
            "waitingOnDecision": by_phase["needs_human_decision"],
            "activeLeases": leases,
            "stale": stale,
            "staleAfterSeconds": STALE_AFTER_DEFAULT,
            "completion": {
                "complete": complete,
                "closed": closed,
                "readable": readable,
                "ofClosed": rate(complete, closed),
                "ofAll": rate(complete, readable),
            },
            "verifiedCompletion": {
                "verified": kinds["verified"],
                "acceptedFailed": kinds["accepted_failed"],
                "verificationNotPossible": kinds["verification_not_possible"],
                "unknown": unknown,
                "ofComplete": rate(kinds["verified"], complete),
            },
            "byRepo": [
                r.view()
                for r in sorted(repos.values(), key=lambda r: (-r.total, r.store_id))
                if r.total
            ],
        }
    )


class Sessions(Input):
    """The input of `case sessions`."""

    repo: str | None = None
    active: bool = False
    stale_after: str | None = None
    query: str | None = None
    limit: int = inputs.SESSIONS_LIMIT
    archived: bool = False


def list_sessions(kernel: Kernel, given: Sessions) -> Result:
    """`sessions` for one input."""
    return sessions(
        kernel,
        repo=given.repo,
        active=given.active,
        stale_after=given.stale_after,
        query=given.query,
        limit=given.limit,
        archived=given.archived,
    )


def totals(kernel: Kernel, _given: Nothing) -> Result:
    """`overview` for the empty input."""
    return overview(kernel)
