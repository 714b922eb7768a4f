"""The Markdown form of a handoff packet, rendered from the packet alone.

Only this module writes headings; every value from the case goes through `markdown.inline`,
`markdown.quote` or `markdown.code`, so no goal, claim or note can pose as a heading, a link,
HTML or a verdict of its own (docs/design/handoff.md).
"""

from __future__ import annotations

from cortex.kernel.envelope import Data
from cortex.kernel.provenance import shown
from cortex.kernel.views.markdown import code, inline, quote


def render(packet: Data) -> str:
    """The whole document, ending with one newline."""
    lines: list[str] = []
    for section in (
        _header,
        _case,
        _criteria,
        _plan,
        _verification,
        _decisions,
        _evidence,
        _omitted,
        _actions,
        _warnings,
    ):
        lines += section(packet)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def _codes(values: list[str]) -> str:
    return ", ".join(code(v) for v in values) or "none"


def _header(p: Data) -> list[str]:
    meta = p["handoff"]
    tier = f"tier {meta['tier']} of {meta['tiers'] - 1} ({meta['tierName']})"
    lines = [
        f"# Handoff of {code(p['taskId'])}",
        "",
        (
            f"Generated at {inline(meta['generatedAt'])} from case revision {p['revision']}; "
            f"{tier}, within a budget of {meta['budget']} bytes."
        ),
    ]
    if meta["omitted"]:
        lines.append("Some of the case is left out; the section Left out says what and where.")
    lines += ["", "## Goal", "", *quote(p["goal"]), ""]
    return lines


def _case(p: Data) -> list[str]:
    phase = code(p["phase"])
    if p.get("pausedFrom"):
        phase += f", paused from {code(p['pausedFrom'])}"
    workspace = p["workspace"]
    where = f"{code(workspace['repository'])} ({inline(workspace['kind'])})"
    where += f" at {code(workspace['root'])}"
    if workspace.get("branch"):
        where += f", branch {code(workspace['branch'])}"
    if workspace.get("commitBefore"):
        where += f", opened at commit {code(workspace['commitBefore'])}"
    store = p["store"]
    counts = ", ".join(f"{n} {name}" for name, n in p["counts"].items())
    lines = [
        "## Case",
        "",
        f"- Phase: {phase}",
        f"- Mode: {code(p['mode'])}, risk {code(p['risk'])}",
        (
            f"- Opened by {code(p['openedBy'])} at {inline(p['createdAt'])}; "
            f"last changed at {inline(p['updatedAt'])}"
        ),
        f"- Workspace: {where}",
        f"- Store: {code(store['id'])} at {code(store['root'])}",
        f"- Records: {inline(counts)}",
    ]
    if p.get("statusReason"):
        lines.append(f"- Reason: {inline(p['statusReason'])}")
    replicas = p.get("replicas")
    if replicas:
        parts = [
            f"{code(r['key'])} from {inline(r['source'])} ({r['records']} records"
            + (", forked" if r["forked"] else "")
            + ")"
            for r in replicas["imported"]
        ]
        lines.append(
            f"- Shared: this machine is {code(replicas['local'])}; the state in force is "
            f"{code(replicas['inForce'])}'s; imported {', '.join(parts) or 'none'}; "
            f"{replicas['conflicts']} conflict(s) recorded"
        )
    lease = p.get("lease")
    if lease:
        lines.append(
            f"- Change lease: {code(lease['actor'])}, {inline(lease['state'])}, "
            f"until {inline(lease['expiresAt'])}"
        )
    else:
        lines.append("- Change lease: none")
    if p.get("parentTaskId"):
        lines.append(f"- Parent case: {code(p['parentTaskId'])}")
    for child in p["children"]:
        state = (
            f"unreadable: {inline(child['error'])}"
            if "error" in child
            else f"{code(child['phase'])}: {inline(child['goal'])}"
        )
        lines.append(f"- Child case {code(child['taskId'])}: {state}")
    return [*lines, ""]


def _criteria(p: Data) -> list[str]:
    lines = ["## Acceptance criteria", ""]
    criteria = p["acceptanceCriteria"]
    if not criteria:
        return [*lines, "None.", ""]
    lines += [f"- {code(c['id'])}: {inline(c['statement'])}" for c in criteria]
    return [*lines, ""]


def _plan(p: Data) -> list[str]:
    plan = p["plan"]
    if plan is None:
        return ["## Plan", "", "No plan yet.", ""]
    boundary = plan["changeBoundary"]
    lines = [
        f"## Plan (revision {plan['planRevision']})",
        "",
        (
            f"- Committed by {code(plan['actor'])} at {inline(plan['createdAt'])}; "
            f"recorded as {code(plan['evidenceId'])}"
        ),
    ]
    if plan.get("reason"):
        lines.append(f"- Why it changed: {inline(plan['reason'])}")
    lines += [
        f"- Change boundary, files: {_codes(boundary['files'])}",
        f"- Change boundary, symbols: {_codes(boundary['symbols'])}",
    ]
    if boundary.get("reason"):
        lines.append(f"- Why this boundary: {inline(boundary['reason'])}")
    lines += [
        f"- Required verifiers: {_codes(plan['verificationRequired'])}",
        f"- Uncertainty: {inline(plan['uncertainty'])}",
        "",
        "### Hypotheses",
        "",
    ]
    if not p["hypotheses"]:
        lines += ["None.", ""]
    for hypothesis in p["hypotheses"]:
        lines.append(
            f"- {code(hypothesis['id'])} **{inline(hypothesis['status'])}**: "
            f"{inline(hypothesis['statement'])}"
        )
        lines.append(f"  - Disproved if: {inline(hypothesis['disproof'])}")
        if hypothesis["supports"]:
            lines.append(f"  - Supported by: {_codes(hypothesis['supports'])}")
        latest = hypothesis.get("latest")
        if latest:
            line = (
                f"  - Latest resolution ({hypothesis['resolutions']} in all): "
                f"{code(latest['status'])} by {code(latest['actor'])} at {inline(latest['at'])}: "
                f"{inline(latest['reason'])}"
            )
            if latest["evidence"]:
                line += f" (evidence {_codes(latest['evidence'])})"
            lines.append(line)
    return [*lines, ""]


def _receipt_line(receipt: Data) -> str:
    label = (
        f"claim {code(receipt['claimId'])}"
        if receipt.get("claimId")
        else code(receipt.get("requirement") or receipt["id"])
    )
    if receipt["proof"]:
        mark = "proof"
    elif receipt["stale"]:
        mark = "STALE: the code or the plan changed since it ran"
    else:
        mark = "UNBOUND: it proves nothing"
    shown = receipt["status"]
    if receipt.get("acknowledged") and shown == "passed":
        shown = f"passed by acknowledgement of {receipt['acknowledged']}"
    return f"- {label}: **{inline(shown)}**, {mark} ({code(receipt['id'])})"


def _verification(p: Data) -> list[str]:
    v = p["verification"]
    lines = [f"## Verification: **{inline(v['status'])}**", ""]
    if v.get("batchId"):
        lines.append(f"Latest batch {code(v['batchId'])}, {inline(v['binding'])}.")
    if v.get("currency"):
        lines.append(f"Code: {inline(v['currency']['summary'])}.")
    if not v.get("bindingPossible"):
        reason = v.get("bindingReason") or "the workspace could not be captured"
        lines.append(f"Nothing can be bound here now: {inline(reason)}.")
    if lines[-1]:
        lines.append("")
    for receipt in v["receipts"]:
        lines.append(_receipt_line(receipt))
        if receipt.get("claim"):
            label = "Claim" if receipt["purpose"] == "named_claim" else "Summary"
            lines.append(f"  - {label}: {inline(receipt['claim'])}")
        if receipt.get("artifact"):
            lines.append(f"  - Output: {code(receipt['artifact'])}")
        lines += [f"  - Note: {inline(note)}" for note in receipt.get("notes", [])]
    if v["receipts"]:
        lines.append("")
    # The reasons `assess` gives already name what is missing, stale or failed.
    lines += [f"- Why: {inline(reason)}" for reason in v["reasons"]]
    return [*lines, ""]


def _decisions(p: Data) -> list[str]:
    lines = ["## Decisions", ""]
    if not p["decisions"]:
        return [*lines, "None.", ""]
    for decision in p["decisions"]:
        head = f"### {code(decision['id'])}: {inline(decision['status'])}"
        if decision.get("answer"):
            head += f", answered {code(decision['answer'])} by {code(decision['responder'])}"
        lines += [head, "", *quote(decision["question"]), ""]
        if decision.get("labels"):
            lines.append(f"- Labels: {inline(' '.join(decision['labels']))}")
        if decision.get("subject"):
            lines.append(f"- Subject: {inline(decision['subject'])}")
        for option in decision["options"]:
            line = f"- {code(option['id'])}: {inline(option['label'])}"
            if option.get("consequence"):
                line += f" (then: {inline(option['consequence'])})"
            lines.append(line)
        rejected = decision.get("alreadyRejected") or []
        if rejected:
            shown = ", ".join(f"{inline(o['label'])} ({code(o['id'])})" for o in rejected)
            lines.append(f"- Already rejected: {shown}")
        lines.append(
            f"- Asked by {code(decision['requester'])} at {inline(decision['requestedAt'])}"
        )
        lines.append("")
    return lines


def _evidence(p: Data) -> list[str]:
    e = p["evidence"]
    lines = [
        "## Evidence",
        "",
        (
            f"{e['shown']} newest of {e['shareable']} shareable records shown, newest first "
            f"({e['total']} in all; {e['sensitiveLeftOut']} sensitive left out)."
        ),
        "",
    ]
    if e["detail"] == "titles":
        lines += [
            f"- {code(r['id'])} {inline(r['timestamp'])} {code(r['kind'])}: {inline(r['title'])}"
            + (f" ({inline(r['origin'])})" if r.get("origin") else "")
            + (f" [from {code(r['replica'])}]" if r.get("replica") else "")
            + (f" {inline(' '.join(r['labels']))}" if r.get("labels") else "")
            for r in e["records"]
        ]
        return [*lines, ""] if e["records"] else lines
    for record in e["records"]:
        lines += _record(record)
    return lines


def _record(r: Data) -> list[str]:
    source = r["source"]
    # The origin as every surface shows it: a person's word, or an agent's report of one.
    by = f"{code(source['tool'])} ({inline(source.get('shown') or shown(source))}"
    by += f", {code(source['actor'])})" if source.get("actor") else ")"
    if source.get("replica"):
        by += f" [from {code(source['replica'])}]"  # recorded on another machine
    lines = [
        f"### {code(r['id'])}: {code(r['kind'])}",
        "",
        f"- At {inline(r['timestamp'])} from {by}, confidence {code(r['confidence'])}",
    ]
    if source.get("uri"):
        lines.append(f"- Source: {code(source['uri'])}")
    location = r.get("location")
    if location:
        where = code(location.get("file") or "-")
        if location.get("startLine"):
            where += f" lines {location['startLine']}-{location['endLine']}"
        if location.get("symbol"):
            where += f", symbol {code(location['symbol'])}"
        lines.append(f"- Location: {where}")
    if r.get("labels"):
        lines.append(f"- Labels: {inline(' '.join(r['labels']))}")
    if r.get("contests"):
        lines.append(f"- Contests: {code(r['contests'])}")
    if r.get("rawRef"):
        lines.append(f"- Raw output: {code(r['rawRef'])}")
    if r["derivedFrom"]:
        lines.append(f"- Derived from: {_codes(r['derivedFrom'])}")
    return [*lines, "", *quote(r["claim"]), ""]


def _omitted(p: Data) -> list[str]:
    entries = p["handoff"]["omitted"]
    if not entries:
        return []
    lines = ["## Left out", ""]
    for entry in entries:
        line = f"- {entry['count']} {inline(entry['what'])} (tier {entry['tier']}): "
        line += inline(entry["note"])
        if entry.get("command"):
            line += f" {code(entry['command'])}"
        lines.append(line)
    return [*lines, ""]


def _actions(p: Data) -> list[str]:
    lines = ["## Next actions", ""]
    if not p["nextActions"]:
        return [*lines, "None: the case is closed.", ""]
    lines += [f"- {code(a['command'])}: {inline(a['reason'])}" for a in p["nextActions"]]
    return [*lines, ""]


def _warnings(p: Data) -> list[str]:
    if not p["warnings"]:
        return []
    return ["## Warnings", "", *(f"- {inline(w)}" for w in p["warnings"]), ""]
