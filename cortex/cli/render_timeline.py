"""Text for `cortex case timeline`: one line per entry, then where the list stands.

`render` passes the data through `safe` before it gets here, and every value goes into a
`Text`, so nothing a case holds is obeyed as a terminal control or as rich markup.
"""

from __future__ import annotations

import shlex

from cortex.kernel.envelope import Data
from cortex.screen.ink import Console, Text

_ACTOR_WIDTH = 16
"""Actors are padded to a column up to this width; a longer name pushes its line's title."""


def _facts(entry: Data) -> list[str]:
    """The few facts worth a glance, by kind (the title already says what happened).

    A record from another replica says so first, whatever its kind (docs/design/trust.md).
    """
    replica = [f"from {entry['replica']}"] if entry.get("replica") else []
    return replica + _kind_facts(entry)


def _kind_facts(entry: Data) -> list[str]:
    kind = entry["kind"]
    if kind == "evidence":
        facts = [entry["evidenceKind"], entry["confidence"]]
        # Who said it, when it was not the agent itself (docs/design/trust.md).
        facts += [entry["origin"]] if entry.get("origin", "agent") != "agent" else []
        facts += ["raw"] if entry["hasRaw"] else []
        return facts + (["sensitive"] if entry["sensitive"] else [])
    if kind == "receipt":
        status = entry["status"]
        if entry.get("acknowledged") and status == "passed":
            status = f"passed by acknowledgement of {entry['acknowledged']}"
        return [status, entry["binding"], entry["standing"]]
    if kind == "decision" and entry["event"] == "request":
        return [entry["status"]]
    return []


def _next_page(data: Data) -> str:
    """The command that prints the next page: the same filters, and the cursor."""
    words = ["cortex", "case", "timeline", data["taskId"]]
    filters = data["filters"]
    for kind in filters["kinds"]:
        words += ["--kind", kind]
    for option in ("actor", "since", "until"):
        if filters[option] is not None:
            words += [f"--{option}", filters[option]]
    words += ["--limit", str(data["limit"]), "--cursor", data["nextCursor"]]
    return " ".join(shlex.quote(word) for word in words)


def timeline(console: Console, data: Data) -> None:
    """Print a timeline page (or the entries around an anchor)."""
    console.print(
        Text(f"Timeline of {data['taskId']}", style="bold")
        + Text(f" at revision {data['revision']}")
    )
    entries = data["entries"]
    if not entries:
        console.print(Text("no entries match", style="dim"))
    width = min(max((len(e["actor"] or "-") for e in entries), default=1), _ACTOR_WIDTH)
    for entry in entries:
        anchored = entry.get("anchor", False)
        line = Text("> " if anchored else "  ", style="bold yellow")
        line += Text(f"{entry['at']}  ")
        line += Text(f"{entry['kind']:<8}", style="cyan")
        line += Text(f"  {entry['actor'] or '-':<{width}}  ")
        line += Text(entry["title"], style="bold" if anchored else "")
        for label in entry.get("labels", []):
            line += Text(" ") + Text(label, style="yellow")
        facts = _facts(entry)
        if facts:
            line += Text(f"  [{', '.join(facts)}]", style="dim")
        line += Text(f"  {entry['id']}", style="dim")
        console.print(line)
    anchor = data.get("anchor")
    summary = f"showing {data['returned']} of {data['total']}"
    if anchor is not None:
        summary += (
            f": {anchor['id']} (anchor) with {anchor['before']} matching entries before it "
            f"and {anchor['after']} after it"
        )
        if not anchor["matchesFilters"]:
            summary += "; the anchor itself does not match the filters"
    console.print(Text(summary, style="dim"))
    if data.get("nextCursor"):
        console.print(Text("next page: ", style="dim") + Text(_next_page(data)))
    for warning in data.get("warnings", []):
        console.print(Text("warning: ", style="yellow") + Text(warning))
