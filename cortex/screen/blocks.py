"""Blocks of text more than one face draws: key/value grids, warnings, a case's status.

The CLI prints them for `status` and `show`; the studio's detail pane draws the same `show`.
Every value is already `clean` (cortex.screen.text) and goes into a `Text`, never markup.
"""

from __future__ import annotations

from cortex.kernel.envelope import Data
from cortex.screen.ink import Console, Table, Text


def kv(rows: list[tuple[str, str | Text]]) -> Table:
    """Two columns, key in bold.

    At a terminal values fold instead of being cut; in a pipe each row is one plain line, never
    padded or folded (`cortex.screen.ink`).
    """
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")  # ids and refs must print whole, never with an ellipsis
    for key, value in rows:
        table.add_row(key, value if isinstance(value, Text) else Text(value))
    return table


def warnings(console: Console, lines: list[str]) -> None:
    """One yellow `warning:` line each."""
    for warning in lines:
        console.print(Text("warning: ", style="yellow") + Text(warning))


def named_failures(receipt: Data) -> str | None:
    """What a receipt names as failed, `a, b (and 3 more)`, or None when it names nothing."""
    names: list[str] = receipt.get("failing") or []
    if not names:
        return None
    more = max(int(receipt.get("failingTotal") or 0) - len(names), 0)
    return ", ".join(names) + (f" (and {more} more)" if more else "")


def shown_status(receipt: Data) -> str:
    """A receipt's status as people read it: a pass by acknowledgement says so, never `passed`."""
    acknowledged = receipt.get("acknowledged")
    if acknowledged and receipt["status"] == "passed":
        return f"passed by acknowledgement of {acknowledged}"
    return str(receipt["status"])


def failures_label(receipt: Data) -> str:
    """What the names a receipt lists are: failures, or what was acknowledged to let it pass."""
    return "acknowledged" if receipt.get("acknowledged") else "failing"


VERDICT_STYLE = {"verified": "bold green", "partial": "yellow", "failed": "bold red"}


def assessment_rows(assessment: Data) -> list[tuple[str, str | Text]]:
    """The verdict, one row per receipt with its proof or stale mark, then the reasons."""
    verdict = assessment["status"]
    rows: list[tuple[str, str | Text]] = [
        ("assessment", Text(verdict, style=VERDICT_STYLE.get(verdict, "dim")))
    ]
    for receipt in assessment["receipts"]:
        label = f"claim {receipt['claimId']}" if receipt.get("claimId") else receipt["requirement"]
        mark = (
            "proof" if receipt["proof"] else ("stale" if receipt["stale"] else receipt["binding"])
        )
        shown = f"{shown_status(receipt)} ({mark})"
        if receipt.get("contract"):
            shown += f" on {receipt['contract']}"  # what the claim rests on: a test, or a run
        rows.append((f"  {label or receipt['id']}", shown))
        failures = named_failures(receipt)
        if failures:
            rows.append((f"    {failures_label(receipt)}", failures))
    if assessment.get("currency"):
        # Why the receipts are current or stale, e.g. "committed unchanged as 5d6e7f8".
        rows.append(("  code", assessment["currency"]["summary"]))
    rows.extend(("  why", reason) for reason in assessment["reasons"])
    return rows


def observed_rows(observed: Data | None) -> list[tuple[str, str | Text]]:
    """What the host saw the agent do: the last run of each test runner, then every flag."""
    if not observed:
        return []
    runs = observed.get("lastRuns") or []
    rows: list[tuple[str, str | Text]] = [
        ("observed", f"{observed['records']} tool call(s) recorded by the host"
         + (f", {observed['dropped']} dropped" if observed.get("dropped") else "")),
    ]  # fmt: skip
    for run in runs:
        style = "green" if run["outcome"] == "passed" else "bold red"
        line = Text(f"{run['outcome']}", style=style)
        line += Text(f" at {run['at']} by {run['actor']}: {run.get('summary') or '-'}")
        rows.append((f"  last {run['runner']}", line))
    rows.extend(
        (f"  ! {flag['kind'].replace('_', ' ')}", Text(flag["message"], style="yellow"))
        for flag in observed.get("flags") or []
    )
    rows.extend(("  ! activity", Text(p, style="bold red")) for p in observed.get("problems") or [])
    return rows


def status(console: Console, data: Data) -> None:
    """`case status`'s block: the case, its plan, lease, proof and what it waits on."""
    console.print(Text(data["taskId"], style="bold") + Text(f"  {data['status']}", style="cyan"))
    workspace = data["workspace"]
    where = workspace["repository"]
    if workspace.get("branch"):
        where += f" @ {workspace['branch']}"
    opened, head = workspace.get("commitBefore"), data.get("head")
    if head and opened and head != opened:
        where += f" (HEAD {head[:12]}; opened at {opened[:12]})"
    elif head or opened:
        where += f" ({(head or opened)[:12]})"
    store = data["store"]
    counts = data["counts"]
    rows: list[tuple[str, str | Text]] = [
        ("goal", data["goal"]),
        ("mode", f"{data['mode']} (risk {data['risk']})"),
        ("actor", data["actor"]),
        ("revision", str(data["revision"])),
        ("updated", data["updatedAt"]),
        ("workspace", where),
        ("store", f"{store['id']} ({store['kind']})"),
        ("records", ", ".join(f"{n} {name}" for name, n in counts.items())),
    ]
    rows.extend(
        (f"criterion {c['id']}", c["statement"]) for c in data.get("acceptanceCriteria", [])
    )
    if data.get("statusReason"):
        rows.insert(1, ("reason", data["statusReason"]))
    if data.get("pausedFrom"):
        rows.insert(1, ("paused in", data["pausedFrom"]))
    lease = data.get("lease")
    if lease:
        rows.append(("lease", f"{lease['actor']} ({lease['state']}, until {lease['expiresAt']})"))
    plan = data.get("plan")
    if plan:
        boundary = plan["changeBoundary"]
        scope = ", ".join(boundary["files"] + boundary["symbols"]) or "-"
        count = plan["hypotheses"]
        noun = "hypothesis" if count == 1 else "hypotheses"
        rows.append(("plan", f"revision {plan['planRevision']}: {count} {noun}"))
        rows.append(("boundary", scope))
        rows.append(("verify", ", ".join(plan["verificationRequired"]) or "-"))
        rows.append(("uncertainty", plan["uncertainty"]))
    rows.extend(
        (f"open {h['id']}", f"[{h['status']}] {h['statement']}")
        for h in data.get("unresolvedHypotheses", [])
    )
    if data.get("verification"):
        rows.extend(assessment_rows(data["verification"]))
    binding = data.get("binding") or {}
    if binding.get("possible") is False:
        rows.append(("binding", Text(binding.get("reason") or "not possible", style="yellow")))
    decision = data.get("pendingDecision")
    if decision:
        options = ", ".join(f"{o['id']}={o['label']}" for o in decision["options"])
        rows.append(("waiting on", f"{decision['id']}: {decision['question']} ({options})"))
    rows.extend(
        (f"child {c['taskId']}", c.get("status") or c.get("error", {}).get("message", "?"))
        for c in data.get("children", [])
    )
    rows.extend(observed_rows(data.get("observed")))
    console.print(kv(rows))
    if store.get("note"):
        console.print(Text(store["note"], style="dim"))
    warnings(console, data.get("warnings", []))
