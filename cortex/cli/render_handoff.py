"""Text for people from `cortex case handoff`: the Markdown itself, or where it was written.

The Markdown goes to stdout byte for byte (not through rich), so `cortex case handoff TASK >
FILE` and `-o FILE` give the same document. The kernel has already neutralised every value in
it (cortex/kernel/views/markdown.py), and `render` passed it through `safe` as well.
"""

from __future__ import annotations

from typing import Any

from cortex.screen.ink import Console, Text


def handoff(console: Console, data: dict[str, Any]) -> None:
    """Print the packet's Markdown, or a confirmation when it went to a file."""
    written = data.get("written")
    if written is None:
        console.file.write(data["markdown"])
        console.file.flush()
        return
    console.print(
        Text("Wrote ", style="bold green")
        + Text(f"the handoff of {data['taskId']} to {written['path']} ")
        + Text(
            f"({written['format']}, {written['bytes']} bytes; tier {data['tier']}, "
            f"{data['tierName']})",
            style="dim",
        )
    )
    for entry in data["omitted"]:
        console.print(Text(f"  left out: {entry['count']} {entry['what']}", style="dim"))
    for warning in written["warnings"]:
        console.print(Text("warning: ", style="yellow") + Text(warning))
