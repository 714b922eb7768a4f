"""The confirmations of `case forget` and `case rm`, asked at the controlling terminal.

Only a person at this command's terminal is asked (docs/design/trust.md); piped input cannot
confirm, and what a case holds is shown through `terminal.ask`, which obeys no escape sequence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cortex.cli.terminal import ask, indented

if TYPE_CHECKING:
    from cortex.kernel.retention.archive import Removal
    from cortex.kernel.retention.forget import Asked

SHOWN = 400
"""Characters of the claim shown before a forget: enough to recognise it."""


def confirm_forget(asked: Asked) -> str | None:
    """Show what a forget removes; what the person typed back."""
    claim = asked.claim if len(asked.claim) <= SHOWN else asked.claim[: SHOWN - 1] + "\u2026"
    gone = "its raw output only" if asked.what == "raw" else "the record"
    lines = [
        f"Forget {gone}: {asked.record} of {asked.task_id} ({asked.kind}, {asked.timestamp})",
        "Its claim:",
        *indented(claim),
    ]
    if asked.raw:
        lines.append(f"Raw output removed with it: {asked.raw}")
    lines.append("A tombstone keeps its place; this cannot be undone.")
    return ask(lines, f"Type {asked.id} to forget it, anything else to cancel: ")


def confirm_remove(removal: Removal) -> str | None:
    """Show what a removal deletes and what it cannot; what the person typed back."""
    lines = [
        f"Remove case {removal.task_id} ({removal.status}): {removal.goal}",
        f"  {removal.bytes} bytes in {removal.path}",
        *(f"  cannot remove: {item}" for item in removal.kept),
        "This cannot be undone.",
    ]
    return ask(lines, f"Type {removal.task_id} to remove it, anything else to cancel: ")
