"""Text for `cortex case show`: the status block, then the stepper, time, hypotheses, activity.

The CLI prints it and the studio's detail pane draws it.

The faces pass the data through `clean` (cortex.screen.text) before it gets here, and every
value goes into a `Text`, so nothing a case holds is obeyed as a terminal control or as rich markup.
"""

from __future__ import annotations

from cortex.kernel.envelope import Data
from cortex.screen.blocks import status
from cortex.screen.ink import Console, Text

RECENT_SHOWN = 12
"""Activity lines printed for a person (the JSON answer carries up to SHOW_RECENT_MAX)."""

_MARKS = {"done": ("✓", "green"), "current": ("●", "bold cyan"), "paused": ("‖", "bold yellow")}


def _duration(seconds: float) -> str:
    """A short, human duration: 42s, 5m 03s, 2h 10m, 3d 4h."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h {whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d {whole % 86400 // 3600}h"


def _stepper(steps: list[Data]) -> Text:
    line = Text()
    for index, step in enumerate(steps):
        if index:
            line += Text(" → ", style="dim")
        mark, style = _MARKS.get(step["state"], ("", "dim"))
        label = f"{mark} {step['phase']}" if mark else step["phase"]
        if step["state"] == "skipped":
            style = "dim strike"
        line += Text(label, style=style)
    return line


def _times(time: Data) -> Text:
    spent = time["inPhase"]
    parts = [f"{phase} {_duration(seconds)}" for phase, seconds in spent.items()]
    current = time.get("current")
    text = Text("time   ", style="bold") + Text(", ".join(parts) or "-")
    if current:
        text += Text(f"  (in {current['phase']} since {current['since']})", style="dim")
    return text


def _hypotheses(console: Console, hypotheses: list[Data]) -> None:
    current = [h for h in hypotheses if not h["retired"]]
    if not current:
        return
    console.print(Text("hypotheses", style="bold"))
    for h in current:
        style = {"confirmed": "green", "rejected": "red", "challenged": "yellow"}.get(h["status"])
        line = Text(f"  {h['id']} ") + Text(f"[{h['status']}]", style=style or "")
        console.print(line + Text(f" {h['statement']}"))
        console.print(Text(f"      disproved if: {h['disproof']}", style="dim"))


def _decisions(console: Console, decisions: list[Data]) -> None:
    """Answered decisions with their history labels, and the options they turned down."""
    answered = [d for d in decisions if d["status"] == "answered"]
    if not answered:
        return
    console.print(Text("decisions", style="bold"))
    for d in answered:
        line = Text(f"  {d['id']} ") + Text(f"chose {d['answer']}", style="cyan")
        if d.get("subject"):
            line += Text(f" on {d['subject']}")
        line += Text(f": {d['question']}")
        for label in d.get("labels", []):
            line += Text(" ") + Text(label, style="yellow")
        console.print(line)
        if d.get("alreadyRejected"):
            shown = ", ".join(f"{o['label']} ({o['id']})" for o in d["alreadyRejected"])
            console.print(Text(f"      already rejected: {shown}", style="dim"))


def _recent(console: Console, recent: Data) -> None:
    items = recent["items"][:RECENT_SHOWN]
    totals = ", ".join(f"{n} {name}" for name, n in recent["totals"].items())
    console.print(Text("recent activity", style="bold") + Text(f"  ({totals})", style="dim"))
    for item in items:
        actor = item["actor"] or "-"
        line = (
            Text(f"  {item['at']}  ", style="dim")
            + Text(f"{item['kind']:<8}", style="cyan")
            + Text(f" {actor:<14} {item['title']}")
        )
        origin = item.get("origin", "agent")
        if origin != "agent":
            # A person's word, or an agent's report of one (docs/design/trust.md).
            line += Text(f"  [{origin}]", style="dim")
        if item.get("replica"):
            # Recorded on another machine and fetched here (docs/design/trust.md).
            line += Text(f"  [from {item['replica']}]", style="dim")
        for label in item.get("labels", []):
            line += Text(" ") + Text(label, style="yellow")
        console.print(line)
    if recent["total"] > len(items):
        console.print(
            Text(
                f"  {len(items)} of {recent['total']} shown; "
                f"the whole history: cortex case timeline {recent.get('taskId', 'TASK')}",
                style="dim",
            )
        )


def show(console: Console, data: Data) -> None:
    """`case show`'s text for data already passed through `clean`.

    The status block, then the stepper, time per phase, hypotheses and recent activity; the
    studio's detail pane draws the same.
    """
    status(console, data)
    console.print(Text("phases ", style="bold") + _stepper(data["stepper"]))
    console.print(_times(data["time"]))
    _hypotheses(console, data["hypotheses"])
    _decisions(console, data.get("decisions", []))
    _recent(console, {**data["recent"], "taskId": data["taskId"]})
