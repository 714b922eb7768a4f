"""`cortex case report`: everything a reviewer's page holds, read from one view of the case.

The report face (`cortex/report/`) lays this out as HTML or Markdown and decides how much of
it fits; this module only reads, judges and labels, with the functions every other surface
uses: `assess` for the verdict (the same as status, show, handoff and complete), the
timeline's cards, `evidence_labels` for freshness and decision history, the artifact preview
for raw output. docs/design/report.md has the contract.

The cost follows what is shown, not the case's length: ledgers are read backwards from their
committed ends (as `show` reads them), a batch's findings by a binary search on its time, and
the full audit only runs up to `REPORT_AUDIT_LINES` committed lines (or when asked).

Read-only: no lock, no write to the store. Every string is redacted again on the way out.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from cortex import __version__
from cortex.cases.bounds import (
    REPORT_AUDIT_LINES,
    REPORT_BYTES_MAX,
    REPORT_BYTES_MIN,
    REPORT_CLAIM_CUT,
    REPORT_COMMENT_MAX,
    REPORT_EVIDENCE_MAX,
    REPORT_HTML_MAX,
    REPORT_MD_MAX,
    REPORT_PREVIEW_BYTES,
    REPORT_PREVIEWS_MAX,
    REPORT_TIMELINE_MAX,
)
from cortex.cases.documents import Batch, Decisions, Hypotheses, Receipt, Verification
from cortex.cases.errors import ArgumentError, CortexError
from cortex.cases.layout import ledger_file
from cortex.cases.ledger import parse_line, tail_lines
from cortex.cases.records import (
    LEDGER_TYPES,
    LEDGERS,
    CaseFile,
    Evidence,
    LedgerRecord,
    LedgerState,
)
from cortex.cases.store import CaseStore
from cortex.kernel import provenance
from cortex.kernel.envelope import Data
from cortex.kernel.kernel import Kernel
from cortex.kernel.views import report_files
from cortex.kernel.views.handoff.read import decision_views, plan_view, redact_all
from cortex.kernel.views.timeline.cards import (
    KINDS,
    Context,
    Entry,
    card,
    ledger_entry,
    stream,
)

__all__ = [
    "FORMATS",
    "REPORT_AUDIT_LINES",
    "REPORT_BYTES_MAX",
    "REPORT_BYTES_MIN",
    "REPORT_CLAIM_CUT",
    "REPORT_COMMENT_MAX",
    "REPORT_EVIDENCE_MAX",
    "REPORT_HTML_MAX",
    "REPORT_MD_MAX",
    "REPORT_PREVIEWS_MAX",
    "REPORT_PREVIEW_BYTES",
    "REPORT_TIMELINE_MAX",
    "SCHEMA",
    "Options",
    "gather",
    "options",
]
"""The bounds are the face's too (its tiers): it reads them here, as it may not import `cases`."""

SCHEMA = "cortex/report/v1"
FORMATS = ("html", "md")


class Options(msgspec.Struct, frozen=True):
    """What a report is asked for, checked: its form, its size cap, where it goes."""

    format: str
    max_bytes: int
    output: str | None
    comment: bool


def options(values: dict[str, Any]) -> Options:
    """`--html`, `--output`, `--format`, `--comment` and `--max-bytes`, each combination checked.

    Checked before the case is read, so a bad option costs nothing and writes nothing.
    """
    from cortex.kernel.validate import shown

    html_file, output, fmt = values.get("html"), values.get("output"), values.get("format")
    comment = bool(values.get("comment"))
    if fmt is not None and fmt not in FORMATS:
        raise ArgumentError(f"{{format}} must be html or md, not {shown(fmt, 40)!r}", "format")
    if html_file is not None:
        if output is not None or fmt == "md" or comment:
            msg = "{html} FILE writes the HTML form; give either it or {format} and {output}"
            raise ArgumentError(msg, "html", "format", "output")
        fmt, output = "html", html_file
    if comment:
        if fmt == "html":
            msg = "{comment} is Markdown; leave out {format} html"
            raise ArgumentError(msg, "comment", "format")
        fmt = "md"
    fmt = fmt or "html"
    default = REPORT_HTML_MAX if fmt == "html" else REPORT_MD_MAX
    default = REPORT_COMMENT_MAX if comment else default
    given = values.get("max_bytes")
    cap = default if given is None else int(given)
    if not REPORT_BYTES_MIN <= cap <= REPORT_BYTES_MAX:
        msg = f"{{max_bytes}} must be from {REPORT_BYTES_MIN} to {REPORT_BYTES_MAX}, not {cap}"
        raise ArgumentError(msg, "max_bytes")
    if comment and cap > REPORT_COMMENT_MAX:
        msg = f"{{comment}} keeps a report within {REPORT_COMMENT_MAX} bytes; {{max_bytes}} is over"
        raise ArgumentError(msg, "comment", "max_bytes")
    if output is not None and (not output or "\0" in output):
        raise ArgumentError("{output} must name a file", "output")
    return Options(fmt, cap, output, comment)


def gather(
    kernel: Kernel, task_id: str, *, generated_at: str | None = None, full_audit: bool = False
) -> Data:
    """Everything a report shows, as plain, redacted values (the module docstring)."""
    when = _moment(generated_at)
    task_id, store = kernel.find(task_id)
    case, documents = store.read_view(task_id)
    verification: Verification | None = documents.get("verification.json")
    decisions: Decisions | None = documents.get("decisions.json")
    from cortex.kernel.proof.assessment import assess
    from cortex.kernel.proof.live import live_capture

    live = live_capture(kernel, case, writer=False)
    assessment = assess(case, verification, live)
    batch = verification.batches[-1] if verification and verification.batches else None
    evidence = _newest(store, case, "evidence", REPORT_EVIDENCE_MAX)
    records = [r for r, _ in evidence if isinstance(r, Evidence)]
    replicas = {r.id: origin for r, origin in evidence if origin is not None}
    findings = _findings(store, case, verification, batch, records)
    from cortex.kernel.views.labels import evidence_labels

    found = evidence_labels(kernel, store, case, records, decisions.decisions if decisions else [])
    standing = {
        v.id: "current" if v.proof else ("stale" if v.stale else "unbound")
        for v in assessment.receipts
    }
    repository = _repository(kernel, case, batch, live)
    data: Data = {
        "schema": SCHEMA,
        "generatedAt": when or case.updated_at,
        "cortexVersion": __version__,
        "taskId": case.id,
        "goal": case.goal,
        "mode": case.mode,
        "risk": case.risk,
        "phase": case.status,
        "pausedFrom": case.paused_from,
        "statusReason": case.status_reason,
        "revision": case.revision,
        "openedBy": case.actor,
        "createdAt": case.created_at,
        "updatedAt": case.updated_at,
        **repository,
        "verdict": _verdict(store, case, assessment, live),
        "batch": None if batch is None else _batch(batch),
        "receipts": _receipts(verification, assessment, findings),
        "earlierBatches": _earlier(verification),
        "criteria": [{"id": c.id, "statement": c.statement} for c in case.acceptance_criteria],
        "plan": plan_view(documents.get("plan.json")),
        "hypotheses": _hypotheses(documents.get("hypotheses.json")),
        "decisions": decision_views(decisions, found),
        "evidence": {
            "total": _total(store, case, documents, "evidence"),
            "records": [
                _evidence(r, found.get(r.id, []), replicas.get(r.id)) for r in reversed(records)
            ],
        },
        "timeline": _timeline(store, case, documents, verification, standing),
        "previews": report_files.previews(kernel, store, case, verification, assessment, records),
        "integrity": report_files.integrity(kernel, store, case, documents, full_audit=full_audit),
    }
    from cortex.kernel.views.claims import observed

    seen = observed(store, case, documents)
    if seen is not None:
        data["observed"] = seen
    return _redacted(data, kernel.redactor)


def _redacted(data: Data, redactor: Any) -> Data:
    """`data` with every string redacted again, each distinct string once.

    The same texts recur (an evidence record is also a timeline card, actors and tools repeat),
    and redaction is most of a report's cost; the result is `redact_all`'s.
    """
    seen: dict[str, str] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            done = seen.get(value)
            if done is None:
                done = seen[value] = redact_all(value, redactor)
            return done
        if isinstance(value, list):
            return [walk(item) for item in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    result: Data = walk(data)
    return result


def _moment(text: str | None) -> str | None:
    """`--generated-at`, checked and written the way the store writes times."""
    if text is None:
        return None
    from cortex.kernel.views.timeline.query import canonical, when

    return canonical(when(text, "--generated-at")[0])


# Reading the ledgers from their ends ----------------------------------------------------------


def _newest(
    store: CaseStore, case: CaseFile, name: str, count: int
) -> list[tuple[LedgerRecord, str | None]]:
    """The `count` newest records of a ledger, oldest first, each with its replica (or None)."""
    if "replicas" in case.snapshots:
        from cortex.cases.replicas import load_index, newest

        index = load_index(store, case)
        if index is not None:
            items = newest(store, case, name, count, index)
            return list(reversed(items))
    state = case.ledgers.get(name) or LedgerState()
    path = os.path.join(store.case_path(case.id), ledger_file(name))
    lines = tail_lines(path, state.bytes, count)
    return [(parse_line(line, LEDGER_TYPES[name], where=ledger_file(name)), None) for line in lines]


def _ledger_totals(store: CaseStore, case: CaseFile) -> dict[str, int]:
    if "replicas" in case.snapshots:
        from cortex.cases.replicas import load_index, totals

        index = load_index(store, case)
        if index is not None:
            return totals(store, case, index)
    return {name: (case.ledgers.get(name) or LedgerState()).count for name in LEDGERS}


def _total(store: CaseStore, case: CaseFile, documents: dict[str, Any], name: str) -> int:
    del documents
    return _ledger_totals(store, case)[name]


def _findings(
    store: CaseStore,
    case: CaseFile,
    verification: Verification | None,
    batch: Batch | None,
    shown: list[Evidence],
) -> dict[str, Evidence]:
    """The evidence records the latest batch's receipts cite (its runs and their findings).

    They were appended in the batch's own commit, so they are usually among the newest records
    already read; otherwise a time-ordered ledger is searched for the batch's time, and only
    a ledger that is not time-ordered is searched by id.
    """
    if verification is None or batch is None:
        return {}
    wanted = {ev for r in verification.receipts if r.batch_id == batch.id for ev in r.evidence}
    found = {r.id: r for r in shown if r.id in wanted}
    missing = sorted(wanted - set(found))
    state = case.ledgers.get("evidence") or LedgerState()
    if missing and state.ordered and "replicas" not in case.snapshots:
        from cortex.kernel.views.timeline.index import OrderedLedger

        with OrderedLedger(store.case_path(case.id), "evidence", state, None) as ordered:
            start = ordered.at_time(batch.finished_at)
            stop = ordered.at_time(batch.finished_at, after=True)
            for entry in ordered.decode(start, stop):
                if isinstance(entry.record, Evidence) and entry.record.id in wanted:
                    found[entry.record.id] = entry.record
        missing = sorted(wanted - set(found))
    if missing:
        more = store.find_records(case, "evidence", missing)
        found.update({i: r for i, r in more.items() if isinstance(r, Evidence)})
    return found


# The parts -------------------------------------------------------------------------------------


def _repository(kernel: Kernel, case: CaseFile, batch: Batch | None, live: Any) -> Data:
    """Where the case ran (names only, never a local path) and the code at open and close."""
    workspace = case.workspace
    opened = workspace.commit_before
    if batch is not None and batch.binding == "bound":
        closed: Data = {
            "source": "latest bound batch",
            "head": batch.revision,
            "tree": batch.tree,
            "at": batch.finished_at,
        }
    elif case.status not in {"complete", "abandoned"} and live.bound:
        closed = {"source": "workspace now", "head": live.head, "tree": live.tree, "at": None}
    else:
        closed = {"source": None, "head": None, "tree": None, "at": None}
    forge = None
    open_tree = None
    if workspace.kind == "git" and os.path.isdir(workspace.root):
        from cortex.workspace.history import forge as forge_of
        from cortex.workspace.history import remote_url, trees

        found = forge_of(remote_url(workspace.root, kernel.env))
        forge = None if found is None else found._asdict()
        if opened is not None:
            open_tree = trees(workspace.root, kernel.env, [opened]).get(opened)
    return {
        "repository": {
            "name": workspace.repository,
            "kind": workspace.kind,
            "branch": workspace.branch,
            "forge": forge,
        },
        "opened": {"head": opened, "tree": open_tree, "at": case.created_at},
        "closed": closed,
    }


def _verdict(store: CaseStore, case: CaseFile, assessment: Any, live: Any) -> Data:
    """The assessment as every surface gives it, and what a completion recorded."""
    data: Data = msgspec.to_builtins(assessment)
    data.pop("receipts", None)
    data["bindingPossible"] = live.bound
    data["bindingReason"] = live.reason
    data["completedOn"] = None
    data["acknowledged"] = None
    if case.status == "complete":
        from cortex.kernel.views.sessions import completion_verdict

        data["completedOn"] = completion_verdict(store, case.id)
        data["acknowledged"] = _acknowledgement(store, case)
    return data


def _acknowledgement(store: CaseStore, case: CaseFile) -> str | None:
    """The acknowledgement summary.md recorded at completion (its quoted block), if any."""
    from cortex.cases.fsio import open_for_read

    try:
        fd = open_for_read(os.path.join(store.case_path(case.id), "summary.md"))
    except (CortexError, OSError):
        return None
    try:
        head = os.read(fd, 64 * 1024).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)
    _, marker, rest = head.partition("\nAcknowledged:\n\n")
    if not marker:
        return None
    lines: list[str] = []
    for line in rest.splitlines():
        if not line.startswith(">"):
            break
        lines.append(line[1:].removeprefix(" "))
    return "\n".join(lines) or None


def _batch(batch: Batch) -> Data:
    return {
        "id": batch.id,
        "actor": batch.actor,
        "startedAt": batch.started_at,
        "finishedAt": batch.finished_at,
        "binding": batch.binding,
        "reasons": list(batch.reasons),
        "head": batch.revision,
        "tree": batch.tree,
        "headTree": batch.head_tree,
        "branch": batch.branch,
        "acknowledged": list(batch.acknowledged),
    }


def _receipts(
    verification: Verification | None, assessment: Any, findings: dict[str, Evidence]
) -> list[Data]:
    """The latest batch's receipts as `assess` judged them, failures expanded."""
    stored = {r.id: r for r in (verification.receipts if verification else [])}
    shown: list[Data] = []
    for view in assessment.receipts:
        receipt: Receipt = stored[view.id]
        expanded = []
        for evidence_id in receipt.evidence[1:] if receipt.purpose == "verifier_run" else []:
            record = findings.get(evidence_id)
            if record is None:
                expanded.append({"id": evidence_id, "claim": None, "sensitive": False})
                continue
            sensitive = record.sensitivity == "sensitive"
            expanded.append(
                {
                    "id": record.id,
                    "claim": None if sensitive else record.claim,
                    "sensitive": sensitive,
                }
            )
        standing = "current" if view.proof else ("stale" if view.stale else "unbound")
        shown.append(
            {
                "id": receipt.id,
                "purpose": receipt.purpose,
                "requirement": receipt.requirement,
                "claimId": receipt.claim_id,
                "claim": None if receipt.sensitive else receipt.claim,
                "contract": receipt.contract,
                "tool": receipt.tool,
                "status": receipt.status,
                "binding": receipt.binding,
                "standing": standing,
                "proof": view.proof,
                "head": receipt.revision,
                "tree": receipt.tree,
                "timestamp": receipt.timestamp,
                "artifact": receipt.artifact,
                "sensitive": receipt.sensitive,
                "notes": [] if receipt.sensitive else list(receipt.notes),
                "evidence": list(receipt.evidence),
                "findings": expanded,
            }
        )
    return shown


def _earlier(verification: Verification | None) -> list[Data]:
    """The batches before the latest, newest first: superseded, one line each."""
    if verification is None:
        return []
    counts: dict[str, dict[str, int]] = {}
    for receipt in verification.receipts:
        per = counts.setdefault(receipt.batch_id, {})
        per[receipt.status] = per.get(receipt.status, 0) + 1
    return [
        {
            "id": b.id,
            "finishedAt": b.finished_at,
            "binding": b.binding,
            "head": b.revision,
            "statuses": dict(sorted(counts.get(b.id, {}).items())),
        }
        for b in reversed(verification.batches[:-1])
    ]


def _hypotheses(doc: Hypotheses | None) -> list[Data]:
    """The current plan's hypotheses (retired ones are counted by the face)."""
    if doc is None:
        return []
    shown: list[Data] = []
    for h in doc.hypotheses:
        latest = h.history[-1] if h.history else None
        shown.append(
            {
                "id": h.id,
                "status": h.status,
                "statement": h.statement,
                "disproof": h.disproof,
                "supports": list(h.supports),
                "retired": h.retired,
                "resolutions": len(h.history),
                "latest": None if latest is None else msgspec.to_builtins(latest),
            }
        )
    return shown


def _evidence(record: Evidence, labels: list[str], replica: str | None = None) -> Data:
    sensitive = record.sensitivity == "sensitive"
    location = record.location
    return {
        "id": record.id,
        "timestamp": record.timestamp,
        "kind": record.kind,
        "claim": None if sensitive else record.claim,
        "sensitive": sensitive,
        "confidence": record.confidence,
        "tool": record.source.tool,
        "origin": record.source.origin,
        # How every surface shows who said it: `human (reported by agent-1 via mcp)` for a
        # person's word an agent passed on (docs/design/trust.md).
        "provenance": provenance.shown(record.source, replica),
        "replica": replica,
        "actor": record.source.actor,
        "location": None
        if location is None or sensitive
        else {
            "file": location.file,
            "startLine": location.start_line,
            "endLine": location.end_line,
            "symbol": location.symbol,
            "head": location.head,
        },
        "rawRef": record.raw_ref,
        "derivedFrom": list(record.derived_from),
        "contests": record.contests,
        "labels": labels,
    }


def _timeline(
    store: CaseStore,
    case: CaseFile,
    documents: dict[str, Any],
    verification: Verification | None,
    standing: dict[str, str],
) -> Data:
    """The newest entries of every kind as the timeline's own cards, oldest first, and M."""
    entries: list[Entry] = []
    for name in LEDGERS:
        for record, origin in _newest(store, case, name, REPORT_TIMELINE_MAX):
            entries.append(ledger_entry(name, record, origin))
    snapshot = list(stream(store, case, documents, frozenset({"decision", "batch", "receipt"})))
    entries += snapshot
    entries.sort(key=lambda entry: entry.key)
    shown = entries[-REPORT_TIMELINE_MAX:]
    sizes: dict[str, int] = {}
    for receipt in verification.receipts if verification is not None else []:
        sizes[receipt.batch_id] = sizes.get(receipt.batch_id, 0) + 1
    context = Context(
        standing=lambda receipt: standing.get(receipt.id, "superseded"), batch_sizes=sizes
    )
    total = sum(_ledger_totals(store, case).values()) + len(snapshot)
    return {
        "total": total,
        "kinds": list(KINDS),
        "entries": [card(entry, context) for entry in shown],
    }
