"""The HTML form of a report: one self-contained page, readable without script or style.

Only this module writes tags, and only from a fixed set; every text, attribute values
included, goes through `escape.text`; every `href` comes from `links`. The page carries its
own Content-Security-Policy, which allows the one inline style and the one inline script by
their sha256 and nothing else: no request can leave the page (docs/design/report.md).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable
from typing import Any

from cortex.kernel.envelope import Data
from cortex.report import links
from cortex.report.escape import json_data, text
from cortex.report.words import STATUS, tally

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:72rem;padding:0 1rem 3rem}
body{color:#1d1d1f}h1{font-size:1.4rem;margin:1rem 0 .3rem}
h2{font-size:1.15rem;border-bottom:1px solid #ccc;margin-top:2rem}
h3{font-size:1rem;margin:1rem 0 .3rem}code,pre{font:13px/1.4 ui-monospace,monospace}
pre{white-space:pre-wrap;word-break:break-word;background:#f5f5f7;padding:.5rem}
table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #e3e3e3;padding:.2rem .4rem;text-align:left;vertical-align:top}
td{white-space:pre-wrap;word-break:break-word}nav a{margin-right:.6rem}
.m{font-weight:600;white-space:nowrap}.m-ok{color:#116329}.m-bad{color:#a40e26}
.m-warn{color:#7d4e00}.note{color:#555}
.verdict{font-size:1.2rem;padding:.5rem .8rem;border:2px solid #888;border-radius:6px}
input[type=search]{margin:.3rem 0;padding:.2rem .4rem;width:20rem}
""".strip()
"""The one inline style. Colour only repeats what the text markers already say."""

SCRIPT = """
"use strict";
document.querySelectorAll("table[data-filterable]").forEach(function (table) {
  var box = document.createElement("input");
  box.type = "search";
  box.placeholder = "filter these rows";
  box.setAttribute("aria-label", "filter the rows of this table");
  table.parentNode.insertBefore(box, table);
  box.addEventListener("input", function () {
    var wanted = box.value.toLowerCase();
    table.querySelectorAll("tbody tr").forEach(function (row) {
      row.hidden = wanted !== "" && row.textContent.toLowerCase().indexOf(wanted) < 0;
    });
  });
});
""".strip()
"""The one inline script: a filter box for the long tables. It reads no data; with script off
(or blocked) every row is simply shown."""


def csp_hash(source: str) -> str:
    """The CSP source expression allowing exactly this inline element content."""
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


POLICY = (
    f"default-src 'none'; style-src {csp_hash(STYLE)}; script-src {csp_hash(SCRIPT)}; "
    "img-src 'none'; base-uri 'none'; form-action 'none'"
)
"""The page's Content-Security-Policy: nothing loads, only the hashed style and script run."""

_OK = frozenset({"passed", "verified", "current", "approve", "bound"})
_BAD = frozenset({"failed", "unbound", "request_changes"})


def marker(word: str, *, detail: str | None = None, tone: str | None = None) -> str:
    """A text marker such as `[FAILED]`: the word says it; colour, if any, only repeats it."""
    key = word.lower().replace(" ", "_")
    tone = tone or ("ok" if key in _OK else "bad" if key in _BAD else "warn")
    shown = f"[{word.upper()}" + (f": {detail}" if detail else "") + "]"
    return f'<span class="m m-{tone}">{text(shown)}</span>'


def _code(value: object) -> str:
    return f"<code>{text(value)}</code>"


def _a(href: str, label: str) -> str:
    """A link: `href` comes from `links` only; both parts are escaped."""
    return f'<a href="{text(href)}">{label}</a>'


def _short(value: str | None) -> str:
    return (value or "-")[:12]


def _commit(forge: Any, commit: str | None) -> str:
    if not commit:
        return "none"
    href = links.commit_link(forge, commit)
    shown = _code(commit)
    return _a(href, shown) if href else shown


def _list(items: Iterable[str], *, empty: str = "None.") -> str:
    rows = [f"<li>{item}</li>" for item in items]
    return f"<ul>{''.join(rows)}</ul>" if rows else f"<p>{text(empty)}</p>"


def _receipt_marks(receipt: Data) -> str:
    status = str(STATUS.get(receipt["status"], receipt["status"]))
    marks = [marker(status)]
    if receipt["standing"] == "current":
        marks.append(marker("proof", tone="ok"))
    elif receipt["standing"] == "stale":
        marks.append(marker("stale", detail="the code or the plan changed since it ran"))
    else:
        marks.append(marker("unbound", detail="it proves nothing"))
    return " ".join(marks)


def _omitted_here(data: Data, what: str) -> str:
    for entry in data["tier"]["omitted"]:
        if entry["what"].startswith(what):
            return (
                f'<p class="note">{text(str(entry["count"]) + " " + entry["what"])}: '
                f"{_code(entry['command'])}</p>"
            )
    return ""


# Sections -----------------------------------------------------------------------------------


def _verdict(data: Data) -> str:
    v = data["verdict"]
    parts = [
        f'<p class="verdict">Verdict: {marker(v["status"])} {text(_VERDICT_WORDS[v["status"]])}</p>'
    ]
    currency = v.get("currency")
    if currency:
        parts.append(f"<p>Code: {text(currency['summary'])}.</p>")
    if not v["bindingPossible"]:
        reason = v.get("bindingReason") or "the workspace could not be captured"
        parts.append(f"<p>Nothing can be bound here now: {text(reason)}.</p>")
    shown = tally(data["receipts"])
    if shown:
        parts.append(f"<p>Receipts of the latest batch: {text(shown)}.</p>")
    parts.append(_list(text(reason) for reason in v["reasons"]))
    if v.get("completedOn"):
        parts.append(f"<p>Completed on the verdict {marker(v['completedOn'])}.</p>")
    if v.get("acknowledged"):
        parts.append(f"<p>Acknowledged at completion:</p><pre>{text(v['acknowledged'])}</pre>")
    return "".join(parts)


_VERDICT_WORDS = {
    "verified": "every requirement has a current, bound pass",
    "partial": "some requirements have a current pass, others do not",
    "failed": "a current, bound receipt failed",
    "unverified": "nothing current proves the code",
}


def _case(data: Data) -> str:
    repo = data["repository"]
    forge = repo.get("forge")
    where = _code(repo["name"])
    if forge:
        where += f" on {text(forge['host'])} {_code(forge['path'])}"
    phase = _code(data["phase"])
    if data.get("pausedFrom"):
        phase += f", paused from {_code(data['pausedFrom'])}"
    opened, closed = data["opened"], data["closed"]
    rows = [
        ("Goal", f"<pre>{text(data['goal'])}</pre>"),
        ("Case", f"{_code(data['taskId'])}, revision {text(data['revision'])}"),
        ("Mode", f"{_code(data['mode'])}, risk {_code(data['risk'])}"),
        ("Phase", phase),
        ("Repository", where),
        ("Branch", _code(repo["branch"]) if repo.get("branch") else "none recorded"),
        ("HEAD at open", _commit(forge, opened.get("head"))),
        ("Tree at open", _code(opened["tree"]) if opened.get("tree") else "unknown"),
        (
            "HEAD at close",
            _commit(forge, closed.get("head"))
            + (f" ({text(closed['source'])})" if closed.get("source") else ""),
        ),
        ("Tree at close", _code(closed["tree"]) if closed.get("tree") else "unknown"),
        ("Opened", f"by {_code(data['openedBy'])} at {text(data['createdAt'])}"),
        ("Last changed", text(data["updatedAt"])),
    ]
    if data.get("statusReason"):
        rows.append(("Reason", text(data["statusReason"])))
    body = "".join(f"<tr><th>{text(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f"<table><tbody>{body}</tbody></table>"


def _receipts(data: Data) -> str:
    batch = data["batch"]
    if batch is None:
        return "<p>Nothing has been verified yet.</p>" + _observed(data.get("observed"))
    head = (
        f"<p>Latest batch {_code(batch['id'])}, {marker(batch['binding'])}, by "
        f"{_code(batch['actor'])}, finished {text(batch['finishedAt'])}, at HEAD "
        f"{_code(_short(batch['head']))}, tree {_code(_short(batch['tree']))}"
    )
    if batch["tree"] and batch["headTree"] and batch["tree"] != batch["headTree"]:
        head += " (with uncommitted changes)"
    head += ".</p>"
    parts = [head]
    if batch["reasons"]:
        parts.append("<p>Why it is unbound:</p>" + _list(text(r) for r in batch["reasons"]))
    if batch["acknowledged"]:
        parts.append(f"<p>Acknowledged in the batch: {text(', '.join(batch['acknowledged']))}.</p>")
    for receipt in data["receipts"]:
        if receipt["claimId"]:
            name = f"claim {_code(receipt['claimId'])}"
        else:
            name = _code(receipt["requirement"] or receipt["id"])
        parts.append(f"<h3>{name} {_receipt_marks(receipt)}</h3>")
        facts = [f"Receipt {_code(receipt['id'])} by {_code(receipt['tool'])}"]
        if receipt.get("contract"):
            facts.append(f"Contract: {_code(receipt['contract'])}")
        if receipt["sensitive"]:
            facts.append("(sensitive: its text is not shown)")
        elif receipt.get("claim"):
            facts.append(
                f"{'Claim' if receipt['claimId'] else 'Summary'}: {text(receipt['claim'])}"
            )
        if receipt.get("artifact"):
            facts.append(f"Output: {_code(receipt['artifact'])} (see Raw previews)")
        facts += [f"Note: {text(note)}" for note in receipt["notes"]]
        parts.append(_list(facts))
        if receipt["findings"]:
            shown = []
            for finding in receipt["findings"]:
                if finding["sensitive"]:
                    shown.append(f"{_code(finding['id'])} (sensitive)")
                elif finding["claim"] is None:
                    shown.append(f"{_code(finding['id'])} (not found in the ledger)")
                else:
                    shown.append(f"{_code(finding['id'])}<pre>{text(finding['claim'])}</pre>")
            parts.append("<p>Failures and findings:</p>" + _list(shown))
    earlier = data["earlierBatches"]
    if earlier:
        rows = [
            f"{_code(b['id'])} {text(b['finishedAt'])} {marker(b['binding'])} "
            f"{text(', '.join(f'{n} {s}' for s, n in b['statuses'].items()) or 'no receipts')} "
            "[SUPERSEDED]"
            for b in earlier
        ]
        parts.append(f"<p>Earlier batches ({len(earlier)}), superseded:</p>" + _list(rows))
    parts.append(_observed(data.get("observed")))
    return "".join(parts)


def _observed(observed: Data | None) -> str:
    """What the agent's host saw it do, next to the receipts (docs/design/activity.md)."""
    if not observed:
        return ""
    runs = [
        f"last {text(r['runner'])} run {marker(r['outcome'])} at {text(r['at'])} by "
        f"{_code(r['actor'])}: {text(r.get('summary') or '-')} ({_code(r['id'])})"
        for r in observed["lastRuns"]
    ]
    flags = [f"[{text(f['kind'])}] {text(f['message'])}" for f in observed["flags"]]
    flags += [f"[activity] {text(p)}" for p in observed["problems"]]
    return (
        f"<h3>Observed by the host ({text(observed['records'])} tool calls)</h3>"
        + _list(runs, empty="No test run observed.")
        + "<p>Against the agent's claims:</p>"
        + _list(flags, empty="Nothing observed contradicts them.")
    )


def _plan(data: Data) -> str:
    parts = ["<h3>Acceptance criteria</h3>"]
    parts.append(_list(f"{_code(c['id'])}: {text(c['statement'])}" for c in data["criteria"]))
    plan = data["plan"]
    if plan is None:
        return "".join([*parts, "<p>No plan yet.</p>"])
    boundary = plan["changeBoundary"]
    rows = [
        (
            f"Revision {text(plan['planRevision'])} by {_code(plan['actor'])} at "
            f"{text(plan['createdAt'])}, recorded as {_code(plan['evidenceId'])}"
        ),
        "Boundary, files: " + (", ".join(_code(f) for f in boundary["files"]) or "none"),
        "Boundary, symbols: " + (", ".join(_code(s) for s in boundary["symbols"]) or "none"),
        "Required verifiers: "
        + (", ".join(_code(v) for v in plan["verificationRequired"]) or "none"),
        f"Uncertainty: {text(plan['uncertainty'])}",
    ]
    if boundary.get("reason"):
        rows.insert(3, f"Why this boundary: {text(boundary['reason'])}")
    if plan.get("reason"):
        rows.insert(1, f"Why it changed: {text(plan['reason'])}")
    parts += ["<h3>The plan</h3>", _list(rows), "<h3>Hypotheses</h3>"]
    items = []
    for h in data["hypotheses"]:
        item = f"{_code(h['id'])} {marker(h['status'])}"
        if h["retired"]:
            item += " " + marker("retired", detail="an earlier plan's")
        item += f" {text(h['statement'])}<br>Disproved if: {text(h['disproof'])}"
        if h["supports"]:
            item += "<br>Supported by: " + ", ".join(_code(s) for s in h["supports"])
        latest = h.get("latest")
        if latest:
            item += (
                f"<br>Latest resolution ({text(h['resolutions'])} in all): "
                f"{_code(latest['status'])} by {_code(latest['actor'])} at "
                f"{text(latest['at'])}: {text(latest['reason'])}"
            )
        items.append(item)
    parts.append(_list(items))
    return "".join(parts)


def _decisions(data: Data) -> str:
    if not data["decisions"]:
        return "<p>None.</p>"
    parts = []
    for d in data["decisions"]:
        head = f"{_code(d['id'])} {marker(d['status'])}"
        for label in d.get("labels") or []:
            head += " " + text(label)
        parts.append(f"<h3>{head}</h3><pre>{text(d['question'])}</pre>")
        rows = []
        if d.get("subject"):
            rows.append(f"Subject: {text(d['subject'])}")
        for option in d["options"]:
            chosen = " " + marker("chosen", tone="ok") if option["id"] == d.get("answer") else ""
            line = f"{_code(option['id'])}{chosen}: {text(option['label'])}"
            if option.get("consequence"):
                line += f" (then: {text(option['consequence'])})"
            rows.append(line)
        if d.get("answer"):
            rows.append(
                f"Answered {_code(d['answer'])} by {_code(d.get('responder') or '?')} at "
                f"{text(d.get('answeredAt') or '?')}"
            )
        rejected = d.get("alreadyRejected") or []
        if rejected:
            rows.append(
                "Rejected alternatives: "
                + ", ".join(f"{text(o['label'])} ({_code(o['id'])})" for o in rejected)
            )
        rows.append(f"Asked by {_code(d['requester'])} at {text(d['requestedAt'])}")
        parts.append(_list(rows))
    return "".join(parts)


def _location(data: Data, record: Data) -> str:
    location = record.get("location")
    if not location or not location.get("file"):
        return ""
    forge = data["repository"].get("forge")
    start, end, head = location.get("startLine"), location.get("endLine"), location.get("head")
    href = links.permalink(forge, head, location["file"], start, end)
    shown = _code(links.plain_location(location["file"], start, end, head))
    where = _a(href, shown) if href else shown
    if location.get("symbol"):
        where += f" ({_code(location['symbol'])})"
    return where


def _evidence(data: Data) -> str:
    evidence = data["evidence"]
    records = evidence["records"]
    parts = [
        f"<p>Showing {len(records)} of {evidence['total']} evidence records, newest first.</p>",
        _omitted_here(data, "evidence records"),
        _omitted_here(data, "evidence claims"),
    ]
    if not records:
        return "".join(parts)
    rows = []
    for r in records:
        claim = "(sensitive)" if r["sensitive"] else r["claim"]
        facts = [f"{_code(r['kind'])}, {_code(r['confidence'])}, {_code(r['tool'])}"]
        if r.get("provenance") and r["provenance"] != "agent":
            facts.append(f"origin: {text(r['provenance'])}")
        if r.get("replica"):
            facts.append(f"[from replica {_code(r['replica'])}]")
        where = _location(data, r)
        if where:
            facts.append(where)
        labels = " ".join(text(label) for label in r.get("labels") or [])
        if r.get("contests"):
            facts.append(f"contests {_code(r['contests'])}")
        if r.get("rawRef"):
            facts.append(f"raw {_code(r['rawRef'])}")
        rows.append(
            f"<tr><td>{_code(r['id'])}<br>{text(r['timestamp'])}</td>"
            f"<td>{'<br>'.join(facts)}{(' ' + labels) if labels else ''}</td>"
            f"<td>{text(claim)}</td></tr>"
        )
    parts.append(
        "<table data-filterable><thead><tr><th>Record</th><th>What and where</th>"
        f"<th>Claim</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    return "".join(parts)


def _timeline(data: Data) -> str:
    timeline = data["timeline"]
    entries = timeline["entries"]
    parts = [
        (
            f"<p>Showing {len(entries)} of {timeline['total']} timeline entries (the newest), "
            "oldest first.</p>"
        ),
        _omitted_here(data, "timeline entries"),
    ]
    if not entries:
        return "".join(parts)
    rows = []
    for e in entries:
        extra = ""
        if e["kind"] == "receipt":
            extra = " " + marker(str(e.get("standing", "")))
        if e.get("origin") and e["origin"] != "agent":
            extra += f" (origin: {text(e['origin'])})"
        if e.get("replica"):
            extra += f" [from replica {_code(e['replica'])}]"
        rows.append(
            f"<tr><td>{text(e['at'])}</td><td>{_code(e['kind'])}</td>"
            f"<td>{_code(e['id'])}</td><td>{_code(e.get('actor') or '-')}</td>"
            f"<td>{text(e['title'])}{extra}</td></tr>"
        )
    parts.append(
        "<table data-filterable><thead><tr><th>At</th><th>Kind</th><th>Id</th><th>Actor</th>"
        f"<th>What</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    return "".join(parts)


def _raw(data: Data) -> str:
    previews = data["previews"]
    parts = [
        (
            f"<p>{len(previews['items'])} of {previews['cited']} raw outputs previewed "
            "(redacted, bounded).</p>"
        ),
        _omitted_here(data, "raw outputs"),
    ]
    for item in previews["items"]:
        head = f"<h3>{_code(item['ref'])} from {_code(item['source'])}</h3>"
        state = item["state"]
        if state == "shown":
            note = " (cut)" if item.get("truncated") else ""
            parts.append(
                f"{head}<p>{text(item.get('size', 0))} bytes{text(note)}</p>"
                f"<pre>{text(item['content'] or '')}</pre>"
            )
        elif state == "directory":
            parts.append(f"{head}<p>A directory of {text(item['files'])} files.</p>")
        else:
            parts.append(f"{head}<p>{marker(state)} not previewed.</p>")
    return "".join(parts)


def _integrity(data: Data) -> str:
    integrity = data["integrity"]
    rows = [
        f"{_code(item['name'])}: {text(item['count'])} lines, head {_code(item['head'] or '-')} "
        + (marker("head ok", tone="ok") if item["headOk"] else marker("head mismatch", tone="bad"))
        for item in integrity["ledgers"]
    ]
    audit = integrity["audit"]
    if audit["ran"]:
        verdict = (
            marker("audit ok", tone="ok") if audit["ok"] else marker("audit failed", tone="bad")
        )
        rows.append(
            f"Audit: {verdict} ({text(audit['errors'])} errors, {text(audit['warnings'])} warnings)"
        )
        rows += [
            f"{_code(f['severity'])} {_code(f['code'])}: {text(f['message'])}"
            for f in audit["findings"]
        ]
    else:
        rows.append(
            f"Audit: {marker('not run')} {text(audit['reason'])}; run "
            f"{_code('cortex case audit ' + data['taskId'])} or report with "
            f"{_code('--full-audit')}"
        )
    replicas = integrity.get("replicas")
    if replicas:
        imported = ", ".join(_code(r["key"]) for r in replicas["imported"]) or "none"
        rows.append(
            f"Replicas: this record is {_code(replicas['local'])}'s; in force "
            f"{_code(replicas['inForce'])}; imported {imported}"
        )
    rows += [f"Warning: {text(w)}" for w in integrity["warnings"]]
    rows.append(
        f"Generated at {text(data['generatedAt'])} by Cortex {text(data['cortexVersion'])}, "
        f"tier {text(data['tier']['index'])} ({text(data['tier']['name'])})"
    )
    return _list(rows)


_SECTIONS = {
    "verdict": _verdict,
    "case": _case,
    "receipts": _receipts,
    "plan": _plan,
    "decisions": _decisions,
    "evidence": _evidence,
    "timeline": _timeline,
    "raw": _raw,
}


def _embedded(data: Data) -> Data:
    """The machine-readable part: who, the verdict and each receipt's standing."""
    return {
        "schema": data["schema"],
        "taskId": data["taskId"],
        "goal": data["goal"],
        "generatedAt": data["generatedAt"],
        "cortexVersion": data["cortexVersion"],
        "verdict": data["verdict"]["status"],
        "tier": data["tier"]["index"],
        "receipts": [
            {
                "id": r["id"],
                "requirement": r["requirement"],
                "claimId": r["claimId"],
                "status": r["status"],
                "standing": r["standing"],
            }
            for r in data["receipts"]
        ],
    }


def render(data: Data) -> str:
    """The page up to (not including) its digest line; `DIGEST_LINE` completes it."""
    verdict = data["verdict"]["status"]
    title = f"Cortex case report {data['taskId']}: {verdict}"
    nav = " ".join(_a(links.fragment(s), text(heading)) for s, heading in links.SECTIONS)
    omitted = data["tier"]["omitted"]
    notice = ""
    if omitted:
        notice = (
            "<p>This report is cut to fit its size cap (tier "
            f"{text(data['tier']['index'])}): "
            + "; ".join(f"{text(e['count'])} {text(e['what'])}" for e in omitted)
            + ". The verdict, the receipts and the decisions are always whole.</p>"
        )
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{text(POLICY)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="{text("Cortex " + data["cortexVersion"])}">',
        f"<title>{text(title)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        '<header id="top">',
        f"<h1>Case report: {_code(data['taskId'])} {marker(verdict)}</h1>",
        f"<nav>{nav}</nav>",
        notice,
        "</header>",
        "<main>",
    ]
    for section, heading in links.SECTIONS:
        if section == "integrity":
            continue
        out.append(f'<section id="{section}"><h2>{text(heading)}</h2>')
        out.append(_SECTIONS[section](data))
        out.append("</section>")
    out += [
        "</main>",
        '<footer id="integrity"><h2>Integrity</h2>',
        _integrity(data),
        f'<script type="application/json" id="cortex-report">{json_data(_embedded(data))}</script>',
        f"<script>{SCRIPT}</script>",
    ]
    return "\n".join(line for line in out if line) + "\n"


def digest_line(digest: str) -> str:
    """The last line: the sha256 of every byte before it, then the closing tags."""
    return (
        f'<p id="report-sha256">Report sha256: <code>{text(digest)}</code> '
        "(of every byte before this line)</p></footer></body></html>\n"
    )
