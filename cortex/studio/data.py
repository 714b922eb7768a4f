"""What the board shows, loaded from the kernel: plain rows, one case's detail, and the answer.

Everything here runs on a worker thread, never the UI's: `sessions` reads every case.json
under the state root and `show` may capture a git workspace, either of which can take a while.
Loading never raises: it returns what to draw or a `Failure` to report, so a refresh that
goes wrong leaves the last good view on the screen.

Strings stay as the kernel returned them, redacted like every answer a surface gives; making
them safe to draw is `view`'s job. Nothing here writes but `Source.answer`.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, NamedTuple

import msgspec

from cortex.kernel import inputs
from cortex.kernel.errors import CortexError
from cortex.kernel.human.decisions import answer
from cortex.kernel.kernel import Kernel
from cortex.kernel.surface import redacted
from cortex.kernel.views.sessions import sessions
from cortex.kernel.views.show import show

RESPONDER = "studio"
"""Who an answer given on the board is recorded as."""


class Row(NamedTuple):
    """One case as a line of the board."""

    task_id: str
    repository: str
    status: str
    pending: int
    lease: str | None
    verdict: str | None
    idle: float | None
    stale: bool
    goal: str
    error: str | None
    """Why the case could not be read; the other fields are then empty."""


class Option(NamedTuple):
    """One answer a pending decision offers."""

    id: str
    label: str
    consequence: str | None


class Decision(NamedTuple):
    """The decision a case waits for."""

    id: str
    question: str
    options: tuple[Option, ...]


class Detail(NamedTuple):
    """One case as `cortex case show` sees it, or why it could not be read."""

    task_id: str
    data: dict[str, Any] | None
    error: str | None
    root: str | None
    """The case's workspace root, unredacted: an answer is written from there."""
    decision: Decision | None
    """The pending decision, unredacted: its ids are what an answer names."""


class Board(NamedTuple):
    """One refresh: the rows, the exact totals, and the detail of the case to select."""

    rows: tuple[Row, ...]
    total: int
    truncated: bool
    stores: int
    detail: Detail | None
    at: float


class Failure(NamedTuple):
    """Why a refresh or an answer did not happen."""

    message: str


class Answered(NamedTuple):
    """An answer the board recorded."""

    task_id: str
    decision_id: str
    option: str
    status: str


def choose(rows: tuple[Row, ...], selected: str | None) -> str | None:
    """The case to select after a refresh: the same one if still listed, else the first."""
    if any(row.task_id == selected for row in rows):
        return selected
    return rows[0].task_id if rows else None


class Source:
    """The kernel calls behind the board, one at a time (a Kernel is not meant to be shared)."""

    def __init__(self, kernel: Kernel, *, limit: int = inputs.STUDIO_ROWS) -> None:
        self.kernel = kernel
        self.limit = limit
        self._lock = threading.Lock()

    def board(
        self, *, query: str | None, active: bool, selected: str | None, repo: str | None = None
    ) -> Board | Failure:
        """The newest `limit` cases matching the filters, and the detail of the one to select."""
        with self._lock:
            try:
                result = sessions(
                    self.kernel, repo=repo, active=active, query=query, limit=self.limit
                )
                data = redacted(self.kernel, msgspec.to_builtins(result.data))
                rows = tuple(_row(item) for item in data["items"])
            except Exception as exc:  # noqa: BLE001 - any failure keeps the last good view
                return Failure(self._message(exc))
            chosen = choose(rows, selected)
            detail = None if chosen is None else self._detail(chosen)
        return Board(rows, data["total"], data["truncated"], data["stores"], detail, time.time())

    def detail(self, task_id: str) -> Detail:
        """One case's detail (its error in place of the data when it cannot be read)."""
        with self._lock:
            return self._detail(task_id)

    def _detail(self, task_id: str) -> Detail:
        try:
            raw = msgspec.to_builtins(show(self.kernel, task_id).data)
            data = redacted(self.kernel, raw)
            return Detail(task_id, data, None, raw["workspace"]["root"], _decision(raw))
        except Exception as exc:  # noqa: BLE001 - one unreadable case must not stop the board
            return Detail(task_id, None, self._message(exc), None, None)

    def _message(self, exc: Exception) -> str:
        if isinstance(exc, CortexError):
            text = f"{exc.code}: {exc.message}"
        elif isinstance(exc, OSError) and exc.strerror:
            text = f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
        else:
            text = f"{type(exc).__name__}: {exc}"
        # Messages can quote stored text: they get the redaction every answer gets.
        clean: str = self.kernel.redactor(text)
        return clean

    def answer(self, detail: Detail, option: str) -> Answered | Failure:
        """Answer `detail`'s pending decision with `option`, as the responder `studio`.

        The write goes through a kernel built for the case's own workspace, as `cortex -C
        <root>` would, so that workspace's configuration and redaction apply to it.
        """
        decision, root = detail.decision, detail.root
        if decision is None or root is None:
            return Failure(f"{detail.task_id} has no pending decision")
        if not os.path.isdir(root):
            return Failure(
                f"cannot answer {decision.id}: the workspace of {detail.task_id} ({root}) no "
                "longer exists, and a case is written only from its own workspace"
            )
        try:
            # The board is a person's terminal: its answers arrive `via: studio`.
            kernel = Kernel(root, self.kernel.env, default_actor=RESPONDER, via="studio")
        except Exception as exc:  # noqa: BLE001 - reported on the board, never a crash
            return Failure(f"cannot answer {decision.id}: {self._message(exc)}")
        try:
            result = answer(kernel, detail.task_id, decision.id, option=option, responder=RESPONDER)
        except Exception as exc:  # noqa: BLE001 - reported on the board, never a crash
            return Failure(kernel.redactor(f"cannot answer {decision.id}: {self._message(exc)}"))
        status: str = msgspec.to_builtins(result.data)["status"]
        return Answered(detail.task_id, decision.id, option, status)


def _row(item: dict[str, Any]) -> Row:
    if "error" in item:
        return Row(
            task_id=item["taskId"],
            repository=item["store"]["id"],
            status="unreadable",
            pending=0,
            lease=None,
            verdict=None,
            idle=None,
            stale=False,
            goal="",
            error=item["error"]["message"],
        )
    lease = item["lease"]
    verdict = item["verdict"]
    return Row(
        task_id=item["taskId"],
        repository=item["workspace"]["repository"],
        status=item["status"],
        pending=item["pendingDecisions"],
        lease=lease["actor"] if lease else None,
        verdict=verdict["status"] if verdict else None,
        idle=item["idleSeconds"],
        stale=item["stale"],
        goal=item["goal"],
        error=None,
    )


def _decision(data: dict[str, Any]) -> Decision | None:
    pending = data.get("pendingDecision")
    if not pending:
        return None
    options = tuple(Option(o["id"], o["label"], o.get("consequence")) for o in pending["options"])
    return Decision(pending["id"], pending["question"], options)
