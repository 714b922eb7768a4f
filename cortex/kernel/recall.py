"""Keeping the recall index current, and what the kernel asks of it (docs/design/recall.md).

The index is derived from the case files and lives under the cache root. After a commit that
can change a case's cards, the use case calls `after_commit`: the case transaction has already
committed, so a failure here (or a crash before it) only leaves the index behind, which
`cortex recall` reports and `cortex recall reindex` repairs. The commit is never undone and the
command never fails for it; it answers with a warning.

Also here, because writers need them: the brief at `case open` and the plan's check against
rejected hypotheses (the index's side of both is `cortex.recall.advice`), and finding the
decision a contest names.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from cortex.cases.bounds import (
    BRIEF_CANDIDATES,
    BRIEF_CARDS_MAX,
    BRIEF_TOKENS,
    RECALL_TERMS_MAX,
)
from cortex.cases.errors import BusyError, CortexError, IntegrityError, NotFoundError
from cortex.cases.store import CaseStore
from cortex.kernel.config import cache_root
from cortex.kernel.envelope import Action, Result
from cortex.kernel.errors import GateRefusedError
from cortex.kernel.inputs import Input, Nothing
from cortex.kernel.kernel import Kernel
from cortex.recall.advice import brief_answer, brief_groups, repeats
from cortex.recall.budget import walk
from cortex.recall.cards import Card, derive, estimate, shown_line
from cortex.recall.index import (
    Filters,
    Hit,
    Index,
    RecallIndexError,
    Store,
    canonical_digest,
    derived_digest,
    index_path,
)
from cortex.recall.terms import content_terms
from cortex.workspace.freshness import Ref, labels

if TYPE_CHECKING:
    from cortex.kernel.progress import Progress


def _reporter(given: Progress | None) -> Progress:
    """`given`, or a silent reporter: loaded here, as the brief at `case open` reports nothing."""
    from cortex.kernel.progress import Progress

    return given or Progress()


def _fail(exc: BaseException) -> str:
    return str(getattr(exc, "message", None) or exc)


class RecallIndexDamagedError(IntegrityError):
    """The recall index cannot be read or written as it is: `recall rebuild` heals it."""

    code = "recall_index_damaged"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.actions = [
            Action(
                command="cortex recall rebuild",
                reason="the index is a cache: rebuilt from the case files, which it never changes",
            )
        ]


def index_error(exc: BaseException) -> CortexError:
    """The error a command answers with when the index failed it: busy, or damaged."""
    text = _fail(exc)
    if "locked" in text or "busy" in text:
        return BusyError(f"the recall index is in use: {text}")
    if text.startswith("cannot make"):
        return CortexError(text)  # the cache directory itself: nothing a rebuild can mend
    return RecallIndexDamagedError(
        f"the recall index is damaged ({text}); run cortex recall rebuild: it is derived "
        "from the case files again, which it never changes"
    )


def warning(exc: BaseException) -> str:
    """The warning a command gives when the index could not follow its commit."""
    return (
        f"the recall index was not updated ({_fail(exc)}); the case itself is committed. "
        "Run `cortex recall reindex`"
    )


# Where the index is, and what it covers ------------------------------------------------------


def path(kernel: Kernel) -> str:
    """This state root's index file, for the engine this interpreter has."""
    return index_path(cache_root(kernel.env), kernel.state_root)


def _store_id(kernel: Kernel, root: str) -> str:
    """How cards name a store: its directory name, or for one outside the state root, where."""
    sessions = os.path.realpath(os.path.join(kernel.state_root, "sessions"))
    if os.path.dirname(root) == sessions:
        return os.path.basename(root)
    parent, name = os.path.split(root.rstrip(os.sep))
    return f"{os.path.basename(os.path.dirname(parent))}/{os.path.basename(parent)}/{name}"


def index_files(kernel: Kernel) -> list[str]:
    """Every file the index of this state root may have, for either engine."""
    found = []
    for engine in ("fts5", "bm25py"):
        base = index_path(cache_root(kernel.env), kernel.state_root, engine)
        found += [base + suffix for suffix in ("", "-journal", "-wal", "-shm")]
    return found


def store_ref(kernel: Kernel, store: CaseStore) -> Store:
    """A store as the index files it."""
    root = os.path.realpath(store.root)
    return Store(_store_id(kernel, root), root, store)


def current_root(kernel: Kernel) -> str:
    """This workspace's store, as the index names it."""
    return os.path.realpath(kernel.cases_root)


def stores(kernel: Kernel) -> list[Store]:
    """Every store the index covers: under `<state root>/sessions/`, this one, registered ones."""
    from cortex.kernel.stores import registered

    sessions = os.path.join(kernel.state_root, "sessions")
    roots: list[str] = []
    try:
        entries = sorted(os.scandir(sessions), key=lambda entry: entry.name)
    except (FileNotFoundError, NotADirectoryError):
        entries = []
    roots.extend(entry.path for entry in entries if entry.is_dir(follow_symlinks=False))
    if os.path.isdir(kernel.cases_root):
        roots.append(kernel.cases_root)
    roots.extend(registered(kernel.state_root))
    found: list[Store] = []
    seen: set[str] = set()
    for root in roots:
        real = os.path.realpath(root)
        if real in seen:
            continue
        seen.add(real)
        store = kernel.store if real == current_root(kernel) else kernel.reader(root)
        found.append(Store(_store_id(kernel, real), real, store))
    return found


def open_read(kernel: Kernel) -> Index | None:
    """The index for reading, or None when there is none yet."""
    return Index.read(path(kernel))


def _open_write(kernel: Kernel) -> Index:
    index = Index.write(path(kernel))
    if index.meta("built") is None:
        try:
            _build(kernel, index, stores(kernel))
        except BaseException:
            index.close()
            raise
    return index


# Writing --------------------------------------------------------------------------------------


def after_commit(kernel: Kernel, store: CaseStore, task_id: str) -> list[str]:
    """Bring one case's cards up to date after its commit; warnings, never an exception."""
    # Anything at all: the case has committed, and a cache must not turn that into a failure.
    try:
        index = _open_write(kernel)
    except Exception as exc:  # noqa: BLE001 - reported as a warning; the index is only behind
        return [warning(exc)]
    from cortex.recall.manifest import refresh

    try:
        refresh(index, store_ref(kernel, store), task_id, kernel.redactor)
    except Exception as exc:  # noqa: BLE001 - as above
        return [warning(exc)]
    finally:
        index.close()
    return []


def follow(kernel: Kernel, moves: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """After cases moved into this store from others (adopt): their rows follow them."""
    from cortex.recall.manifest import forget, refresh

    if not os.path.exists(path(kernel)):
        return []
    try:
        index = Index.write(path(kernel))
    except RecallIndexError as exc:
        return [warning(exc)]
    try:
        here = store_ref(kernel, kernel.store)
        for root, tasks in moves:
            for task_id in tasks:
                forget(index, os.path.realpath(root), task_id)
                refresh(index, here, task_id, kernel.redactor)
    except Exception as exc:  # noqa: BLE001 - the cases moved; the index is only behind
        return [warning(exc)]
    finally:
        index.close()
    return []


def _derive_all(
    kernel: Kernel, covered: Sequence[Store], progress: Progress
) -> tuple[list[Any], list[list[str]]]:
    """Every case read whole, with its contribution; (reads, problems)."""
    from cortex.recall.source import read_source

    reads: list[Any] = []
    problems: list[list[str]] = []
    tasks = [(ref, task) for ref in covered for task in sorted(ref.store.list_ids())]
    for index, (ref, task) in enumerate(tasks, 1):
        progress.step("read", subject=task, index=index, count=len(tasks))
        try:
            read = read_source(ref.store, task, ref.id)
        except CortexError as exc:
            problems.append([task, exc.message])
            continue
        reads.append((ref, task, read, derive(read.source, kernel.redactor)))
    return reads, problems


def _build(
    kernel: Kernel, index: Index, covered: Sequence[Store], progress: Progress | None = None
) -> dict[str, Any]:
    """Derive every case again and replace everything the index holds, in one transaction.

    `progress` hears one step per case (for reindex and rebuild; a build under another
    command's commit reports nothing, its operation has ended).
    """
    reads, problems = _derive_all(kernel, covered, _reporter(progress))
    with index.transaction():
        index.clear()
        for ref, task, read, derived in reads:
            index.put_case(
                ref.root,
                read.key,
                task,
                revision=read.source.case.revision,
                evidence_bytes=read.evidence_bytes,
                source=read.digest,
                derived=derived,
                full=True,
                workspace=read.source.case.workspace.root,
                cleared=True,
            )
        for ref in covered:
            index.relate(ref.root)
        index.set_meta("built", kernel.now())
    canonical = canonical_digest(
        (ref.root, task, derived_digest(derived)) for ref, task, _, derived in reads
    )
    return {"cases": len(reads), "unreadable": problems, "canonical": canonical}


def reindex(kernel: Kernel, _given: Nothing | None = None) -> Result:
    """Bring every case the index is behind on up to date (idempotent)."""
    from cortex.recall.manifest import forget, moved, refresh

    covered = stores(kernel)
    progress = _reporter(kernel.progress)
    progress.begin("recall.reindex")
    try:
        index = Index.write(path(kernel))
    except RecallIndexError as exc:
        raise index_error(exc) from None
    try:
        if index.meta("built") is None:
            built = _build(kernel, index, covered, progress)
            return Result(data=_summary(index, "built", updated=[], removed=[], **built))
        updated: list[str] = []
        removed: list[str] = []
        problems: list[list[str]] = []
        behind = list(moved(index, covered))
        for position, item in enumerate(behind, 1):
            progress.step("index", subject=item.task, index=position, count=len(behind))
            if item.store is None:
                assert item.row is not None  # noqa: S101 - an orphan always has its row
                forget(index, item.row.store, item.task)
                removed.append(item.task)
                continue
            try:
                if refresh(index, item.store, item.task, kernel.redactor):
                    updated.append(item.task)
            except CortexError as exc:
                problems.append([item.task, exc.message])
        return Result(
            data=_summary(index, "reindexed", updated=updated, removed=removed, unreadable=problems)
        )
    except RecallIndexError as exc:
        raise index_error(exc) from None
    finally:
        index.close()
        progress.end()


def rebuild(kernel: Kernel, given: Rebuild | None = None) -> Result:
    """Derive the whole index again from the case files; with `verify`, compare the digests."""
    verify = given is not None and given.verify
    covered = stores(kernel)
    progress = _reporter(kernel.progress)
    progress.begin("recall.rebuild")
    try:
        index = Index.write(path(kernel))
    except RecallIndexError as exc:
        raise index_error(exc) from None
    try:
        before = index.canonical() if index.meta("built") is not None else None
        built = _build(kernel, index, covered, progress)
        after = index.canonical()
        data = _summary(index, "rebuilt", cases=built["cases"], unreadable=built["unreadable"])
        if verify:
            data["verify"] = {
                "canonicalDigest": built["canonical"],
                "indexDigest": after,
                "agree": after == built["canonical"],
                "previousIndexDigest": before,
                "previousAgreed": before == built["canonical"] if before is not None else None,
            }
        return Result(data=data)
    except RecallIndexError as exc:
        raise index_error(exc) from None
    finally:
        index.close()
        progress.end()


def _summary(index: Index, what: str, **facts: Any) -> dict[str, Any]:
    facts.pop("canonical", None)
    return {
        "done": what,
        "path": index.path,
        "engine": index.engine,
        "cards": index.count_cards(),
        "canonicalDigest": index.canonical(),
        **facts,
    }


# Reading, for the writers -------------------------------------------------------------------


def state(kernel: Kernel, index: Index | None) -> dict[str, Any]:
    """Whether the index is current (a reader's check: it writes nothing)."""
    from cortex.cases.bounds import RECALL_BEHIND_SHOWN
    from cortex.recall.manifest import check

    if index is None:
        return {
            "state": "missing",
            "path": path(kernel),
            "behind": 0,
            "behindCases": [],
            "removed": 0,
            "unreadable": [],
        }
    report = check(index, stores(kernel), kernel.redactor)
    behind = len(report.behind) + len(report.removed)
    return {
        "state": "behind" if behind else "current",
        "path": index.path,
        "engine": index.engine,
        "behind": behind,
        "behindCases": [*report.behind, *report.removed][:RECALL_BEHIND_SHOWN],
        "removed": len(report.removed),
        "unreadable": [list(item) for item in report.unreadable][:RECALL_BEHIND_SHOWN],
    }


def shown(kernel: Kernel, hits: Sequence[Hit]) -> list[Card]:
    """The cards of `hits` as a face shows them: freshness labels added, tokens estimated.

    A card of this workspace's store is checked against this workspace; any other against the
    workspace its case was opened in.
    """
    here = current_root(kernel)
    by_root: dict[str, list[tuple[int, Ref]]] = {}
    for position, hit in enumerate(hits):
        root = kernel.workspace.root if hit.store == here else hit.workspace
        for ref in hit.card.paths:
            by_root.setdefault(root, []).append((position, Ref(ref.path, ref.blob, ref.head)))
    extra: dict[int, list[str]] = {}
    for root, refs in by_root.items():
        found = labels(root or None, kernel.env, [ref for _, ref in refs])
        for (position, _), label in zip(refs, found, strict=True):
            if label is not None and label not in extra.setdefault(position, []):
                extra[position].append(label)
    cards: list[Card] = []
    for position, hit in enumerate(hits):
        card = msgspec.structs.replace(
            hit.card, labels=[*hit.card.labels, *extra.get(position, [])]
        )
        card.est_tokens = estimate(shown_line(card))
        cards.append(card)
    return cards


def brief(kernel: Kernel, task_id: str, goal: str) -> tuple[dict[str, Any], list[str]]:
    """At most BRIEF_CARDS_MAX cards of this store within BRIEF_TOKENS, for a new case's goal.

    Rejected hypotheses and active decisions first; a contested decision comes with the
    evidence contesting it, so both sides are read together (docs/design/recall.md). The first
    brief on a machine builds the index. Returns the brief and warnings.
    """
    try:
        index = open_read(kernel) or _open_write(kernel)
    except (RecallIndexError, CortexError, OSError) as exc:
        return brief_answer([], [], 0, "unavailable"), [warning(exc)]
    try:
        root = current_root(kernel)
        words = content_terms(goal)[:RECALL_TERMS_MAX]
        filters = Filters(
            store=root, exclude_task=task_id, exclude_statuses=("superseded", "overturned")
        )
        total, hits = index.best(words, filters, limit=BRIEF_CANDIDATES)
        groups = brief_groups(index, root, hits)
    except RecallIndexError as exc:
        return brief_answer([], [], 0, "unavailable"), [warning(exc)]
    finally:
        index.close()
    flat = [hit for group in groups for hit in group]
    cards = {id(hit): card for hit, card in zip(flat, shown(kernel, flat), strict=True)}
    result = walk(
        [[cards[id(hit)] for hit in group] for group in groups],
        lambda card: card.est_tokens,
        BRIEF_TOKENS,
        max_items=BRIEF_CARDS_MAX,
    )
    return brief_answer(result.kept, result.skipped, total, "read", tokens=result.tokens), []


def rejected_matches(kernel: Kernel, task_id: str, statements: Sequence[str]) -> list[Any]:
    """Each hypothesis that repeats one an earlier case of this store rejected, with the card."""
    try:
        index = open_read(kernel)
    except RecallIndexError:
        return []  # a damaged index only costs the warning it would give
    if index is None:
        return []
    try:
        return repeats(index, current_root(kernel), task_id, statements)
    except RecallIndexError:
        return []
    finally:
        index.close()


def catch_up(kernel: Kernel) -> Index:
    """The index, brought up to date for this workspace's store (for a write that reads it)."""
    from cortex.recall.manifest import moved, refresh

    try:
        index = _open_write(kernel)
    except RecallIndexError as exc:
        raise index_error(exc) from None
    here = store_ref(kernel, kernel.store)
    try:
        for item in moved(index, [here]):
            if item.store is not None:
                refresh(index, here, item.task, kernel.redactor)
    except (RecallIndexError, CortexError) as exc:
        index.close()
        raise index_error(exc) from None
    return index


def contestable(kernel: Kernel, decision_id: str) -> str:
    """Check that `decision_id` is an active answered decision of this store; its task id."""
    index = catch_up(kernel)
    try:
        root = current_root(kernel)
        hits = index.by_ids([decision_id]).get(decision_id, [])
        hits = [hit for hit in hits if hit.store == root and hit.card.kind == "decision"]
    finally:
        index.close()
    if not hits:
        msg = f"no answered decision {decision_id} in this repository's cases"
        raise NotFoundError(msg)
    card = hits[0].card
    if card.status != "active":
        later = next((label for label in card.labels if label.startswith("(")), card.status)
        msg = f"{decision_id} is {card.status} {later}: contest the decision in force instead"
        raise GateRefusedError(msg)
    return card.task_id


def open_contests(kernel: Kernel, decision_id: str) -> list[str]:
    """The contests of `decision_id` no resolution has closed (the index brought up to date)."""
    index = catch_up(kernel)
    try:
        return index.open_contests(current_root(kernel), decision_id)
    finally:
        index.close()


def relation_labels(kernel: Kernel, store: CaseStore, ids: Sequence[str]) -> dict[str, list[str]]:
    """The decision-history labels of records of one store, by id (a reader: writes nothing).

    Empty without an index, or when it cannot be read: labels then wait for `recall reindex`.
    """
    if not ids:
        return {}
    try:
        index = open_read(kernel)
    except RecallIndexError:
        return {}
    if index is None:
        return {}
    root = os.path.realpath(store.root)
    try:
        found = index.by_ids(list(dict.fromkeys(ids)))
    except RecallIndexError:
        return {}
    finally:
        index.close()
    return {
        card_id: hit.card.labels
        for card_id, hits in found.items()
        for hit in hits
        if hit.store == root and hit.card.labels
    }


class Rebuild(Input):
    """The input of `recall rebuild`."""

    verify: bool = False
