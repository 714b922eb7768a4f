"""Named crash points for the crash-injection tests.

Production code calls `point("name")` at each step of a durable write. Normally that is one
comparison against `None`. A test child process arms one point (and optionally how many times
to let it pass first) and installs an action that stops the process there, typically by
reporting to its parent and waiting to be killed with SIGKILL. No environment variable or
configuration reaches this module: only code running inside the process can arm it.
"""

from __future__ import annotations

from collections.abc import Callable

armed: str | None = None
"""The point to stop at, or None."""
skip: int = 0
"""How many passes through the armed point to allow before acting."""
action: Callable[[str], None] | None = None
"""What to do at the armed point."""


def due(name: str) -> bool:
    """Count one pass through `name`; True when the armed action should run now."""
    global skip  # noqa: PLW0603 - the counter is the module's whole state
    if armed is None or armed != name or action is None:
        return False
    if skip > 0:
        skip -= 1
        return False
    return True


def point(name: str) -> None:
    """Mark a crash point; acts only when a test has armed this name and its turn has come."""
    if armed is not None and due(name) and action is not None:
        action(name)
