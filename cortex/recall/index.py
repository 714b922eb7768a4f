"""The recall index: one SQLite file of cards, their relations and the manifest.

The only module of Cortex that loads `sqlite3` (docs/design/architecture.md). Everything here is
derived from case files and may be deleted at any time; `cortex recall rebuild` makes it again
(docs/design/recall.md, "The index and its manifest").

Two engines answer the same queries: FTS5's `bm25()` over `cards_fts`, or, where SQLite was
built without FTS5, `cortex.recall.bm25` over the terms the `cards` table stores. The engine is
part of the file name, so a file is only ever written by the engine it was made for.

Readers open the file read-only (`mode=ro`) and write nothing; writers take SQLite's write lock
for the whole update (`BEGIN IMMEDIATE`). Errors of SQLite never leave this module: they become
`RecallIndexError`, which callers turn into a warning or an answer.

Long because: it is one class over one SQLite connection, whose schema, write transaction and
two search engines share its statements and its error mapping, and the only module that loads
`sqlite3`.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from itertools import pairwise
from typing import Any, NamedTuple

from cortex.cases.digest import sha256_hex
from cortex.cases.fsio import make_private_dirs
from cortex.cases.records import decode, encode
from cortex.cases.store import CaseStore
from cortex.recall import bm25
from cortex.recall.cards import Card, Closing, Contest, Derived, stored_terms, subject_key
from cortex.recall.terms import fts5_match

PURGE = "purge"
"""A meta key present while deleted text may still be in the file (see `Index.purge`)."""
FORMAT = "1"
"""The index's own format; a file of another format is rebuilt, never read."""
BUSY_MS = 5000
_SLACK = 16
"""Rows read past a page, to find where its last rounded score ends."""
SNAPSHOT_KINDS = ("hypothesis", "decision", "outcome")
"""Card kinds made from snapshots: an update of a case replaces all of them."""

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
    """CREATE TABLE IF NOT EXISTS cases(
        store TEXT NOT NULL, task TEXT NOT NULL, key TEXT NOT NULL, revision INTEGER NOT NULL,
        evidence_bytes INTEGER NOT NULL, source TEXT NOT NULL, digest TEXT NOT NULL,
        PRIMARY KEY (store, task)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS cards(
        rowid INTEGER PRIMARY KEY, id TEXT NOT NULL, store TEXT NOT NULL,
        store_id TEXT NOT NULL, repository TEXT NOT NULL, task TEXT NOT NULL,
        kind TEXT NOT NULL, status TEXT NOT NULL, created TEXT NOT NULL,
        subject TEXT NOT NULL, labels TEXT NOT NULL, length INTEGER NOT NULL,
        workspace TEXT NOT NULL, UNIQUE (store, id))""",
    # Bodies apart from the facts queries filter on: a filtered search reads narrow rows.
    "CREATE TABLE IF NOT EXISTS bodies(rowid INTEGER PRIMARY KEY, terms TEXT, card BLOB)",
    "CREATE INDEX IF NOT EXISTS cards_case ON cards(store, task)",
    "CREATE INDEX IF NOT EXISTS cards_id ON cards(id)",
    "CREATE INDEX IF NOT EXISTS cards_kind ON cards(store, kind, subject)",
    """CREATE TABLE IF NOT EXISTS contests(
        store TEXT NOT NULL, evidence TEXT NOT NULL, decision TEXT NOT NULL,
        task TEXT NOT NULL, body BLOB NOT NULL, PRIMARY KEY (store, evidence)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS contests_case ON contests(store, task)",
    """CREATE TABLE IF NOT EXISTS resolutions(
        store TEXT NOT NULL, evidence TEXT NOT NULL, decision TEXT NOT NULL,
        task TEXT NOT NULL, body BLOB NOT NULL, PRIMARY KEY (store, evidence)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS resolutions_case ON resolutions(store, task)",
)
_EXISTS = "SELECT 1 FROM cards WHERE store = ? AND id = ?"
_INSERT_CARD = "INSERT INTO cards VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT_BODY = "INSERT INTO bodies VALUES (?, ?, ?)"
_BODY = "SELECT c.rowid, b.card, c.status, c.labels, c.store, c.workspace, c.id FROM cards c "
_BODY += "JOIN bodies b ON b.rowid = c.rowid"
_FTS = "CREATE VIRTUAL TABLE IF NOT EXISTS cards_fts USING fts5(terms, tokenize='ascii')"


class RecallIndexError(Exception):
    """The index cannot be used as asked (missing, locked, damaged, another format)."""


_probed: bool | None = None


def fts5_available() -> bool:
    """Whether this interpreter's SQLite has FTS5 (probed once, on a memory database)."""
    global _probed  # noqa: PLW0603 - a per-process cache of one fact
    if _probed is None:
        try:
            probe = sqlite3.connect(":memory:")
            try:
                probe.execute("CREATE VIRTUAL TABLE temp.probe USING fts5(x)")
                _probed = True
            finally:
                probe.close()
        except sqlite3.Error:
            _probed = False
    return _probed


def engine_name() -> str:
    """`fts5` or `bm25py`: which engine this process searches with."""
    return "fts5" if fts5_available() else "bm25py"


def index_path(cache_root: str, state_root: str, engine: str | None = None) -> str:
    """`<cache root>/recall/<16 hex of the state root>-<engine>.sqlite`."""
    key = sha256_hex(os.fsencode(state_root))[:16]
    return os.path.join(cache_root, "recall", f"{key}-{engine or engine_name()}.sqlite")


class Filters(NamedTuple):
    """What a query keeps (the corpus statistics are always the whole index's)."""

    repo: str | None = None
    kinds: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    lower: str | None = None
    """`created` at or after this (inclusive)."""
    upper: str | None = None
    """`created` before this (exclusive)."""
    store: str | None = None
    """Only this store (its root)."""
    exclude_task: str | None = None
    exclude_statuses: tuple[str, ...] = ()

    def where(self) -> tuple[str, list[object]]:
        """The SQL condition on `c` (the cards table) and its parameters."""
        clauses: list[str] = []
        params: list[object] = []
        if self.repo is not None:
            clauses.append("(lower(c.repository) = ? OR lower(c.store_id) = ?)")
            params += [self.repo.lower(), self.repo.lower()]
        for column, values, negate in (
            ("kind", self.kinds, False),
            ("status", self.statuses, False),
            ("status", self.exclude_statuses, True),
        ):
            if values:
                marks = ", ".join("?" * len(values))
                clauses.append(f"c.{column} {'NOT IN' if negate else 'IN'} ({marks})")
                params += list(values)
        for clause, value in (
            ("c.created >= ?", self.lower),
            ("c.created < ?", self.upper),
            ("c.store = ?", self.store),
            ("c.task != ?", self.exclude_task),
        ):
            if value is not None:
                clauses.append(clause)
                params.append(value)
        return (" AND ".join(clauses) or "1"), params


class Store(NamedTuple):
    """One store the index covers."""

    id: str
    """How cards name it (`<repository>-<12 hex>` for a central store)."""
    root: str
    """Its directory, as a realpath: the key rows are filed under."""
    store: CaseStore


class Hit(NamedTuple):
    """A card as a query found it, and where it lives."""

    card: Card
    store: str
    """The store's root."""
    workspace: str = ""
    """The root of the workspace its case was opened in (where its files are checked)."""


class CaseRow(NamedTuple):
    """One manifest row."""

    store: str
    task: str
    key: str
    revision: int
    evidence_bytes: int
    source: str
    digest: str


def _card(blob: bytes, status: str, labels: str, score: float | None) -> Card:
    card = decode(blob, Card)
    card.status = status
    card.labels = decode(labels.encode(), list[str])
    card.score = score
    return card


def _uri(path: str) -> str:
    escaped = path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return f"file:{escaped}?mode=ro"


class Index:
    """An open index file."""

    def __init__(self, path: str, connection: sqlite3.Connection, engine: str) -> None:
        self.path = path
        self.db = connection
        self.engine = engine
        self._cached: tuple[int, list[tuple[str, str, str, int]]] | None = None

    # Opening ------------------------------------------------------------------------------

    @classmethod
    def read(cls, path: str) -> Index | None:
        """The index at `path` for reading, or None when there is none (or not of this format).

        Anything but a regular file in its place (a directory, a symlink, dangling or not) is
        a damaged index, never "no index yet": the reader says so, and a rebuild heals it.
        """
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise RecallIndexError(f"cannot read {path}: {exc.strerror}") from None
        if not stat.S_ISREG(mode):
            raise RecallIndexError(f"{path} is not a regular file")
        engine = "fts5" if path.endswith("-fts5.sqlite") else "bm25py"
        try:
            db = sqlite3.connect(_uri(path), uri=True, timeout=BUSY_MS / 1000, isolation_level=None)
        except sqlite3.Error as exc:
            raise RecallIndexError(f"cannot open {path}: {exc}") from None
        index = cls(path, db, engine)
        try:
            fmt = index.meta("format")
        except RecallIndexError:
            db.close()
            raise
        if fmt != FORMAT:
            db.close()
            return None
        return index

    @classmethod
    def write(cls, path: str) -> Index:
        """The index at `path` for writing, created (or, when damaged, made anew) as needed."""
        engine = "fts5" if path.endswith("-fts5.sqlite") else "bm25py"
        try:
            make_private_dirs(os.path.dirname(path))
        except OSError as exc:
            raise RecallIndexError(f"cannot make {os.path.dirname(path)}: {exc}") from None
        _clear_the_way(path)
        for attempt in range(2):
            if not os.path.exists(path):
                try:
                    os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
                except OSError as exc:
                    raise RecallIndexError(f"cannot create {path}: {exc}") from None
            try:
                db = sqlite3.connect(path, timeout=BUSY_MS / 1000, isolation_level=None)
                db.execute("PRAGMA synchronous=NORMAL")
                index = cls(path, db, engine)
                index._schema()
                if index.meta(PURGE) is not None:
                    index.purge()  # one a killed writer began: its deleted text is still here
            except sqlite3.DatabaseError as exc:
                if "locked" in str(exc) or "busy" in str(exc) or attempt:
                    raise RecallIndexError(f"cannot open {path}: {exc}") from None
                # Not a database (or one of another format): it is a cache, so start again.
                for suffix in ("", "-journal", "-wal", "-shm"):
                    _unlink(path + suffix)
                continue
            return index
        raise RecallIndexError(f"cannot open {path}")  # pragma: no cover - the loop returns

    def _schema(self) -> None:
        with self.transaction():
            fmt = self._meta_or_none("format")
            if fmt is not None and fmt != FORMAT:
                for table in (
                    *("meta", "cases", "cards", "bodies", "contests", "resolutions", "cards_fts"),
                ):
                    self.db.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in _SCHEMA:
                self.db.execute(statement)
            if self.engine == "fts5":
                self.db.execute(_FTS)
            if fmt != FORMAT:
                self.db.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('format', ?), ('engine', ?)",
                    (FORMAT, self.engine),
                )

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction holding SQLite's write lock from the start."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise RecallIndexError(f"the recall index is busy or read-only: {exc}") from None
        try:
            yield
        except sqlite3.Error as exc:
            self._rollback()
            raise RecallIndexError(f"the recall index could not be written: {exc}") from None
        except BaseException:
            self._rollback()
            raise
        try:
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise RecallIndexError(f"the recall index could not commit: {exc}") from None

    def _rollback(self) -> None:
        if self.db.in_transaction:
            with suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")

    # Meta and manifest --------------------------------------------------------------------

    def _meta_or_none(self, key: str) -> str | None:
        try:
            row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return None
            raise
        return None if row is None else str(row[0])

    def meta(self, key: str) -> str | None:
        """One meta value (format, engine, built)."""
        try:
            return self._meta_or_none(key)
        except sqlite3.Error as exc:
            raise RecallIndexError(f"the recall index cannot be read: {exc}") from None

    def set_meta(self, key: str, value: str) -> None:
        """Set a meta value (inside a transaction)."""
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def manifest(self) -> dict[tuple[str, str], CaseRow]:
        """Every manifest row, by (store, task)."""
        try:
            rows = self.db.execute(
                "SELECT store, task, key, revision, evidence_bytes, source, digest FROM cases"
            ).fetchall()
        except sqlite3.Error as exc:
            raise RecallIndexError(f"the recall index cannot be read: {exc}") from None
        return {(row[0], row[1]): CaseRow(*row) for row in rows}

    def case_row(self, store: str, task: str) -> CaseRow | None:
        """The manifest row of one case."""
        row = self.db.execute(
            "SELECT store, task, key, revision, evidence_bytes, source, digest FROM cases "
            "WHERE store = ? AND task = ?",
            (store, task),
        ).fetchone()
        return None if row is None else CaseRow(*row)

    # Writing ------------------------------------------------------------------------------

    def _next_rowid(self) -> int:
        row = self.db.execute("SELECT coalesce(max(rowid), 0) FROM cards").fetchone()
        return int(row[0]) + 1

    def _delete_cards(self, where: str, params: Sequence[object]) -> None:
        tables = ("cards_fts", "bodies") if self.engine == "fts5" else ("bodies",)
        for table in tables:
            self.db.execute(
                f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM cards WHERE {where})",  # noqa: S608
                params,
            )
        self.db.execute(f"DELETE FROM cards WHERE {where}", params)  # noqa: S608 - fixed text

    def insert_cards(
        self, store: str, cards: Iterable[Card], *, workspace: str = "", fresh: bool = False
    ) -> int:
        """Insert cards; an existing card of the same id in the store is replaced.

        `fresh` says no card of these ids can exist (a rebuild, or a case just cleared).
        """
        rows: list[tuple[Any, ...]] = []
        bodies: list[tuple[int, str, bytes]] = []
        fts: list[tuple[int, str]] = []
        rowid = self._next_rowid()
        seen: set[str] = set()
        for card in cards:
            if card.id in seen:
                continue
            seen.add(card.id)
            terms, length = stored_terms(card)
            rows.append(
                (
                    rowid,
                    card.id,
                    store,
                    card.store,
                    card.repository,
                    card.task_id,
                    card.kind,
                    card.status,
                    card.created,
                    subject_key(card.subject),
                    "[]",
                    length,
                    workspace,
                )
            )
            bodies.append((rowid, terms, encode(card)))
            fts.append((rowid, terms))
            rowid += 1
        if not rows:
            return 0
        if not fresh:
            for row in rows:
                pair = (store, row[1])
                if self.db.execute(_EXISTS, pair).fetchone() is not None:
                    self._delete_cards("store = ? AND id = ?", pair)
        self.db.executemany(_INSERT_CARD, rows)
        self.db.executemany(_INSERT_BODY, bodies)
        if self.engine == "fts5":
            self.db.executemany("INSERT INTO cards_fts(rowid, terms) VALUES (?, ?)", fts)
        return len(rows)

    def put_case(
        self,
        store: str,
        read_key: str,
        task: str,
        *,
        revision: int,
        evidence_bytes: int,
        source: str,
        derived: Derived,
        full: bool,
        workspace: str = "",
        cleared: bool = False,
    ) -> None:
        """Replace what one case contributes to the index.

        With `full`, every card and relation of the case is replaced; otherwise the snapshot
        cards are, and `derived`'s evidence cards and relations (from the evidence ledger's new
        tail) are added. `cleared` says the index holds nothing of the case (a rebuild that
        began with `clear`), so there is nothing to delete first.
        """
        params = (store, task)
        if cleared:
            pass
        elif full:
            self._delete_cards("store = ? AND task = ?", params)
            self.db.execute("DELETE FROM contests WHERE store = ? AND task = ?", params)
            self.db.execute("DELETE FROM resolutions WHERE store = ? AND task = ?", params)
        else:
            marks = ", ".join("?" * len(SNAPSHOT_KINDS))
            self._delete_cards(
                f"store = ? AND task = ? AND kind IN ({marks})", (*params, *SNAPSHOT_KINDS)
            )
        self.insert_cards(store, derived.cards, workspace=workspace, fresh=full)
        self.db.executemany(
            "INSERT OR REPLACE INTO contests VALUES (?, ?, ?, ?, ?)",
            [(store, c.evidence, c.decision, c.task, encode(c)) for c in derived.contests],
        )
        self.db.executemany(
            "INSERT OR REPLACE INTO resolutions VALUES (?, ?, ?, ?, ?)",
            [(store, r.evidence, r.decision, r.task, encode(r)) for r in derived.closings],
        )
        # A full contribution's digest is computed from what was derived (the same bytes the
        # rows hold); an incremental one is read back, old evidence cards included.
        digest = derived_digest(derived) if full else self.case_digest(store, task)
        self.db.execute(
            "INSERT OR REPLACE INTO cases VALUES (?, ?, ?, ?, ?, ?, ?)",
            (store, task, read_key, revision, evidence_bytes, source, digest),
        )

    def begin_purge(self) -> None:
        """Note, before deleting rows whose text must not stay, that a purge is owed.

        The note commits first, so a writer killed before `purge` finished leaves it, and the
        next writer to open the file purges (`write`).
        """
        with self.transaction():
            self.set_meta(PURGE, "pending")

    def purge(self) -> None:
        """Leave no byte of deleted rows in the file (after a forget or a removal).

        A deleted row's terms stay in FTS5's older index segments until they are merged
        (`optimize`), and freed pages keep their bytes until the file is rebuilt (`VACUUM`).
        Outside any transaction: VACUUM cannot run inside one.
        """
        try:
            if self.engine == "fts5":
                self.db.execute("INSERT INTO cards_fts(cards_fts) VALUES('optimize')")
            self.db.execute("VACUUM")
            self.db.execute("DELETE FROM meta WHERE key = ?", (PURGE,))
        except sqlite3.Error as exc:
            raise RecallIndexError(f"the recall index could not be purged: {exc}") from None

    def drop_case(self, store: str, task: str) -> None:
        """Forget a case that no longer exists."""
        params = (store, task)
        self._delete_cards("store = ? AND task = ?", params)
        for table in ("contests", "resolutions", "cases"):
            self.db.execute(f"DELETE FROM {table} WHERE store = ? AND task = ?", params)  # noqa: S608

    def clear(self) -> None:
        """Remove everything but the format (a rebuild starts here)."""
        for table in ("cases", "cards", "bodies", "contests", "resolutions"):
            self.db.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed table names
        if self.engine == "fts5":
            self.db.execute("DELETE FROM cards_fts")

    def case_digest(self, store: str, task: str) -> str:
        """The digest of what the index holds of one case (its cards and relations)."""
        params = (store, task)
        cards = self.db.execute(
            "SELECT b.card FROM cards c JOIN bodies b ON b.rowid = c.rowid "
            "WHERE c.store = ? AND c.task = ? ORDER BY c.id",
            params,
        ).fetchall()
        contests = self.db.execute(
            "SELECT body FROM contests WHERE store = ? AND task = ? ORDER BY evidence", params
        ).fetchall()
        closings = self.db.execute(
            "SELECT body FROM resolutions WHERE store = ? AND task = ? ORDER BY evidence", params
        ).fetchall()
        return blob_digest(
            [bytes(r[0]) for r in cards],
            [bytes(r[0]) for r in contests],
            [bytes(r[0]) for r in closings],
        )

    def relate(self, store: str) -> None:
        """Recompute the decision history of one store: superseded, overturned, contested."""
        decisions = self.db.execute(
            "SELECT id, subject, created FROM cards WHERE store = ? AND kind = 'decision'",
            (store,),
        ).fetchall()
        contests = [
            decode(bytes(r[0]), Contest)
            for r in self.db.execute("SELECT body FROM contests WHERE store = ?", (store,))
        ]
        closings = [
            decode(bytes(r[0]), Closing)
            for r in self.db.execute("SELECT body FROM resolutions WHERE store = ?", (store,))
        ]
        states = history([(str(d[0]), str(d[1]), str(d[2])) for d in decisions], contests, closings)
        current = {
            str(row[0]): (str(row[1]), str(row[2]))
            for row in self.db.execute(
                "SELECT id, status, labels FROM cards WHERE store = ? AND id IN "
                "(SELECT id FROM cards WHERE store = ? AND kind IN ('decision', 'evidence'))",
                (store, store),
            )
        }
        changes = []
        for card_id, (status, shown) in states.items():
            encoded = encode(shown).decode()
            if card_id in current and current[card_id] != (status, encoded):
                changes.append((status, encoded, store, card_id))
        # Evidence cards whose contest went away (a rebuilt case) lose their labels.
        for card_id, (status, stored) in current.items():
            if card_id not in states and stored != "[]":
                changes.append((status, "[]", store, card_id))
        self.db.executemany(
            "UPDATE cards SET status = ?, labels = ? WHERE store = ? AND id = ?", changes
        )

    # Reading ------------------------------------------------------------------------------

    def count_cards(self) -> int:
        """How many cards the index holds."""
        try:
            return int(self.db.execute("SELECT count(*) FROM cards").fetchone()[0])
        except sqlite3.Error as exc:
            raise RecallIndexError(f"the recall index cannot be read: {exc}") from None

    def best(
        self, words: Sequence[str], filters: Filters, *, limit: int
    ) -> tuple[int | None, list[Hit]]:
        """The first page `search` gives, and the total only when it comes for free (or None).

        FTS5 ranks every match on its own and the filters are applied to the best rows
        afterwards, instead of joining each match with its card: for the brief, which needs
        the best few cards, not how many match.
        """
        where, params = filters.where()
        if self.engine != "fts5" or where == "1" or not words:
            return self.search(words, filters, limit=limit)
        try:
            return self._search_fts_first(words, where, params, limit, 0)
        except sqlite3.Error as exc:
            raise RecallIndexError(f"the recall index cannot be searched: {exc}") from None

    def search(
        self, words: Sequence[str], filters: Filters, *, limit: int, offset: int = 0
    ) -> tuple[int, list[Hit]]:
        """(total, the page) of cards matching any of `words`, best first, ties by id."""
        if not words:
            return 0, []
        where, params = filters.where()
        try:
            if self.engine == "fts5":
                return self._search_fts(words, where, params, limit, offset)
            return self._search_python(words, where, params, limit, offset)
        except sqlite3.Error as exc:
            raise RecallIndexError(f"the recall index cannot be searched: {exc}") from None

    def _search_fts(
        self, words: Sequence[str], where: str, params: list[object], limit: int, offset: int
    ) -> tuple[int, list[Hit]]:
        match = fts5_match(list(words))
        # Without filters the FTS table answers alone; with them, the narrow cards rows join.
        source = "FROM cards_fts WHERE cards_fts MATCH ?"
        if where != "1":
            source = (
                "FROM cards_fts CROSS JOIN cards c ON c.rowid = cards_fts.rowid "
                f"WHERE cards_fts MATCH ? AND {where}"
            )
        total = int(self.db.execute(f"SELECT count(*) {source}", [match, *params]).fetchone()[0])
        if total == 0 or offset >= total:
            return total, []
        # SQLite sorts by the raw score, in C. Rounding is monotonic, so the cards sharing a
        # rounded score are contiguous in that order: read past the page until the rounded score
        # changes, then order what was read by (rounded score, id) in Python, as the Python
        # engine does. No Python function runs per matching row.
        ranked = f"SELECT bm25(cards_fts) AS s, cards_fts.rowid {source} ORDER BY s LIMIT ?"
        want = offset + limit
        fetch = want + _SLACK
        while True:
            rows = self.db.execute(ranked, [match, *params, fetch]).fetchall()
            if len(rows) < fetch or _rounded(rows[-1][0]) != _rounded(rows[want - 1][0]):
                break
            fetch *= 4
        names = self._rows([int(r[1]) for r in rows], "SELECT rowid, id, store FROM cards")
        keyed = sorted(rows, key=lambda r: (_rounded(r[0]), *names[int(r[1])][1:]))
        page = keyed[offset:want]
        found = self._rows([int(r[1]) for r in page], _BODY, column="c.rowid")
        hits = []
        for score, rowid in page:
            row = found[int(rowid)]
            card = _card(bytes(row[1]), row[2], row[3], -_rounded(score))
            hits.append(Hit(card, str(row[4]), str(row[5])))
        return total, hits

    def _search_fts_first(
        self, words: Sequence[str], where: str, params: list[object], limit: int, offset: int
    ) -> tuple[int | None, list[Hit]]:
        """Rank in FTS5 alone, then filter the best rows: the same page, no exact total."""
        match = fts5_match(list(words))
        ranked = "SELECT bm25(cards_fts) AS s, rowid FROM cards_fts WHERE cards_fts MATCH ? "
        ranked += "ORDER BY s LIMIT ?"
        want = offset + limit
        fetch = 2 * (want + _SLACK)
        while True:
            rows = self.db.execute(ranked, [match, fetch]).fetchall()
            kept = self._rows(
                [int(r[1]) for r in rows],
                # NOT INDEXED: look the few rows up by rowid, never scan a store through its index.
                f"SELECT c.rowid, c.id, c.store FROM cards c NOT INDEXED WHERE ({where}) AND",  # noqa: S608
                column="c.rowid",
                params=params,
            )
            passing = [r for r in rows if int(r[1]) in kept]
            everything = len(rows) < fetch
            if everything:
                break
            if len(passing) >= want and _rounded(rows[-1][0]) != _rounded(passing[want - 1][0]):
                break
            fetch *= 4
        keyed = sorted(passing, key=lambda r: (_rounded(r[0]), *kept[int(r[1])][1:]))
        page = keyed[offset:want]
        found = self._rows([int(r[1]) for r in page], _BODY, column="c.rowid")
        hits = []
        for score, rowid in page:
            row = found[int(rowid)]
            card = _card(bytes(row[1]), row[2], row[3], -_rounded(score))
            hits.append(Hit(card, str(row[4]), str(row[5])))
        return (len(passing) if everything else None), hits

    def _rows(
        self,
        rowids: list[int],
        select: str,
        column: str = "rowid",
        params: Sequence[object] = (),
    ) -> dict[int, tuple[Any, ...]]:
        """`select` for these rowids, by rowid (the first selected column)."""
        found: dict[int, tuple[Any, ...]] = {}
        for start in range(0, len(rowids), 500):
            chunk = rowids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            joiner = " " if select.endswith(" AND") else " WHERE "
            query = f"{select}{joiner}{column} IN ({marks})"
            rows = self.db.execute(query, [*params, *chunk])
            found.update({int(r[0]): tuple(r) for r in rows})
        return found

    def _corpus(self) -> list[tuple[str, str, str, int]]:
        """Every card's (id, store, terms, length), read again only after another commit."""
        version = int(self.db.execute("PRAGMA data_version").fetchone()[0])
        cached = self._cached
        if cached is None or cached[0] != version or self.db.in_transaction:
            rows = [
                (str(r[0]), str(r[1]), str(r[2]), int(r[3]))
                for r in self.db.execute(
                    "SELECT c.id, c.store, b.terms, c.length FROM cards c "
                    "JOIN bodies b ON b.rowid = c.rowid"
                )
            ]
            cached = self._cached = (version, rows)
        return cached[1]

    def _search_python(
        self, words: Sequence[str], where: str, params: list[object], limit: int, offset: int
    ) -> tuple[int, list[Hit]]:
        corpus = self._corpus()
        eligible: set[tuple[str, str]] | None = None
        if where != "1":
            eligible = {
                (str(r[0]), str(r[1]))
                for r in self.db.execute(f"SELECT c.id, c.store FROM cards c WHERE {where}", params)  # noqa: S608
            }
        rows = [
            bm25.Row(
                card_id, store, terms, length, eligible is None or (card_id, store) in eligible
            )
            for card_id, store, terms, length in corpus
        ]
        ranked = bm25.rank(rows, words)
        hits: list[Hit] = []
        for score, card_id, store in ranked[offset : offset + limit]:
            row = self.db.execute(f"{_BODY} WHERE c.store = ? AND c.id = ?", (store, card_id))
            body = row.fetchone()
            hits.append(Hit(_card(bytes(body[1]), body[2], body[3], score), store, str(body[5])))
        return len(ranked), hits

    def by_ids(self, ids: Sequence[str]) -> dict[str, list[Hit]]:
        """The cards with these ids (an id may name a card in more than one store)."""
        found: dict[str, list[Hit]] = {}
        try:
            for card_id in ids:
                for row in self.db.execute(f"{_BODY} WHERE c.id = ? ORDER BY c.store", (card_id,)):
                    found.setdefault(card_id, []).append(
                        Hit(_card(bytes(row[1]), row[2], row[3], None), str(row[4]), str(row[5]))
                    )
        except sqlite3.Error as exc:
            raise RecallIndexError(f"the recall index cannot be read: {exc}") from None
        return found

    def open_contests(self, store: str, decision: str) -> list[str]:
        """Contesting evidence ids of `decision` that no resolution has closed, oldest first."""
        try:
            return self._open_contests(store, decision)
        except sqlite3.Error as exc:
            raise RecallIndexError(f"the recall index cannot be read: {exc}") from None

    def _open_contests(self, store: str, decision: str) -> list[str]:
        contests = [
            decode(bytes(r[0]), Contest)
            for r in self.db.execute(
                "SELECT body FROM contests WHERE store = ? AND decision = ?", (store, decision)
            )
        ]
        closed = {
            contest
            for r in self.db.execute(
                "SELECT body FROM resolutions WHERE store = ? AND decision = ?", (store, decision)
            )
            for contest in decode(bytes(r[0]), Closing).contests
        }
        return [
            c.evidence
            for c in sorted(contests, key=lambda c: (c.created, c.evidence))
            if c.evidence not in closed
        ]

    def canonical(self) -> str:
        """The digest of the whole index: every case's card digest, in (store, task) order."""
        try:
            rows = self.db.execute(
                "SELECT store, task, digest FROM cases ORDER BY store, task"
            ).fetchall()
        except sqlite3.Error as exc:
            raise RecallIndexError(f"the recall index cannot be read: {exc}") from None
        return canonical_digest((str(r[0]), str(r[1]), str(r[2])) for r in rows)


def _rounded(value: float) -> float:
    """The score as ordered: rounded by Python, as the Python engine does.

    SQLite's own round() goes through its printf and need not give the nearest double.
    """
    return round(value, bm25.DIGITS)


def _unlink(path: str) -> None:
    with suppress(FileNotFoundError):
        os.unlink(path)


def _clear_the_way(path: str) -> None:
    """Make room for the index file (a rebuild never deletes what it did not make).

    A symlink in its place is removed (never its target); anything else that is not a regular
    file is set aside as `<name>.damaged-<hex>`.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise RecallIndexError(f"cannot read {path}: {exc.strerror}") from None
    try:
        if stat.S_ISLNK(mode):
            os.unlink(path)
        elif not stat.S_ISREG(mode):
            os.rename(path, f"{path}.damaged-{os.urandom(4).hex()}")
    except OSError as exc:
        raise RecallIndexError(f"cannot clear {path}: {exc.strerror}") from None


def blob_digest(cards: list[bytes], contests: list[bytes], closings: list[bytes]) -> str:
    """The digest of one case's contribution, from the encoded cards and relations in id order."""
    parts = [b"cards", *cards, b"contests", *contests, b"closings", *closings]
    return sha256_hex(b"\n".join(parts))


def derived_digest(derived: Derived) -> str:
    """`blob_digest` of a contribution derived from case files (the canonical side)."""
    cards = sorted(derived.cards, key=lambda card: card.id)
    unique = [card for i, card in enumerate(cards) if i == 0 or cards[i - 1].id != card.id]
    return blob_digest(
        [encode(card) for card in unique],
        [encode(c) for c in sorted(derived.contests, key=lambda c: c.evidence)],
        [encode(r) for r in sorted(derived.closings, key=lambda r: r.evidence)],
    )


def canonical_digest(rows: Iterable[tuple[str, str, str]]) -> str:
    """The digest over (store, task, case digest) rows, sorted."""
    return sha256_hex(encode(sorted(rows)))


def history(
    decisions: Sequence[tuple[str, str, str]],
    contests: Sequence[Contest],
    closings: Sequence[Closing],
) -> dict[str, tuple[str, list[str]]]:
    """Status and labels of every decision, and of every contesting evidence card, in a store.

    `decisions` are (id, subject key, created). Within one subject, each decision is
    superseded by the next one answered; the latest resolution of a decision decides whether
    it is overturned; a contest is open until a resolution lists it.
    """
    states: dict[str, tuple[str, list[str]]] = {}
    by_subject: dict[str, list[tuple[str, str]]] = {}
    for decision_id, subject, created in decisions:
        if subject:
            by_subject.setdefault(subject, []).append((created, decision_id))
    superseded_by: dict[str, str] = {}
    for group in by_subject.values():
        group.sort()
        for (_, older), (_, newer) in pairwise(group):
            superseded_by[older] = newer
    closed: dict[str, Closing] = {}
    latest: dict[str, Closing] = {}
    for closing in sorted(closings, key=lambda r: (r.created, r.evidence)):
        latest[closing.decision] = closing
        for evidence_id in closing.contests:
            closed[evidence_id] = closing
    open_by_decision: dict[str, int] = {}
    for dispute in contests:
        if dispute.evidence not in closed:
            open_by_decision[dispute.decision] = open_by_decision.get(dispute.decision, 0) + 1
    for decision_id, _, _ in decisions:
        labels: list[str] = []
        status = "active"
        last = latest.get(decision_id)
        if last is not None and last.outcome == "overturned":
            status = "overturned"
            labels.append(f"(overturned by {last.responder or 'a person'})")
        if decision_id in superseded_by:
            if status == "active":
                status = "superseded"
            labels.append(f"(superseded by {superseded_by[decision_id]})")
        if open_by_decision.get(decision_id):
            labels.append("[contested]")
        states[decision_id] = (status, labels)
    for dispute in contests:
        resolution = closed.get(dispute.evidence)
        label = "[contested]" if resolution is None else f"(resolved: {resolution.outcome})"
        states[dispute.evidence] = ("contest", [label])
    return states
