"""`cortex setup claude --plugin DIR`: Cortex as a Claude Code plugin (server and hooks in one).

A plugin is a directory Claude Code installs from a marketplace or a path: its manifest
(`.claude-plugin/plugin.json`), its hooks (`hooks/hooks.json`, the same hook set `setup`
installs) and its MCP servers (`.mcp.json`). It is installed on machines setup never sees, so
it runs the `cortex` on PATH. `claude plugin validate DIR` accepts what this writes
(tests/test_host_claude.py). A directory that holds anything but such a plugin is refused.
"""

from __future__ import annotations

import json
import os

from cortex import __version__
from cortex.cases.errors import ArgumentError, InvalidInputError
from cortex.cases.fsio import write_atomic
from cortex.kernel.envelope import Result, step
from cortex.kernel.host import hooks
from cortex.kernel.host.program import PLUGIN

NAME = "cortex"
MANIFEST = os.path.join(".claude-plugin", "plugin.json")


def contents() -> dict[str, bytes]:
    """Each file of the plugin, by its path inside the directory."""

    def dump(value: object) -> bytes:
        return (json.dumps(value, indent=2) + "\n").encode()

    manifest = {
        "name": NAME,
        "version": __version__,
        "description": (
            "A durable, auditable case file for each task: briefs the agent on its case at "
            "every session start and holds a stop until a change has current proof."
        ),
        "author": {"name": "Cortex maintainers"},
    }
    return {
        MANIFEST: dump(manifest),
        os.path.join("hooks", "hooks.json"): dump(
            {"hooks": {event: [group] for event, group in hooks.wanted(PLUGIN, "claude").items()}}
        ),
        ".mcp.json": dump({"mcpServers": {NAME: {"type": "stdio", **PLUGIN.server()}}}),
    }


def _refuse_foreign(directory: str) -> None:
    """DIR must be new, empty, or a Cortex plugin written before (never someone's files)."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise InvalidInputError(f"{directory} is not a directory") from None
    if not names:
        return
    try:
        with open(os.path.join(directory, MANIFEST), "rb") as file:
            manifest = json.loads(file.read(64 * 1024))
    except (OSError, ValueError):
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("name") != NAME:
        msg = f"{directory} holds other files; give a new or empty directory for the plugin"
        raise InvalidInputError(msg)


def write_plugin(
    directory: str,
    *,
    dry_run: bool = False,
    scope: str | None = None,
    remove: bool = False,
) -> Result:
    """Write (or, with nothing changed, leave) the plugin in `directory`."""
    if scope is not None or remove:
        used = "scope" if scope is not None else "remove"
        msg = f"{{{used}}} does not apply with {{plugin}}: a plugin is installed by Claude Code"
        raise ArgumentError(msg, used, "plugin")
    directory = os.path.abspath(directory)
    _refuse_foreign(directory)
    written: list[str] = []
    for name, data in contents().items():
        path = os.path.join(directory, name)
        try:
            with open(path, "rb") as file:
                same = file.read(len(data) + 1) == data
        except OSError:
            same = False
        if same:
            continue
        written.append(path)
        if not dry_run:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            write_atomic(path, data, mode=0o644)
    return Result(
        data={
            "plugin": directory,
            "dryRun": dry_run,
            "changed": bool(written),
            "files": written,
            "template": hooks.digest("claude"),
            "program": {"form": PLUGIN.form, "path": PLUGIN.path},
        },
        actions=[step("doctor", "check that `cortex` is on PATH where the plugin is used")],
    )
