"""Text for people: an envelope rendered. Imported only when output is not `--json`.

Every value that came from a case is wrapped in `Text`, never interpreted as markup, so a claim
like "[red]x[/red]" prints as written. Into a pipe or a file the text is plain and rich is not
loaded; at a terminal rich draws it (cortex.screen.ink).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import IO

import msgspec

from cortex.cli import render_retention, render_setup, render_share
from cortex.kernel.envelope import Data, Envelope
from cortex.screen.blocks import assessment_rows as _assessment_rows
from cortex.screen.blocks import failures_label as _failures_label
from cortex.screen.blocks import kv as _kv
from cortex.screen.blocks import named_failures as _named_failures
from cortex.screen.blocks import shown_status as _shown_status
from cortex.screen.blocks import status as _status
from cortex.screen.blocks import warnings as _warnings
from cortex.screen.columns import Column, print_table
from cortex.screen.ink import Console, Text, console_for
from cortex.screen.text import clean, safe


def _open(console: Console, data: Data) -> None:
    verb = "Opened" if data["created"] else "Returned existing"
    console.print(Text(f"{verb} ", style="bold green") + Text(data["taskId"], style="bold"))
    workspace = data["workspace"]
    where = workspace["repository"]
    if workspace.get("branch"):
        where += f" @ {workspace['branch']}"
    console.print(
        _kv(
            [
                ("goal", data["goal"]),
                ("mode", f"{data['mode']} (risk {data['risk']})"),
                ("workspace", where),
                ("case", data["path"]),
            ]
        )
    )
    from cortex.cli.render_recall import brief

    brief(console, data.get("brief"))
    _warnings(console, data.get("warnings", []))


def _planned(console: Console, data: Data) -> None:
    console.print(
        Text(f"Plan revision {data['planRevision']} ", style="bold green")
        + Text(f"committed to {data['taskId']} (now {data['status']})")
    )
    for hypothesis in data["hypotheses"]:
        console.print(Text(f"  {hypothesis['id']}  ", style="bold") + Text(hypothesis["statement"]))
        console.print(Text("    disproved if: ", style="dim") + Text(hypothesis["disproof"]))
    _warnings(console, data.get("warnings", []))


def _resolved(console: Console, data: Data) -> None:
    hypothesis = data["hypothesis"]
    console.print(
        Text(f"{hypothesis['id']} ", style="bold")
        + Text(hypothesis["status"], style="cyan")
        + Text(f"  {hypothesis['statement']}")
    )


def _lease(console: Console, data: Data) -> None:
    lease = data.get("lease") or {}
    console.print(
        Text(f"Lease {data['result']}", style="bold green")
        + Text(
            f": {lease.get('actor', '-')} until {lease.get('expiresAt', '-')} ({data['status']})"
        )
    )
    if data.get("session"):
        console.print(
            Text("held through this host session: ", style="bold")
            + Text("its commands and MCP server need no token")
        )
    token = data.get("leaseToken")
    if token:
        # Shown this once; the case keeps only its digest (docs/design/trust.md).
        console.print(Text("lease token (shown once): ", style="bold") + Text(token))
        console.print(
            Text("lease-bound commands read it from --lease-token or: ", style="dim")
            + Text(f"export CORTEX_LEASE_TOKEN={token}")
        )


def _decision(console: Console, data: Data) -> None:
    decision = data["decision"]
    verb = {"pending": "Waiting on", "answered": "Answered", "withdrawn": "Withdrawn"}
    console.print(
        Text(f"{verb.get(decision['status'], decision['status'])} ", style="bold green")
        + Text(decision["id"], style="bold")
        + Text(f" ({data['taskId']} is {data['status']})")
    )
    console.print(Text(f"  {decision['question']}"))
    if decision.get("subject"):
        console.print(Text(f"  subject: {decision['subject']}", style="dim"))
    for option in decision["options"]:
        mark = "*" if option["id"] == decision.get("answer") else " "
        line = f" {mark} {option['id']}: {option['label']}"
        if option.get("consequence"):
            line += f" ({option['consequence']})"
        console.print(Text(line))


def _decisions(console: Console, data: Data) -> None:
    if not data["decisions"]:
        console.print(Text(f"No decisions in {data['taskId']}", style="dim"))
    for decision in data["decisions"]:
        answer = (
            f" -> {decision['answer']} by {decision['responder']}" if decision.get("answer") else ""
        )
        if decision.get("unattended"):
            answer += f" (unattended, for {decision['unattended']})"
        line = (
            Text(f"{decision['id']} ", style="bold")
            + Text(decision["status"], style="cyan")
            + Text(f"  {decision['question']}{answer}")
        )
        for label in decision.get("labels", []):
            line += Text(" ") + Text(label, style="yellow")
        console.print(line)
        if decision.get("subject"):
            console.print(Text(f"    subject: {decision['subject']}", style="dim"))
        rejected = decision.get("alreadyRejected") or []
        if rejected:
            shown = ", ".join(f"{o['label']} ({o['id']})" for o in rejected)
            console.print(Text(f"    already rejected: {shown}", style="dim"))


def _closed(console: Console, data: Data) -> None:
    line = Text(f"{data['taskId']} is {data['status']}", style="bold")
    line += Text(f": {data['reason']}")
    if data.get("resumesIn"):
        line += Text(f" (unblock returns it to {data['resumesIn']})", style="dim")
    console.print(line)


_LIST_COLUMNS = (
    Column("task"),
    Column("status"),
    Column("rev", priority=4),
    Column("evidence", priority=3),
    Column("updated", priority=2),
    Column("goal", flexible=True),
)


def _list(console: Console, data: Data) -> None:
    items = data["items"]
    if not items:
        console.print(Text(f"No cases in {data['store']['root']}", style="dim"))
        return
    rows: list[list[Text]] = []
    for item in items:
        if "error" in item:
            rows.append(
                [
                    Text(item["taskId"]),
                    Text("unreadable", style="red"),
                    Text(""),
                    Text(""),
                    Text(""),
                    Text(item["error"]["message"], style="red"),
                ]
            )
            continue
        rows.append(
            [
                Text(item["taskId"]),
                Text(item["status"], style="cyan"),
                Text(str(item["revision"])),
                Text(str(item["evidence"])),
                Text(item["updatedAt"]),
                Text(item["goal"]),
            ]
        )
    print_table(console, _LIST_COLUMNS, rows)
    console.print(Text(f"{len(items)} of {data['total']} case(s)", style="dim"))


def _recorded(console: Console, data: Data) -> None:
    record = data["evidence"]
    line = Text("Recorded ", style="bold green") + Text(record["id"], style="bold")
    line += Text(f" in {data['taskId']} (revision {data['revision']})")
    if record["sensitivity"] == "sensitive":
        line += Text("  sensitive", style="yellow")
    console.print(line)
    _warnings(console, data.get("recovered", []))


def _evidence(console: Console, data: Data) -> None:
    record = data["evidence"]
    source = record["source"]
    rows: list[tuple[str, str | Text]] = [
        ("id", record["id"]),
        ("time", record["timestamp"]),
        ("kind", record["kind"]),
        ("claim", record["claim"]),
        ("source", f"{source['tool']} ({source['origin']}, {source.get('actor') or '-'})"),
        ("confidence", record["confidence"]),
        ("sensitivity", record["sensitivity"]),
    ]
    if source.get("uri"):
        rows.append(("uri", source["uri"]))
    location = record.get("location")
    if location:
        where = location.get("file") or ""
        if location.get("startLine"):
            where += f":{location['startLine']}-{location['endLine']}"
        if location.get("symbol"):
            where += f" ({location['symbol']})"
        rows.append(("location", where))
    if record.get("rawRef"):
        rows.append(("raw", record["rawRef"]))
    if record.get("derivedFrom"):
        rows.append(("derived from", ", ".join(record["derivedFrom"])))
    console.print(_kv(rows))


def _audit(console: Console, data: Data) -> None:
    total = sum(data["records"].values())
    verdict = Text("ok", style="bold green") if data["ok"] else Text("FAILED", style="bold red")
    replicas = data.get("replicas") or []
    scope = f"{total} ledger records"
    if replicas:
        noun = "replica" if len(replicas) == 1 else "replicas"
        scope += f" of this machine and {len(replicas)} imported {noun}"
    console.print(
        Text(f"Audit of {data['taskId']} at revision {data['revision']}: ")
        + verdict
        + Text(f" ({scope})")
    )
    for finding in data["errors"] + data["warnings"]:
        style = "red" if finding["severity"] == "error" else "yellow"
        where = f" [{finding['file']}]" if finding.get("file") else ""
        console.print(
            Text(f"{finding['severity']} {finding['code']}{where}: ", style=style)
            + Text(finding["message"])
        )


def _verified(console: Console, data: Data) -> None:
    batch = data["batch"]
    style = "bold green" if batch["binding"] == "bound" else "yellow"
    console.print(
        Text(f"Batch {batch['id']} ", style="bold")
        + Text(batch["binding"], style=style)
        + Text(f" to {(batch.get('revision') or '-')[:12]} {batch.get('dirtyDigest') or ''}")
    )
    rows: list[tuple[str, str | Text]] = []
    for receipt in data["receipts"]:
        text = receipt["claim"]
        if receipt.get("claimId"):
            on = f" (on {receipt['contract']})" if receipt.get("contract") else ""
            text = f"claim {receipt['claimId']}{on}: {text}"
        rows.append((_shown_status(receipt), text))
        rows.extend(("", f"  {note}") for note in receipt["notes"])
        failures = _named_failures(receipt)
        if failures:
            rows.append(("", f"  {_failures_label(receipt)}: {failures}"))
    rows.extend(("unbound", reason) for reason in batch["reasons"])
    console.print(_kv(rows))
    console.print(_kv(_assessment_rows(data["assessment"])[:1]))
    _warnings(console, data.get("warnings", []))


def _completed(console: Console, data: Data) -> None:
    verdict = data["assessment"]["status"]
    console.print(
        Text(f"{data['taskId']} is {data['status']}", style="bold green")
        + Text(f" (verification: {verdict})")
    )
    console.print(Text(f"summary: {data['summary']}"))
    if data.get("acknowledged"):
        console.print(Text(data["acknowledged"], style="yellow"))


def _attested(console: Console, data: Data) -> None:
    state = "current" if data["current"] else "stale (the code changed since)"
    console.print(Text(f"Statement for batch {data['batchId']}, {state}:", style="bold"))
    console.print(Text(msgspec.json.format(msgspec.json.encode(data["statement"])).decode()))


def _artifact(console: Console, data: Data) -> None:
    if data.get("kind") == "directory":
        _listing(console, data)
        return
    facts = f"{data['bytesReturned']} of {data['size']} bytes, {data['encoding']}"
    if data["truncated"]:
        facts += ", truncated"
    if data["sensitive"]:
        facts += ", sensitive"
    where = f"{data['ref']} {data['path']}" if data.get("path") else data["ref"]
    console.print(Text(f"{where} ({facts})", style="bold"))
    console.print(Text(data["content"]))


def _listing(console: Console, data: Data) -> None:
    """A directory artifact: its files (read one with --path) and what its capture left out."""
    noun = "file" if data["count"] == 1 else "files"
    console.print(Text(f"{data['ref']} (directory, {data['count']} {noun})", style="bold"))
    for item in data["files"]:
        console.print(Text(f"  {item['size']:>10}  {item['path']}"))
    for item in data["skipped"]:
        console.print(Text(f"  {'skipped':>10}  {item['path']}: {item['reason']}", style="dim"))
    if data["truncated"]:
        console.print(Text("  (the capture stopped at its bounds)", style="yellow"))


def _show(console: Console, data: Data) -> None:
    from cortex.screen.show import show

    show(console, data)


def _studio(console: Console, data: Data) -> None:
    # What the session wrote, left on the terminal once the board is gone.
    for answered in data["answered"]:
        console.print(
            Text("Answered ", style="bold green")
            + Text(answered["decisionId"], style="bold")
            + Text(
                f" of {answered['taskId']} with {answered['option']}"
                f" ({answered['taskId']} is {answered['status']})"
            )
        )


def _report(console: Console, data: Data) -> None:
    """The report itself, or where it was written.

    The launcher prints a report's answer without rich (`cortex.report.command.text_of`); this
    is the table's entry for it, used if that path ever fails.
    """
    if data.get("document") is not None:
        console.file.write(data["document"])
        console.file.flush()
        return
    console.print(
        Text("Wrote ", style="bold green")
        + Text(f"the report of {data['taskId']} to {data['path']} ")
        + Text(
            f"({data['format']}, {data['bytes']} of at most {data['maxBytes']} bytes; verdict "
            f"{data['verdict']}; tier {data['tier']}, {data['tierName']}; sha256 "
            f"{data['sha256']})",
            style="dim",
        )
    )
    for entry in data["omitted"]:
        console.print(Text(f"  left out: {entry['count']} {entry['what']}", style="dim"))
    _warnings(console, data.get("warnings", []))


def _review(console: Console, data: Data) -> None:
    """The merge gate's verdict (also on a refusal: exit 5 still prints it on stdout)."""
    if data.get("document") is not None:
        console.file.write(data["document"])
        console.file.flush()
        return
    good = data["verdict"] == "approve"
    console.print(
        Text(f"{data['verdict']}", style="bold green" if good else "bold red")
        + Text(f"  {data['base']['ref']}..{data['head']['ref']}, {data['commits']} commit(s)")
    )
    policy = data.get("policy") or {}
    if policy:
        console.print(Text(f"  accepts {policy['accept']} proof ({policy['from']})", style="dim"))
    for case in data["cases"]:
        state = f"{case['phase'] or 'missing'}, {case['assessment'] or '-'}"
        proof = case.get("provenance") or {}
        origin = proof.get("origin")
        if origin:
            state += f", proof from {origin}"
            if proof.get("source"):
                state += f" ({proof['source']})"
            if proof.get("reproduced"):
                state += ", reproduced"
        console.print(
            Text(f"  {case['taskId']} ", style="bold")
            + Text(f"({', '.join(case['claimedBy'])}) {state}")
        )
        if case.get("currency"):
            console.print(Text(f"    {case['currency']}", style="dim"))
        for flag in (case.get("observed") or {}).get("flags", []):
            console.print(Text(f"    ! {flag['kind']}: ", style="yellow") + Text(flag["message"]))
    for problem in data["problems"]:
        where = f"{problem['taskId']} " if problem.get("taskId") else ""
        console.print(
            Text(f"  [{problem['code']}] ", style="bold") + Text(where + problem["message"])
        )
    for seen in data.get("seen", []):
        console.print(Text(f"  seen, not judged: {seen['taskId']} ({seen['phase']})", style="dim"))
    _warnings(console, data.get("warnings", []))


def _timeline(console: Console, data: Data) -> None:
    from cortex.cli.render_timeline import timeline

    timeline(console, data)


def _handoff(console: Console, data: Data) -> None:
    from cortex.cli.render_handoff import handoff

    handoff(console, data)


def _completion(console: Console, data: Data) -> None:
    # Written as it is: a script to source, or the lines a script reads (no markup, no wrap).
    # (The launcher writes it itself, without loading rich; this is for other callers.)
    from cortex.cli.completion import text_of

    console.file.write(text_of(data))


def _stats(name: str) -> Callable[[Console, Data], None]:
    def renderer(console: Console, data: Data) -> None:
        from cortex.cli import render_stats

        getattr(render_stats, name)(console, data)

    return renderer


def _recall(name: str) -> Callable[[Console, Data], None]:
    def renderer(console: Console, data: Data) -> None:
        from cortex.cli import render_recall

        getattr(render_recall, name)(console, data)

    return renderer


_RENDERERS: dict[str, Callable[[Console, Data], None]] = {
    "case.open": _open,
    "case.status": _status,
    "case.show": _show,
    "case.list": _list,
    "case.evidence.add": _recorded,
    "case.note": _recorded,
    "case.read-evidence": _evidence,
    "case.audit": _audit,
    "case.plan": _planned,
    "case.resolve": _resolved,
    "case.begin-change": _lease,
    "case.lease.renew": _lease,
    "case.lease.release": _lease,
    "case.decision.request": _decision,
    "case.decision.answer": _decision,
    "case.decision.list": _decisions,
    "case.block": _closed,
    "case.abort": _closed,
    "case.verify": _verified,
    "case.complete": _completed,
    "case.attest": _attested,
    "case.read-artifact": _artifact,
    "case.timeline": _timeline,
    "case.handoff": _handoff,
    "case.metrics": _stats("metrics"),
    "case.sessions": _stats("sessions"),
    "case.overview": _stats("overview"),
    "studio": _studio,
    "case.unblock": _closed,
    "completion": _completion,
    "recall": _recall("recall"),
    "recall.get": _recall("get"),
    "recall.reindex": _recall("maintained"),
    "recall.rebuild": _recall("maintained"),
    "case.decision.resolve": _recall("resolved"),
    "case.report": _report,
    "review": _review,
    **render_setup.RENDERERS,
    **render_share.RENDERERS,
    **{
        command: getattr(render_retention, name)
        for command, name in (
            ("case.archive", "archived"),
            ("case.unarchive", "archived"),
            ("case.prune", "pruned"),
            ("case.rm", "removed"),
            ("case.forget", "forgotten"),
            ("adopt", "adopted"),
            ("recall.drop", "dropped"),
        )
    },
}


def _candidates(console: Console, ambiguous: Data) -> None:
    """The ids an ambiguous prefix begins, whole, each with its title: pick one and run again."""
    for candidate in ambiguous["candidates"]:
        line = Text(f"  {candidate['id']}")
        if candidate.get("title"):
            line += Text(f"  {candidate['title']}", style="dim")
        console.print(line)
    rest = ambiguous["total"] - len(ambiguous["candidates"])
    if rest > 0:
        console.print(Text(f"  ... and {rest} more", style="dim"))


def render(envelope: Envelope, stdout: IO[str], stderr: IO[str], env: Mapping[str, str]) -> None:
    """Print an envelope for a person: the result on stdout, an error on stderr."""
    del env  # rich reads NO_COLOR, TERM and COLUMNS itself, at a terminal
    data = clean(msgspec.to_builtins(envelope.data)) if envelope.data is not None else None
    out = console_for(stdout)
    renderer = _RENDERERS.get(envelope.command)
    ambiguous = data.get("ambiguous") if isinstance(data, dict) and not envelope.ok else None
    if data is not None and renderer is not None and ambiguous is None:
        renderer(out, data)
    if envelope.error is not None:
        err = console_for(stderr)
        err.print(
            Text(f"error [{envelope.error.code}]: ", style="bold red")
            + Text(safe(envelope.error.message))
        )
        if ambiguous is not None:
            _candidates(err, ambiguous)
    # Next steps are for deciding what to do: shown where that is the question (status, open, a
    # refusal). JSON callers always get them in the envelope.
    shown = {
        "case.status",
        "case.open",
        "case.verify",
        "init",
        "setup.claude",
        "setup.codex",
        "recall",
    }
    if envelope.ok and envelope.command not in shown:
        return
    for action in clean(msgspec.to_builtins(envelope.actions)):
        out.print(
            Text("next: ", style="dim")
            + Text(action["command"])
            + Text(f"  # {action['reason']}", style="dim")
        )
