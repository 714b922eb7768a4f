"""Text for `cortex case sessions`, `case overview` and `case metrics`.

`render` passes the data through `safe` before it gets here, and every value goes into a
`Text`, so nothing a case holds is obeyed as a terminal control or as rich markup.
"""

from __future__ import annotations

from cortex.kernel.envelope import Data
from cortex.screen.columns import Column, print_table
from cortex.screen.ink import Console, Table, Text

_VERDICT_STYLE = {"verified": "bold green", "partial": "yellow", "failed": "bold red"}


def duration(seconds: float | None) -> str:
    """Seconds as people read them: `2d 3h`, `4m 10s`, `0.25s`."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.2f}s" if seconds < 10 else f"{seconds:.0f}s"
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _kv(console: Console, rows: list[tuple[str, str | Text]]) -> None:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, value if isinstance(value, Text) else Text(value))
    console.print(table)


def _counts(counts: dict[str, int]) -> str:
    shown = [f"{name} {n}" for name, n in counts.items() if n]
    return ", ".join(shown) or "none"


def _verdict(verdict: Data | None) -> Text:
    if not verdict or verdict.get("status") is None:
        return Text("-", style="dim")
    status = verdict["status"]
    label = status
    if verdict.get("kind") == "accepted_failed":
        label += " (accepted)"
    elif verdict.get("kind") == "verification_not_possible":
        label += " (not possible)"
    return Text(label, style=_VERDICT_STYLE.get(status, "dim"))


_SESSION_COLUMNS = (
    Column("task"),
    Column("phase"),
    Column("repo", priority=1),
    Column("idle", priority=4),
    Column("verdict", priority=3),
    Column("notes", priority=2),
    Column("goal", flexible=True),
)


def _session_row(item: Data) -> list[Text]:
    if "error" in item:
        return [
            Text(item["taskId"]),
            Text("unreadable", style="red"),
            Text(item["store"]["id"]),
            Text(""),
            Text(""),
            Text(""),
            Text(item["error"]["message"], style="red"),
        ]
    notes = [f"lease {item['lease']['actor']}"] if item["lease"] else []
    notes += ["stale"] if item["stale"] else []
    notes += ["decision"] if item["pendingDecisions"] else []
    return [
        Text(item["taskId"]),
        Text(item["status"], style="cyan" if item["active"] else "dim"),
        Text(item["workspace"]["repository"]),
        Text(duration(item["idleSeconds"])),
        _verdict(item["verdict"]),
        Text(", ".join(notes), style="yellow"),
        Text(item["goal"]),
    ]


def sessions(console: Console, data: Data) -> None:
    """A table of cases, newest update first, then how many of how many."""
    items = data["items"]
    if not items:
        console.print(Text("No cases match", style="dim"))
    else:
        # Ids are what a person copies: whole, always; less important columns give way first
        # (cortex.screen.columns), and the goal takes what is left.
        print_table(console, _SESSION_COLUMNS, [_session_row(i) for i in items])
    footer = f"{len(items)} of {data['total']} case(s) in {data['stores']} store(s)"
    filters = data["filters"]
    shown = [f"repo {filters['repo']}"] if filters["repo"] else []
    shown += ["active"] if filters["active"] else []
    if filters["staleAfterSeconds"] is not None:
        shown.append(f"stale after {duration(filters['staleAfterSeconds'])}")
    shown += [f"matching {filters['query']!r}"] if filters["query"] else []
    if shown:
        footer += "; " + ", ".join(shown)
    console.print(Text(footer, style="dim"))
    if data["verdictsSkipped"]:
        console.print(
            Text(
                f"{data['verdictsSkipped']} verdict(s) not judged: too many workspaces to "
                "capture in one listing (cortex case status TASK judges one)",
                style="dim",
            )
        )


def _common(data: Data) -> list[tuple[str, str | Text]]:
    commands = data["commands"]
    evidence = data["evidence"]
    hypotheses = data["hypotheses"]
    decisions = data["decisions"]
    timing = commands["durationMs"]
    errors = commands["errors"]
    refused = f"{errors['refused']}" + (
        f": {_counts(errors['byOperation'])}" if errors["refused"] else ""
    )
    if errors["capped"]:
        refused += " (the log is full: later refusals are not counted)"
    slowest = sorted(timing["byOperation"].items(), key=lambda item: -item[1]["max"])[:3]
    return [
        ("commands", f"{commands['calls']} ({timing['total']} ms in all, longest {timing['max']})"),
        ("  by operation", _counts(commands["byOperation"])),
        (
            "  slowest",
            ", ".join(f"{name} {duration(t['max'] / 1000)}" for name, t in slowest) or "none",
        ),
        ("  refused", refused),
        ("evidence", f"{evidence['total']} ({evidence['sensitive']} sensitive)"),
        ("  by kind", _counts(evidence["byKind"])),
        (
            "hypotheses",
            (
                f"{hypotheses['total']} ({hypotheses['resolved']} resolved, "
                f"{hypotheses['retired']} retired): {_counts(hypotheses['byStatus'])}"
            ),
        ),
        (
            "decisions",
            (
                f"{decisions['total']}: pending {decisions['pending']}, answered "
                f"{decisions['answered']}, withdrawn {decisions['withdrawn']}"
            ),
        ),
    ]


def metrics(console: Console, data: Data) -> None:
    """One case's numbers, or a store's (no `taskId`)."""
    if "taskId" not in data:
        _store_metrics(console, data)
        return
    timing = data["time"]
    current = timing["current"]
    console.print(Text(data["taskId"], style="bold") + Text(f"  {data['status']}", style="cyan"))
    rows: list[tuple[str, str | Text]] = [
        ("store", data["store"]["id"]),
        ("opened", timing["openedAt"]),
        ("closed", timing["closedAt"] or "-"),
        ("elapsed", duration(timing["elapsedSeconds"])),
    ]
    for phase, seconds in timing["inPhase"].items():
        visits = timing["visits"].get(phase, 0)
        text = f"{duration(seconds)} ({visits} visit{'s' if visits != 1 else ''})"
        if current and current["phase"] == phase:
            text += f", current since {current['since']}"
        rows.append((f"  {phase}", text))
    rows += _common(data)
    verification = data["verification"]
    required = verification["required"]
    if required:
        covered = verification["covered"] or []
        rows.append(
            (
                "coverage",
                (
                    f"{len(covered)} of {len(required)} required verifier(s) "
                    f"({_percent(verification['coverage'])}): {', '.join(required)}"
                ),
            )
        )
        if verification["missing"]:
            rows.append(("  without a pass", ", ".join(verification["missing"])))
    rows.append(
        (
            "verdict now",
            _verdict({"status": verification["verdict"]}) + Text(f" ({_batches(data)})"),
        )
    )
    completion = data["completion"]
    if completion:
        rows.append(
            (
                "completed as",
                _verdict({"status": completion["verdict"], "kind": completion["kind"]})
                + Text(f" after {duration(completion['seconds'])}"),
            )
        )
    _kv(console, rows)
    for warning in data["warnings"]:
        console.print(Text("warning: ", style="yellow") + Text(warning))


def _batches(data: Data) -> str:
    count = data["verification"]["batches"]
    return f"{count} batch{'es' if count != 1 else ''}"


def _store_metrics(console: Console, data: Data) -> None:
    store = data["store"]
    console.print(Text(f"Store {store['id']}", style="bold") + Text(f"  {store['root']}"))
    rows: list[tuple[str, str | Text]] = [
        ("cases", f"{data['cases']} ({data['unreadable']} unreadable)"),
        ("by phase", _counts(data["byPhase"])),
    ]
    rows += [(f"  {p}", duration(s)) for p, s in data["time"]["inPhase"].items()]
    rows += _common(data)
    verification = data["verification"]
    rows.append(
        (
            "coverage",
            (
                f"{verification['covered']} of {verification['required']} required verifier(s) "
                f"across {verification['activeCases']} open case(s) "
                f"({_percent(verification['coverage'])})"
            ),
        )
    )
    rows.append(("  verdicts now", _counts(verification["byVerdict"])))
    completion = data["completion"]
    spread = completion["timeToComplete"]
    rows += [
        (
            "complete",
            (
                f"{completion['complete']}: {completion['verified']} verified "
                f"({_percent(completion['verifiedRate'])}), "
                f"{completion['acceptedFailed']} accepted failed, "
                f"{completion['verificationNotPossible']} not possible, "
                f"{completion['unknown']} unknown"
            ),
        ),
        (
            "time to complete",
            f"median {duration(spread['medianSeconds'])}, mean {duration(spread['meanSeconds'])}",
        ),
    ]
    rows += [(f"unreadable {u['taskId']}", u["error"]["message"]) for u in data["unreadableCases"]]
    _kv(console, rows)


def overview(console: Console, data: Data) -> None:
    """Totals across every store, then one line per repository."""
    completion = data["completion"]
    verified = data["verifiedCompletion"]
    rows: list[tuple[str, str | Text]] = [
        (
            "cases",
            f"{data['total']} in {data['stores']} store(s) ({data['unreadable']} unreadable)",
        ),
        ("by phase", _counts(data["byPhase"])),
        ("active", f"{data['active']} ({data['activeLeases']} with a change lease)"),
        ("waiting on people", str(data["waitingOnDecision"])),
        (f"stale ({duration(data['staleAfterSeconds'])})", str(data["stale"])),
        (
            "completion",
            (
                f"{completion['complete']} of {completion['closed']} closed "
                f"({_percent(completion['ofClosed'])}); of all {completion['readable']} "
                f"({_percent(completion['ofAll'])})"
            ),
        ),
        (
            "verified completion",
            (
                f"{verified['verified']} of {completion['complete']} complete "
                f"({_percent(verified['ofComplete'])}); "
                f"accepted failed {verified['acceptedFailed']}, "
                f"not possible {verified['verificationNotPossible']}, "
                f"unknown {verified['unknown']}"
            ),
        ),
    ]
    for repo in data["byRepo"]:
        name = repo["repository"] or repo["store"]
        text = (
            f"{repo['total']} case(s): {repo['active']} active, {repo['complete']} complete "
            f"({repo['verifiedComplete']} verified)"
        )
        if repo["unreadable"]:
            text += f", {repo['unreadable']} unreadable"
        rows.append((f"  {name}", Text(text) + Text(f"  {repo['store']}", style="dim")))
    rows += [(f"unreadable {u['taskId']}", u["error"]["message"]) for u in data["unreadableCases"]]
    _kv(console, rows)
