"""Text for people: rich rendering of an envelope. Imported only when output is not `--json`.

Every value that came from a case is wrapped in `Text`, never interpreted as rich markup, so a
claim like "[red]x[/red]" prints as written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import IO, Any

import msgspec
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cortex.kernel.envelope import Envelope
from cortex.screen.blocks import assessment_rows as _assessment_rows
from cortex.screen.blocks import kv as _kv
from cortex.screen.blocks import status as _status
from cortex.screen.blocks import warnings as _warnings
from cortex.screen.text import clean, safe

Data = dict[str, Any]


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
    _warnings(console, data.get("warnings", []))


def _planned(console: Console, data: Data) -> None:
    console.print(
        Text(f"Plan revision {data['planRevision']} ", style="bold green")
        + Text(f"committed to {data['taskId']} (now {data['status']})")
    )
    for hypothesis in data["hypotheses"]:
        console.print(Text(f"  {hypothesis['id']}  ", style="bold") + Text(hypothesis["statement"]))
        console.print(Text("    disproved if: ", style="dim") + Text(hypothesis["disproof"]))


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
        console.print(
            Text(f"{decision['id']} ", style="bold")
            + Text(decision["status"], style="cyan")
            + Text(f"  {decision['question']}{answer}")
        )


def _closed(console: Console, data: Data) -> None:
    console.print(
        Text(f"{data['taskId']} is {data['status']}", style="bold") + Text(f": {data['reason']}")
    )


def _list(console: Console, data: Data) -> None:
    items = data["items"]
    if not items:
        console.print(Text(f"No cases in {data['store']['root']}", style="dim"))
        return
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("task", "status", "rev", "evidence", "updated", "goal"):
        table.add_column(column)
    for item in items:
        if "error" in item:
            table.add_row(
                Text(item["taskId"]),
                Text("unreadable", style="red"),
                "",
                "",
                "",
                Text(item["error"]["message"], style="red"),
            )
            continue
        goal = item["goal"] if len(item["goal"]) <= 60 else item["goal"][:57] + "..."
        table.add_row(
            Text(item["taskId"]),
            Text(item["status"], style="cyan"),
            str(item["revision"]),
            str(item["evidence"]),
            Text(item["updatedAt"]),
            Text(goal),
        )
    console.print(table)
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
    console.print(
        Text(f"Audit of {data['taskId']} at revision {data['revision']}: ")
        + verdict
        + Text(f" ({total} ledger records)")
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
            text = f"claim {receipt['claimId']}: {text}"
        rows.append((receipt["status"], text))
        rows.extend(("", f"  {note}") for note in receipt["notes"])
    rows.extend(("unbound", reason) for reason in batch["reasons"])
    console.print(_kv(rows))
    console.print(_kv(_assessment_rows(data["assessment"])[:1]))
    _warnings(console, data.get("warnings", []))


def _completed(console: Console, data: Data) -> None:
    verdict = data["assessment"]["status"]
    console.print(
        Text(f"{data['taskId']} is {data['status']}", style="bold green")
        + Text(f" (verification: {verdict}); summary in {data['summary']}")
    )
    if data.get("acknowledged"):
        console.print(Text(data["acknowledged"], style="yellow"))


def _attested(console: Console, data: Data) -> None:
    state = "current" if data["current"] else "stale (the code changed since)"
    console.print(Text(f"Statement for batch {data['batchId']}, {state}:", style="bold"))
    console.print(Text(msgspec.json.format(msgspec.json.encode(data["statement"])).decode()))


def _trusted(console: Console, data: Data) -> None:
    if "argv" not in data:
        verb = "Revoked" if data["changed"] else "No grant to revoke for"
        console.print(Text(f"{verb} {data['name']} in {data['workspace']}"))
        return
    verb = "Approved" if data["changed"] else "Already approved:"
    console.print(
        Text(f"{verb} {data['name']} ", style="bold green")
        + Text(f"for {data['workspace']}: {' '.join(data['argv'])}")
    )


def _config(console: Console, data: Data) -> None:
    rows: list[tuple[str, str | Text]] = [
        ("workspace", f"{data['workspace']['root']} ({data['workspace']['kind']})"),
        ("store", data["store"]["root"]),
        ("files read", ", ".join(data["files"]) or "none"),
    ]
    for key, value in data["values"].items():
        where = "default" if value["default"] else ", ".join(value["sources"])
        shown = "the central store" if value["value"] is None else value["value"]
        rows.append((key, f"{shown}  [{where}]"))
    for name, verifier in data["verifiers"].items():
        argv = " ".join(verifier["argv"])
        rows.append((f"verifier {name}", f"{argv}  [{verifier['source']}]"))
        rows.append(("", verifier["approval"]))
    console.print(_kv(rows))


def _initialized(console: Console, data: Data) -> None:
    console.print(
        Text(f"Wrote {', '.join(data['written'])} ", style="bold green")
        + Text(f"to {data['file']}")
    )
    for name, argv in data["argv"].items():
        console.print(Text(f"  {name}: {' '.join(argv)}"))
    console.print(Text("plan with: " + " ".join(f"--verify {v}" for v in data["verify"])))


_HOST_NAMES = {"claude": "Claude Code", "codex": "Codex"}


def _setup(console: Console, data: Data) -> None:
    host = f"{_HOST_NAMES.get(data['host'], data['host'])} ({data['scope']} scope)"
    if not data["changed"]:
        console.print(
            Text("Already registered ", style="bold green")
            + Text(f"with {host} in {data['path']}; nothing changed")
        )
    else:
        if data["dryRun"]:
            verb, how = "Would register", "create" if data["created"] else "update"
        else:
            verb, how = "Registered", "created" if data["created"] else "updated"
        console.print(
            Text(f"{verb} ", style="bold yellow" if data["dryRun"] else "bold green")
            + Text(f"cortex with {host}: {how} {data['path']}")
        )
    entry = data["entry"]
    rows: list[tuple[str, str | Text]] = [("runs", " ".join([entry["command"], *entry["args"]]))]
    if data.get("kept"):
        rows.append(("kept", ", ".join(data["kept"])))  # the names only: `env` may hold secrets
    if data.get("backup"):
        label = "would back up to" if data["dryRun"] else "backup"
        rows.append((label, data["backup"]))
    timeout = data.get("toolTimeout") or {}
    if timeout.get("written"):
        shown = entry.get(timeout["setting"], timeout["seconds"])
        rows.append(
            (
                "tool timeout",
                f"{timeout['setting']} = {shown} (a verify here may need {timeout['seconds']} s)",
            )
        )
    elif timeout:
        now = timeout.get("current") or "not set"
        advice = f"Claude Code reads {timeout['setting']} (milliseconds) from its environment: "
        advice += f"set {timeout['setting']}={timeout['milliseconds']} (here it is {now})"
        rows.append(("tool timeout", advice))
    console.print(_kv(rows))
    if data["dryRun"] and data["changed"]:
        console.print(Text("dry run: nothing was written", style="dim"))


_CHECK_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "skipped": "dim"}


def _doctor(console: Console, data: Data) -> None:
    for check in data["checks"]:
        line = Text(f"{check['status']:>7}  ", style=_CHECK_STYLE.get(check["status"], ""))
        line += Text(f"{check['name']}: ", style="bold") + Text(check["detail"])
        console.print(line)
        if check.get("fix") and check["status"] != "ok":
            console.print(Text(f"         fix: {check['fix']}", style="dim"))


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


def _timeline(console: Console, data: Data) -> None:
    from cortex.cli.render_timeline import timeline

    timeline(console, data)


def _handoff(console: Console, data: Data) -> None:
    from cortex.cli.render_handoff import handoff

    handoff(console, data)


def _stats(name: str) -> Callable[[Console, Data], None]:
    def renderer(console: Console, data: Data) -> None:
        from cortex.cli import render_stats

        getattr(render_stats, name)(console, data)

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
    "case.trust": _trusted,
    "config": _config,
    "case.read-artifact": _artifact,
    "init": _initialized,
    "doctor": _doctor,
    "setup.claude": _setup,
    "setup.codex": _setup,
    "case.timeline": _timeline,
    "case.handoff": _handoff,
    "case.metrics": _stats("metrics"),
    "case.sessions": _stats("sessions"),
    "case.overview": _stats("overview"),
    "studio": _studio,
}


def render(envelope: Envelope, stdout: IO[str], stderr: IO[str], env: Mapping[str, str]) -> None:
    """Print an envelope for a person: the result on stdout, an error on stderr."""
    del env  # rich reads NO_COLOR, TERM and COLUMNS itself
    data = clean(msgspec.to_builtins(envelope.data)) if envelope.data is not None else None
    out = Console(file=stdout, highlight=False, soft_wrap=True)
    renderer = _RENDERERS.get(envelope.command)
    if data is not None and renderer is not None:
        renderer(out, data)
    if envelope.error is not None:
        err = Console(file=stderr, highlight=False)
        err.print(
            Text(f"error [{envelope.error.code}]: ", style="bold red")
            + Text(safe(envelope.error.message))
        )
    # Next steps are for deciding what to do: shown where that is the question (status, open, a
    # refusal). JSON callers always get them in the envelope.
    if envelope.ok and envelope.command not in {"case.status", "case.open", "case.verify", "init"}:
        return
    for action in clean(msgspec.to_builtins(envelope.actions)):
        out.print(
            Text("next: ", style="dim")
            + Text(action["command"])
            + Text(f"  # {action['reason']}", style="dim")
        )
