"""One progress channel: what a long use case is doing, told to whoever listens.

A use case reports structured events (`Event`) to `kernel.progress`; a face that wants them
passes a sink into the kernel (`Progress(sink)`), and renders them its own way: the CLI as a
live status line at a terminal, the MCP server as `notifications/progress` and log messages.
No use case knows which face listens, and no face polls: events are pushed from the thread that
does the work. Without a sink nothing is built or sent, and a use case runs exactly as before.

Events of one operation, in order (docs/design/progress.md has the whole protocol):

    begin            the operation started (`count`: how many verifiers, or cases, it will go
                     through; `UNITS` says which)
    step             a named step (`capture`, `commit`, `export`, `import`, ...); `elapsed`
                     since the operation began; a step taken once per case names it
                     (`subject`, `index` of `count`)
    start            a verifier started (`subject`, `index` of `count`, `timeout` where known)
    tick             it is still running (`elapsed` of `timeout`), at most once per `interval`
    output           one line of its output, redacted (only with `follow`; see proof/follow.py)
    finish           it ended (`status`, `elapsed`)
    end              the operation is done (it may still be refused after this; the face's
                     answer says so)

A listener may also stop the work (`Progress(cancelled=...)`): a verifier that runs a command
is then killed with its whole process group and the use case raises `Cancelled` before it
writes anything.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

import msgspec

if TYPE_CHECKING:
    from cortex.cases.redact import Redactor
    from cortex.kernel.proof.follow import Lines

Kind = Literal["begin", "step", "start", "tick", "output", "finish", "end"]

TICK_INTERVAL = 1.0
"""Seconds between two `tick` events of one running verifier."""

UNITS = {"case.verify": "verifier"}
"""What a `begin` event's `count` counts, by operation; any other operation counts cases."""


def counted(operation: str, count: int) -> str:
    """`3 verifiers`, `1 case`: a `begin` event's count in words."""
    unit = UNITS.get(operation, "case")
    return f"{count} {unit}{'' if count == 1 else 's'}"


class Event(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One thing a long operation reports."""

    operation: str
    """The command's dotted name (`case.verify`)."""
    kind: Kind
    step: str | None = None
    """`capture`, `verifiers`, `commit`: where the operation is."""
    subject: str | None = None
    """The verifier (or object) the event is about."""
    index: int | None = None
    """1-based position of the subject among `count`."""
    count: int | None = None
    elapsed: float = 0.0
    """Seconds since the subject (or, without one, the operation) began."""
    timeout: float | None = None
    """Seconds the subject may run, where known."""
    stream: str | None = None
    """For `output`: stdout or stderr."""
    line: str | None = None
    """For `output`: one line, redacted and bounded."""
    status: str | None = None
    """For `finish`: the verifier's outcome (passed, failed, blocked, ...)."""


Sink = Callable[[Event], None]


class Progress:
    """The channel a use case reports to; a face gives the sink. `Progress()` reports nothing."""

    def __init__(
        self,
        sink: Sink | None = None,
        *,
        follow: bool = False,
        cancelled: Callable[[], bool] | None = None,
        interval: float = TICK_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sink = sink
        self.follow = follow and sink is not None
        self.cancelled = cancelled
        self.interval = interval
        self.clock = clock
        self.operation = ""
        self._began = 0.0

    @property
    def active(self) -> bool:
        """Whether anyone listens or may stop the work (else a use case skips the plumbing)."""
        return self.sink is not None or self.cancelled is not None

    def emit(self, kind: Kind, **fields: object) -> None:
        """Send one event of the current operation (nothing without a sink)."""
        if self.sink is None:
            return
        fields.setdefault("elapsed", round(self.clock() - self._began, 3))
        self.sink(Event(operation=self.operation, kind=kind, **fields))  # type: ignore[arg-type]

    def begin(self, operation: str, *, count: int | None = None) -> None:
        """The operation starts now."""
        self.operation = operation
        self._began = self.clock()
        self.emit("begin", count=count)

    def step(
        self,
        name: str,
        *,
        subject: str | None = None,
        index: int | None = None,
        count: int | None = None,
    ) -> None:
        """The operation reached a named step (for one `subject`, `index` of `count`)."""
        self.check()
        self.emit("step", step=name, subject=subject, index=index, count=count)

    def end(self) -> None:
        """The operation's work is done."""
        self.emit("end")

    def check(self) -> None:
        """Raise `Cancelled` if the listener asked the work to stop."""
        if self.cancelled is not None and self.cancelled():
            from cortex.verifiers.runner import Cancelled

            raise Cancelled

    def verifier(
        self,
        subject: str,
        *,
        index: int,
        count: int,
        timeout: float | None,
        redactor: Redactor,
    ) -> Verifying:
        """A verifier starts: the `Watch` its command run reports to."""
        self.check()
        return Verifying(
            self, subject, index=index, count=count, timeout=timeout, redactor=redactor
        )


class Verifying:
    """One verifier's run as the channel sees it; a `cortex.verifiers.runner.Watch`."""

    def __init__(
        self,
        progress: Progress,
        subject: str,
        *,
        index: int,
        count: int,
        timeout: float | None,
        redactor: Redactor,
    ) -> None:
        self.progress = progress
        self.subject = subject
        self.index = index
        self.count = count
        self.timeout = timeout
        self.started = progress.clock()
        self._next_tick = self.started + progress.interval
        self._lines: dict[str, Lines] = {}
        if progress.follow:
            from cortex.kernel.proof.follow import Lines

            for stream in ("stdout", "stderr"):
                self._lines[stream] = Lines(redactor, self._line_sink(stream))
        self._emit("start")

    def _emit(self, kind: Kind, **fields: object) -> None:
        fields.setdefault("elapsed", round(self.progress.clock() - self.started, 3))
        self.progress.emit(
            kind,
            step="verifiers",
            subject=self.subject,
            index=self.index,
            count=self.count,
            timeout=self.timeout,
            **fields,
        )

    def _line_sink(self, stream: str) -> Callable[[str], None]:
        def emit(line: str) -> None:
            self._emit("output", stream=stream, line=line)

        return emit

    # The runner's Watch -------------------------------------------------------------------

    def running(self, elapsed: float, timeout: float) -> None:
        """A tick at most once per interval; followed lines that have settled go out too."""
        now = self.progress.clock()
        for lines in self._lines.values():
            lines.settle(now)
        if now < self._next_tick:
            return
        self._next_tick = now + self.progress.interval
        self.timeout = timeout
        self._emit("tick", elapsed=round(elapsed, 3))

    def output(self, stream: str, data: bytes) -> None:
        """Bytes of the kept head, for `follow`."""
        lines = self._lines.get(stream)
        if lines is not None:
            lines.feed(data, self.progress.clock())

    def kept(self, stream: str, data: bytes) -> None:
        """The stored copy's bytes of a stream: what `follow` may still show of it."""
        lines = self._lines.get(stream)
        if lines is not None:
            lines.finish(data)

    def stop_requested(self) -> bool:
        """Whether the listener cancelled the work."""
        cancelled = self.progress.cancelled
        return cancelled is not None and cancelled()

    def finish(self, status: str) -> None:
        """The verifier ended with `status`."""
        self._emit("finish", status=status)


def describe(event: Event) -> str:
    """One line of plain text for an event (the MCP progress message; the CLI draws its own)."""
    if event.kind in {"start", "tick", "finish", "output"} and event.subject is not None:
        where = event.subject
        if event.index is not None and event.count is not None:
            where += f" ({event.index} of {event.count})"
        if event.kind == "start":
            return f"started {where}" + (
                f", timeout {event.timeout:g} s" if event.timeout is not None else ""
            )
        if event.kind == "finish":
            return f"{where} {event.status or 'ended'} after {event.elapsed:.1f} s"
        if event.kind == "output":
            return f"{where} {event.stream}: {event.line}"
        limit = f" of {event.timeout:g} s" if event.timeout is not None else ""
        return f"running {where}: {event.elapsed:.0f} s{limit}"
    if event.kind == "begin":
        return f"{event.operation} started" + (
            f": {counted(event.operation, event.count)}" if event.count is not None else ""
        )
    if event.kind == "step":
        line = f"{event.operation}: {event.step}"
        if event.index is not None and event.count is not None:
            line += f" {event.index} of {event.count}"
        return line + (f" ({event.subject})" if event.subject is not None else "")
    return f"{event.operation} done"
