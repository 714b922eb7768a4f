"""Text for people: the set-up commands' answers (trust, config, init, setup, doctor, hooks)."""

from __future__ import annotations

from collections.abc import Callable

from cortex.kernel.envelope import Data
from cortex.screen.blocks import kv as _kv
from cortex.screen.ink import Console, Text


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
        source = verifier["source"]
        if verifier.get("configured") is False:
            source = f"not configured: {source}; `cortex init` writes it"
        rows.append((f"verifier {name}", f"{argv}  [{source}]"))
        if verifier.get("problem"):
            rows.append(("", Text(f"cannot run: {verifier['problem']}", style="red")))
        rows.append(("", verifier["approval"]))
    console.print(_kv(rows))


def _initialized(console: Console, data: Data) -> None:
    console.print(
        Text(f"Wrote {', '.join(data['written'])} ", style="bold green")
        + Text(f"to {data['file']}")
    )
    for name, argv in data["argv"].items():
        console.print(Text(f"  {name}: {' '.join(argv)}"))
    interpreter = data.get("interpreter")
    if interpreter:
        console.print(Text(f"  interpreter: {interpreter['path']} ({interpreter['source']})"))
    console.print(Text("plan with: " + " ".join(f"--verify {v}" for v in data["verify"])))
    _files(console, data.get("files", []))


def _files(console: Console, entries: list[Data]) -> None:
    """Each file a set-up command wrote or read, and what it means for the next case."""
    for entry in entries:
        where = entry.get("relative") or entry["path"]
        style = "yellow" if entry.get("changesTree") else "dim"
        console.print(Text(f"{where}: ", style="bold") + Text(entry["advice"], style=style))


_HOST_NAMES = {"claude": "Claude Code", "codex": "Codex"}


def _setup(console: Console, data: Data) -> None:
    if "plugin" in data:
        _plugin(console, data)
        return
    host = f"{_HOST_NAMES.get(data['host'], data['host'])} ({data['scope']} scope)"
    hooks = data.get("hooks") or {}
    changed = data["changed"] or hooks.get("changed")
    removing = data.get("removed")
    if not changed:
        state = "Not registered" if removing else "Already set up"
        console.print(Text(f"{state} ", style="bold green") + Text(f"with {host}; nothing changed"))
    else:
        done = "Removed" if removing else "Set up"
        verb = ("Would remove" if removing else "Would set up") if data["dryRun"] else done
        console.print(
            Text(f"{verb} ", style="bold yellow" if data["dryRun"] else "bold green")
            + Text(f"cortex with {host}")
        )
    rows: list[tuple[str, str | Text]] = []
    entry = data.get("entry")
    if entry:
        rows.append(("runs", " ".join([entry["command"], *entry["args"]])))
    rows.append(("server", data["path"]))
    if hooks:
        rows.append(("hooks", f"{hooks['path']} (template {hooks['template']})"))
    rows += [("change", line) for line in data.get("changes", [])]
    if data.get("kept"):
        rows.append(("kept", ", ".join(data["kept"])))  # the names only: `env` may hold secrets
    if data.get("backup"):
        label = "would back up to" if data["dryRun"] else "backup"
        rows.append((label, data["backup"]))
    timeout = data.get("toolTimeout") or {}
    if timeout and not removing:
        shown = (entry or {}).get(timeout["setting"]) or timeout.get("milliseconds")
        unit = " ms" if "milliseconds" in timeout else " s"
        rows.append(
            (
                "tool timeout",
                (
                    f"{timeout['setting']} = {shown or timeout['seconds']}{unit} (a verify here "
                    f"may need {timeout['seconds']} s; a longer one already set is kept)"
                ),
            )
        )
    console.print(_kv(rows))
    if data["dryRun"] and changed:
        console.print(Text("dry run: nothing was written", style="dim"))
    _files(console, data.get("files", []))


def _plugin(console: Console, data: Data) -> None:
    verb = "Would write" if data["dryRun"] else "Wrote"
    if not data["changed"]:
        console.print(Text("Plugin up to date ", style="bold green") + Text(data["plugin"]))
    else:
        console.print(Text(f"{verb} the Claude Code plugin ", style="bold green") +
                      Text(data["plugin"]))  # fmt: skip
    rows: list[tuple[str, str | Text]] = [("file", path) for path in data["files"]]
    rows.append(("runs", f"{data['program']['path']} (from PATH where the plugin is used)"))
    console.print(_kv(rows))


_CHECK_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "skipped": "dim"}


def _doctor(console: Console, data: Data) -> None:
    for check in data["checks"]:
        line = Text(f"{check['status']:>7}  ", style=_CHECK_STYLE.get(check["status"], ""))
        line += Text(f"{check['name']}: ", style="bold") + Text(check["detail"])
        console.print(line)
        if check.get("fix") and check["status"] != "ok":
            console.print(Text(f"         fix: {check['fix']}", style="dim"))


def _hook(console: Console, data: Data) -> None:
    if not data["changed"]:
        console.print(Text("Already installed ", style="bold green") + Text(data["path"]))
    elif data["dryRun"]:
        console.print(Text("Would install ", style="bold yellow") + Text(data["path"]))
    else:
        console.print(Text("Installed ", style="bold green") + Text(data["path"]))


RENDERERS: dict[str, Callable[[Console, Data], None]] = {
    "case.trust": _trusted,
    "config": _config,
    "init": _initialized,
    "doctor": _doctor,
    "setup.claude": _setup,
    "setup.codex": _setup,
    "setup.git-trailer": _hook,
}
"""The renderer of each set-up command."""
