"""The Markdown form of a report: the same sections in the same order, for a step summary.

Every value from the case goes through the handoff's quoting helpers (`inline`, `quote`,
`code` in `cortex.kernel.views.markdown`), so no text can open a heading, a link, HTML or a
table of its own; links come from `links` only. Markers are the same words in brackets.
"""

from __future__ import annotations

from typing import Any

from cortex.kernel.envelope import Data
from cortex.kernel.views.markdown import code, inline, quote
from cortex.report import links
from cortex.report.words import STATUS, tally


def _mark(word: str, detail: str | None = None) -> str:
    return "**\\[" + inline(word.upper() + (f": {detail}" if detail else "")) + "\\]**"


def _commit(forge: Any, commit: str | None) -> str:
    if not commit:
        return "none"
    href = links.commit_link(forge, commit)
    return f"[{code(commit)}]({href})" if href else code(commit)


def _short(value: str | None) -> str:
    return (value or "-")[:12]


def _bullets(items: list[str], empty: str = "None.") -> list[str]:
    return [f"- {item}" for item in items] if items else [empty]


def _verdict(data: Data) -> list[str]:
    v = data["verdict"]
    lines = [f"## Verdict: {_mark(v['status'])}", ""]
    if v.get("currency"):
        lines.append(f"Code: {inline(v['currency']['summary'])}.")
    if not v["bindingPossible"]:
        reason = v.get("bindingReason") or "the workspace could not be captured"
        lines.append(f"Nothing can be bound here now: {inline(reason)}.")
    shown = tally(data["receipts"])
    if shown:
        lines.append(f"Receipts of the latest batch: {inline(shown)}.")
    if lines[-1]:
        lines.append("")
    lines += _bullets([inline(r) for r in v["reasons"]], "")
    if v.get("completedOn"):
        lines += ["", f"Completed on the verdict {_mark(v['completedOn'])}."]
    if v.get("acknowledged"):
        lines += ["", "Acknowledged at completion:", "", *quote(v["acknowledged"])]
    return [*lines, ""]


def _case(data: Data) -> list[str]:
    repo = data["repository"]
    forge = repo.get("forge")
    where = code(repo["name"])
    if forge:
        where += f" on {inline(forge['host'])} {code(forge['path'])}"
    opened, closed = data["opened"], data["closed"]
    phase = code(data["phase"])
    if data.get("pausedFrom"):
        phase += f", paused from {code(data['pausedFrom'])}"
    lines = [
        "## Case",
        "",
        *quote(data["goal"]),
        "",
        f"- Case: {code(data['taskId'])}, revision {data['revision']}",
        f"- Mode: {code(data['mode'])}, risk {code(data['risk'])}; phase {phase}",
        f"- Repository: {where}; branch {code(repo['branch']) if repo.get('branch') else 'none'}",
        (
            f"- HEAD at open: {_commit(forge, opened.get('head'))}, tree "
            f"{code(opened['tree']) if opened.get('tree') else 'unknown'}"
        ),
        f"- HEAD at close: {_commit(forge, closed.get('head'))}, tree "
        f"{code(closed['tree']) if closed.get('tree') else 'unknown'}"
        + (f" ({inline(closed['source'])})" if closed.get("source") else ""),
        (
            f"- Opened by {code(data['openedBy'])} at {inline(data['createdAt'])}; last changed "
            f"{inline(data['updatedAt'])}"
        ),
    ]
    if data.get("statusReason"):
        lines.append(f"- Reason: {inline(data['statusReason'])}")
    return [*lines, ""]


def _receipts(data: Data) -> list[str]:
    lines = ["## Receipts", ""]
    batch = data["batch"]
    if batch is None:
        return [*lines, "Nothing has been verified yet.", "", *_observed(data.get("observed"))]
    lines.append(
        f"Latest batch {code(batch['id'])}, {_mark(batch['binding'])}, finished "
        f"{inline(batch['finishedAt'])} at HEAD {code(_short(batch['head']))}, tree "
        f"{code(_short(batch['tree']))}."
    )
    lines += [f"- Unbound because: {inline(r)}" for r in batch["reasons"]]
    lines.append("")
    for r in data["receipts"]:
        name = f"claim {code(r['claimId'])}" if r["claimId"] else code(r["requirement"] or r["id"])
        status = _mark(STATUS.get(r["status"], r["status"]))
        if r["standing"] == "current":
            standing = _mark("proof")
        elif r["standing"] == "stale":
            standing = _mark("stale", "the code or the plan changed since it ran")
        else:
            standing = _mark("unbound", "it proves nothing")
        lines.append(f"- {name} {status} {standing} ({code(r['id'])})")
        if r["sensitive"]:
            lines.append("  - (sensitive: its text is not shown)")
        elif r.get("claim"):
            lines.append(f"  - {'Claim' if r['claimId'] else 'Summary'}: {inline(r['claim'])}")
        lines += [f"  - Note: {inline(note)}" for note in r["notes"]]
        for finding in r["findings"]:
            if finding["sensitive"] or finding["claim"] is None:
                lines.append(f"  - Finding {code(finding['id'])} (not shown)")
            else:
                lines.append(f"  - Finding {code(finding['id'])}: {inline(finding['claim'])}")
    if data["earlierBatches"]:
        lines += ["", f"Earlier batches ({len(data['earlierBatches'])}), superseded:", ""]
        for b in data["earlierBatches"]:
            statuses = ", ".join(f"{n} {s}" for s, n in b["statuses"].items()) or "no receipts"
            lines.append(
                f"- {code(b['id'])} {inline(b['finishedAt'])} {inline(b['binding'])}: "
                f"{inline(statuses)} {_mark('superseded')}"
            )
    return [*lines, "", *_observed(data.get("observed"))]


def _observed(observed: Data | None) -> list[str]:
    """What the agent's host saw it do, next to the receipts (docs/design/activity.md)."""
    if not observed:
        return []
    lines = [f"Observed by the host ({observed['records']} tool calls):", ""]
    lines += [
        f"- Last {inline(r['runner'])} run {_mark(r['outcome'])} at {inline(r['at'])} by "
        f"{code(r['actor'])}: {inline(r.get('summary') or '-')} ({code(r['id'])})"
        for r in observed["lastRuns"]
    ] or ["- No test run observed."]
    lines += [f"- {_mark(f['kind'])} {inline(f['message'])}" for f in observed["flags"]]
    lines += [f"- {_mark('activity')} {inline(p)}" for p in observed["problems"]]
    return [*lines, ""]


def _plan(data: Data) -> list[str]:
    lines = ["## Plan", "", "Acceptance criteria:", ""]
    lines += _bullets([f"{code(c['id'])}: {inline(c['statement'])}" for c in data["criteria"]])
    lines.append("")
    plan = data["plan"]
    if plan is None:
        return [*lines, "No plan yet.", ""]
    boundary = plan["changeBoundary"]
    lines += [
        (
            f"- Revision {plan['planRevision']} by {code(plan['actor'])}, recorded as "
            f"{code(plan['evidenceId'])}"
        ),
        f"- Boundary, files: {', '.join(code(f) for f in boundary['files']) or 'none'}",
        f"- Boundary, symbols: {', '.join(code(s) for s in boundary['symbols']) or 'none'}",
        "- Required verifiers: "
        + (", ".join(code(v) for v in plan["verificationRequired"]) or "none"),
        f"- Uncertainty: {inline(plan['uncertainty'])}",
        "",
        "Hypotheses:",
        "",
    ]
    items = []
    for h in data["hypotheses"]:
        item = f"{code(h['id'])} {_mark(h['status'])}"
        if h["retired"]:
            item += " " + _mark("retired")
        item += f" {inline(h['statement'])}; disproved if: {inline(h['disproof'])}"
        latest = h.get("latest")
        if latest:
            item += f"; latest: {code(latest['status'])}: {inline(latest['reason'])}"
        items.append(item)
    return [*lines, *_bullets(items), ""]


def _decisions(data: Data) -> list[str]:
    lines = ["## Decisions", ""]
    if not data["decisions"]:
        return [*lines, "None.", ""]
    for d in data["decisions"]:
        labels = " ".join(inline(label) for label in d.get("labels") or [])
        head = f"- {code(d['id'])} {_mark(d['status'])}" + (f" {labels}" if labels else "")
        lines.append(f"{head}: {inline(d['question'])}")
        for option in d["options"]:
            chosen = " " + _mark("chosen") if option["id"] == d.get("answer") else ""
            lines.append(f"  - {code(option['id'])}{chosen}: {inline(option['label'])}")
        if d.get("answer"):
            lines.append(f"  - Answered {code(d['answer'])} by {code(d.get('responder') or '?')}")
        rejected = d.get("alreadyRejected") or []
        if rejected:
            shown = ", ".join(f"{inline(o['label'])} ({code(o['id'])})" for o in rejected)
            lines.append(f"  - Rejected alternatives: {shown}")
    return [*lines, ""]


def _omitted_here(data: Data, what: str) -> list[str]:
    return [
        f"{entry['count']} {inline(entry['what'])}: {code(entry['command'])}"
        for entry in data["tier"]["omitted"]
        if entry["what"].startswith(what)
    ]


def _evidence(data: Data) -> list[str]:
    evidence = data["evidence"]
    records = evidence["records"]
    lines = [
        "## Evidence",
        "",
        f"Showing {len(records)} of {evidence['total']} evidence records, newest first.",
        *_omitted_here(data, "evidence"),
        "",
    ]
    forge = data["repository"].get("forge")
    for r in records:
        claim = "(sensitive)" if r["sensitive"] else inline(r["claim"] or "")
        line = f"- {code(r['id'])} {inline(r['timestamp'])} {code(r['kind'])}: {claim}"
        if r.get("provenance") and r["provenance"] != "agent":
            line += f" (origin: {inline(r['provenance'])})"
        if r.get("replica"):
            line += f" [from replica {code(r['replica'])}]"
        location = r.get("location")
        if location and location.get("file"):
            start, end, head = (
                location.get("startLine"),
                location.get("endLine"),
                location.get("head"),
            )
            shown = code(links.plain_location(location["file"], start, end, head))
            href = links.permalink(forge, head, location["file"], start, end)
            line += f" at [{shown}]({href})" if href else f" at {shown}"
        labels = " ".join(inline(label) for label in r.get("labels") or [])
        if labels:
            line += f" {labels}"
        lines.append(line)
    return [*lines, ""] if records else lines


def _timeline(data: Data) -> list[str]:
    timeline = data["timeline"]
    entries = timeline["entries"]
    lines = [
        "## Timeline",
        "",
        f"Showing {len(entries)} of {timeline['total']} timeline entries (newest), oldest first.",
        *_omitted_here(data, "timeline"),
        "",
    ]
    for e in entries:
        extra = f" {_mark(str(e.get('standing', '')))}" if e["kind"] == "receipt" else ""
        if e.get("origin") and e["origin"] != "agent":
            extra += f" (origin: {inline(e['origin'])})"
        if e.get("replica"):
            extra += f" [from replica {code(e['replica'])}]"
        lines.append(
            f"- {inline(e['at'])} {code(e['kind'])} {code(e['id'])}: {inline(e['title'])}{extra}"
        )
    return [*lines, ""] if entries else lines


def _raw(data: Data) -> list[str]:
    previews = data["previews"]
    lines = [
        "## Raw previews",
        "",
        f"{len(previews['items'])} of {previews['cited']} raw outputs previewed (redacted).",
        *_omitted_here(data, "raw"),
        "",
    ]
    for item in previews["items"]:
        head = f"{code(item['ref'])} from {code(item['source'])}"
        if item["state"] == "shown":
            lines += [f"{head}:", "", *quote(item["content"] or ""), ""]
        elif item["state"] == "directory":
            lines += [f"{head}: a directory of {item['files']} files.", ""]
        else:
            lines += [f"{head}: {_mark(item['state'])} not previewed.", ""]
    return lines


def _integrity(data: Data) -> list[str]:
    integrity = data["integrity"]
    lines = ["## Integrity", ""]
    for item in integrity["ledgers"]:
        state = _mark("head ok") if item["headOk"] else _mark("head mismatch")
        lines.append(
            f"- {code(item['name'])}: {item['count']} lines, "
            f"head {code(item['head'] or '-')} {state}"
        )
    audit = integrity["audit"]
    if audit["ran"]:
        verdict = _mark("audit ok") if audit["ok"] else _mark("audit failed")
        lines.append(f"- Audit: {verdict} ({audit['errors']} errors, {audit['warnings']} warnings)")
        lines += [
            f"  - {code(f['severity'])} {code(f['code'])}: {inline(f['message'])}"
            for f in audit["findings"]
        ]
    else:
        lines.append(
            f"- Audit: {_mark('not run')} {inline(audit['reason'])}; run "
            f"{code('cortex case audit ' + data['taskId'])} or report with {code('--full-audit')}"
        )
    replicas = integrity.get("replicas")
    if replicas:
        imported = ", ".join(code(r["key"]) for r in replicas["imported"]) or "none"
        lines.append(
            f"- Replicas: local {code(replicas['local'])}, in force {code(replicas['inForce'])}, "
            f"imported {imported}"
        )
    lines += [f"- Warning: {inline(w)}" for w in integrity["warnings"]]
    lines.append(
        f"- Generated at {inline(data['generatedAt'])} by Cortex {inline(data['cortexVersion'])}, "
        f"tier {data['tier']['index']} ({inline(data['tier']['name'])})"
    )
    return [*lines, ""]


def render(data: Data) -> str:
    """The document up to (not including) its digest line."""
    lines = [f"# Case report: {code(data['taskId'])} {_mark(data['verdict']['status'])}", ""]
    omitted = data["tier"]["omitted"]
    if omitted:
        shown = "; ".join(f"{e['count']} {inline(e['what'])}" for e in omitted)
        lines += [
            (
                f"This report is cut to fit its size cap (tier {data['tier']['index']}): "
                f"{shown}. The verdict, the receipts and the decisions are always whole."
            ),
            "",
        ]
    for section in (
        _verdict,
        _case,
        _receipts,
        _plan,
        _decisions,
        _evidence,
        _timeline,
        _raw,
        _integrity,
    ):
        lines += section(data)
    return "\n".join(lines) + "\n"


def digest_line(digest: str) -> str:
    """The last line: the sha256 of every byte before it."""
    return f"Report sha256: `{digest}` (of every byte before this line)\n"
