"""The defaults of optional arguments, in one place for every face and for the use cases.

(With the few limits a face applies while a person types, such as the board's search box.)

The CLI's grammar shows them in `--help`, the MCP server publishes them in its input schemas,
and the use cases apply them when an in-process caller leaves an argument out, so a default
cannot differ between the faces (tests/test_parity.py walks the tables to check it). The values
themselves are bounds and live with their limits in `cortex.cases.bounds`.
"""

from __future__ import annotations

from cortex.cases.bounds import (
    INTEGER_DIGITS_MAX,
    LIST_LIMIT_DEFAULT,
    PREVIEW_DEFAULT,
    RECALL_LIMIT_DEFAULT,
    SESSIONS_LIMIT_DEFAULT,
    SESSIONS_QUERY_MAX,
    STUDIO_REFRESH_DEFAULT,
    STUDIO_REFRESH_MAX,
    STUDIO_REFRESH_MIN,
    STUDIO_ROWS_MAX,
    TIMELINE_AROUND_DEFAULT,
    TIMELINE_LIMIT_DEFAULT,
)
from cortex.cases.records import Confidence, EvidenceKind, Mode, Origin, Risk

LIST_LIMIT = LIST_LIMIT_DEFAULT
"""`case list`: cases per answer."""
TIMELINE_LIMIT = TIMELINE_LIMIT_DEFAULT
"""`case timeline`: entries per page."""
TIMELINE_AROUND = TIMELINE_AROUND_DEFAULT
"""`case timeline --anchor`: entries before and after the anchor."""
SESSIONS_LIMIT = SESSIONS_LIMIT_DEFAULT
"""`case sessions`: cases per answer."""
PREVIEW_BYTES = PREVIEW_DEFAULT
"""`case read-artifact`: bytes of a preview."""
MODE: Mode = "change"
RISK: Risk = "medium"
EVIDENCE_KIND: EvidenceKind = "observation"
EVIDENCE_SOURCE = "agent"
"""`evidence add --source`: the tool that produced the evidence."""
ORIGIN: Origin = "agent"
CONFIDENCE: Confidence = "unknown"

INTEGER_DIGITS = INTEGER_DIGITS_MAX
"""Digits an integer argument may have; checked before it is converted, on every face."""

STUDIO_REFRESH = STUDIO_REFRESH_DEFAULT
"""`cortex studio --refresh`: seconds between two refreshes of the board."""
STUDIO_REFRESH_RANGE = (STUDIO_REFRESH_MIN, STUDIO_REFRESH_MAX)
STUDIO_ROWS = STUDIO_ROWS_MAX
"""Rows the board asks `sessions` for."""
QUERY_MAX = SESSIONS_QUERY_MAX
"""Characters of a `sessions --query` (the board's search box stops there as one types)."""
RECALL_LIMIT = RECALL_LIMIT_DEFAULT
"""`recall`: cards per page."""
