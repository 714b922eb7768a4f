"""What a reviewer's page shows of a case's files beside its records (`cortex case report`).

`previews`: bounded, redacted previews of the raw output the latest batch and the evidence
cite, through the artifact view. `integrity`: each ledger's chain head checked against its
file, the audit (up to `REPORT_AUDIT_LINES` committed lines unless asked), where imported
replicas came from, and debris. `cortex.kernel.views.report` gathers the rest. Read-only.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from cortex.cases.bounds import REPORT_AUDIT_LINES, REPORT_PREVIEW_BYTES, REPORT_PREVIEWS_MAX
from cortex.cases.documents import Verification
from cortex.cases.errors import CortexError
from cortex.cases.layout import ledger_file
from cortex.cases.ledger import line_hash, tail_lines
from cortex.cases.records import LEDGERS, CaseFile, Evidence, LedgerState
from cortex.cases.store import CaseStore
from cortex.kernel.kernel import Kernel


def previews(  # noqa: PLR0917 - one report's whole context, passed on once
    kernel: Kernel,
    store: CaseStore,
    case: CaseFile,
    verification: Verification | None,
    assessment: Any,
    records: list[Evidence],
) -> dict[str, Any]:
    """Bounded, redacted previews: the latest batch's outputs (failed first), then evidence."""
    from cortex.kernel.views.artifact import preview_cited

    current = {v.id for v in assessment.receipts}
    receipts = [r for r in (verification.receipts if verification else []) if r.id in current]
    receipts.sort(key=lambda r: (r.status != "failed", r.id))
    cited: list[tuple[str, str, bool]] = [
        (r.artifact, r.id, r.sensitive) for r in receipts if r.artifact is not None
    ]
    cited += [
        (r.raw_ref, r.id, r.sensitivity == "sensitive")
        for r in reversed(records)
        if r.raw_ref is not None
    ]
    seen: set[str] = set()
    unique = [c for c in cited if not (c[0] in seen or seen.add(c[0]))]  # type: ignore[func-returns-value]
    items: list[dict[str, Any]] = []
    for ref, source, sensitive in unique[:REPORT_PREVIEWS_MAX]:
        item: dict[str, Any] = {"ref": ref, "source": source, "state": "shown", "content": None}
        if sensitive:
            item["state"] = "sensitive"
            items.append(item)
            continue
        try:
            result = preview_cited(
                kernel, store.case_path(case.id), case.id, ref, limit=REPORT_PREVIEW_BYTES
            ).data
        except CortexError as exc:
            item["state"] = "binary" if "binary" in exc.message else "unreadable"
            items.append(item)
            continue
        if result.get("kind") == "directory":
            item.update(state="directory", files=result["count"])
        elif result.get("sensitive"):
            item["state"] = "sensitive"
        else:
            item.update(
                content=result["content"], size=result["size"], truncated=result["truncated"]
            )
        items.append(item)
    return {"cited": len(unique), "items": items}


def integrity(
    kernel: Kernel,
    store: CaseStore,
    case: CaseFile,
    documents: dict[str, Any],
    *,
    full_audit: bool,
) -> dict[str, Any]:
    """Chain heads (checked against the files), the audit, replicas, debris."""
    path = store.case_path(case.id)
    ledgers: list[dict[str, Any]] = []
    for name in LEDGERS:
        state = case.ledgers.get(name) or LedgerState()
        last = tail_lines(os.path.join(path, ledger_file(name)), state.bytes, 1)
        ok = (not last and state.count == 0) or (bool(last) and line_hash(last[0]) == state.tip)
        ledgers.append(
            {
                "name": name,
                "count": state.count,
                "bytes": state.bytes,
                "head": state.tip,
                "headOk": ok,
            }
        )
    lines = sum(item["count"] for item in ledgers)
    audit: dict[str, Any]
    if full_audit or lines <= REPORT_AUDIT_LINES:
        from cortex.cases.integrity import audit_case
        from cortex.cases.layout import case_dir

        report = audit_case(case_dir(store.root, case.id), case.id, kernel.redactor)
        audit = {
            "ran": True,
            "ok": report.ok,
            "errors": len(report.errors),
            "warnings": len(report.warnings),
            "findings": [msgspec.to_builtins(f) for f in (report.errors + report.warnings)[:20]],
            "reason": None,
        }
    else:
        audit = {
            "ran": False,
            "ok": None,
            "errors": 0,
            "warnings": 0,
            "findings": [],
            "reason": (
                f"the case holds {lines} committed ledger lines, more than the "
                f"{REPORT_AUDIT_LINES} a report audits unasked"
            ),
        }
    index = documents.get("replicas.json")
    replicas = None
    if index is not None:
        from cortex.cases.replicas import origins

        replicas = origins(index)
    return {
        "ledgers": ledgers,
        "audit": audit,
        "replicas": replicas,
        "warnings": store.debris(case),
    }
