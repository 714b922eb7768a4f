"""Which evidence records become cards, decided without loading the index.

`evidence add` and `note` ask this after their commit: only a notable record can change what
the index holds, so only then does the kernel open it (and load `sqlite3`).
"""

from __future__ import annotations

from cortex.cases.records import Evidence

NOTABLE_ORIGINS = frozenset({"human", "reviewer"})
VERIFY_TOOL = "cortex-verify:"
"""The source tool prefix of the records `case verify` writes (cortex/kernel/proof/receipts.py)."""


def notable(record: Evidence) -> bool:
    """Whether `record` is a card (docs/design/recall.md, "Cards"); sensitive ones never are.

    Contests and resolutions count even when sensitive for `changes_cards`: the relation (ids
    only) is indexed, the text never is.
    """
    if record.sensitivity == "sensitive" or record.kind == "plan" or record.forgets is not None:
        return False  # a forget record: its reason is about the case's records, not a finding
    if record.contests is not None or record.resolves is not None:
        return True
    if record.kind == "human_report" and record.source.tool == "cortex":
        return False  # what a decision answer writes: the decision card says it
    if record.source.tool.startswith(VERIFY_TOOL):
        return False  # a verify run's own records: the outcome card carries the verdict
    return record.confidence == "high" or record.source.origin in NOTABLE_ORIGINS


def changes_cards(record: Evidence) -> bool:
    """Whether appending `record` can change the index (its cards or its relations).

    A forget record always does: the record it forgot may be a card, or quoted by one.
    """
    return (
        notable(record)
        or record.contests is not None
        or record.resolves is not None
        or record.forgets is not None
    )
