"""What the report's two forms say alike: status markers in words, and the receipts' tally.

HTML and Markdown render them differently (a styled span, backticks); the words are one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

STATUS: dict[str, str] = {
    "passed": "PASSED",
    "failed": "FAILED",
    "inconclusive": "INCONCLUSIVE",
    "blocked": "BLOCKED",
    "not_applicable": "NOT APPLICABLE",
    "not_run": "NOT RUN",
}
"""A receipt status as its marker reads; colour, where there is any, only repeats it."""


def tally(receipts: Iterable[dict[str, Any]]) -> str | None:
    """`2 FAILED, 3 PASSED (proof)`: the latest batch's receipts counted by marker (None: none)."""
    counts: dict[str, int] = {}
    for receipt in receipts:
        key = STATUS.get(receipt["status"], receipt["status"])
        if receipt["status"] == "passed":
            key = "PASSED (proof)" if receipt["proof"] else "PASSED (not proof)"
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or None
