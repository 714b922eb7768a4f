"""`cortex setup claude|codex`: register Cortex's MCP server and install its hooks in a host.

These files belong to the host and to the person using it, so the edit is as small as it can
be: one entry (`mcpServers.cortex` in Claude Code's JSON, `[mcp_servers.cortex]` in Codex's
TOML), every other key kept, and within that entry every key but the ones setup owns (`type`,
`command`, `args`); in the hooks file, only the hook entries that run `cortex hook`
(`cortex.kernel.host.hook_files`). A file that does not parse is refused and left as it was; a
second run with nothing to change writes nothing; the first change to an existing file keeps a
backup next to it; and the backup and the write are each atomic, the write keeping the file's
permission bits. Both files are composed before either is written. The host starts Cortex in
the most portable form this installation allows (`cortex.kernel.host.program`): a committed,
project-scope file never names a path of this machine. `--remove` takes out exactly what setup
put in.

A host gives up on a tool call after its own timeout, and a verify runs as long as its
verifiers (docs/design/mcp.md). For Codex, setup writes `tool_timeout_sec` in the entry, long
enough for every configured verifier in turn plus a margin (a larger value already there is
kept). Claude Code reads its tool timeout from `MCP_TOOL_TIMEOUT` (milliseconds) in its
environment, which its settings file's `env` sets: setup writes it there, beside the hooks.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from typing import Any, Literal

import msgspec

from cortex.cases.bounds import VERIFIER_TIMEOUT_DEFAULT
from cortex.cases.errors import BusyError, InvalidInputError, RefusedError
from cortex.cases.fsio import (
    remove_stale_temps,
)
from cortex.kernel.config import Config
from cortex.kernel.envelope import Action, Result, step
from cortex.kernel.host.formats import (
    dump_json,
    is_number,
    parse_json,
    parse_toml,
)
from cortex.kernel.host.writing import (
    BACKUP_SUFFIX,
    directory_ready,
    read_target,
    write_file,
)
from cortex.kernel.inputs import Input
from cortex.kernel.kernel import Kernel

Host = Literal["claude", "codex"]
Scope = Literal["user", "project"]
HOSTS: tuple[Host, ...] = ("claude", "codex")
DEFAULT_SCOPE: dict[str, Scope] = {"claude": "project", "codex": "user"}
HOST_NAMES = {"claude": "Claude Code", "codex": "Codex"}
SERVER = "cortex"
_ATTEMPTS = 3
OWNED_KEYS = ("type", "command", "args")
"""What setup sets in a Claude Code entry; every other key of an existing entry is kept."""
TOOL_TIMEOUT_MARGIN = 60
"""Seconds a host's tool timeout allows beyond the verifiers' own (capture, commit, start-up)."""
CODEX_TOOL_TIMEOUT = "tool_timeout_sec"
CODEX_TOOL_TIMEOUT_DEFAULT = 60
"""Codex's tool timeout when the entry sets none (its documented default)."""
CLAUDE_TOOL_TIMEOUT = "MCP_TOOL_TIMEOUT"
"""The environment variable Claude Code reads its MCP tool timeout from, in milliseconds."""


class Location(msgspec.Struct, frozen=True, kw_only=True):
    """One place a host reads MCP servers (`kind` mcp) or hooks (`kind` hooks) from."""

    host: Host
    scope: Scope
    path: str
    own_dir: bool = False
    """The directory is the host's own (`.codex`, `.claude`), created if missing and refused as
    a symlink (a planted link would send the write elsewhere); not so for the home or workspace."""
    kind: Literal["mcp", "hooks"] = "mcp"

    @property
    def format(self) -> Literal["json", "toml"]:
        """How the file is written."""
        return "json" if self.host == "claude" or self.kind == "hooks" else "toml"

    @property
    def new_file_mode(self) -> int:
        """A user's own file may hold secrets; a project file is meant to be shared."""
        return 0o600 if self.scope == "user" else 0o644


def location(host: str, scope: str | None, env: Mapping[str, str], root: str) -> Location:
    """Where `cortex setup HOST --scope SCOPE` writes (HOME and CODEX_HOME from `env`)."""
    if host not in HOSTS:
        raise InvalidInputError(f"unknown host {host!r} (expected one of: {', '.join(HOSTS)})")
    chosen: Scope
    if scope is None:
        chosen = DEFAULT_SCOPE[host]
    elif scope == "user":
        chosen = "user"
    elif scope == "project":
        chosen = "project"
    else:
        raise InvalidInputError(f"--scope must be user or project, not {scope!r}")
    if host == "claude":
        directory = root if chosen == "project" else _absolute(env, "HOME")
        name = ".mcp.json" if chosen == "project" else ".claude.json"
        return Location(host="claude", scope=chosen, path=os.path.join(directory, name))
    if chosen == "project":
        directory = os.path.join(root, ".codex")
    elif env.get("CODEX_HOME"):
        directory = _absolute(env, "CODEX_HOME")
    else:
        directory = os.path.join(_absolute(env, "HOME"), ".codex")
    path = os.path.join(directory, "config.toml")
    return Location(host="codex", scope=chosen, path=path, own_dir=True)


def hooks_location(where: Location, env: Mapping[str, str], root: str) -> Location:
    """Where the hook set goes for the host and scope of the MCP file `where`."""
    if where.host == "claude":
        base = root if where.scope == "project" else _absolute(env, "HOME")
        path = os.path.join(base, ".claude", "settings.json")
    else:
        path = os.path.join(os.path.dirname(where.path), "hooks.json")
    return Location(host=where.host, scope=where.scope, path=path, own_dir=True, kind="hooks")


def all_locations(env: Mapping[str, str], root: str) -> list[Location]:
    """Every place `cortex setup` can write, for `doctor` (user scopes need HOME/CODEX_HOME)."""
    found: list[Location] = []
    for host in HOSTS:
        for scope in ("project", "user"):
            try:
                found.append(location(host, scope, env, root))
            except InvalidInputError:
                continue  # no usable HOME: nothing can be registered there
    return found


def _absolute(env: Mapping[str, str], name: str) -> str:
    value = env.get(name) or ""
    if not os.path.isabs(value):
        shown = repr(value) if value else "not set"
        raise InvalidInputError(f"{name} is {shown}; it must be an absolute directory")
    return value


def longest_verifier(config: Config) -> float:
    """The longest timeout of one configured verifier (the default when none is configured)."""
    return max((v.timeout for v in config.verifiers.values()), default=VERIFIER_TIMEOUT_DEFAULT)


def tool_timeout(config: Config) -> int:
    """Seconds a host should wait for a verify here: its verifiers in turn, plus a margin.

    Every configured verifier counts (a plan may require them all), and at least the default
    timeout does (a plan's `pytest` may run unconfigured).
    """
    total = sum(v.timeout for v in config.verifiers.values())
    return math.ceil(max(total, VERIFIER_TIMEOUT_DEFAULT) + TOOL_TIMEOUT_MARGIN)


def _timeout_note(where: Location, seconds: int, *, written: bool) -> dict[str, Any]:
    """Where the host's tool timeout goes: the server entry (Codex), the settings' env.

    `seconds` is what a verify here may need; a larger value a person set is kept, and `written`
    says whether setup (not `--remove`) puts one in.
    """
    if where.host == "codex":
        return {"setting": CODEX_TOOL_TIMEOUT, "seconds": seconds, "written": written}
    return {
        "setting": f"env.{CLAUDE_TOOL_TIMEOUT}",
        "seconds": seconds,
        "written": written,
        "milliseconds": seconds * 1000,
    }


class _Plan(msgspec.Struct, kw_only=True):
    """One file's edit, composed before anything is written."""

    where: Location
    original: bytes | None
    new: bytes | None
    """None: nothing to change."""
    kept: list[str]
    changes: list[str]


def _plan(where: Location, edit: Edit) -> _Plan:
    original = read_target(where)
    try:
        new, kept, changes = edit(where, original)
    except InvalidInputError as exc:
        exc.message += "; the file was left as it is"
        raise
    except RecursionError:
        # Nesting that parsed can still be too deep to write out or to compare.
        raise InvalidInputError(f"{where.path} is nested too deeply to be edited") from None
    return _Plan(where=where, original=original, new=new, kept=kept, changes=changes)


def _backup_for(plan: _Plan) -> str | None:
    """The backup writing `plan` makes: the first change to an existing file keeps the original.

    A file left empty held only what Cortex put in: removing it needs no backup.
    """
    backup = plan.where.path + BACKUP_SUFFIX
    if not plan.new or plan.original is None or os.path.lexists(backup):
        return None
    return backup


def _apply(plan: _Plan, edit: Edit) -> tuple[_Plan, str | None]:
    """Write one planned edit (composed again if the host rewrote the file meanwhile)."""
    for _ in range(_ATTEMPTS):
        if plan.new is None:
            return plan, None
        chosen = _backup_for(plan)
        if write_file(plan.where, plan.original, plan.new, chosen):
            return plan, chosen
        plan = _plan(plan.where, edit)
    # The host itself rewrites its file (Claude Code saves ~/.claude.json often): retry later.
    msg = f"{plan.where.path} kept changing while it was being edited; run the command again"
    raise BusyError(msg)


def setup(
    kernel: Kernel,
    host: str,
    *,
    scope: str | None = None,
    dry_run: bool = False,
    remove: bool = False,
    interpreter: str | None = None,
) -> Result:
    """Register the server and install the hook set (`remove`: take both out again).

    `interpreter` stands for the Python that runs Cortex (tests). Both files are composed, and
    refused if either cannot be, before either is written.
    """
    from cortex.kernel.host import hook_files
    from cortex.kernel.host.program import resolve

    where = location(host, scope, kernel.env, kernel.workspace.root)
    hooks_at = hooks_location(where, kernel.env, kernel.workspace.root)
    seconds = tool_timeout(kernel.config)
    entry: dict[str, Any] | None = None
    program = None
    if remove:
        edits: tuple[Edit, Edit] = (_remove_entry, hook_files.remover(seconds))
    else:
        program = resolve(
            kernel.env, kernel.workspace.root, scope=where.scope, interpreter=interpreter
        )
        entry = program.server()
        if where.host == "codex":
            entry[CODEX_TOOL_TIMEOUT] = seconds
        edits = (_composer(entry), hook_files.composer(program, seconds))
    if not dry_run:
        for place in (where, hooks_at):
            if directory_ready(place):
                # A run killed before its rename leaves a temp file, a full copy of the file,
                # that nothing else removes.
                name = os.path.basename(place.path)
                remove_stale_temps(os.path.dirname(place.path), {name, name + BACKUP_SUFFIX})
    plans = [_plan(place, edit) for place, edit in zip((where, hooks_at), edits, strict=True)]
    backups: list[str | None] = [_backup_for(plan) for plan in plans]  # what a write would make
    if not dry_run:
        for index, edit in enumerate(edits):
            plans[index], backups[index] = _apply(plans[index], edit)
    mcp, hooks = plans
    data: dict[str, Any] = {
        "host": where.host,
        "scope": where.scope,
        "path": where.path,
        "changed": mcp.new is not None,
        "created": mcp.new is not None and mcp.original is None,
        "backup": backups[0],
        "entry": entry,  # not the host's env: it may hold secrets
        "kept": mcp.kept,  # the names of the existing entry's other keys, never their values
        "dryRun": dry_run,
        "removed": remove,
        "program": None if program is None else {"form": program.form, "path": program.path},
        "hooks": {
            "path": hooks.where.path,
            "changed": hooks.new is not None,
            "created": hooks.new is not None and hooks.original is None,
            "backup": backups[1],
            "template": hook_files.template_digest(where.host),
        },
        "changes": [*mcp.changes, *hooks.changes],
        "toolTimeout": _timeout_note(where, seconds, written=not remove),
    }
    changed = mcp.new is not None or hooks.new is not None
    data["files"] = _files(kernel, plans, written=not dry_run, backups=backups)
    actions = _actions(
        where,
        dry_run=dry_run,
        changed=changed,
        written=changed and not dry_run,
        files=data["files"],
        remove=remove,
    )
    return Result(data=data, actions=actions)


Edit = Callable[[Location, "bytes | None"], tuple["bytes | None", list[str], list[str]]]
"""Compose one file's new bytes from its current ones: (new or None, kept names, changes)."""


def _composer(entry: dict[str, Any]) -> Edit:
    def edit(where: Location, original: bytes | None) -> tuple[bytes | None, list[str], list[str]]:
        new, kept = _compose(where, original, entry)
        shown = " ".join([str(entry["command"]), *entry["args"]])
        changes = [] if new is None else [f"{where.path}: cortex server runs `{shown}`"]
        return new, kept, changes

    return edit


def _remove_entry(
    where: Location, original: bytes | None
) -> tuple[bytes | None, list[str], list[str]]:
    """The file without the `cortex` server entry (None: there was none)."""
    if original is None:
        return None, [], []
    if where.format == "json":
        document = parse_json(where.path, original)
        servers = document.get("mcpServers") or {}
        if SERVER not in servers:
            return None, [], []
        del servers[SERVER]
        if not servers:
            del document["mcpServers"]
        data = dump_json(document) if document else b""
    else:
        from cortex.kernel.host import toml_edit

        document = parse_toml(where.path, original)
        if SERVER not in (document.get("mcp_servers") or {}):
            return None, [], []
        try:
            text = toml_edit.remove_table(original.decode("utf-8"), ("mcp_servers", SERVER))
        except toml_edit.UnsafeEditError as exc:
            msg = f"cannot safely edit {where.path}: {exc}. Remove [mcp_servers.{SERVER}] by hand"
            raise RefusedError(msg) from None
        data = text.encode("utf-8")
    return data, [], [f"{where.path}: the cortex server entry removed"]


def _files(
    kernel: Kernel, plans: list[_Plan], *, written: bool, backups: list[str | None]
) -> list[dict[str, object]]:
    """The host files (and backups written next to them), and whether each is in a commit.

    A project-scope file lives in the repository: uncommitted, it is a change of the next
    case's task. Its backup is not meant to be committed: once checked, delete it.
    """
    from cortex.kernel.host import files

    entries: list[dict[str, object]] = []
    root = kernel.workspace.root.rstrip(os.sep) + os.sep
    for plan, backup in zip(plans, backups, strict=True):
        if plan.new == b"" and plan.where.path.startswith(root):
            relative = os.path.relpath(plan.where.path, root)
            entries.append(
                {
                    "path": plan.where.path,
                    "written": written,
                    "inRepository": True,
                    "deleted": True,
                    "relative": relative,
                    "advice": "it held only what Cortex put in: commit its removal if it was "
                    "committed (git rm)",
                }
            )
            continue
        if not os.path.lexists(plan.where.path):
            continue  # a dry run of a new file: nothing there yet
        entries += files.describe(kernel, [(plan.where.path, written and plan.new is not None)])
        if backup is not None and written:
            for entry in files.describe(kernel, [(backup, True)]):
                if entry["inRepository"]:
                    entry["advice"] = (
                        "the previous file, kept in case the edit is unwanted: delete it once "
                        "checked (it changes the working tree until then)"
                    )
                entries.append(entry)
    return entries


def _actions(
    where: Location,
    *,
    dry_run: bool,
    changed: bool,
    written: bool,
    files: list[dict[str, Any]],
    remove: bool,
) -> list[Action]:
    from cortex.kernel.host.files import commit_action

    if dry_run and changed:
        return [step(f"setup.{where.host}", "write it", scope=where.scope, remove=remove)]
    host_files = [e for e in files if not str(e["path"]).endswith(BACKUP_SUFFIX)]
    commit = commit_action(host_files) if written else []
    return [*commit, step("doctor", "check that the host can start the server and its hooks")]


def registered(where: Location, raw: bytes) -> object:
    """The `cortex` entry the file registers (None if none); raises if it does not parse."""
    if where.format == "json":
        servers = parse_json(where.path, raw).get("mcpServers") or {}
    else:
        servers = parse_toml(where.path, raw).get("mcp_servers") or {}
    return servers.get(SERVER)


# Composing the new text.


def _compose(
    where: Location, original: bytes | None, entry: dict[str, Any]
) -> tuple[bytes | None, list[str]]:
    """The new file, and the names of the existing entry's keys that were kept as they were.

    The file is None when the entry is already there as it should be.
    """
    try:
        if where.format == "json":
            return _compose_json(where.path, original, entry)
        return _compose_toml(where.path, original, entry)
    except RecursionError:
        # Nesting that parsed can still be too deep to write out or to compare.
        raise InvalidInputError(f"{where.path} is nested too deeply to be edited") from None


def _compose_json(
    path: str, original: bytes | None, entry: dict[str, Any]
) -> tuple[bytes | None, list[str]]:
    document = parse_json(path, original) if original is not None else {}
    servers = document.setdefault("mcpServers", {})
    old = servers.get(SERVER)
    wanted: dict[str, Any] = {"type": "stdio", **entry}
    # Every other key may have been set by hand (`env`, `timeout`, `cwd`, ...): as with the
    # Codex table, setup changes only what it owns.
    kept = {k: v for k, v in old.items() if k not in OWNED_KEYS} if isinstance(old, dict) else {}
    names = list(kept)
    if not isinstance(kept.get("env"), dict):
        # An entry always gets an `env` object (the form setup has always written); one that is
        # not an object cannot be used, so it is replaced (the backup keeps it).
        if "env" in kept:
            names.remove("env")
        kept["env"] = {}
    wanted.update(kept)
    if old == wanted:
        return None, names
    servers[SERVER] = wanted
    data = dump_json(document)
    try:
        readback = parse_json(path, data)
    except InvalidInputError:
        readback = None
    if readback != document:
        msg = f"{path} would not read back as intended; nothing was written"
        raise RefusedError(msg)
    return data, names


def _compose_toml(
    path: str, original: bytes | None, entry: dict[str, Any]
) -> tuple[bytes | None, list[str]]:
    from cortex.kernel.host import toml_edit

    document = parse_toml(path, original) if original is not None else {}
    old = (document.get("mcp_servers") or {}).get(SERVER)
    if old is not None and not isinstance(old, dict):
        msg = f"{path}: mcp_servers.{SERVER} is not a table"
        raise InvalidInputError(msg)
    had = (old or {}).get(CODEX_TOOL_TIMEOUT)
    wanted = entry.get(CODEX_TOOL_TIMEOUT)
    if is_number(had) and is_number(wanted) and float(had) >= float(wanted):  # type: ignore[arg-type]
        entry[CODEX_TOOL_TIMEOUT] = had  # a person chose to wait longer: keep it
    names = [key for key in old or {} if key not in entry]
    if old is not None and all(old.get(key) == value for key, value in entry.items()):
        return None, names
    text = original.decode("utf-8") if original is not None else ""
    try:
        new_text = toml_edit.set_table(text, ("mcp_servers", SERVER), entry)
    except toml_edit.UnsafeEditError as exc:
        msg = (
            f"cannot safely edit {path}: {exc}. Replace the entry by hand with a "
            f"[mcp_servers.{SERVER}] table of command and args (or delete it and run this "
            "again); the file was left as it is"
        )
        raise RefusedError(msg) from None
    return new_text.encode("utf-8"), names


class SetupCodex(Input):
    """The input of `setup codex`."""

    scope: str | None = None
    dry_run: bool = False
    remove: bool = False


class SetupClaude(SetupCodex):
    """The input of `setup claude`: or a plugin written into a directory instead."""

    plugin: str | None = None


def setup_claude(kernel: Kernel, given: SetupClaude) -> Result:
    """`setup` for Claude Code, or `write_plugin` into `plugin` (relative to `kernel.cwd`)."""
    if given.plugin is not None:
        from cortex.kernel.host.plugin import write_plugin

        directory = os.path.join(kernel.cwd, given.plugin)
        return write_plugin(
            directory, dry_run=given.dry_run, scope=given.scope, remove=given.remove
        )
    return setup(kernel, "claude", scope=given.scope, dry_run=given.dry_run, remove=given.remove)


def setup_codex(kernel: Kernel, given: SetupCodex) -> Result:
    """`setup` for the Codex CLI."""
    return setup(kernel, "codex", scope=given.scope, dry_run=given.dry_run, remove=given.remove)
