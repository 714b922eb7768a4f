"""How much of a report fits its size cap: tiers, each keeping less than the one before.

The evidence bodies, the timeline and the raw previews go first; the verdict, the case, every
receipt of the latest batch, every decision, the plan and the integrity footer are in every
tier, and the last two tiers only cut their texts (ids never). What a tier leaves out is
listed, with the command that reads it (docs/design/report.md, "Bounded").
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

from cortex.kernel.envelope import Data
from cortex.kernel.views.report import (
    REPORT_CLAIM_CUT,
    REPORT_EVIDENCE_MAX,
    REPORT_PREVIEW_BYTES,
    REPORT_PREVIEWS_MAX,
    REPORT_TIMELINE_MAX,
)


class Tier(NamedTuple):
    """What one tier keeps."""

    name: str
    evidence: int
    claim: int | None
    timeline: int
    previews: int
    preview_bytes: int
    text: int | None


TIERS: tuple[Tier, ...] = (
    Tier(
        "full",
        REPORT_EVIDENCE_MAX,
        None,
        REPORT_TIMELINE_MAX,
        REPORT_PREVIEWS_MAX,
        REPORT_PREVIEW_BYTES,
        None,
    ),
    Tier(
        "evidence cut",
        REPORT_EVIDENCE_MAX,
        REPORT_CLAIM_CUT,
        REPORT_TIMELINE_MAX,
        REPORT_PREVIEWS_MAX,
        REPORT_PREVIEW_BYTES // 2,
        None,
    ),
    Tier("fewer", 100, 240, 50, 0, 0, None),
    Tier("counts", 0, None, 0, 0, 0, None),
    Tier("core, texts cut", 0, None, 0, 0, 0, 512),
    Tier("core, minimal", 0, None, 0, 0, 0, 64),
)

_VERBATIM = frozenset(
    {
        "id",
        "taskId",
        "batchId",
        "head",
        "tree",
        "headTree",
        "ref",
        "source",
        "evidenceId",
        "schema",
        "generatedAt",
        "cortexVersion",
        "status",
        "standing",
        "binding",
        "purpose",
        "state",
        "kind",
        "name",
        "phase",
        "command",
        "path",
        "host",
    }
)
"""Keys whose values are never cut: ids, digests, states, commands that must stay runnable."""


def cut(text: str, limit: int) -> str:
    """`text` cut to `limit` UTF-8 bytes on a character boundary, marked with what was cut."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", "ignore")
    dropped = len(data) - len(kept.encode("utf-8", "surrogatepass"))
    shown = f"{kept} [... {dropped} more bytes cut]"
    return shown if len(shown.encode("utf-8", "surrogatepass")) < len(data) else text


def _cut_all(value: Any, limit: int, key: str | None = None) -> Any:
    if isinstance(value, str):
        return value if key in _VERBATIM else cut(value, limit)
    if isinstance(value, list):
        return [_cut_all(item, limit, key) for item in value]
    if isinstance(value, dict):
        return {k: _cut_all(v, limit, k) for k, v in value.items()}
    return value


def shape(data: Data, index: int) -> Data:
    """A copy of `data` holding what tier `index` keeps, with `omitted` saying what it left out."""
    tier = TIERS[index]
    task = data["taskId"]
    shaped = copy.copy(data)
    omitted: list[Data] = []

    evidence = data["evidence"]
    records = evidence["records"][: tier.evidence]
    cut_claims = 0
    if tier.claim is not None:
        kept = []
        for record in records:
            claim = record.get("claim")
            if isinstance(claim, str) and len(claim.encode("utf-8", "surrogatepass")) > tier.claim:
                record = {**record, "claim": cut(claim, tier.claim)}  # noqa: PLW2901
                cut_claims += 1
            kept.append(record)
        records = kept
    shaped["evidence"] = {**evidence, "records": records}
    left = evidence["total"] - len(records)
    if left > 0:
        omitted.append(
            {
                "what": "evidence records not shown",
                "count": left,
                "command": f"cortex case timeline {task} --kind evidence",
            }
        )
    if cut_claims:
        omitted.append(
            {
                "what": "evidence claims cut",
                "count": cut_claims,
                "command": f"cortex case read-evidence {task} <evidence id>",
            }
        )

    timeline = data["timeline"]
    entries = (
        timeline["entries"][len(timeline["entries"]) - tier.timeline :] if tier.timeline else []
    )
    shaped["timeline"] = {**timeline, "entries": entries}
    if timeline["total"] > len(entries):
        omitted.append(
            {
                "what": "timeline entries not shown",
                "count": timeline["total"] - len(entries),
                "command": f"cortex case timeline {task}",
            }
        )

    previews = data["previews"]
    items = []
    for item in previews["items"][: tier.previews]:
        content = item.get("content")
        if (
            isinstance(content, str)
            and len(content.encode("utf-8", "surrogatepass")) > tier.preview_bytes
        ):
            item = {**item, "content": cut(content, tier.preview_bytes), "truncated": True}  # noqa: PLW2901
        items.append(item)
    shaped["previews"] = {**previews, "items": items}
    if previews["cited"] > len(items):
        omitted.append(
            {
                "what": "raw outputs not previewed",
                "count": previews["cited"] - len(items),
                "command": f"cortex case read-artifact {task} <case://... ref>",
            }
        )

    if tier.text is not None:
        for key in ("goal", "statusReason", "verdict", "batch", "receipts", "earlierBatches",
                    "criteria", "plan", "hypotheses", "decisions", "integrity"):  # fmt: skip
            shaped[key] = _cut_all(shaped[key], tier.text, key)
        omitted.append(
            {
                "what": f"texts cut to {tier.text} bytes (ids kept whole)",
                "count": 1,
                "command": f"cortex case show {task}",
            }
        )
    shaped["tier"] = {"index": index, "name": tier.name, "tiers": len(TIERS), "omitted": omitted}
    return shaped
