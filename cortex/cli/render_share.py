"""Text for people: the answers of `case share`, `fetch`, `bundle` and `trailer`."""

from __future__ import annotations

from collections.abc import Callable

from cortex.kernel.envelope import Data
from cortex.screen.blocks import warnings as _warnings
from cortex.screen.ink import Console, Text


def _shared(console: Console, data: Data) -> None:
    if data["dryRun"]:
        for case in data["cases"]:
            manifest = case["manifest"]
            totals = manifest["totals"]
            console.print(
                Text(f"Would share {case['taskId']} ", style="bold yellow")
                + Text(
                    f"to {data['remote']}: {totals['files']} files, {totals['bytes']} bytes "
                    f"({totals['newFiles']} new, {totals['newBytes']} bytes)"
                )
            )
            for entry in manifest["files"]:
                mark = "+" if entry["new"] else " "
                console.print(
                    Text(f" {mark} {entry['path']}  {entry['size']}  {entry['sha256'][:12]}")
                )
            for item in manifest["withheld"]:
                size = f", {item['size']} bytes" if item.get("size") is not None else ""
                console.print(
                    Text(f"   withheld {item['what']} {item['id']} ({item['reason']}{size})")
                )
        return
    for case in data["cases"]:
        how = "unchanged" if case["unchanged"] else f"{case['objects']} new objects"
        if case["merged"]:
            how += ", merged with the remote's"
        console.print(
            Text(f"Shared {case['taskId']} ", style="bold green")
            + Text(f"to {data['remote']} {case['ref']} ({how}; {case['attempts']} push(es))")
        )
        if case["withheld"]:
            console.print(Text(f"  withheld: {len(case['withheld'])} item(s)", style="dim"))
    _warnings(console, data.get("warnings", []))


def _fetched(console: Console, data: Data) -> None:
    if not data["cases"]:
        console.print(Text(f"Nothing fetched from {data['source']}", style="dim"))
    for case in data["cases"]:
        if case["unchanged"]:
            console.print(Text(f"{case['taskId']} is up to date with {data['source']}"))
            continue
        lines = sum(case["imported"].values())
        verb = "Created" if case["created"] else "Updated"
        text = f"from {data['source']}: {lines} record(s) of {len(case['imported'])} replica(s)"
        if case["adopted"]:
            text += f"; now in the state of {case['adopted']}"
        if case["conflicts"]:
            text += f"; {case['conflicts']} conflict(s) recorded"
        console.print(Text(f"{verb} {case['taskId']} ", style="bold green") + Text(text))
        for fork in case["forks"]:
            console.print(Text(f"  forked replica kept as {fork}", style="yellow"))
    _warnings(console, data.get("warnings", []))


def _bundled(console: Console, data: Data) -> None:
    console.print(
        Text(f"Bundled {data['taskId']} ", style="bold green")
        + Text(f"into {data['file']} ({data['bytes']} bytes, verified)")
    )


def _trailers(console: Console, data: Data) -> None:
    # One line per trailer, nothing else: the prepare-commit-msg hook reads this output.
    for line in data["trailers"]:
        console.print(Text(line))


RENDERERS: dict[str, Callable[[Console, Data], None]] = {
    "case.share": _shared,
    "case.fetch": _fetched,
    "case.bundle": _bundled,
    "case.trailer": _trailers,
}
"""The renderer of each sharing command."""
