"""Text for `case archive`, `unarchive`, `prune`, `rm`, `forget`, `adopt` and `recall drop`.

Every value from a case goes into a `Text`, never read as markup.
"""

from __future__ import annotations

from cortex.kernel.envelope import Data
from cortex.screen.blocks import warnings as _warnings
from cortex.screen.ink import Console, Text


def _line(console: Console, head: str, rest: str = "", style: str = "bold green") -> None:
    console.print(Text(head, style=style) + Text(rest))


def archived(console: Console, data: Data) -> None:
    """`case archive` and `case unarchive`."""
    where = "archived" if data["archived"] else "in the store"
    _line(console, f"{data['taskId']} ", f"is {where} ({data['status']}): {data['path']}")
    _warnings(console, data["warnings"])


def pruned(console: Console, data: Data) -> None:
    """`case prune`: what was (or would be) abandoned and archived."""
    verb = "Pruned" if data["applied"] else "Would prune (dry run; --apply does it)"
    days = data["olderThanSeconds"] / 86400
    _line(console, f"{verb}: ", f"cases idle for {days:g} day(s) or more ({data['source']})")
    for item in data["cases"]:
        status = "done" if item["done"] else item["action"]
        if item["error"]:
            status = f"failed: {item['error']['message']}"
        console.print(
            Text(f"  {item['taskId']} ", style="bold")
            + Text(f"{item['status']}, idle {item['idleSeconds'] / 86400:.1f} d: {status}  ")
            + Text(item["goal"], style="dim")
        )
    if not data["cases"]:
        console.print(Text("  none"))


def removed(console: Console, data: Data) -> None:
    """`case rm`."""
    verb = "Removed" if data["applied"] else "Would remove (dry run; --force does it)"
    _line(console, f"{verb} {data['taskId']} ", f"({data['status']}): {data['bytes']} bytes")
    for name in data["refs"]:
        console.print(Text(f"  and the local ref {name}"))
    for item in data["kept"]:
        console.print(Text("  cannot remove: ", style="yellow") + Text(item))
    _warnings(console, data["warnings"])


def forgotten(console: Console, data: Data) -> None:
    """`case forget`."""
    what = "the raw output of " if data["what"] == "raw" else ""
    _line(console, f"Forgot {what}{data['record']} ", f"in {data['taskId']}")
    console.print(Text(f"  removed line sha256 {data['removedLine']}"))
    for blob in data["removedRaw"]:
        console.print(Text(f"  removed raw/{blob['id']} ({blob['bytes']} bytes, {blob['sha256']})"))
    console.print(Text(f"  a tombstone keeps its place; {data['forgetRecord']} says why"))
    _warnings(console, data["warnings"])


def adopted(console: Console, data: Data) -> None:
    """`adopt`."""
    verb = "Would adopt (dry run)" if data["dryRun"] else "Adopted"
    if not data["stores"]:
        _line(console, "No orphaned store of this repository", "", style="bold")
    for store in data["stores"]:
        count = len(store["cases"]) + len(store["archived"])
        _line(console, f"{verb} {store['id']}: ", f"{count} case(s) into {data['into']['root']}")
        if not store["orphaned"]:
            console.print(
                Text("  its repository still exists: its cases move here", style="yellow")
            )
    for alias in data["aliases"]:
        console.print(Text(f"  @latest counts cases opened at {alias['from']} as opened here"))
    for item in data["skipped"]:
        console.print(Text(f"  skipped {item['taskId']}: {item['why']}", style="yellow"))
    _warnings(console, data["warnings"])


def dropped(console: Console, data: Data) -> None:
    """`recall drop`."""
    verb = "Would drop (dry run)" if data["dryRun"] else "Dropped"
    _line(console, f"{verb} {data['bytes']} bytes", "")
    for item in data["dropped"]:
        console.print(Text(f"  {item['what']}: {item['path']} ({item['bytes']} bytes)"))
    for item in data["kept"]:
        console.print(Text(f"  kept {item['path']}: {item['why']}", style="yellow"))
