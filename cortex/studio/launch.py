"""What `cortex studio` runs: check the option and the terminal, then hand over to Textual.

The checks come first and import nothing heavy, so a refusal (a pipe, a script, a bad
`--refresh`) answers with an envelope like any other command, without loading Textual.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import IO, Any

from cortex.kernel import inputs
from cortex.kernel.envelope import Result
from cortex.kernel.errors import CortexError, InvalidInputError
from cortex.kernel.kernel import Kernel
from cortex.kernel.validate import shown

_SECONDS = re.compile(r"[0-9]{1,2}(?:\.[0-9]{1,3})?")


def refresh_seconds(text: str | None) -> float:
    """`--refresh`: seconds between two refreshes, a plain decimal number within the bounds."""
    low, high = inputs.STUDIO_REFRESH_RANGE
    if text is None:
        return inputs.STUDIO_REFRESH
    seconds = float(text) if _SECONDS.fullmatch(text) else None
    if seconds is None or not low <= seconds <= high:
        given = shown(text, 40)
        msg = f"--refresh must be a number of seconds from {low:g} to {high:g}, not {given!r}"
        raise InvalidInputError(msg)
    return seconds


def _is_terminal(stream: IO[Any] | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError, OSError):
        # A closed or unusual stream is not a terminal either.
        return False


def launch(
    kernel: Kernel,
    *,
    refresh: str | None,
    streams: Sequence[IO[Any] | None],
    active: bool = False,
    repo: str | None = None,
    query: str | None = None,
) -> Result:
    """Run the board until the person quits; the result lists the answers it recorded.

    `active`, `repo` and `query` are the filters `case sessions` takes, applied from the start
    (the `f` key and the search box change the first and the last).
    """
    seconds = refresh_seconds(refresh)
    from cortex.kernel.views.sessions import check_filters

    check_filters(repo, query)
    if not all(_is_terminal(stream) for stream in streams):
        msg = (
            "cortex studio is interactive and needs a terminal on stdin, stdout and stderr; "
            "for a script, use cortex case sessions --json and cortex case show --json"
        )
        raise InvalidInputError(msg)
    from cortex.studio.app import StudioApp
    from cortex.studio.data import Source

    app = StudioApp(Source(kernel), refresh=seconds, active=active, repo=repo, query=query)
    app.run()
    if app.return_code:
        # Textual has printed what went wrong once it restored the terminal.
        raise CortexError("the studio stopped on an error (reported above)")
    return Result(
        data={
            "answered": [
                {
                    "taskId": a.task_id,
                    "decisionId": a.decision_id,
                    "option": a.option,
                    "status": a.status,
                }
                for a in app.answered
            ]
        }
    )
