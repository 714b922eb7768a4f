"""`scope`: the files the task changed, against the plan's change boundary.

A boundary entry is a file, or a directory when it ends in `/`. Drift (a changed file outside
the boundary) is recorded as evidence; it fails the check unless the caller acknowledged it.
The gates on top (no changes needs --no-op, high-risk drift needs --ack-drift) run in the
kernel before any verifier (docs/design/verification.md §2).
"""

from __future__ import annotations

from cortex.cases.bounds import FAILING_TESTS_MAX
from cortex.verifiers.base import Context, Finding, Outcome

ACK_NOTE = "drift acknowledged with --ack-drift"
"""The note of a scope run that passed by acknowledgement (the only sign in older receipts)."""


def drift(changed: list[str], boundary: list[str]) -> list[str]:
    """The changed paths the boundary does not cover."""
    files = {b for b in boundary if not b.endswith("/")}
    directories = tuple(b for b in boundary if b.endswith("/"))
    return [p for p in changed if p not in files and not p.startswith(directories)]


class ScopeVerifier:
    """The `scope` kind."""

    kind = "scope"
    version = "1"

    def check(self, requirement: str, context: Context) -> str | None:  # noqa: ARG002
        """`scope` takes no name."""
        if requirement != "scope":
            return "the scope verifier is named just `scope`"
        return None

    def run(self, requirement: str, context: Context) -> Outcome:  # noqa: ARG002
        """Compare the changed files with the boundary."""
        if context.changed is None:
            return Outcome(
                status="blocked",
                summary="scope: the changed files are unknown",
                notes=[context.start.reason or "git could not list the changed files"],
            )
        boundary = context.case.change_boundary.files
        outside = drift(context.changed, boundary)
        count = len(context.changed)
        if not outside:
            return Outcome(
                status="passed",
                summary=f"scope: all {count} changed file(s) are inside the change boundary",
                details={"changed": count, "drift": 0},
            )
        shown = outside[:FAILING_TESTS_MAX]
        claim = f"scope drift: {len(outside)} changed file(s) outside the boundary: " + ", ".join(
            shown
        )
        if len(outside) > len(shown):
            claim += f" (and {len(outside) - len(shown)} more)"
        outcome = Outcome(
            status="passed" if context.ack_drift else "failed",
            summary=f"scope: {len(outside)} of {count} changed file(s) are outside the boundary",
            findings=[Finding(claim=claim)],
            details={"changed": count, "drift": len(outside)},
            failing=outside,
        )
        if context.ack_drift:
            outcome.notes.append(ACK_NOTE)
            outcome.acknowledged = "drift"
        return outcome
