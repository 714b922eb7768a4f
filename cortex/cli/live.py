"""The CLI's rendering of the progress channel: a live status line, and `--follow`'s lines.

At a terminal (and without `--json` or `--quiet`), a long command shows one live line while it
works: a spinner, what it is doing (which verifier, `n of m`), how long it has run and its
timeout. The line is transient: when the command ends it disappears and the command's answer is
printed where it stood. `--follow` prints the verifier's output lines (already redacted by the
kernel, `cortex.kernel.proof.follow`) above the live line, or on stderr when nothing is live (so
`--json` keeps stdout to its one envelope). Imported only when something is to be shown.
"""

from __future__ import annotations

from types import TracebackType
from typing import IO, Self

from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from cortex.kernel.progress import Event, Progress, counted
from cortex.screen.text import safe

_STEPS = {
    "capture": "capturing the work tree",
    "commit": "committing the batch",
    "export": "exporting case",
    "push": "pushing to the remote",
    "fetch": "fetching from the remote",
    "import": "importing case",
    "read": "reading case",
    "index": "indexing case",
}


def status_text(event: Event) -> str:
    """What the live line says after `event`."""
    if event.subject is not None and event.kind in {"start", "tick", "output"}:
        where = event.subject
        if event.index is not None and event.count is not None and event.count > 1:
            where += f" ({event.index} of {event.count})"
        ran = f"{event.elapsed:.0f}s"
        if event.timeout is not None:
            ran += f" of {event.timeout:g}s"
        return f"{where}  {ran}"
    if event.kind == "finish" and event.subject is not None:
        return f"{event.subject} {event.status or 'ended'}"
    if event.kind == "step" and event.step is not None:
        line = _STEPS.get(event.step, event.step)
        if event.index is not None and event.count is not None:
            line += f" {event.index} of {event.count}"
        return line + (f"  {event.subject}" if event.subject is not None else "")
    if event.kind == "begin" and event.count is not None:
        verb = "to run" if event.operation == "case.verify" else "to go through"
        return f"{counted(event.operation, event.count)} {verb}"
    return "finishing"


class Reporter:
    """Listens to one command's progress and draws it; use as a context manager around it."""

    def __init__(self, live: IO[str] | None, *, follow: IO[str] | None = None) -> None:
        self._console = Console(file=live, highlight=False) if live is not None else None
        self._follow = follow
        self._live: Live | None = None
        self._spinner = Spinner("dots", text=Text(""))
        self.progress = Progress(self, follow=follow is not None)

    def __enter__(self) -> Self:
        if self._console is not None:
            self._live = Live(
                self._spinner,
                console=self._console,
                transient=True,
                refresh_per_second=8,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def __call__(self, event: Event) -> None:
        """One event of the channel."""
        if event.kind == "output":
            self._line(event)
            return
        if self._live is not None:
            self._spinner.update(text=Text(safe(status_text(event))))
            self._live.refresh()

    def _line(self, event: Event) -> None:
        name = safe(event.subject or "")
        line = safe(event.line or "")
        marker = "!" if event.stream == "stderr" else "|"
        if self._live is not None and self._console is not None:
            self._console.print(Text(f"{name} {marker} ", style="dim") + Text(line))
        elif self._follow is not None:
            self._follow.write(f"{name} {marker} {line}\n")
            self._follow.flush()
