"""The MCP server's rendering of the progress channel, and how a cancelled call stops its work.

A call runs in a worker thread with a `Progress` whose sink hands each event to the server's
event loop; a relay task there turns it into a `notifications/progress` for the caller's
progress token (when it sent one) and into a `notifications/message` log entry (when the client
enabled logging at that level). While nothing happens the relay still reports every
`HEARTBEAT` seconds, so a host whose timeout resets on progress keeps waiting for a long call,
whatever it is doing. The same events drive the CLI's live line (`cortex.cli.live`): each face
renders the one stream its own way.

A `notifications/cancelled` cancels the handler. The worker thread cannot be interrupted, so the
relay sets the call's stop flag instead: the running verifier's process group is killed, the use
case records the cancellation as a note and raises `Cancelled` without writing a receipt, and the
handler returns only once the thread is done, leaving no process behind. (Closing the session
cancels every call too; work already running then finishes, unanswered, as it always has.) The
protocol forbids an answer to a cancelled request; a client still listening gets a final log
entry and progress message saying what happened.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp_types as types
from mcp.server.connection import allowed_log_levels

from cortex.kernel.progress import Event, Progress, describe

if TYPE_CHECKING:
    from cortex.kernel.envelope import Envelope

Answer = tuple["Envelope", int]

HEARTBEAT = 1.0
"""Seconds of silence after which a running call reports progress anyway."""

Level = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
_LEVELS: tuple[Level, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


class Logging:
    """The log level a client set with `logging/setLevel` (handshake versions), if any."""

    def __init__(self) -> None:
        self.level: Level | None = None

    def levels(self, ctx: Any) -> frozenset[str]:
        """The levels this request may be sent log entries at (none unless the client asked)."""
        allowed = allowed_log_levels(ctx.protocol_version, ctx.meta)
        if ctx.protocol_version in _modern():
            return allowed
        if self.level is None:
            return frozenset()
        return frozenset(_LEVELS[_LEVELS.index(self.level) :])


def _modern() -> frozenset[str]:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return frozenset(MODERN_PROTOCOL_VERSIONS)


class Relay:
    """One call's progress: the thread's events in, notifications out, and its stop flag."""

    def __init__(
        self,
        ctx: Any,
        levels: frozenset[str],
        *,
        clock: Callable[[], float],
        closing: threading.Event,
    ) -> None:
        self._ctx = ctx
        self._closing = closing
        self._levels = levels
        self._clock = clock
        self._stop = threading.Event()
        self._send, self._receive = anyio.create_memory_object_stream[Event](math.inf)
        self._began = clock()
        self._progress = 0.0
        self._last = "working"
        self.events = 0
        self.progress = Progress(self._push, follow="debug" in levels, cancelled=self._stop.is_set)

    @property
    def cancelled(self) -> bool:
        """Whether the call was cancelled while it ran."""
        return self._stop.is_set()

    def _push(self, event: Event) -> None:
        """The sink, called in the worker thread: hand the event to the event loop."""
        # If the loop or the relay is gone, nobody listens any more.
        with contextlib.suppress(
            RuntimeError, anyio.BrokenResourceError, anyio.ClosedResourceError
        ):
            anyio.from_thread.run_sync(self._send.send_nowait, event)

    async def run(self, call: Callable[[], Answer]) -> Answer:
        """Run `call` in a worker thread while relaying its events; see the module docstring."""
        box: list[Answer] = []
        done = anyio.Event()

        async def work() -> None:
            try:
                box.append(await anyio.to_thread.run_sync(call))
            finally:
                done.set()

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(work)
                group.start_soon(self._relay)
                try:
                    await done.wait()
                except anyio.get_cancelled_exc_class():
                    with anyio.CancelScope(shield=True):
                        if self._closing.is_set():
                            # The client closed the session: the work finishes, unanswered.
                            await done.wait()
                            raise
                        self._stop.set()
                        await done.wait()
                        await self._notice(box[0][0] if box else None)
                    raise
                # Every event the call sent is reported before its answer goes out.
                self._send.close()
        finally:
            self._send.close()
            self._receive.close()
        return box[0]

    async def _relay(self) -> None:
        while True:
            event = None
            with anyio.move_on_after(HEARTBEAT):
                try:
                    event = await self._receive.receive()
                except anyio.EndOfStream:
                    return
            if event is None:
                elapsed = self._clock() - self._began
                await self._report(f"still working after {elapsed:.0f} s: {self._last}")
                continue
            self.events += 1
            message = describe(event)
            if event.kind == "output":
                await self._log("debug", message)
                continue
            if event.kind != "tick":
                await self._log("info", message)
            self._last = message
            await self._report(message)

    async def _report(self, message: str) -> None:
        # Progress must grow with every notification: seconds since the call began.
        self._progress = max(self._progress + 0.001, round(self._clock() - self._began, 3))
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._ctx.session.report_progress(self._progress, None, message)

    async def _log(self, level: Level, message: str) -> None:
        if level not in self._levels:
            return
        notification = types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(
                level=level, logger="cortex", data=message
            )
        )
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._ctx.session.send_notification(notification, self._ctx.request_id)

    async def _notice(self, envelope: Envelope | None) -> None:
        """Tell a client still listening what its cancellation did (it gets no answer)."""
        if envelope is not None and envelope.ok:
            message = "cancelled too late: the call had completed; its answer is dropped"
        elif envelope is not None and envelope.error is not None:
            message = f"{envelope.command}: {envelope.error.message}"
        else:
            message = "cancelled: nothing was written"
        with anyio.move_on_after(2):
            await self._log("warning", message)
            await self._report(message)
